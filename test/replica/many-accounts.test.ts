/**
 * A replica of many accounts (a config with `accounts`): each table keyed by
 * (account, id), so the same id in two accounts is two rows, and what one
 * account's checkpoint does (a deletion, a full table replaced, a full read
 * that removes what it did not return) touches that account's rows alone.
 * The emulator never gives two accounts the same id: these checkpoints do.
 */
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { replicaRecords } from '../../src/replica/records.js';
import { ReplicaStore, tableCheckpoint } from '../../src/replica/store.js';
import { builtInSchema, type JsonSchema } from '../../src/schemas/json-schema.js';
import { STREAMS } from '../../src/streams.js';
import { contact, deletion, iso, type Rec } from '../helpers/fake-api.js';
import { readDatabase } from '../helpers/sqlite.js';
import { withTempDatabases } from '../helpers/suite.js';

const newDb = withTempDatabases('replica-accounts-');

function checkpoint(store: ReplicaStore, stream: string, account: string, records: Rec[], more: { fullRead?: { first: boolean; last: boolean } } = {}) {
  const stamped = records.map((r) => ({ ...r, account }));
  return tableCheckpoint(store.specOf(stream), {
    stream,
    account,
    records: stamped,
    state: JSON.stringify({ sync_watermark: iso(9) }),
    fullRead: more.fullRead,
  });
}

const rowsOf = (path: string, stream: string) =>
  (replicaRecords(path).get(stream) ?? []).map((r) => `${String(r.account)}/${String(r.id)}`).sort();

describe('a replica of many accounts', () => {
  it('keeps the same id of two accounts as two rows; a deletion of one account removes its row only', () => {
    const path = newDb();
    const store = new ReplicaStore(path, undefined, { accountKey: true });
    store.write(checkpoint(store, 'contacts', 'a', [contact('c1', 1), contact('c2', 1)]));
    store.write(checkpoint(store, 'contacts', 'b', [contact('c1', 1), contact('c2', 1)]));
    expect(rowsOf(path, 'contacts')).toEqual(['a/c1', 'a/c2', 'b/c1', 'b/c2']);
    const result = store.write(checkpoint(store, 'deletions', 'a', [deletion('d1', 'contact', 'c1', 5)]));
    expect(result.deletedRows).toBe(1);
    expect(rowsOf(path, 'contacts')).toEqual(['a/c2', 'b/c1', 'b/c2']);
    // B's c1, written again with a cursor older than A's deletion, is B's: the deletion of A does not skip it.
    expect(store.write(checkpoint(store, 'contacts', 'b', [contact('c1', 2)])).upserted).toBe(1);
    store.close();
  });

  it('refuses a record of another account than its checkpoint (as the stores do), and a checkpoint that names none, writing nothing of them', () => {
    const path = newDb();
    const store = new ReplicaStore(path, undefined, { accountKey: true });
    store.write(checkpoint(store, 'contacts', 'a', [contact('c1', 1)]));
    const stray = tableCheckpoint(store.specOf('contacts'), {
      stream: 'contacts',
      account: 'a',
      records: [
        { ...contact('c2', 2), account: 'a' },
        { ...contact('c3', 2), account: 'b' },
      ],
      state: JSON.stringify({ sync_watermark: iso(2) }),
    });
    expect(() => store.write(stray)).toThrow(/a record of the checkpoint of account "a" has account "b", so nothing of that checkpoint is written/);
    expect(() => store.write({ ...checkpoint(store, 'stage_events', 'a', [{ id: 'e1', contact_id: 'c1', created_at: iso(1) }]), account: undefined })).toThrow(/names no account/);
    // The contacts of that account stop there; its other streams go on.
    expect(() => store.write(checkpoint(store, 'contacts', 'a', [contact('c4', 3)]))).toThrow(/an earlier checkpoint of contacts of account "a" could not be written \(a record of the checkpoint of account "a" has account "b"\)/);
    store.write(checkpoint(store, 'stage_events', 'a', [{ id: 'e2', contact_id: 'c1', created_at: iso(2) }]));
    expect(rowsOf(path, 'contacts')).toEqual(['a/c1']);
    expect(rowsOf(path, 'stage_events')).toEqual(['a/e2']);
    store.close();
  });

  it("a checkpoint refused for one account stops that account's stream alone: the others' rows and states written, its own state kept as last committed", () => {
    const path = newDb();
    const store = new ReplicaStore(path, undefined, { accountKey: true });
    /** A checkpoint of contacts of `account`, with its state at `minute`. */
    const own = (minute: number): string => JSON.stringify({ sync_watermark: iso(minute) });
    const of = (account: string, records: Rec[], minute: number) => ({ ...checkpoint(store, 'contacts', account, records), state: own(minute) });
    store.write(of('a', [contact('c1', 1)], 1));
    // A's next checkpoint holds a record without its id: refused, nothing of it written, its state (minute 2) not saved.
    const keyless = tableCheckpoint(store.specOf('contacts'), { stream: 'contacts', account: 'a', records: [{ ...contact('c2', 2), account: 'a' }, { name: 'no id', account: 'a' }], state: own(2) });
    expect(() => store.write(keyless)).toThrow(/record 2 of the checkpoint has no account or id/);
    // B's checkpoints of the same stream: written, A's state kept as last committed.
    store.write(of('b', [contact('c1', 3)], 3));
    store.write(of('b', [contact('c2', 4)], 4));
    expect(() => store.write(of('a', [contact('c3', 5)], 5))).toThrow(/an earlier checkpoint of contacts of account "a" could not be written \(record 2 of the checkpoint has no account or id\)/);
    // A's other streams go on.
    store.write(checkpoint(store, 'stage_events', 'a', [{ id: 'e1', contact_id: 'c1', created_at: iso(1) }]));
    expect(rowsOf(path, 'contacts')).toEqual(['a/c1', 'b/c1', 'b/c2']);
    expect(rowsOf(path, 'stage_events')).toEqual(['a/e1']);
    expect(store.loadStates().get('contacts')).toEqual({ accounts: { a: { sync_watermark: iso(1) }, b: { sync_watermark: iso(4) } } });
    // An account that never committed the stream is left out of its state (its next run reads it from the start).
    const stray = tableCheckpoint(store.specOf('stage_events'), { stream: 'stage_events', account: 'b', records: [{ contact_id: 'c1', created_at: iso(2), account: 'b' }], state: own(2) });
    expect(() => store.write(stray)).toThrow(/has no account or id/);
    store.write({ ...checkpoint(store, 'stage_events', 'a', [{ id: 'e2', contact_id: 'c1', created_at: iso(3) }]), state: own(3) });
    expect(rowsOf(path, 'stage_events')).toEqual(['a/e1', 'a/e2']);
    expect(store.loadStates().get('stage_events')).toEqual({ accounts: { a: { sync_watermark: iso(3) } } });
    store.close();
  });

  it("replaces one account's full table and sweeps one account's full read, the other account's rows untouched", () => {
    const path = newDb();
    const store = new ReplicaStore(path, undefined, { accountKey: true });
    const stage = (id: string) => ({ id, name: id, position: 1 });
    store.write(checkpoint(store, 'pipeline_stages', 'a', [stage('s1'), stage('s2')], { fullRead: { first: true, last: true } }));
    store.write(checkpoint(store, 'pipeline_stages', 'b', [stage('s1'), stage('s2')], { fullRead: { first: true, last: true } }));
    store.write(checkpoint(store, 'pipeline_stages', 'a', [stage('s1')], { fullRead: { first: true, last: true } }));
    expect(rowsOf(path, 'pipeline_stages')).toEqual(['a/s1', 'b/s1', 'b/s2']);

    store.write(checkpoint(store, 'contacts', 'a', [contact('c1', 1), contact('c2', 1)]));
    store.write(checkpoint(store, 'contacts', 'b', [contact('c1', 1), contact('c2', 1)]));
    // A full read of A that returns c2 alone: A's c1 goes, B's rows stay.
    const swept = store.write(checkpoint(store, 'contacts', 'a', [contact('c2', 3)], { fullRead: { first: true, last: true } }));
    expect(swept.sweptRows).toBe(1);
    expect(rowsOf(path, 'contacts')).toEqual(['a/c2', 'b/c1', 'b/c2']);
    store.close();
  });

  it('moves a field the schema now declares from _extra into its new column, for every account (more rows than one batch)', () => {
    const path = newDb();
    const first = new ReplicaStore(path, undefined, { accountKey: true });
    // The same 600 ids in two accounts, each with a field no column holds yet (kept in _extra).
    const records = Array.from({ length: 600 }, (_, i) => contact(`c${String(i).padStart(4, '0')}`, 1, { score_v2: i }));
    first.write(checkpoint(first, 'contacts', 'a', records));
    first.write(checkpoint(first, 'contacts', 'b', records.map((r) => ({ ...r, score_v2: Number(r.score_v2) + 1000 }))));
    first.close();
    const contacts = STREAMS.find((s) => s.name === 'contacts');
    if (contacts === undefined) throw new Error('no contacts stream');
    const base = builtInSchema(contacts);
    const schema: JsonSchema = { ...base, properties: { ...(base.properties as JsonSchema), score_v2: { type: ['null', 'integer'] } } };
    const second = new ReplicaStore(path, undefined, { accountKey: true, schemas: new Map([['contacts', schema]]) });
    expect(second.migrated).toEqual(['contacts']);
    const moved = second.db.prepare('SELECT account, count(*) AS n, min(score_v2) AS lo, max(score_v2) AS hi FROM contacts WHERE _extra IS NULL GROUP BY account ORDER BY account').all();
    second.close();
    expect(moved.map((r) => [r.account, Number(r.n), Number(r.lo), Number(r.hi)])).toEqual([
      ['a', 600, 0, 599],
      ['b', 600, 1000, 1599],
    ]);
  });

  it("splits the one state row per stream of a replica an earlier version wrote (every account's state in it) into its accounts' rows at open", () => {
    const path = newDb();
    const first = new ReplicaStore(path, undefined, { accountKey: true });
    first.write({ ...checkpoint(first, 'contacts', 'a', [contact('c1', 1)]), state: JSON.stringify({ sync_watermark: iso(1) }) });
    first.close();
    const joined = JSON.stringify({ accounts: { a: { sync_watermark: iso(1) }, b: { sync_watermark: iso(2) } } });
    const db = new DatabaseSync(path);
    db.prepare("UPDATE _replica_state SET stream = 'contacts', state = ?, committed_at = '2026-01-01T00:00:00.000Z' WHERE stream = 'contacts/a'").run(joined);
    db.close();
    const store = new ReplicaStore(path, undefined, { accountKey: true });
    expect(store.loadStates().get('contacts')).toEqual(JSON.parse(joined));
    store.write(checkpoint(store, 'contacts', 'b', [contact('c2', 3)]));
    store.close();
    expect(readDatabase(path, (d) => d.prepare('SELECT stream, state, committed_at FROM _replica_state ORDER BY stream').all().map((r) => ({ ...r })))).toEqual([
      // Committed when the joined row was; b's moved on with its checkpoint.
      { stream: 'contacts/a', state: JSON.stringify({ sync_watermark: iso(1) }), committed_at: '2026-01-01T00:00:00.000Z' },
      { stream: 'contacts/b', state: JSON.stringify({ sync_watermark: iso(9) }), committed_at: expect.not.stringMatching(/^2026-01-01T00:00:00/) },
    ]);
  });
});
