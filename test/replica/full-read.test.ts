/**
 * A full read that removes the rows it does not return (the heal after a gap
 * in the deletion log): its checkpoints mark ids in _replica_full_read, its
 * last one removes the unmarked rows in the transaction that saves its state
 * and drops the marks; a run that dies before that leaves the old rows, and
 * the next full read starts its marks over.
 */
import { describe, expect, it } from 'vitest';
import type { Checkpoint } from '../../src/replica/table-writer.js';
import { FULL_READ_TABLE } from '../../src/stores/checkpoint.js';
import { replicaRecords, replicaStates } from '../../src/replica/records.js';
import { ReplicaStore, toRows } from '../../src/replica/store.js';
import { ReplicaWriter, SqliteStore } from '../../src/replica/writer.js';
import { ReplicaSink, type Store, type StoreCheckpoint } from '../../src/replica/sink.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { withTempDatabases } from '../helpers/suite.js';
import { FakeApi, contact, conversation, iso, makeRecords, type Rec } from '../helpers/fake-api.js';
import { readStream } from '../../src/engine/reader.js';
import type { StreamState } from '../../src/engine/state.js';

const contacts = findStream('contacts') as StreamDefinition;
const conversations = findStream('conversations') as StreamDefinition;
const newDb = withTempDatabases('replica-full-read-');

const ids = (path: string, stream: string): string[] => (replicaRecords(path).get(stream) ?? []).map((r) => String(r.id)).sort();
const hasMarks = (store: ReplicaStore): boolean => store.db.prepare(`SELECT 1 AS x FROM sqlite_schema WHERE name = '${FULL_READ_TABLE}'`).get() !== undefined;

function checkpoint(store: ReplicaStore, stream: string, records: Rec[], minute: number, fullRead: { first: boolean; last: boolean }): Checkpoint {
  const state = fullRead.last ? { sync_watermark: iso(minute) } : { resume: { cursor: `${stream}#${minute}`, sync_watermark: iso(minute) } };
  return { stream, rows: toRows(store.layoutOf(stream), records), state: JSON.stringify(state), fullRead };
}

describe('a full read that removes what it does not return', () => {
  it('removes the unmarked rows with its last checkpoint, and drops the marks', () => {
    const path = newDb();
    const store = new ReplicaStore(path);
    store.commit(contacts, [contact('c1', 1), contact('c2', 1), contact('c3', 1), contact('c4', 1)], { sync_watermark: iso(1) });
    store.write(checkpoint(store, 'contacts', [contact('c1', 2), contact('c3', 2)], 9, { first: true, last: false }));
    expect(ids(path, 'contacts')).toEqual(['c1', 'c2', 'c3', 'c4']);
    expect(hasMarks(store)).toBe(true);
    const result = store.write(checkpoint(store, 'contacts', [contact('c5', 3)], 9, { first: false, last: true }));
    expect(result.sweptRows).toBe(2);
    expect(ids(path, 'contacts')).toEqual(['c1', 'c3', 'c5']);
    expect(hasMarks(store)).toBe(false);
    expect(replicaStates(path).get('contacts')).toEqual({ sync_watermark: iso(9) });
    store.close();
  });

  it('a one-page read is first and last at once; another stream leaves the first one alone', () => {
    const path = newDb();
    const store = new ReplicaStore(path);
    store.commit(contacts, [contact('c1', 1), contact('c2', 1)], { sync_watermark: iso(1) });
    store.commit(conversations, [conversation('v1', 1), conversation('v2', 1)], { sync_watermark: iso(1) });
    store.write(checkpoint(store, 'conversations', [conversation('v2', 2)], 9, { first: true, last: false }));
    expect(store.write(checkpoint(store, 'contacts', [contact('c2', 2)], 9, { first: true, last: true })).sweptRows).toBe(1);
    expect(hasMarks(store)).toBe(true); // conversations' read is still under way
    expect(store.write(checkpoint(store, 'conversations', [], 9, { first: false, last: true })).sweptRows).toBe(1);
    expect(ids(path, 'contacts')).toEqual(['c2']);
    expect(ids(path, 'conversations')).toEqual(['v2']);
    expect(hasMarks(store)).toBe(false);
    store.close();
  });

  it('a run that dies before the last checkpoint leaves the old rows; the next full read starts its marks over', () => {
    const path = newDb();
    let store = new ReplicaStore(path);
    store.commit(contacts, [contact('c1', 1), contact('c2', 1), contact('c3', 1)], { sync_watermark: iso(1) });
    store.write(checkpoint(store, 'contacts', [contact('c1', 2), contact('c2', 2)], 9, { first: true, last: false }));
    store.close(); // the run stops here
    expect(ids(path, 'contacts')).toEqual(['c1', 'c2', 'c3']);

    // The next run reads in full again; c2 is gone from the service by now: the old mark of c2 must not keep it.
    store = new ReplicaStore(path);
    store.write(checkpoint(store, 'contacts', [contact('c1', 3)], 12, { first: true, last: false }));
    expect(store.write(checkpoint(store, 'contacts', [contact('c3', 3)], 12, { first: false, last: true })).sweptRows).toBe(1);
    expect(ids(path, 'contacts')).toEqual(['c1', 'c3']);
    store.close();
  });

  it('through the sink and a grouped writer: the sweep is committed with the state of the completed read, not before', async () => {
    const path = newDb();
    const store = new ReplicaStore(path);
    store.commit(contacts, [contact('c1', 1), contact('c2', 1), contact('c3', 1)], { sync_watermark: iso(1) });
    const writer = new ReplicaWriter(store, { walThread: null, commitEveryMs: 60_000, shortGroupMs: 60_000 });
    const sink = new ReplicaSink(new SqliteStore(store, writer), () => undefined);
    sink.fullRead([contacts]);
    sink.streamStarted(contacts);
    sink.records(contacts, [contact('c1', 2)]);
    sink.state(contacts, { resume: { cursor: 'x', sync_watermark: iso(9) } });
    sink.records(contacts, [contact('c3', 2)]);
    sink.state(contacts, { sync_watermark: iso(9) });
    // Not committed yet: a reader still sees every old row and the old state.
    expect(ids(path, 'contacts')).toEqual(['c1', 'c2', 'c3']);
    expect(replicaStates(path).get('contacts')).toEqual({ sync_watermark: iso(1) });
    writer.flush();
    expect(ids(path, 'contacts')).toEqual(['c1', 'c3']);
    expect(replicaStates(path).get('contacts')).toEqual({ sync_watermark: iso(9) });
    expect(sink.tallies.get('contacts')?.sweptRows).toBe(1);
    // The next read of the stream is an ordinary one: nothing is marked or swept.
    sink.records(contacts, [contact('c4', 3)]);
    sink.state(contacts, { sync_watermark: iso(12) });
    writer.flush();
    expect(ids(path, 'contacts')).toEqual(['c1', 'c3', 'c4']);
    await writer.close();
    store.close();
  });
});

describe('the end of the full read after a watermark gone back', () => {
  /** What the sink says at the end of such a read of contacts returning `returned`, from a store holding c1 and c2. */
  const said = async (returned: Rec[]): Promise<string[]> => {
    const path = newDb();
    const store = new ReplicaStore(path);
    store.commit(contacts, [contact('c1', 1), contact('c2', 1)], { sync_watermark: iso(1) });
    const writer = new ReplicaWriter(store, { walThread: null, commitEveryMs: 60_000, shortGroupMs: 60_000 });
    const lines: string[] = [];
    const sink = new ReplicaSink(new SqliteStore(store, writer), (level, message) => void lines.push(`${level} ${message}`));
    sink.streamStarted(contacts);
    sink.rereadInFull(contacts);
    sink.records(contacts, returned);
    sink.state(contacts, { sync_watermark: iso(9) });
    writer.flush();
    await writer.close();
    store.close();
    return lines;
  };

  it('warns with the count of the rows it removed', async () => {
    expect(await said([contact('c1', 2)])).toEqual(['WARN contacts: the full read after the watermark went back removed 1 row(s) the service no longer has.']);
  });

  it('says without a WARN that it removed none', async () => {
    expect(await said([contact('c1', 2), contact('c2', 2)])).toEqual([
      'INFO contacts: the full read after the watermark went back found every row of the store at the service; none removed.',
    ]);
  });
});

/** A store that keeps the checkpoints it is handed (what the sink asks of a full read). */
function recordingStore(): { store: Store; taken: StoreCheckpoint[] } {
  const taken: StoreCheckpoint[] = [];
  const store: Store = {
    notes: [],
    loadStates: () => Promise.resolve(new Map()),
    write: (checkpoint) => void taken.push(checkpoint),
    fullReadMarked: () => Promise.resolve(false),
    flush: () => Promise.resolve(),
    finish: () => Promise.resolve(new Map()),
    close: () => Promise.resolve(),
  };
  return { store, taken };
}

describe("the sink's full read", () => {
  it("in a replica of many accounts, ends with the account's own read (its state among the accounts'), not at its first page", () => {
    const { store, taken } = recordingStore();
    const sink = new ReplicaSink(store, () => undefined, 'a');
    sink.fullRead([contacts]);
    sink.streamStarted(contacts);
    // The state the sink is given holds every account's: account b's read is complete, a's under way.
    sink.state(contacts, { accounts: { a: { resume: { cursor: 'x', sync_watermark: iso(9) } }, b: { sync_watermark: iso(8) } } });
    sink.state(contacts, { accounts: { a: { sync_watermark: iso(9) }, b: { sync_watermark: iso(8) } } });
    expect(taken.map((c) => c.fullRead)).toEqual([
      { first: true, last: false },
      { first: false, last: true },
    ]);
  });
});

describe('a full read continued from a stopped run', () => {
  const W = '2026-03-01T10:00:00.000Z';
  const run = async (cursor: string) => {
    const { store, taken } = recordingStore();
    const sink = new ReplicaSink(store, () => undefined);
    sink.fullRead([contacts, conversations], new Set(['contacts']));
    sink.streamStarted(contacts);
    const api = new FakeApi({ [contacts.path]: makeRecords(450) }, W);
    await readStream(contacts, { client: api, sink, pageSize: 200, startDate: undefined, state: { resume: { cursor, sync_watermark: W } } });
    return taken.map((c) => c.fullRead);
  };

  it('keeps its marks: its first checkpoint in this run is not the read\'s first', async () => {
    expect(await run('c200')).toEqual([
      { first: false, last: false },
      { first: false, last: true },
    ]);
  });

  it('starts its marks over when the service refuses its resume cursor (the read restarts from the start)', async () => {
    expect(await run('stale-cursor')).toEqual([
      { first: true, last: false },
      { first: false, last: false },
      { first: false, last: true },
    ]);
  });
});

describe('the full read after a watermark gone back', () => {
  const W = '2026-03-01T10:00:00.000Z';
  const LATER = '2026-03-01T12:00:00.000Z';
  /** The checkpoints' fullRead a read of `stream` from `state` hands the store, and the reads it asked the service for. */
  const run = async (state: StreamState, stream = contacts) => {
    const { store, taken } = recordingStore();
    const said: string[] = [];
    const sink = new ReplicaSink(store, (_level, message) => void said.push(message));
    sink.streamStarted(stream);
    const api = new FakeApi({ [stream.path]: makeRecords(450) }, W);
    await readStream(stream, { client: api, sink, pageSize: 200, startDate: undefined, state });
    return { fullReads: taken.map((c) => c.fullRead), since: api.calls.map((c) => c.query.cursor ?? c.query.updated_since ?? 'start') };
  };

  it('of a stream the deletion log deletes from marks what it writes, catch-up read included, and its last checkpoint removes the rest', async () => {
    const { fullReads, since } = await run({ sync_watermark: LATER });
    // From the saved watermark (3 pages, 2 checkpoints), in full (3 pages), then a catch-up read from its watermark.
    expect(since).toEqual([LATER, 'c200', 'c400', 'start', 'c200', 'c400', W, 'c200', 'c400']);
    expect(fullReads).toEqual([undefined, undefined, { first: true, last: false }, { first: false, last: false }, { first: false, last: true }]);
  });

  it('of another stream marks nothing', async () => {
    const { fullReads } = await run({ sync_watermark: LATER }, findStream('stage_events') as StreamDefinition);
    expect(fullReads.every((f) => f === undefined)).toBe(true);
  });

  it('a refused resume cursor restarts the read from the last complete watermark, marking nothing', async () => {
    const { fullReads, since } = await run({ sync_watermark: W, resume: { cursor: 'stale-cursor', sync_watermark: W } });
    expect(since).toEqual(['stale-cursor', W, 'c200', 'c400']);
    expect(fullReads).toEqual([undefined, undefined, undefined]);
  });

  it('continued from a stopped run (ReplicaSink.fullRead), its last page alone, reads again from its watermark before its last checkpoint removes the rest', async () => {
    const { store, taken } = recordingStore();
    const sink = new ReplicaSink(store, () => undefined);
    sink.fullRead([contacts], new Set(['contacts']), true);
    sink.streamStarted(contacts);
    const api = new FakeApi({ [contacts.path]: makeRecords(450) }, W);
    await readStream(contacts, { client: api, sink, pageSize: 200, startDate: undefined, state: { resume: { cursor: 'c400', sync_watermark: W } }, catchUp: true });
    expect(api.calls.map((c) => c.query.cursor ?? c.query.updated_since ?? 'start')).toEqual(['c400', W, 'c200', 'c400']);
    // That catch-up read passes nothing (this service changed nothing after the watermark): one checkpoint, the read's last.
    expect(taken.map((c) => c.fullRead)).toEqual([{ first: false, last: true }]);
  });
});
