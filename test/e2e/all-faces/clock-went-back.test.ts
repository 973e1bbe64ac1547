/**
 * The service's clock goes back (a failover to a lagging replica, a clock
 * correction) by more than its 5-minute look-back, and records are changed
 * while it is back, well before the next sync: sync 1 saves W1; the clock
 * goes back two hours; contacts are changed and deleted; the clock moves on ten
 * minutes; sync 2 reads from W1 (minus the look-back) and gets none of
 * them, and its complete read reports W2, ten minutes after the changes and
 * earlier than W1. Saving W2 alone would leave the changes behind it for
 * good (sync 3 reads from W2 minus 5 minutes). The stream is read again in
 * full in sync 2: the copy equals the service after it, and stays equal.
 * Through the real executables of every face against the emulator.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Dump } from 'data-read-emulator';
import { withTempDir } from '../../helpers/suite.js';
import { MemoryDestination, normalizeDump } from '../../helpers/destination.js';
import { airbyteSyncs, replicateSyncs, tapSyncs, type Sync } from '../../helpers/face-syncs.js';
import { dumpLists, emulatorAccount, replicaAsDump, type Account } from '../../helpers/emulator-runs.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

let dir: string;
withTempDir('clock-went-back-', (d) => (dir = d));

const CURSOR: Record<string, string> = { contacts: 'updated_at', conversations: 'updated_at', stage_events: 'created_at', deletions: 'deleted_at' };

/**
 * Per list, the ids whose row in `copy` is missing or differs from the service's, and those the service has not:
 * a short answer where a diff of whole lists is long. While its clock is back the emulator serves no record stamped
 * after its now (`hiddenAfter`): the copy keeps those from the sync before, and they are not counted.
 */
function stale(copy: Record<string, readonly unknown[]>, dump: Record<string, readonly unknown[]>, hiddenAfter?: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [list, rows] of Object.entries(dump)) {
    const have = new Map((copy[list] ?? []).map((r) => [(r as { id: string }).id, r as Record<string, unknown>]));
    const ids = rows.filter((r) => JSON.stringify(have.get((r as { id: string }).id)) !== JSON.stringify(r)).map((r) => (r as { id: string }).id);
    if (ids.length > 0) out[list] = ids;
    const known = new Set(rows.map((r) => (r as { id: string }).id));
    const field = CURSOR[list];
    const hidden = (r: Record<string, unknown>) => hiddenAfter !== undefined && field !== undefined && Date.parse(String(r[field])) > Date.parse(hiddenAfter);
    const extra = [...have].filter(([id, r]) => !known.has(id) && !hidden(r)).map(([id]) => id);
    if (extra.length > 0) out[`${list} (not in the service)`] = extra;
  }
  return out;
}

/** Compares the copy with the service's dump: no row missing or stale, none the service has not (but those stamped after `hiddenAfter`, when given; exactly equal without it). */
type Check = (dump: Dump, when: string, hiddenAfter?: string) => void;

/** The sequence, the same for every face. */
async function changesWhileBack(account: Account, sync: Sync, expectEqualsDump: Check): Promise<void> {
  const control = account.emulator.control;
  const first = await sync();
  const saved = first.watermarks.contacts as string;
  expect(saved).toMatch(/^\d{4}-/);
  expectEqualsDump(account.dump(), 'after the first sync');

  control.rewindClock(2 * HOUR);
  const ids = account.dump().contacts.slice(0, 7).map((c) => c.id);
  account.mutate({ op: 'update_contacts', ids: ids.slice(0, 5) });
  account.mutate({ op: 'delete_contacts', ids: ids.slice(5) });
  control.advanceClock(10 * MINUTE);
  const reported = control.now();
  expect(Date.parse(reported)).toBeLessThan(Date.parse(saved) - 5 * MINUTE);

  const back = await sync();
  expectEqualsDump(account.dump(), 'after the sync that met the clock gone back', reported);
  expect(back.warnings.filter((w) => w.startsWith('contacts: the service reported sync_watermark'))).toEqual([
    `contacts: the service reported sync_watermark ${reported}, earlier than the saved ${saved}: ` +
      "its clock went back (a failover or a clock correction), or the state was edited or copied by hand with a watermark ahead of the service's. " +
      'Records stamped in between may lie behind both, so the stream is read again in full in this sync (its whole history); ' +
      'records may repeat, none are missed.',
  ]);
  // The full read's own watermark is saved: the next sync goes on from there.
  expect(back.watermarks.contacts).toBe(reported);

  // The clock catches up with the instant it had: the emulator serves every record again.
  control.advanceClock(2 * HOUR);
  const after = await sync();
  expect(after.warnings.filter((w) => w.includes('earlier than the saved'))).toEqual([]);
  expectEqualsDump(account.dump(), 'after the next sync');
}

describe('the service clock goes back by more than the look-back, changes stamped meanwhile', () => {
  it('Airbyte read: the stream is read again in full in that sync; the destination equals the dump', async () => {
    const account = await emulatorAccount(300, 41);
    try {
      const config = account.config(dir, { page_size: 200 });
      const replica = new MemoryDestination();
      await changesWhileBack(
        account,
        airbyteSyncs(dir, config, replica),
        (dump, when, hiddenAfter) => {
          const expected = normalizeDump(dump) as unknown as Record<string, unknown[]>;
          expect(stale(replica.toDump() as unknown as Record<string, unknown[]>, expected, hiddenAfter), when).toEqual({});
          if (hiddenAfter === undefined) expect(replica.toDump(), when).toEqual(expected);
        },
      );
    } finally {
      await account.emulator.close();
    }
  });

  it('Airbyte read with deletions_as_tombstones: the deletion log is read again in full too; tombstones leave the destination equal to the dump', async () => {
    const account = await emulatorAccount(300, 44);
    try {
      const config = account.config(dir, { page_size: 200, deletions_as_tombstones: true });
      const replica = new MemoryDestination('tombstones');
      await changesWhileBack(
        account,
        airbyteSyncs(dir, config, replica),
        (dump, when, hiddenAfter) => {
          const expected = normalizeDump(dump) as unknown as Record<string, unknown[]>;
          const copy = replica.toDump() as unknown as Record<string, unknown[]>;
          expect(stale({ contacts: copy.contacts ?? [], conversations: copy.conversations ?? [] }, { contacts: expected.contacts ?? [], conversations: expected.conversations ?? [] }, hiddenAfter), when).toEqual({});
        },
      );
    } finally {
      await account.emulator.close();
    }
  });

  it('Singer tap: the stream is read again in full in that sync; the target equals the dump', async () => {
    const account = await emulatorAccount(300, 42);
    try {
      const config = account.config(dir, { page_size: 200 });
      const replica = new MemoryDestination();
      await changesWhileBack(
        account,
        tapSyncs(dir, config, replica),
        (dump, when, hiddenAfter) => {
          for (const stream of ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages'] as const) {
            expect(stale({ [stream]: replica.rows(stream) }, { [stream]: dump[stream] }, hiddenAfter), when).toEqual({});
            if (hiddenAfter === undefined) expect({ stream, rows: replica.rows(stream) }, when).toEqual({ stream, rows: dump[stream] });
          }
        },
      );
    } finally {
      await account.emulator.close();
    }
  });

  it('replicate into SQLite: the stream is read again in full in that run; the replica equals the dump', async () => {
    const account = await emulatorAccount(300, 43);
    try {
      const config = account.config(dir);
      const db = join(dir, 'clock-went-back.db');
      await changesWhileBack(
        account,
        replicateSyncs(config, db),
        (dump, when, hiddenAfter) => {
          expect(stale(replicaAsDump(db), dumpLists(dump), hiddenAfter), when).toEqual({});
          if (hiddenAfter === undefined) expect(replicaAsDump(db), when).toStrictEqual(dumpLists(dump));
        },
      );
    } finally {
      await account.emulator.close();
    }
  });
});
