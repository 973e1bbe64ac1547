import { describe, expect, it } from 'vitest';
import { withTempDatabases } from '../helpers/suite.js';
import { ConfigSchema } from '../../src/config/config.js';
import { runSync } from '../../src/engine/sync.js';
import { ApiError } from '../../src/client/api-error.js';
import type { LogLevel } from '../../src/engine/sync-sink.js';
import { REPLICA_STREAMS } from '../../src/replica/command.js';
import { replicaRecords, replicaStates } from '../../src/replica/records.js';
import { ReplicaSink, type CommitResult, type StoreCheckpoint } from '../../src/replica/sink.js';
import { ReplicaStore } from '../../src/replica/store.js';
import { ReplicaWriter, SqliteStore } from '../../src/replica/writer.js';
import { FakeApi, contact, conversation, deletion, iso, type Rec } from '../helpers/fake-api.js';

const config = ConfigSchema.parse({ api_key: 'sdr_live_test', base_url: 'http://127.0.0.1:1', page_size: 2 });
const newDb = withTempDatabases('replica-unit-', 'replica.db');

/** The file as the replica's store, `written` told after each checkpoint it took. */
class WatchedStore extends SqliteStore {
  readonly #written: (checkpoint: StoreCheckpoint) => void;

  constructor(file: ReplicaStore, written: (checkpoint: StoreCheckpoint) => void) {
    super(file);
    this.#written = written;
  }

  override write(checkpoint: StoreCheckpoint, committed?: (result: CommitResult) => void): void {
    super.write(checkpoint, committed);
    this.#written(checkpoint);
  }
}

/** @param written called after each checkpoint the store took (e.g. to release a held page) */
async function sync(dbPath: string, service: FakeApi, written: (checkpoint: StoreCheckpoint) => void = () => undefined) {
  const store = new ReplicaStore(dbPath);
  const logs: { level: LogLevel; message: string }[] = [];
  const sink = new ReplicaSink(new WatchedStore(store, written), (level, message) => logs.push({ level, message }));
  try {
    const result = await runSync({ config, client: service, sink, streams: REPLICA_STREAMS, states: store.loadStates() });
    return { result, logs, sink, unknown: sink.unknownTypesWarning() };
  } finally {
    store.close();
  }
}

function service(lists: { contacts?: Rec[]; conversations?: Rec[]; stage_events?: Rec[]; deletions?: Rec[]; pipeline_stages?: Rec[] }): FakeApi {
  const s = new FakeApi();
  s.set('/v1/contacts', lists.contacts ?? []);
  s.set('/v1/conversations', lists.conversations ?? []);
  s.set('/v1/stage_events', lists.stage_events ?? []);
  s.set('/v1/deletions', lists.deletions ?? []);
  if (lists.pipeline_stages) s.set('/v1/pipeline_stages', lists.pipeline_stages);
  return s;
}

const byId = (records: Rec[] | undefined) => [...(records ?? [])].sort((a, b) => String(a.id).localeCompare(String(b.id)));

describe('ReplicaSink + runSync', () => {
  it('replicates every stream, commits the state with the rows, and reads it back at the next run', async () => {
    const db = newDb();
    const contacts = [contact('c1', 1), contact('c2', 2), contact('c3', 3, { custom: { x: 1 } })];
    const events = [{ id: 'e1', contact_id: 'c1', created_at: iso(1), from_stage_id: null, to_stage_id: 's1' }];
    const s = service({ contacts, conversations: [conversation('v1', 1)], stage_events: events, pipeline_stages: [{ id: 's1', name: 'New' }] });
    const { result } = await sync(db, s);
    expect(result.failures).toEqual([]);
    const replica = replicaRecords(db);
    expect(byId(replica.get('contacts'))).toStrictEqual(contacts);
    expect(replica.get('stage_events')).toStrictEqual(events);
    expect(replica.get('pipeline_stages')).toStrictEqual([{ id: 's1', name: 'New' }]);
    expect(replicaStates(db).get('contacts')).toEqual({ sync_watermark: s.watermark });

    s.calls.length = 0;
    await sync(db, s);
    expect(s.calls.find((c) => c.path === '/v1/contacts')?.query.updated_since).toBe(s.watermark);
  });

  it('applies deletions to contacts and conversations, but not to a row changed after the deletion', async () => {
    const db = newDb();
    await sync(db, service({ contacts: [contact('c1', 1), contact('c2', 2), contact('c3', 3)], conversations: [conversation('v1', 1)] }));
    const s = service({
      contacts: [contact('c3', 21)], // changed more than 5 minutes after its deletion record: it came back
      deletions: [deletion('d1', 'contact', 'c1', 10), deletion('d2', 'conversation', 'v1', 10), deletion('d3', 'contact', 'c3', 15)],
    });
    const { result } = await sync(db, s);
    expect(result.failures).toEqual([]);
    const replica = replicaRecords(db);
    expect(replica.get('contacts')?.map((c) => c.id)).toEqual(['c2', 'c3']);
    expect(replica.get('conversations')).toEqual([]);
    expect(replica.get('deletions')).toHaveLength(3);
  });

  it('compares a row and its deletion, 5 minutes of look-back apart, to the microsecond, as PostgreSQL and DuckDB do', async () => {
    const db = newDb();
    await sync(db, service({ contacts: [contact('c1', 1), contact('c2', 1)] }));
    // Changed 5 minutes and 0.5 ms after its deletion (it came back), and 0.5 ms less than 5 minutes after the other's.
    const half = (minute: number): string => iso(minute).replace('.000Z', '.000500Z');
    const s = service({
      contacts: [contact('c1', 25, { updated_at: half(25) }), contact('c2', 25, { updated_at: half(25) })],
      deletions: [deletion('d1', 'contact', 'c1', 20), { ...deletion('d2', 'contact', 'c2', 20), deleted_at: iso(20).replace('.000Z', '.001Z') }],
    });
    const { result } = await sync(db, s);
    expect(result.failures).toEqual([]);
    expect(replicaRecords(db).get('contacts')?.map((c) => [c.id, c.updated_at])).toEqual([['c1', half(25)]]);
  });

  it("a change stamped within 5 minutes after its deletion (the service's clock went back) does not keep the row, in either order", async () => {
    const db = newDb();
    const later = (minute: number): string => iso(minute).replace(':00.000Z', ':30.000Z');
    // The row first, then its deletion stamped 30 s before its change: the row goes.
    await sync(db, service({ contacts: [contact('c1', 10, { updated_at: later(10) }), contact('c2', 1)] }));
    await sync(db, service({ deletions: [deletion('d1', 'contact', 'c1', 10)] }));
    expect(replicaRecords(db).get('contacts')?.map((c) => c.id)).toEqual(['c2']);
    // The deletion first, then a change stamped 30 s after it: not brought back.
    await sync(db, service({ deletions: [deletion('d2', 'contact', 'c3', 20)] }));
    const { sink } = await sync(db, service({ contacts: [contact('c3', 20, { updated_at: later(20) })] }));
    expect(replicaRecords(db).get('contacts')?.map((c) => c.id)).toEqual(['c2']);
    expect(sink.tallies.get('contacts')?.skippedDeleted).toBe(1);
  });

  it('never resurrects a deleted row: an upsert older than a known deletion is skipped, whatever the order of the streams', async () => {
    const db = newDb();
    const s = service({
      contacts: [contact('c1', 1), contact('c2', 2), contact('c9', 3)],
      deletions: [deletion('d1', 'contact', 'c9', 5)],
    });
    // The deletions stream completes (committed) before the contacts pages (read earlier) arrive.
    let deletionsDone!: () => void;
    const gate = new Promise<void>((resolve) => (deletionsDone = resolve));
    s.beforePage = async (path) => {
      if (path === '/v1/contacts') await gate;
    };
    const { sink } = await sync(db, s, (checkpoint) => {
      if (checkpoint.stream === 'deletions') deletionsDone();
    });
    expect(replicaRecords(db).get('contacts')?.map((c) => c.id)).toEqual(['c1', 'c2']);
    expect(sink.tallies.get('contacts')?.skippedDeleted).toBe(1);
  });

  it('reports deletion records of an unknown object_type once, without guessing', async () => {
    const db = newDb();
    const s = service({
      contacts: [contact('c1', 1)],
      deletions: [deletion('d1', 'lead', 'c1', 5), deletion('d2', 'lead', 'c1', 6), deletion('d3', null, 'c1', 7)],
    });
    const { unknown, result } = await sync(db, s);
    expect(result.failures).toEqual([]);
    expect(unknown).toBe('3 deletion record(s) had an object_type the replica does not know ("lead": 2, null: 1); they are kept in the deletions table but deleted no row.');
    expect(replicaRecords(db).get('contacts')?.map((c) => c.id)).toEqual(['c1']);
  });

  it('a stream that fails mid-read keeps the pages committed before, and the next run continues from its resume cursor', async () => {
    const db = newDb();
    const contacts = [contact('c1', 1), contact('c2', 2), contact('c3', 3), contact('c4', 4), contact('c5', 5)];
    const s = service({ contacts });
    s.beforePage = (path, query) => {
      if (path === '/v1/contacts' && query.cursor === 'c4') throw new ApiError('retries_exhausted', 'transient_error', 'The service kept failing');
    };
    const first = await sync(db, s);
    expect(first.result.failures.map((f) => f.stream.name)).toEqual(['contacts']);
    expect(replicaRecords(db).get('contacts')).toHaveLength(4);
    expect(replicaStates(db).get('contacts')).toEqual({ resume: { cursor: 'c4', sync_watermark: s.watermark } });

    s.beforePage = () => undefined;
    s.calls.length = 0;
    const second = await sync(db, s);
    expect(second.result.failures).toEqual([]);
    expect(s.calls.find((c) => c.path === '/v1/contacts')?.query).toEqual({ cursor: 'c4', limit: 2 });
    expect(byId(replicaRecords(db).get('contacts'))).toStrictEqual(contacts);
  });

  it('replaces a full-refresh stream (pipeline_stages) on each run', async () => {
    const db = newDb();
    await sync(db, service({ pipeline_stages: [{ id: 's1' }, { id: 's2' }, { id: 's3' }] }));
    await sync(db, service({ pipeline_stages: [{ id: 's2', name: 'Renamed' }] }));
    expect(replicaRecords(db).get('pipeline_stages')).toStrictEqual([{ id: 's2', name: 'Renamed' }]);
  });

  it('skips pipeline_stages when the service does not offer it', async () => {
    const db = newDb();
    const { result, logs } = await sync(db, service({ contacts: [contact('c1', 1)] }));
    expect(result.failures).toEqual([]);
    expect(logs.some((l) => l.level === 'WARN' && l.message.includes('pipeline_stages'))).toBe(true);
  });
});

describe('ReplicaSink + ReplicaWriter (checkpoints in groups)', () => {
  it('a checkpoint that cannot be written fails its stream there, its state before the lost rows; the other streams complete', async () => {
    const db = newDb();
    const store = new ReplicaStore(db);
    store.db.exec("CREATE TRIGGER refuse BEFORE INSERT ON contacts WHEN NEW.id = 'c3' BEGIN SELECT RAISE(ABORT, 'disk on fire'); END");
    const writer = new ReplicaWriter(store, { walThread: null });
    const logs: string[] = [];
    const sink = new ReplicaSink(new SqliteStore(store, writer), (_level, message) => logs.push(message));
    const contacts = [contact('c1', 1), contact('c2', 2), contact('c3', 3), contact('c4', 4), contact('c5', 5), contact('c6', 6)];
    const s = service({ contacts, conversations: [conversation('v1', 1), conversation('v2', 2), conversation('v3', 3)] });
    const result = await runSync({ config, client: s, sink, streams: REPLICA_STREAMS, states: store.loadStates() });
    await writer.close();
    store.close();
    expect(result.failures.map((f) => [f.stream.name, f.error.message])).toEqual([['contacts', expect.stringMatching(/^Cannot write the replica database ".*replica\.db": disk on fire\.$/)]]);
    expect(logs.some((m) => /^contacts: Cannot write the replica database/.test(m))).toBe(true);
    expect(replicaRecords(db).get('contacts')?.map((r) => r.id)).toEqual(['c1', 'c2']);
    // The state of the last page written whole (c1, c2): its cursor reads on after those two.
    expect(replicaStates(db).get('contacts')).toEqual({ resume: { cursor: 'c2', sync_watermark: s.watermark } });
    expect(byId(replicaRecords(db).get('conversations'))).toStrictEqual([conversation('v1', 1), conversation('v2', 2), conversation('v3', 3)]);
    expect(replicaStates(db).get('conversations')).toEqual({ sync_watermark: s.watermark });
    expect(sink.tallies.get('conversations')).toMatchObject({ upserted: 3 });
  });
});
