/**
 * Long pauses and full tables, through the real executables against
 * the emulator:
 * - a removed pipeline stage leaves the replica, an Airbyte overwrite sync and
 *   a Singer target that honours ACTIVATE_VERSION;
 * - after a pause of 105 days on the service's clock (the emulator's clock
 *   moves, the machine's does not), Airbyte and Singer warn about the gap in
 *   the deletion log with their own advice, and following the Singer advice (a
 *   FULL_TABLE sync of contacts and conversations) leaves a target equal to
 *   the service.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, SOURCE_BIN, TAP_BIN, parseLines, protocolCheck, runCli, writeJson } from '../../helpers/cli.js';
import { MemoryDestination, airbyteStateFile, type StreamStates } from '../../helpers/destination.js';
import { replicaAsDump, replicate, type Account } from '../../helpers/emulator-runs.js';
import { withAccount, withTempDir } from '../../helpers/suite.js';

const DAY = 86_400_000;
const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');
type Rec = Record<string, unknown>;

/** A Singer target that honours ACTIVATE_VERSION: a version activated drops the stream's rows of every other version. */
/**
 * A target that honours ACTIVATE_VERSION. `keepsUnversioned`: as the Meltano
 * SDK's default activation does (target-snowflake), it drops only rows of a
 * lower version, keeping those loaded without one (by INCREMENTAL syncs);
 * MeltanoLabs target-postgres drops those too (the default here).
 */
class VersionedTarget {
  private readonly keepsUnversioned: boolean;
  constructor(keepsUnversioned = false) {
    this.keepsUnversioned = keepsUnversioned;
  }
  readonly tables = new Map<string, Map<string, { row: Rec; version: number | undefined }>>();
  state: unknown;
  /** ACTIVATE_VERSION messages seen in the last run. */
  activations: { stream: string; version: number }[] = [];

  apply(stdout: string): void {
    this.activations = [];
    for (const m of parseLines(stdout)) {
      if (m.type === 'RECORD') {
        const record = m.record as Rec;
        this.table(String(m.stream)).set(String(record.id), { row: record, version: typeof m.version === 'number' ? m.version : undefined });
      } else if (m.type === 'ACTIVATE_VERSION') {
        const version = m.version as number;
        this.activations.push({ stream: String(m.stream), version });
        for (const [id, entry] of this.table(String(m.stream))) {
          const old = entry.version === undefined ? !this.keepsUnversioned : entry.version < version;
          if (old) this.table(String(m.stream)).delete(id);
        }
      } else if (m.type === 'STATE') this.state = m.value;
    }
  }

  table(stream: string): Map<string, { row: Rec; version: number | undefined }> {
    let t = this.tables.get(stream);
    if (!t) this.tables.set(stream, (t = new Map()));
    return t;
  }

  ids(stream: string): string[] {
    return [...this.table(stream).keys()].sort();
  }
}

const idsOf = (rows: readonly { id: string }[]): string[] => rows.map((r) => r.id).sort();

let dir: string;
withTempDir('long-pause-', (d) => (dir = d));

async function tap(args: string[]): Promise<string> {
  const run = await runCli(TAP_BIN, args);
  expect(run.code, run.stderr.slice(-1500)).toBe(0);
  expect(protocolCheck('singer', run.stdout).errors).toEqual([]);
  return run.stdout + '\u0000' + run.stderr;
}

async function airbyteRead(config: string, states: StreamStates): Promise<string> {
  const args = ['read', '--config', config, '--catalog', CATALOG];
  if (states.size > 0) args.push('--state', writeJson(dir, `state-${states.size}-${Math.random()}.json`, airbyteStateFile(states)));
  const run = await runCli(SOURCE_BIN, args);
  expect(run.code, run.stdout.slice(-1500)).toBe(0);
  expect(protocolCheck('airbyte', run.stdout).errors).toEqual([]);
  return run.stdout;
}

const split = (out: string): { stdout: string; stderr: string } => {
  const [stdout = '', stderr = ''] = out.split('\u0000');
  return { stdout, stderr };
};

describe('full tables whose rows disappear', () => {
  let account: Account;
  withAccount({ contacts: 40, seed: 41 }, (a) => (account = a));

  it('a removed pipeline stage leaves the replica, an Airbyte overwrite sync and a Singer target with ACTIVATE_VERSION', { timeout: 180_000 }, async () => {
    const control = account.emulator.control;
    const config = account.config(dir);
    const db = join(dir, 'stages.db');
    const target = new VersionedTarget();
    const airbyte = new MemoryDestination();

    const first = split(await tap(['--config', config]));
    target.apply(first.stdout);
    const stages = account.dump().pipeline_stages;
    expect(target.ids('pipeline_stages')).toEqual(idsOf(stages));
    // The first sync activates its version before its records too.
    expect(new Set(target.activations.map((a) => `${a.stream} ${a.version}`)).size).toBe(1);
    const firstLines = parseLines(first.stdout).filter((m) => m.stream === 'pipeline_stages');
    expect(firstLines.map((m) => m.type).filter((t) => t !== 'RECORD')).toEqual(['SCHEMA', 'ACTIVATE_VERSION', 'ACTIVATE_VERSION']);
    const firstVersion = target.activations[0]?.version as number;
    for (const m of firstLines.filter((l) => l.type === 'RECORD')) expect(m.version).toBe(firstVersion);
    airbyte.applyAirbyte(await airbyteRead(config, new Map()));
    expect((await replicate(config, db)).code).toBe(0);

    const removed = stages[2] as { id: string };
    control.removePipelineStage(account.accountId, removed.id);
    const added = control.addPipelineStage(account.accountId, { key: 'demo', name: 'Demo booked' });
    const now = idsOf(account.dump().pipeline_stages);
    expect(now).not.toContain(removed.id);
    expect(now).toContain(added.id);
    // Time passes between syncs on the service's clock (frozen here), which the table version follows.
    control.advanceClock(60_000);

    const second = split(await tap(['--config', config, '--state', writeJson(dir, 'tap-state.json', target.state)]));
    target.apply(second.stdout);
    expect(target.activations).toHaveLength(1);
    expect(target.activations[0]?.version).toBeGreaterThan(firstVersion);
    expect(target.ids('pipeline_stages')).toEqual(now);

    airbyte.applyAirbyte(await airbyteRead(config, airbyte.states));
    expect(idsOf(airbyte.rows('pipeline_stages') as { id: string }[])).toEqual(now);

    const run = await replicate(config, db);
    expect(run.code, run.stderr).toBe(0);
    expect(idsOf(replicaAsDump(db).pipeline_stages as { id: string }[])).toEqual(now);
  });
});

describe('a pause longer than the deletion retention', () => {
  let account: Account;
  withAccount({ contacts: 60, seed: 42 }, (a) => (account = a));

  it('Airbyte and Singer warn on the service clock with their advice; a FULL_TABLE sync then drops the deleted rows', { timeout: 180_000 }, async () => {
    const control = account.emulator.control;
    const config = account.config(dir, { page_size: 25 });
    const target = new VersionedTarget();
    const sdkDefault = new VersionedTarget(true);
    const airbyte = new MemoryDestination('tombstones');

    const first = split(await tap(['--config', config])).stdout;
    target.apply(first);
    sdkDefault.apply(first);
    airbyte.applyAirbyte(await airbyteRead(config, new Map()));

    control.advanceClock(10 * DAY);
    const deleted = account.dump().contacts.slice(0, 4).map((c) => c.id);
    account.mutate({ op: 'delete_contacts', ids: deleted });
    control.advanceClock(95 * DAY);

    // Airbyte: the WARN (a LOG message) measured on the service's clock, with Airbyte's advice.
    const read = await airbyteRead(config, airbyte.states);
    const logs = parseLines(read).flatMap((m) => (m.type === 'LOG' && (m.log as Rec).level === 'WARN' ? [String((m.log as Rec).message)] : []));
    const gap = logs.filter((w) => w.includes("105 days old on the service's clock"));
    expect(gap, logs.join('\n')).toHaveLength(1);
    expect(gap[0]).toContain('In Airbyte, refresh the contacts and conversations streams, removing their records');

    // Singer: the same gap, with the Singer advice.
    const second = split(await tap(['--config', config, '--state', writeJson(dir, 'pause-state.json', target.state)]));
    target.apply(second.stdout);
    const warnings = second.stderr.split('\n').filter((l) => / WARNING /.test(l) && l.includes("105 days old on the service's clock"));
    expect(warnings, second.stderr).toHaveLength(1);
    expect(warnings[0]).toContain('replication-method FULL_TABLE for contacts and conversations');
    // ... and what it takes of the target: rows of INCREMENTAL syncs carry no version, which not every target drops.
    expect(warnings[0]).toContain('if it also drops the rows loaded without a version (by INCREMENTAL syncs)');
    expect(warnings[0]).toContain('empty its contacts and conversations tables before that sync');
    sdkDefault.apply(second.stdout);
    for (const id of deleted) expect(target.table('contacts').has(id)).toBe(true); // the gap: nothing told the target

    // Following it: one FULL_TABLE sync of contacts and conversations; ACTIVATE_VERSION drops what the service no longer has.
    const discovered = JSON.parse((await runCli(TAP_BIN, ['--config', config, '--discover'])).stdout) as { streams: { tap_stream_id: string; metadata: { breadcrumb: unknown[]; metadata: Rec }[] }[] };
    const catalog = {
      streams: discovered.streams.map((s) => ({
        ...s,
        metadata: s.metadata.map((m) =>
          m.breadcrumb.length === 0 && ['contacts', 'conversations'].includes(s.tap_stream_id) ? { ...m, metadata: { ...m.metadata, 'replication-method': 'FULL_TABLE' } } : m,
        ),
      })),
    };
    const full = split(await tap(['--config', config, '--catalog', writeJson(dir, 'full-table.json', catalog), '--state', writeJson(dir, 'after-pause.json', target.state)]));
    target.apply(full.stdout);
    expect(target.activations.map((a) => a.stream).sort()).toEqual(['contacts', 'conversations', 'pipeline_stages']);
    const truth = account.dump();
    expect(target.ids('contacts')).toEqual(idsOf(truth.contacts));
    expect(target.ids('conversations')).toEqual(idsOf(truth.conversations));

    // A target that keeps unversioned rows keeps the deleted ones (loaded by INCREMENTAL syncs): hence the advice to empty
    // its two tables first; emptied, the same sync leaves exactly the service's rows.
    sdkDefault.apply(full.stdout);
    for (const id of deleted) expect(sdkDefault.table('contacts').has(id)).toBe(true);
    sdkDefault.tables.delete('contacts');
    sdkDefault.tables.delete('conversations');
    sdkDefault.apply(full.stdout);
    expect(sdkDefault.ids('contacts')).toEqual(idsOf(truth.contacts));
    expect(sdkDefault.ids('conversations')).toEqual(idsOf(truth.conversations));
  });
});
