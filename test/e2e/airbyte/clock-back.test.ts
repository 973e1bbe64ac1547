/**
 * The service's clock goes back (a failover to a lagging replica, a clock
 * fix): its watermark is earlier than the saved one. Through the real
 * executables of all three faces against the emulator: a full sync, the
 * clock moves back two hours, changes are made, a sync runs (it says so, reads
 * each stream again in full and saves that read's earlier watermark), the
 * clock is put right, another sync runs, and the destination equals the
 * emulator's dump. Keeping the later watermark would skip for good every
 * change stamped in between (test/e2e/all-faces/clock-went-back.test.ts: the
 * changes stamped well before the sync that meets the clock gone back).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withTempDir } from '../../helpers/suite.js';
import type { Dump } from 'data-read-emulator';
import { MemoryDestination, normalizeDump } from '../../helpers/destination.js';
import { airbyteSyncs, replicateSyncs, tapSyncs, type Sync } from '../../helpers/face-syncs.js';
import { dumpLists, emulatorAccount, replicaAsDump, type Account } from '../../helpers/emulator-runs.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const INCREMENTAL = ['contacts', 'conversations', 'stage_events', 'deletions'] as const;

let dir: string;
withTempDir('clock-back-', (d) => (dir = d));

/** Changes made while the clock is back, to records last changed well before (as a service would meet them). */
function changeWhileBack(account: Account): void {
  const now = Date.parse(account.emulator.control.now());
  const dump = account.dump();
  const old = (instant: string | null): boolean => instant !== null && Date.parse(instant) < now - DAY;
  const oldConversations = dump.conversations.filter((c) => old(c.updated_at));
  const conversationsOf = (contactId: string) => dump.conversations.filter((c) => c.contact_id === contactId);
  const oldContacts = dump.contacts.filter((c) => old(c.updated_at) && conversationsOf(c.id).every((v) => old(v.updated_at)));
  account.mutate({ op: 'update_contacts', ids: oldContacts.slice(0, 10).map((c) => c.id) });
  account.mutate({ op: 'update_conversations', ids: oldConversations.slice(0, 6).map((c) => c.id), close: true, outcome: false });
  account.mutate({ op: 'move_contacts', ids: oldContacts.slice(10, 14).map((c) => c.id) });
  account.mutate({ op: 'create_contacts', count: 6, withConversation: true });
  account.mutate({ op: 'delete_contacts', ids: oldContacts.slice(-3).map((c) => c.id) });
}

/** The scenario, the same for every face; `sync` runs one sync and returns its warnings and each stream's watermark. */
async function clockGoesBack(
  account: Account,
  sync: Sync,
  expectEqualsDump: (dump: Dump) => void,
): Promise<void> {
  const first = await sync();
  expect(first.warnings.filter((w) => w.includes('earlier than the saved'))).toEqual([]);
  const before = first.watermarks;

  account.emulator.control.rewindClock(2 * HOUR);
  changeWhileBack(account);
  const back = await sync();
  for (const stream of INCREMENTAL) {
    const saved = before[stream] as string;
    const reported = back.watermarks[stream] as string;
    expect(Date.parse(reported), stream).toBeLessThan(Date.parse(saved));
    const warning = back.warnings.filter((w) => w.startsWith(`${stream}: the service reported sync_watermark`));
    expect(warning, stream).toEqual([
      `${stream}: the service reported sync_watermark ${reported}, earlier than the saved ${saved}: ` +
        "its clock went back (a failover or a clock correction), or the state was edited or copied by hand with a watermark ahead of the service's. " +
        'Records stamped in between may lie behind both, so the stream is read again in full in this sync (its whole history); ' +
        'records may repeat, none are missed.',
    ]);
  }

  account.emulator.control.advanceClock(2 * HOUR + 60_000);
  account.mutate({ op: 'update_contacts', count: 3 });
  const after = await sync();
  expect(after.warnings.filter((w) => w.includes('earlier than the saved'))).toEqual([]);
  expectEqualsDump(account.dump());
}

describe('the service clock goes back', () => {
  it('Airbyte read: a WARN, a full read, its earlier watermark saved; the next syncs leave the destination equal to the dump', async () => {
    const account = await emulatorAccount(300, 31);
    try {
      const config = account.config(dir, { page_size: 200 });
      const replica = new MemoryDestination();
      await clockGoesBack(
        account,
        airbyteSyncs(dir, config, replica),
        (dump) => expect(replica.toDump()).toEqual(normalizeDump(dump)),
      );
    } finally {
      await account.emulator.close();
    }
  });

  it('Singer tap: a WARNING, a full read, the bookmark takes its earlier watermark; the target ends equal to the dump', async () => {
    const account = await emulatorAccount(300, 32);
    try {
      const config = account.config(dir, { page_size: 200 });
      const replica = new MemoryDestination();
      await clockGoesBack(
        account,
        tapSyncs(dir, config, replica),
        (dump) => {
          for (const stream of ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages'] as const) {
            expect({ stream, rows: replica.rows(stream) }).toEqual({ stream, rows: dump[stream] });
          }
        },
      );
    } finally {
      await account.emulator.close();
    }
  });

  it('replicate: a WARN, a full read, the replica saves its earlier watermark, and ends equal to the dump', async () => {
    const account = await emulatorAccount(300, 33);
    try {
      const config = account.config(dir);
      const db = join(dir, 'clock-back.db');
      await clockGoesBack(
        account,
        replicateSyncs(config, db),
        (dump) => expect(replicaAsDump(db)).toStrictEqual(dumpLists(dump)),
      );
    } finally {
      await account.emulator.close();
    }
  });
});
