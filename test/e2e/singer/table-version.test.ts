/**
 * The table version of a FULL_TABLE stream (ACTIVATE_VERSION) must grow from
 * sync to sync, or a target keeps the rows of an earlier sync for good: it
 * drops only rows of versions older than the one activated. Through the real
 * tap against the emulator, with a target that honours ACTIVATE_VERSION as the
 * Meltano SDK's do: the version is taken on the service's clock (the read's
 * sync_watermark), so a machine whose clock went back between two syncs (a
 * clock fixed after running ahead, the next run on another host) still
 * removes from the target a pipeline stage the service no longer has.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEmulator, type Emulator } from 'data-read-emulator';
import { TAP_BIN, parseLines, protocolCheck, runCli, writeJson } from '../../helpers/cli.js';
import { LIMITS_OUT_OF_REACH } from '../../helpers/emulator-runs.js';
import { withTempDir } from '../../helpers/suite.js';

const DAY = 86_400_000;
let emu: Emulator;
let dir: string;
let n = 0;
withTempDir('table-version-', (d) => (dir = d));
beforeAll(async () => {
  emu = await startEmulator({ host: '127.0.0.1', port: 0, seed: 3, limits: LIMITS_OUT_OF_REACH });
});
afterAll(async () => {
  await emu.close();
});

/** A preload that sets this process's clock (Date.now) `MACHINE_CLOCK_SHIFT_MS` away from the machine's. */
function clockShifter(): string {
  const path = join(dir, 'shift-clock.mjs');
  writeFileSync(path, 'const shift = Number(process.env.MACHINE_CLOCK_SHIFT_MS);\nconst now = Date.now;\nDate.now = () => now() + shift;\n');
  return path;
}

/** A Singer target's table of pipeline stages: each row's version; ACTIVATE_VERSION drops the rows of older versions. */
class VersionedTable {
  readonly rows = new Map<string, number>();
  readonly activated: number[] = [];

  apply(stdout: string): void {
    for (const m of parseLines(stdout)) {
      if (m.stream !== 'pipeline_stages') continue;
      if (m.type === 'RECORD') this.rows.set((m.record as { id: string }).id, m.version as number);
      if (m.type === 'ACTIVATE_VERSION') {
        const version = m.version as number;
        this.activated.push(version);
        for (const [id, v] of this.rows) if (v < version) this.rows.delete(id);
      }
    }
  }
}

it("a machine clock that went back a day between syncs: the next sync's version still grows, and the target drops a removed stage", async () => {
  const account = emu.control.createAccount({ name: 'Versions' });
  emu.control.seed(account.id, { contacts: 3 });
  const config = writeJson(dir, 'config.json', { api_key: emu.control.createKey(account.id).key, base_url: emu.url });
  const shifter = clockShifter();
  const table = new VersionedTable();
  let state: unknown;
  const sync = async (machineShiftMs: number): Promise<void> => {
    const run = await runCli(TAP_BIN, ['--config', config, ...(state === undefined ? [] : ['--state', writeJson(dir, `state-${n++}.json`, state)])], {
      env: { NODE_OPTIONS: `--import=${shifter}`, MACHINE_CLOCK_SHIFT_MS: String(machineShiftMs) },
    });
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    expect(protocolCheck('singer', run.stdout).errors).toEqual([]);
    table.apply(run.stdout);
    state = parseLines(run.stdout).findLast((m) => m.type === 'STATE')?.value;
  };

  await sync(0);
  const [removed] = emu.control.pipelineStages(account.id);
  emu.control.removePipelineStage(account.id, removed?.id as string);
  emu.control.advanceClock(60_000);
  await sync(-DAY);

  const [first, second] = [table.activated[0] as number, table.activated.at(-1) as number];
  expect(second).toBeGreaterThan(first);
  expect([...table.rows.keys()].sort()).toEqual(emu.control.pipelineStages(account.id).map((s) => s.id).sort());
});

it("the version is the service's now when the stream's read began, whatever the machine's clock says", async () => {
  const account = emu.control.createAccount({ name: 'Service clock' });
  const config = writeJson(dir, 'config-2.json', { api_key: emu.control.createKey(account.id).key, base_url: emu.url });
  const run = await runCli(TAP_BIN, ['--config', config], { env: { NODE_OPTIONS: `--import=${clockShifter()}`, MACHINE_CLOCK_SHIFT_MS: String(365 * DAY) } });
  expect(run.code, run.stderr.slice(-1500)).toBe(0);
  const after = Date.parse(emu.control.now());
  const versions = parseLines(run.stdout).flatMap((m) => (m.stream === 'pipeline_stages' && (m.type === 'ACTIVATE_VERSION' || m.type === 'RECORD') ? [m.version] : []));
  expect(versions.length).toBeGreaterThan(2);
  expect(new Set(versions).size).toBe(1);
  expect(versions[0]).toBeLessThanOrEqual(after);
  expect(versions[0]).toBeGreaterThan(after - DAY);
});

it("the service's clock went back between syncs: the next sync's version still grows, and the target drops a stage removed meanwhile", async () => {
  const account = emu.control.createAccount({ name: 'Service clock back' });
  emu.control.seed(account.id, { contacts: 3 });
  const config = writeJson(dir, 'config-3.json', { api_key: emu.control.createKey(account.id).key, base_url: emu.url });
  const table = new VersionedTable();
  let state: unknown;
  const sync = async (): Promise<void> => {
    const run = await runCli(TAP_BIN, ['--config', config, ...(state === undefined ? [] : ['--state', writeJson(dir, `state-${n++}.json`, state)])]);
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    expect(protocolCheck('singer', run.stdout).errors).toEqual([]);
    table.apply(run.stdout);
    state = parseLines(run.stdout).findLast((m) => m.type === 'STATE')?.value;
  };

  await sync();
  // A failover to a replica two hours behind: a stage is removed while the service's clock is back.
  emu.control.rewindClock(2 * 3_600_000);
  const [removed] = emu.control.pipelineStages(account.id);
  emu.control.removePipelineStage(account.id, removed?.id as string);
  emu.control.advanceClock(60_000);
  await sync();

  expect(table.activated.at(-1)).toBeGreaterThan(table.activated[0] as number);
  expect([...table.rows.keys()].sort()).toEqual(emu.control.pipelineStages(account.id).map((s) => s.id).sort());
});
