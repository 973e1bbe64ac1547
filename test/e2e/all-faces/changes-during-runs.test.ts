/**
 * Changes made while the runs read (records changed between pages, moved
 * past the read's watermark, deleted, created), in every face: three runs,
 * each from the state of the one before, then one quiet run. The copy
 * equals the service: an Airbyte append+dedup destination applying the
 * deletion log, or the tombstones; a Singer target; the replica.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator, type Mutation } from 'data-read-emulator';
import { ROOT, SOURCE_BIN, TAP_BIN, runCli, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';
import { MemoryDestination, airbyteStateFile, type StreamStates } from '../../helpers/destination.js';
import { LIMITS_OUT_OF_REACH, dumpLists, replicaAsDump, replicate } from '../../helpers/emulator-runs.js';

const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');
let emu: Emulator;
let dir: string;

beforeAll(async () => {
  emu = await startEmulator({ port: 0, host: '127.0.0.1', seed: 17, limits: LIMITS_OUT_OF_REACH });
  emu.control.setLatency(3);
  dir = tempDir('changes-during-');
});
afterAll(async () => {
  await emu.close();
});

const ROUND: Mutation[] = [
  { op: 'update_contacts', count: 3 },
  { op: 'update_conversations', count: 2 },
  { op: 'move_contacts', count: 2 },
  { op: 'create_contacts', count: 1, withConversation: true },
  { op: 'create_conversations', count: 1 },
  { op: 'delete_contacts', count: 1 },
  { op: 'delete_conversations', count: 1 },
];

function account(name: string, contacts: number): { id: string; key: string } {
  const acc = emu.control.createAccount({ name });
  emu.control.seed(acc.id, { contacts });
  return { id: acc.id, key: emu.control.createKey(acc.id).key };
}

/**
 * Run `run` while changing the account: a round of changes every 15 ms, provided the emulator received a request
 * since the last round, so that the changes fall between the run's pages. Without that proviso a run slowed by a
 * loaded machine met more rounds for the same pages, read the changed records as more pages, and took longer still.
 */
async function whileChanging<T>(accountId: string, run: () => Promise<T>): Promise<T> {
  let done = false;
  const changing = (async () => {
    let received = emu.control.stats().total;
    while (!done) {
      const now = emu.control.stats().total;
      if (now > received) {
        received = now;
        for (const m of ROUND) emu.control.mutate(accountId, m);
      }
      await new Promise((r) => setTimeout(r, 15));
    }
  })();
  try {
    return await run();
  } finally {
    done = true;
    await changing;
  }
}

/**
 * The guard of each connector run (runCli's default is 60 s), under the cases' own 180 s: a run that reads while the
 * account changes every 15 ms took past 60 s on a 2-core machine at a load of 15-30, was SIGKILLed by the guard, and
 * the case failed on its exit status (null) well before its own timeout.
 */
const RUN_GUARD_MS = 120_000;

let n = 0;
const file = (value: unknown) => writeJson(dir, `f-${n++}.json`, value);

describe('changes while runs read', () => {
  for (const deletes of ['deletions', 'tombstones'] as const) {
    it(`Airbyte read, chained (${deletes})`, { timeout: 180_000 }, async () => {
      const acc = account(`ab-${deletes}`, 300);
      const config = file({ api_key: acc.key, base_url: emu.url, page_size: 10, deletions_as_tombstones: deletes === 'tombstones' });
      const dest = new MemoryDestination(deletes);
      let states: StreamStates = new Map();
      const read = (): Promise<CliResult> =>
        runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', CATALOG, ...(states.size > 0 ? ['--state', file(airbyteStateFile(states))] : [])], { timeoutMs: RUN_GUARD_MS });
      for (let round = 0; round < 3; round++) {
        const r = await whileChanging(acc.id, read);
        expect(r.code, r.stderr).toBe(0);
        states = dest.applyAirbyte(r.stdout);
      }
      const last = await read();
      expect(last.code, last.stderr).toBe(0);
      dest.applyAirbyte(last.stdout);
      const diff = dest.diff(emu.control.dump(acc.id));
      expect(diff).toEqual({ missing: 0, stale: 0, extra: 0, examples: [] });
    });
  }

  it('tap, chained', { timeout: 180_000 }, async () => {
    const acc = account('tap', 300);
    const config = file({ api_key: acc.key, base_url: emu.url, page_size: 10 });
    const dest = new MemoryDestination('deletions');
    let state: unknown;
    const sync = (): Promise<CliResult> => runCli(TAP_BIN, ['--config', config, ...(state === undefined ? [] : ['--state', file(state)])], { timeoutMs: RUN_GUARD_MS });
    for (let round = 0; round < 3; round++) {
      const r = await whileChanging(acc.id, sync);
      expect(r.code, r.stderr).toBe(0);
      state = dest.applySinger(r.stdout) ?? state;
    }
    const last = await sync();
    expect(last.code, last.stderr).toBe(0);
    dest.applySinger(last.stdout);
    expect(dest.diff(emu.control.dump(acc.id))).toEqual({ missing: 0, stale: 0, extra: 0, examples: [] });
  });

  it('replicate, chained', { timeout: 180_000 }, async () => {
    const acc = account('replica', 300);
    const config = file({ api_key: acc.key, base_url: emu.url, page_size: 10 });
    const db = join(dir, 'replica.db');
    for (let round = 0; round < 3; round++) {
      const r = await whileChanging(acc.id, () => replicate(config, db));
      expect(r.code, r.stderr).toBe(0);
    }
    const last = await replicate(config, db);
    expect(last.code, last.stderr).toBe(0);
    expect(replicaAsDump(db)).toStrictEqual(dumpLists(emu.control.dump(acc.id)));
  });
});
