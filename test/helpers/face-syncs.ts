/**
 * Syncs of each face, run one after the other against one account, each
 * handing the next the state the one before left (the destination's, the
 * tap's last STATE, the replica's own): what a scheduler does. Each says the
 * WARN lines it wrote and the watermark it saved per stream.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { expect } from 'vitest';
import { replicaStates } from '../../src/replica/records.js';
import { ROOT, SOURCE_BIN, TAP_BIN, parseLines, protocolCheck, runCli, writeJson } from './cli.js';
import { airbyteStateFile, type MemoryDestination, type SingerStateValue, type StreamStates } from './destination.js';
import { replicate } from './emulator-runs.js';

export type Sync = () => Promise<{ warnings: string[]; watermarks: Record<string, string | undefined> }>;

const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');

/** The messages of the WARN / WARNING lines of stderr (`<instant> <level> <program>: <message>`). */
export function stderrWarnings(stderr: string): string[] {
  return stderr.split('\n').flatMap((line) => {
    const m = /^\S+ WARN(?:ING)? [\w-]+: (.*)$/.exec(line);
    return m?.[1] ? [m[1]] : [];
  });
}

/** Airbyte `read`s of every stream into `destination`, each with the states it kept from the one before; state files in `dir`. */
export function airbyteSyncs(dir: string, config: string, destination: MemoryDestination): Sync {
  let states: StreamStates = new Map();
  return async () => {
    const args = ['read', '--config', config, '--catalog', CATALOG];
    if (states.size > 0) args.push('--state', writeJson(dir, `state-${randomUUID()}.json`, airbyteStateFile(states)));
    const run = await runCli(SOURCE_BIN, args);
    expect(run.code, run.stdout.slice(-1000)).toBe(0);
    expect(protocolCheck('airbyte', run.stdout).errors).toEqual([]);
    states = destination.applyAirbyte(run.stdout);
    const warnings = parseLines(run.stdout).flatMap((m) => (m.type === 'LOG' && (m.log as { level: string }).level === 'WARN' ? [(m.log as { message: string }).message] : []));
    return { warnings, watermarks: Object.fromEntries([...states].map(([s, v]) => [s, (v as { sync_watermark?: string }).sync_watermark])) };
  };
}

/** Tap syncs into `target`, each with the last STATE of the one before; state files in `dir`. */
export function tapSyncs(dir: string, config: string, target: MemoryDestination): Sync {
  let state: SingerStateValue | undefined;
  return async () => {
    const args = ['--config', config];
    if (state) args.push('--state', writeJson(dir, `tap-state-${randomUUID()}.json`, state));
    const run = await runCli(TAP_BIN, args);
    expect(run.code, run.stderr.slice(-1000)).toBe(0);
    expect(protocolCheck('singer', run.stdout).errors).toEqual([]);
    state = target.applySinger(run.stdout);
    return { warnings: stderrWarnings(run.stderr), watermarks: Object.fromEntries(Object.entries(state?.bookmarks ?? {}).map(([s, b]) => [s, b.sync_watermark as string | undefined])) };
  };
}

/** `replicate` runs into the SQLite replica `db`. */
export function replicateSyncs(config: string, db: string): Sync {
  return async () => {
    const run = await replicate(config, db);
    expect(run.code, run.stderr.slice(-1000)).toBe(0);
    expect(run.stderr).toMatch(/Replica up to date/);
    return { warnings: stderrWarnings(run.stderr), watermarks: Object.fromEntries([...replicaStates(db)].map(([s, v]) => [s, v.sync_watermark])) };
  };
}
