/**
 * What every store keeps, tested the same way on each (PostgreSQL and
 * DuckDB): checkpoints with their state, exact records, deletions and their
 * guard, full refreshes, the full read's sweep, keyless records, drift
 * applied at the next open, and the treatments refused.
 */
import { describe, expect, it } from 'vitest';
import { rawNumber } from '../../src/exact-json.js';
import type { StoreCheckpoint, StoreCommitResult } from '../../src/stores/checkpoint.js';
import type { Data } from '../../src/stores/values.js';
import type { SchemaChange, StoreFacts } from '../../src/stores/store.js';
import type { DriftLog } from '../../src/stores/notes.js';
import type { GroupOptions } from '../../src/stores/group-writer.js';
import type { StreamState } from '../../src/engine/state.js';
import { entryFacts, replicaFacts } from '../../src/replica/store-facts.js';
import { at, checkpoint, connectorFailure, contact, deletion } from './records.js';

/** The face of a store the suite uses (PostgresStore and DuckdbStore both have it). */
export interface SuiteStore {
  readonly changes: readonly string[];
  schemaChanges(): readonly SchemaChange[];
  commit(checkpoint: StoreCheckpoint): Promise<StoreCommitResult>;
  write(checkpoint: StoreCheckpoint, committed?: (result: StoreCommitResult) => void): Promise<void>;
  flush(): Promise<void>;
  readRecords(stream: string): Promise<Data[]>;
  savedStates(): Promise<Map<string, string>>;
  loadStates(): Promise<Map<string, StreamState>>;
  metadata(key: string): Promise<string | undefined>;
  setMetadata(key: string, value: string): Promise<void>;
  recordFacts(facts: StoreFacts): Promise<readonly { level: string; message: string }[]>;
  close(): Promise<void>;
}

export interface OpenOptions {
  readonly facts?: StoreFacts;
  readonly log?: DriftLog;
  readonly accountKey?: boolean;
  readonly groups?: GroupOptions;
}

export interface StoreHarness {
  /** Open the store named `name` (a schema, or a file), the same one again for the same name. */
  open(name: string, options?: OpenOptions): Promise<SuiteStore>;
  /** Rows of a query on the store's own session; `{schema}` in `sql` is its schema, quoted. */
  rows(store: SuiteStore, sql: string): Promise<Record<string, unknown>[]>;
  /** The SQL types of kinds, as the store reports them in its changes. */
  readonly types: { readonly int64: string; readonly number: string; readonly text: string; readonly boolean: string; readonly timestamp: string };
}


/** The facts of a run with these treatments (no hash key, no account). */
const treated = (record: Record<string, string>): { facts: StoreFacts } => ({ facts: replicaFacts('"treat"', { record, key: undefined }) });

export function storeSuite(h: StoreHarness): void {
  /** The store's schema changes of contacts, by column. */
  const contactChanges = (store: SuiteStore): SchemaChange[] =>
    store
      .schemaChanges()
      .filter((c) => c.stream === 'contacts')
      .sort((a, b) => a.column.localeCompare(b.column));
  const ids = async (store: SuiteStore, table: string): Promise<string[]> =>
    (await h.rows(store, `SELECT id FROM {schema}."${table}" ORDER BY id`)).map((r) => String(r.id));

  async function withStore<T>(name: string, run: (store: SuiteStore) => Promise<T>, options?: OpenOptions): Promise<T> {
    const store = await h.open(name, options);
    try {
      return await run(store);
    } finally {
      await store.close();
    }
  }

  describe('writing checkpoints', () => {
    it('writes rows and the state in one commit, and gives the records back exactly', () =>
      withStore('write', async (store) => {
        const records = [
          contact('c1', 10),
          contact('c2', 11, { qualification_score: rawNumber('9007199254740993'), name: 'tab\there\nnew "line" \\ back', email: null }),
          contact('c3', 12, { updated_at: '2026-01-01T00:12:00.123456+02:00', extra_field: { nested: [1, 'two', rawNumber('1.50')] } }),
        ];
        delete (records[0] as Record<string, unknown>).phone;
        const result = await store.commit(checkpoint('contacts', records, 12));
        expect(result).toMatchObject({ upserted: 3, skippedDeleted: 0, deletedRows: 0, sweptRows: 0, drift: ['extra_field'] });
        const back = await store.readRecords('contacts');
        expect(back).toEqual(records);
        expect(JSON.stringify(back)).toBe(JSON.stringify(records));
        expect(await store.savedStates()).toEqual(new Map([['contacts', JSON.stringify({ resume: { sync_watermark: at(12) } })]]));
      }));

    it('keeps the last record of an id a checkpoint carries twice', () =>
      withStore('twice', async (store) => {
        await store.commit(checkpoint('contacts', [contact('c1', 1, { name: 'first' }), contact('c1', 2, { name: 'second' })], 2));
        expect((await store.readRecords('contacts')).map((r) => r.name)).toEqual(['second']);
      }));

    it('applies deletion records, keeps a row changed after its deletion, and reports unknown types', () =>
      withStore('delete', async (store) => {
        await store.commit(checkpoint('contacts', [contact('c1', 10), contact('c2', 30), contact('c3', 10)], 30));
        const result = await store.commit(
          checkpoint('deletions', [deletion('d1', 'contact', 'c1', 20), deletion('d2', 'contact', 'c2', 20), deletion('d3', 'invoice', 'i1', 20), deletion('d4', 'contact', 'nobody', 20)], 20),
        );
        expect(result.deletedRows).toBe(1);
        expect(result.unknownTypes).toEqual([['"invoice"', 'd3']]);
        expect(await ids(store, 'contacts')).toEqual(['c2', 'c3']);
        expect(await ids(store, 'deletions')).toEqual(['d1', 'd2', 'd3', 'd4']);
      }));

    it('compares a row and its deletion, 5 minutes of look-back apart, to the microsecond, in either order', () =>
      withStore('micro', async (store) => {
        const half = at(25).replace('.000Z', '.000500Z');
        await store.commit(checkpoint('contacts', [contact('c1', 25, { updated_at: half }), contact('c2', 25, { updated_at: half })], 25));
        // Changed 5 minutes and 0.5 ms after its deletion (kept), and 0.5 ms less than 5 minutes after (removed).
        await store.commit(checkpoint('deletions', [deletion('d1', 'contact', 'c1', 20), { ...deletion('d2', 'contact', 'c2', 20), deleted_at: at(20).replace('.000Z', '.001Z') }], 25));
        expect(await ids(store, 'contacts')).toEqual(['c1']);
        // The deletions known first: a change 5 minutes and 0.5 ms later comes back, one 0.5 ms earlier does not.
        await store.commit(checkpoint('deletions', [deletion('d3', 'contact', 'c3', 30), deletion('d4', 'contact', 'c4', 31)], 31));
        const early = at(36).replace(':36:00.000Z', ':35:59.999500Z');
        await store.commit(checkpoint('contacts', [contact('c3', 35, { updated_at: at(35).replace('.000Z', '.000500Z') }), contact('c4', 36, { updated_at: early })], 36));
        expect(await ids(store, 'contacts')).toEqual(['c1', 'c3']);
      }));

    it('a change stamped within 5 minutes after its deletion (the service\'s clock went back) does not keep the row, in either order', () =>
      withStore('skew', async (store) => {
        const later = (minute: number): string => at(minute).replace(':00.000Z', ':30.000Z');
        // The row first, then its deletion stamped 30 s before its change: the row goes.
        await store.commit(checkpoint('contacts', [contact('c1', 10, { updated_at: later(10) }), contact('c2', 10, { updated_at: at(15) })], 10));
        expect((await store.commit(checkpoint('deletions', [deletion('d1', 'contact', 'c1', 10), deletion('d2', 'contact', 'c2', 10)], 10))).deletedRows).toBe(2);
        // The deletion first, then a change stamped 30 s after it: not brought back.
        await store.commit(checkpoint('deletions', [deletion('d3', 'contact', 'c3', 20)], 20));
        expect(await store.commit(checkpoint('contacts', [contact('c3', 20, { updated_at: later(20) })], 20))).toMatchObject({ upserted: 0, skippedDeleted: 1 });
        // In one group, in either order.
        await store.write(checkpoint('contacts', [contact('c4', 30, { updated_at: later(30) })], 30));
        await store.write(checkpoint('deletions', [deletion('d4', 'contact', 'c4', 30), deletion('d5', 'contact', 'c5', 30)], 30));
        await store.write(checkpoint('contacts', [contact('c5', 30, { updated_at: later(30) })], 30));
        await store.flush();
        expect(await ids(store, 'contacts')).toEqual([]);
      }));

    it('skips an upsert whose cursor is not later than a known deletion of the object (no resurrection)', () =>
      withStore('guard', async (store) => {
        await store.commit(checkpoint('deletions', [deletion('d1', 'contact', 'c1', 20), deletion('d2', 'contact', 'c2', 20)], 20));
        const result = await store.commit(checkpoint('contacts', [contact('c1', 20), contact('c2', 26), contact('c3', 5)], 26));
        expect(result).toMatchObject({ upserted: 2, skippedDeleted: 1 });
        expect(await ids(store, 'contacts')).toEqual(['c2', 'c3']);
      }));

    it('a one-page full read replaces a full-refresh table, in the same transaction as the new rows', () =>
      withStore('replace', async (store) => {
        await store.commit(checkpoint('pipeline_stages', [{ id: 'a' }, { id: 'b' }, { id: 'c' }], 1, { fullRead: { first: true, last: true } }));
        await store.commit(checkpoint('pipeline_stages', [{ id: 'b', name: 'B' }, { id: 'd' }], 2, { fullRead: { first: true, last: true } }));
        expect(await ids(store, 'pipeline_stages')).toEqual(['b', 'd']);
        expect(await store.readRecords('pipeline_stages')).toEqual([{ id: 'b', name: 'B' }, { id: 'd' }]);
      }));

    it('a full read removes at its last checkpoint the rows it did not return, and clears its marks', () =>
      withStore('sweep', async (store) => {
        await store.commit(checkpoint('contacts', [contact('a', 1), contact('b', 1), contact('c', 1), contact('d', 1)], 1));
        await store.commit(checkpoint('contacts', [contact('a', 2)], 2, { fullRead: { first: true, last: false } }));
        expect(await ids(store, 'contacts')).toEqual(['a', 'b', 'c', 'd']);
        const last = await store.commit(checkpoint('contacts', [contact('c', 2)], 3, { fullRead: { first: false, last: true } }));
        expect(last.sweptRows).toBe(2);
        expect(await ids(store, 'contacts')).toEqual(['a', 'c']);
        expect(await h.rows(store, 'SELECT id FROM {schema}."_replica_full_read"')).toEqual([]);
      }));

    it('a full read that starts again drops the marks a killed run left', () =>
      withStore('sweep2', async (store) => {
        await store.commit(checkpoint('contacts', [contact('a', 1), contact('b', 1)], 1));
        await store.commit(checkpoint('contacts', [contact('b', 2)], 2, { fullRead: { first: true, last: false } }));
        await store.commit(checkpoint('contacts', [contact('a', 3)], 3, { fullRead: { first: true, last: true } }));
        expect(await ids(store, 'contacts')).toEqual(['a']);
      }));

    it('refuses a record without its key before writing anything of the checkpoint, then that stream only', () =>
      withStore('keyless', async (store) => {
        const err = await connectorFailure(() => store.commit(checkpoint('contacts', [contact('a', 1), { name: 'no id' }], 1)));
        expect(err.message).toMatch(/record 2 of the checkpoint has no id/);
        await connectorFailure(() => store.commit(checkpoint('contacts', [contact('b', 1)], 2)));
        await store.commit(checkpoint('stage_events', [{ id: 'e1', contact_id: 'a', created_at: at(1) }], 1));
        expect(await ids(store, 'contacts')).toEqual([]);
        expect(await ids(store, 'stage_events')).toEqual(['e1']);
      }));

    it('fails a checkpoint whose value the database refuses (an index a user made casts the phone) without quoting the value', () =>
      withStore('refused-value', async (store) => {
        await store.commit(checkpoint('contacts', [contact('c1', 1)], 1));
        await h.rows(store, 'CREATE INDEX phone_number ON {schema}."contacts" ((CAST(phone AS BIGINT)))');
        const phone = "+55 (11) 91234-5678 ana.o'brien@example.com";
        const err = await connectorFailure(() => store.commit(checkpoint('contacts', [contact('c2', 2, { phone })], 2)));
        // The database's words name the type it expected; the phone, or any piece of it, is not in them.
        expect(err.message).toMatch(/type bigint|to INT64/);
        for (const piece of ['91234', 'example.com', 'brien']) expect(err.message).not.toContain(piece);
        expect(err.message).toContain('value is not shown');
        expect(await ids(store, 'contacts')).toEqual(['c1']);
      }));
  });

  describe('checkpoints gathered into one transaction', () => {
    it('writes a group whole, each stream its last state, its results told to its last checkpoint', () =>
      withStore('group', async (store) => {
        const told: string[] = [];
        const tell = (name: string) => (r: StoreCommitResult) => told.push(`${name}:${r.upserted}`);
        await store.write(checkpoint('contacts', [contact('a', 1), contact('b', 1)], 1), tell('c1'));
        await store.write(checkpoint('stage_events', [{ id: 'e1', contact_id: 'a', created_at: at(1) }], 1), tell('s1'));
        await store.write(checkpoint('contacts', [contact('c', 2), contact('d', 2)], 2), tell('c2'));
        expect(told).toEqual([]);
        await store.flush();
        expect(told.sort()).toEqual(['c1:0', 'c2:4', 's1:1']);
        expect(await ids(store, 'contacts')).toEqual(['a', 'b', 'c', 'd']);
        const states = await store.savedStates();
        expect(states.get('contacts')).toBe(JSON.stringify({ resume: { sync_watermark: at(2) } }));
        expect(states.get('stage_events')).toBe(JSON.stringify({ resume: { sync_watermark: at(1) } }));
      }));

    it('writes a record that came again (changed during the read) after its earlier row: the later one stays', () =>
      withStore('group_again', async (store) => {
        const told: string[] = [];
        const tell = (name: string) => (r: StoreCommitResult) => told.push(`${name}:${r.upserted}`);
        await store.write(checkpoint('contacts', [contact('a', 1), contact('b', 1)], 1), tell('c1'));
        await store.write(checkpoint('contacts', [contact('b', 2, { name: 'later' }), contact('c', 2)], 2), tell('c2'));
        await store.flush();
        // b again: its checkpoint starts the next group (a group holds one row per id), each group tells its own.
        expect(told).toEqual(['c1:2', 'c2:2']);
        expect(await ids(store, 'contacts')).toEqual(['a', 'b', 'c']);
        expect((await store.readRecords('contacts')).find((r) => r.id === 'b')?.name).toBe('later');
        expect((await store.savedStates()).get('contacts')).toBe(JSON.stringify({ resume: { sync_watermark: at(2) } }));
      }));

    it('a deletion and an upsert of one object in one group end as they would one by one, in either order', () =>
      withStore('group_delete', async (store) => {
        await store.commit(checkpoint('contacts', [contact('x', 1), contact('y', 1)], 1));
        // The upsert first, then its deletion (later than its cursor): the row goes.
        await store.write(checkpoint('contacts', [contact('x', 5)], 5));
        await store.write(checkpoint('deletions', [deletion('dx', 'contact', 'x', 6)], 6));
        // The deletion first, then an upsert of a change more than 5 minutes later: the object came back, the row stays.
        await store.write(checkpoint('deletions', [deletion('dy', 'contact', 'y', 7)], 7));
        await store.write(checkpoint('contacts', [contact('y', 13)], 13));
        // A deletion, then an upsert read before it: never resurrected.
        await store.write(checkpoint('deletions', [deletion('dz', 'contact', 'z', 9)], 9));
        await store.write(checkpoint('contacts', [contact('z', 9)], 9));
        await store.flush();
        expect(await ids(store, 'contacts')).toEqual(['y']);
      }));

    it('a full read starting again begins a new group; a full read\'s last checkpoint ends its group', () =>
      withStore('group_rules', async (store) => {
        await store.write(checkpoint('pipeline_stages', [{ id: 'old' }], 1, { fullRead: { first: true, last: true } }));
        await store.write(checkpoint('pipeline_stages', [{ id: 'p1' }], 2, { fullRead: { first: true, last: false } }));
        await store.write(checkpoint('pipeline_stages', [{ id: 'p2' }], 3, { fullRead: { first: false, last: true } }));
        await store.write(checkpoint('contacts', [contact('a', 1), contact('b', 1), contact('c', 1)], 1));
        await store.write(checkpoint('contacts', [contact('a', 2)], 2, { fullRead: { first: true, last: false } }));
        await store.write(checkpoint('contacts', [contact('b', 2)], 3, { fullRead: { first: false, last: true } }));
        // After the sweep, in a later group: an incremental checkpoint whose row the sweep must not remove.
        await store.write(checkpoint('contacts', [contact('d', 4)], 4));
        await store.flush();
        expect(await ids(store, 'pipeline_stages')).toEqual(['p1', 'p2']);
        expect(await ids(store, 'contacts')).toEqual(['a', 'b', 'd']);
      }));
  });

  describe('waiting for a commit while checkpoints keep coming', () => {
    /** Write checkpoints of two rows each (a full group each) until `stop` says so, at most `max`: how many. */
    const feed = async (store: SuiteStore, stop: () => boolean, max: number): Promise<number> => {
      let fed = 0;
      for (; fed < max && !stop(); fed++) {
        const records = [0, 1].map((i) => ({ id: `e${fed}_${i}`, contact_id: 'a', created_at: at(1) }));
        await store.write({ ...checkpoint('stage_events', records, 1), state: JSON.stringify({ sync_watermark: at(1) }) });
      }
      return fed;
    };
    const MAX = 60;

    it('a flush, and reading the saved states, wait for what came before them, not for the writer to be idle', () =>
      withStore(
        'busy',
        async (store) => {
          await store.write({ ...checkpoint('contacts', [contact('a', 1)], 1), state: JSON.stringify({ sync_watermark: at(1) }) });
          let stop = false;
          const feeders: Promise<number>[] = [];
          try {
            const feeding = feed(store, () => stop, MAX);
            feeders.push(feeding);
            await store.flush();
            stop = true;
            // Groups were written back to back all along (a full one waiting behind each): the feeder was still going.
            expect(await feeding).toBeLessThan(MAX);
            expect(await ids(store, 'contacts')).toEqual(['a']);

            stop = false;
            const again = feed(store, () => stop, MAX);
            feeders.push(again);
            await new Promise((resolve) => setImmediate(resolve));
            const states = await store.loadStates();
            stop = true;
            expect(await again).toBeLessThan(MAX);
            expect(states.get('contacts')).toEqual({ sync_watermark: at(1) });
            await store.flush();
          } finally {
            stop = true;
            await Promise.allSettled(feeders);
          }
        },
        { groups: { groupMs: 0, maxGroupRows: 2 } },
      ));
  });

  describe('drift', () => {
    it('keeps unfitting values in _extra for the run, then adds and widens columns at the next open, moving the values in', async () => {
      const records = [
        contact('c1', 1, { lifecycle: 'lead', qualification_score: 7 }),
        contact('c2', 2, { lifecycle: 'customer', qualification_score: 7.5, do_not_contact: 'unknown' }),
        // Written before the service sent `lifecycle` for it: read back without it once the column exists, not with a null.
        contact('c3', 3),
        contact('c4', 3, { lifecycle: null }),
      ];
      await withStore('drift', async (store) => {
        const first = await store.commit(checkpoint('contacts', records, 3));
        expect(new Set(first.drift)).toEqual(new Set(['lifecycle', 'qualification_score', 'do_not_contact']));
        expect(await store.readRecords('contacts')).toEqual(records);
        expect(store.changes).toEqual([]);
        // The run summary's list: what the next run will do.
        expect(contactChanges(store)).toEqual([
          { stream: 'contacts', column: 'do_not_contact', change: 'left_for_next_run', from: h.types.boolean, to: h.types.text },
          { stream: 'contacts', column: 'lifecycle', change: 'left_for_next_run', from: null, to: h.types.text },
          { stream: 'contacts', column: 'qualification_score', change: 'left_for_next_run', from: h.types.int64, to: h.types.number },
        ]);
      });
      await withStore('drift', async (store) => {
        expect(store.changes).toEqual([
          `contacts.qualification_score: ${h.types.int64} -> ${h.types.number}`,
          `contacts.do_not_contact: ${h.types.boolean} -> ${h.types.text}`,
          `contacts.lifecycle: new column (${h.types.text})`,
        ]);
        expect(contactChanges(store)).toEqual([
          { stream: 'contacts', column: 'do_not_contact', change: 'widened', from: h.types.boolean, to: h.types.text },
          { stream: 'contacts', column: 'lifecycle', change: 'added', from: null, to: h.types.text },
          { stream: 'contacts', column: 'qualification_score', change: 'widened', from: h.types.int64, to: h.types.number },
        ]);
        const rows = await h.rows(store, 'SELECT id, CAST(qualification_score AS VARCHAR) AS q, do_not_contact AS d, lifecycle, CAST(_extra AS VARCHAR) AS extra FROM {schema}.contacts ORDER BY id');
        expect(rows.slice(0, 2)).toEqual([
          { id: 'c1', q: expect.stringMatching(/^7(\.0)?$/), d: 'false', lifecycle: 'lead', extra: null },
          { id: 'c2', q: '7.5', d: 'unknown', lifecycle: 'customer', extra: null },
        ]);
        const back = await store.readRecords('contacts');
        expect(back[1]).toEqual(records[1]);
        expect(back[2]).not.toHaveProperty('lifecycle');
        expect(back.slice(2)).toEqual(records.slice(2).map((r) => ({ ...r, do_not_contact: 'false' })));
        // A widened column gives its old values back as its new type: the text of a boolean.
        expect(back[0]).toEqual({ ...records[0], do_not_contact: 'false' });
      });
      await withStore('drift', async (store) => {
        expect(store.changes).toEqual([]);
        expect(store.schemaChanges()).toEqual([]);
      });
    });

    it('puts a number or a boolean written after its column widened to text into the column as text, and gives it back as sent', async () => {
      await withStore('drift-text', async (store) => {
        await store.commit(checkpoint('contacts', [contact('c1', 1, { qualification_score: 7, do_not_contact: true }), contact('c2', 2, { qualification_score: 'high', do_not_contact: 'unknown' })], 2));
      });
      const later = contact('c3', 3, { qualification_score: 8, do_not_contact: false });
      await withStore('drift-text', async (store) => {
        expect(store.changes).toEqual([`contacts.qualification_score: ${h.types.int64} -> ${h.types.text}`, `contacts.do_not_contact: ${h.types.boolean} -> ${h.types.text}`]);
        const result = await store.commit(checkpoint('contacts', [later], 3));
        expect(result.drift).toEqual([]);
      });
      await withStore('drift-text', async (store) => {
        expect(store.changes).toEqual([]);
        expect(await h.rows(store, 'SELECT id, qualification_score AS q, do_not_contact AS d FROM {schema}.contacts ORDER BY id')).toEqual([
          { id: 'c1', q: '7', d: 'true' },
          { id: 'c2', q: 'high', d: 'unknown' },
          { id: 'c3', q: '8', d: 'false' },
        ]);
        expect((await store.readRecords('contacts'))[2]).toEqual(later);
      });
    });

    it('adds two new fields of one run as two columns at the next open, rows without them read back without them', async () => {
      const records = [contact('c1', 1), contact('c2', 2, { lifetime_value: 10, segment: 'b2b' })];
      await withStore('drift-two', async (store) => {
        await store.commit(checkpoint('contacts', records, 2));
      });
      await withStore('drift-two', async (store) => {
        expect(store.changes).toEqual([`contacts.lifetime_value: new column (${h.types.int64})`, `contacts.segment: new column (${h.types.text})`]);
        expect(await h.rows(store, 'SELECT id, CAST(lifetime_value AS VARCHAR) AS v, segment FROM {schema}.contacts ORDER BY id')).toEqual([
          { id: 'c1', v: null, segment: null },
          { id: 'c2', v: '10', segment: 'b2b' },
        ]);
        expect(await store.readRecords('contacts')).toEqual(records);
      });
      await withStore('drift-two', async (store) => {
        expect(store.changes).toEqual([]);
        expect(await store.readRecords('contacts')).toEqual(records);
      });
    });

    it('widens a number column to text with the numbers written as JavaScript writes them (3, not 3.0)', async () => {
      const ratios = [3, 2.5, 100000000000000000000, -0.5, 123456.75, -7];
      await withStore('drift-number-text', (store) => store.commit(checkpoint('contacts', ratios.map((ratio, i) => contact(`c${i}`, i, { ratio })), ratios.length)));
      await withStore('drift-number-text', async (store) => {
        expect(store.changes).toEqual([`contacts.ratio: new column (${h.types.number})`]);
        await store.commit(checkpoint('contacts', [contact('cx', 9, { ratio: 'n/a' })], 9));
      });
      await withStore('drift-number-text', async (store) => {
        expect(store.changes).toEqual([`contacts.ratio: ${h.types.number} -> ${h.types.text}`]);
        expect(await h.rows(store, 'SELECT id, ratio FROM {schema}.contacts ORDER BY id')).toEqual([
          ...ratios.map((ratio, i) => ({ id: `c${i}`, ratio: String(ratio) })),
          { id: 'cx', ratio: 'n/a' },
        ]);
      });
    });

    it('widens a column to text with the values kept exact in _extra as they were sent (an offset, microseconds, an exponent)', async () => {
      // Instants and numbers the column held in its own form, their text as sent kept in _extra beside it.
      const sent = [
        contact('c1', 1, { consent_given_at: '2026-01-01T02:00:00.123456+02:00', ratio: rawNumber('1e3') }),
        contact('c2', 2, { consent_given_at: '2026-01-01T00:00:00.000Z', ratio: 2.5 }),
      ];
      await withStore('drift-exact-text', (store) => store.commit(checkpoint('contacts', sent, 2)));
      await withStore('drift-exact-text', (store) => store.commit(checkpoint('contacts', [contact('c3', 3, { consent_given_at: 'soon', ratio: 'n/a' })], 3)));
      await withStore('drift-exact-text', async (store) => {
        expect(store.changes).toEqual([`contacts.consent_given_at: ${h.types.timestamp} -> ${h.types.text}`, `contacts.ratio: ${h.types.number} -> ${h.types.text}`]);
        // Rows written now hold the text as sent; so do the rows written before the widening.
        await store.commit(checkpoint('contacts', [contact('c4', 4, { consent_given_at: '2026-01-01T02:00:00.123456+02:00', ratio: rawNumber('1e3') })], 4));
        expect(await h.rows(store, 'SELECT id, consent_given_at AS c, ratio AS r FROM {schema}.contacts ORDER BY id')).toEqual([
          { id: 'c1', c: '2026-01-01T02:00:00.123456+02:00', r: '1e3' },
          { id: 'c2', c: '2026-01-01T00:00:00.000Z', r: '2.5' },
          { id: 'c3', c: 'soon', r: 'n/a' },
          { id: 'c4', c: '2026-01-01T02:00:00.123456+02:00', r: '1e3' },
        ]);
        expect((await store.readRecords('contacts'))[0]).toEqual(sent[0]);
      });
    });

    it('keeps a field no column can take (an empty name, a bookkeeping column\'s, one too long) in _extra, never announced as drift', async () => {
      const records = [contact('c1', 1, { '': 'empty', _synced_at: 'mine', ['n'.repeat(1100)]: 'long' }), contact('c2', 2)];
      await withStore('drift-unnamable', async (store) => {
        expect((await store.commit(checkpoint('contacts', records, 2))).drift).toEqual([]);
        expect(contactChanges(store)).toEqual([]);
        expect(await store.readRecords('contacts')).toEqual(records);
      });
      await withStore('drift-unnamable', async (store) => {
        expect(store.changes).toEqual([]);
        expect(await store.readRecords('contacts')).toEqual(records);
      });
    });

    it('applies deletions once a cursor column is text holding values that look like instants but are none', async () => {
      // Not instants (no 30 February, no offset past 15:59): the cursor widens to text, and a deletion finds it unreadable.
      const odd = ['2026-02-30T10:00:00Z', '2026-01-01T00:00:00+16:00', '0000-01-01T00:00:00Z', '2026-13-01T00:00:00Z'];
      const instants = [contact('earlier', 2), contact('later', 12), contact('keep', 1)];
      await withStore('drift-cursor-text', (store) => store.commit(checkpoint('contacts', [...odd.map((updated_at, i) => contact(`c${i}`, i, { updated_at })), ...instants], 12)));
      await withStore('drift-cursor-text', async (store) => {
        expect(store.changes).toEqual([`contacts.updated_at: ${h.types.timestamp} -> ${h.types.text}`]);
        // A row whose cursor cannot be read is not later than its deletion: each goes, as in the SQLite replica. The
        // instants in the text column still compare: a row changed after its deletion stays.
        const deletions = [...odd.map((_, i) => deletion(`d${i}`, 'contact', `c${i}`, 6)), deletion('de', 'contact', 'earlier', 6), deletion('dl', 'contact', 'later', 6)];
        const result = await store.commit(checkpoint('deletions', deletions, 6));
        expect(result.deletedRows).toBe(odd.length + 1);
        expect(await ids(store, 'contacts')).toEqual(['keep', 'later']);
        // And the guard: an upsert of a deleted object whose cursor cannot be read is skipped.
        expect(await store.commit(checkpoint('contacts', [contact('c0', 7, { updated_at: odd[0] })], 7))).toMatchObject({ upserted: 0, skippedDeleted: 1 });
      });
    });

    it('keeps a string with U+0000 in _extra without widening its column, and opens again to add a column beside it', async () => {
      const records = [
        contact('c1', 1, { name: 'Ann' }),
        contact('c2', 2, { name: 'nul \u0000 inside', note: 'also \u0000 here' }),
        // A new field in the same run: its column is added at the next open, over the row with U+0000 in _extra.
        contact('c3', 3, { segment: 'b2b' }),
        // The text of the escape is text: it fits the column.
        contact('c4', 4, { name: 'text \\u0000' }),
      ];
      await withStore('drift-nul', async (store) => {
        const first = await store.commit(checkpoint('contacts', records, 4));
        expect(first.drift).toEqual(['segment']);
        expect(await store.readRecords('contacts')).toEqual(records);
      });
      for (let i = 0; i < 2; i++) {
        await withStore('drift-nul', async (store) => {
          expect(store.changes).toEqual(i === 0 ? [`contacts.segment: new column (${h.types.text})`] : []);
          expect(await store.readRecords('contacts')).toEqual(records);
          expect(await h.rows(store, 'SELECT id, name, segment FROM {schema}.contacts ORDER BY id')).toEqual([
            { id: 'c1', name: 'Ann', segment: null },
            { id: 'c2', name: null, segment: null },
            { id: 'c3', name: 'Name c3', segment: 'b2b' },
            { id: 'c4', name: 'text \\u0000', segment: null },
          ]);
        });
      }
    });
  });

  describe('strings that are not well-formed Unicode', () => {
    it('keep U+FFFD for a lone surrogate in text, in JSON columns and in _extra, so that the next open (drift) reads them', async () => {
      const records = [
        contact('u1', 1, { name: 'lone \ud800 high', extra_field: { 'key \udc00': ['lone \udc00 low', 'pair \ud83d\ude00'] } }),
        // The text of an escape is text: a backslash and "ud800" stay as they are.
        contact('u2', 2, { name: 'text \\ud800', extra_field: { k: '\\ud800 \\\ud800' } }),
      ];
      const expected = [
        { ...records[0], name: 'lone \ufffd high', extra_field: { 'key \ufffd': ['lone \ufffd low', 'pair \ud83d\ude00'] } },
        { ...records[1], extra_field: { k: '\\ud800 \\\ufffd' } },
      ];
      await withStore('lone-surrogates', async (store) => {
        await store.commit(checkpoint('contacts', records, 2));
        expect(await store.readRecords('contacts')).toEqual(expected);
      });
      await withStore('lone-surrogates', async (store) => {
        expect(store.changes).toEqual([expect.stringMatching(/^contacts\.extra_field: new column \((jsonb|JSON)\)$/)]);
        expect(await store.readRecords('contacts')).toEqual(expected);
      });
    });

    it('keep a field whose name holds a lone surrogate in _extra (its name with U+FFFD), never a column, and the store opens again', async () => {
      const records = [contact('u1', 1, { 'high \ud800': 1, 'low \udc00': 'x', 'pair \ud83d\ude00': true })];
      const expected = [contact('u1', 1, { 'high \ufffd': 1, 'low \ufffd': 'x', 'pair \ud83d\ude00': true })];
      await withStore('lone-surrogate-names', async (store) => {
        expect((await store.commit(checkpoint('contacts', records, 1))).drift).toEqual(['pair \ud83d\ude00']);
        expect(await store.readRecords('contacts')).toEqual(expected);
      });
      for (let i = 0; i < 2; i++) {
        await withStore('lone-surrogate-names', async (store) => {
          expect(store.changes).toEqual(i === 0 ? [`contacts.pair \ud83d\ude00: new column (${h.types.boolean})`] : []);
          expect(await store.readRecords('contacts')).toEqual(expected);
          await store.commit(checkpoint('contacts', records, 2 + i));
          expect(await store.readRecords('contacts')).toEqual(expected);
        });
      }
    });
  });

  describe('drift met during a run', () => {
    it('is told once per field, when its checkpoint is committed', async () => {
      const lines: string[] = [];
      await withStore(
        'told',
        async (store) => {
          await store.commit(checkpoint('contacts', [contact('t1', 1, { surprise: { a: 1 } })], 1));
          await store.commit(checkpoint('contacts', [contact('t2', 2, { surprise: { a: 2 } })], 2));
        },
        { log: (level, message) => lines.push(`${level} ${message}`) },
      );
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^INFO Schema drift in .*contacts\.surprise got values its column cannot hold.*next run adds or widens the column/);
    });
  });

  describe('personal data and metadata', () => {
    it('refuses a run with other treatments before changing anything, and keeps the metadata it is given', async () => {
      await withStore(
        'treat',
        async (store) => {
          await store.setMetadata('account', JSON.stringify({ account_name: 'acme' }));
          expect(await store.metadata('account')).toBe('{"account_name":"acme"}');
        },
        treated({ email: 'hash' }),
      );
      const err = await connectorFailure(() => h.open('treat', treated({})));
      expect(err.failureType).toBe('config_error');
      expect(err.message).toMatch(/other personal-data treatments than this config's \(email: hash then, keep now\)/);
      await withStore('treat', async () => {}, treated({ email: 'hash' }));
    });
  });

  describe('many accounts (a config with accounts): each table keyed by (account, id)', () => {
    const many = { accountKey: true };
    /** A checkpoint of one account: its records carry the account, its state holds every account's. */
    const of = (account: string, stream: string, records: readonly Data[], minute: number, extra: Partial<StoreCheckpoint> = {}): StoreCheckpoint => ({
      ...checkpoint(stream, records.map((r) => ({ ...r, account })), minute, extra),
      account,
      state: JSON.stringify({ sync_watermark: at(minute) }),
    });
    const keys = async (store: SuiteStore, table: string): Promise<string[]> =>
      (await h.rows(store, `SELECT account, id FROM {schema}."${table}" ORDER BY account, id`)).map((r) => `${String(r.account)}/${String(r.id)}`);

    it('keeps the same id of two accounts as two rows; a deletion of one account removes its row only, and guards its own rows only', () =>
      withStore(
        'accounts',
        async (store) => {
          await store.commit(of('a', 'contacts', [contact('c1', 1), contact('c2', 1)], 1));
          await store.commit(of('b', 'contacts', [contact('c1', 1), contact('c2', 1)], 1));
          expect(await keys(store, 'contacts')).toEqual(['a/c1', 'a/c2', 'b/c1', 'b/c2']);
          const deleted = await store.commit(of('a', 'deletions', [deletion('d1', 'contact', 'c1', 5)], 5));
          expect(deleted.deletedRows).toBe(1);
          expect(await keys(store, 'contacts')).toEqual(['a/c2', 'b/c1', 'b/c2']);
          // B's c1 written again with a cursor older than A's deletion is B's: A's deletion does not skip it; A's own is skipped.
          expect(await store.commit(of('b', 'contacts', [contact('c1', 2)], 2))).toMatchObject({ upserted: 1, skippedDeleted: 0 });
          expect(await store.commit(of('a', 'contacts', [contact('c1', 2)], 2))).toMatchObject({ upserted: 0, skippedDeleted: 1 });
          expect(await keys(store, 'contacts')).toEqual(['a/c2', 'b/c1', 'b/c2']);
          const back = await store.readRecords('contacts');
          expect(back.map((r) => `${String(r.account)}/${String(r.id)}`)).toEqual(['a/c2', 'b/c1', 'b/c2']);
          expect(back[1]).toEqual({ ...contact('c1', 2), account: 'b' });
        },
        many,
      ));

    it("replaces one account's full table and sweeps one account's full read, the other account's rows untouched", () =>
      withStore(
        'accounts-full',
        async (store) => {
          const stage = (id: string): Data => ({ id, name: id, position: 1 });
          await store.commit(of('a', 'pipeline_stages', [stage('s1'), stage('s2')], 1, { fullRead: { first: true, last: true } }));
          await store.commit(of('b', 'pipeline_stages', [stage('s1'), stage('s2')], 1, { fullRead: { first: true, last: true } }));
          await store.commit(of('a', 'pipeline_stages', [stage('s1')], 2, { fullRead: { first: true, last: true } }));
          expect(await keys(store, 'pipeline_stages')).toEqual(['a/s1', 'b/s1', 'b/s2']);
          await store.commit(of('a', 'contacts', [contact('c1', 1), contact('c2', 1)], 1));
          await store.commit(of('b', 'contacts', [contact('c1', 1), contact('c2', 1)], 1));
          const swept = await store.commit(of('a', 'contacts', [contact('c2', 3)], 3, { fullRead: { first: true, last: true } }));
          expect(swept.sweptRows).toBe(1);
          expect(await keys(store, 'contacts')).toEqual(['a/c2', 'b/c1', 'b/c2']);
        },
        many,
      ));

    it("gathers two accounts' checkpoints of a stream in one group: each account's rows and last state", () =>
      withStore(
        'accounts-group',
        async (store) => {
          const told: string[] = [];
          const tell = (name: string) => (r: StoreCommitResult) => told.push(`${name}:${r.upserted}`);
          await store.write(of('a', 'contacts', [contact('c1', 1)], 1), tell('a1'));
          await store.write(of('b', 'contacts', [contact('c1', 1), contact('c2', 1)], 1), tell('b1'));
          await store.write(of('b', 'contacts', [contact('c3', 2)], 2), tell('b2'));
          await store.flush();
          expect(told).toEqual(['a1:1', 'b1:0', 'b2:3']);
          expect(await keys(store, 'contacts')).toEqual(['a/c1', 'b/c1', 'b/c2', 'b/c3']);
          expect(await store.savedStates()).toEqual(new Map([['contacts', JSON.stringify({ accounts: { a: { sync_watermark: at(1) }, b: { sync_watermark: at(2) } } })]]));
        },
        many,
      ));

    it("writes the checkpoints of many accounts gathered while a group waits (each account's part staged on its own): every row, the last state", () =>
      withStore(
        'accounts-many-parts',
        async (store) => {
          // The reading outruns the writing (many accounts with little to read each): a group gathers a part per account
          // and stream. A DuckDB transaction keeps each part's staging table until its commit, in 64 MB of buffers.
          const names = Array.from({ length: 80 }, (_, i) => `acct-${String(i).padStart(3, '0')}`);
          const states: Record<string, { sync_watermark: string }> = {};
          let told = 0;
          for (const name of names) {
            states[name] = { sync_watermark: at(1) };
            await store.write(of(name, 'contacts', [contact('c1', 1), contact('c2', 1)], 1), () => told++);
          }
          await store.flush();
          expect(told).toBe(names.length);
          expect(await keys(store, 'contacts')).toEqual(names.flatMap((name) => [`${name}/c1`, `${name}/c2`]));
          expect(JSON.parse((await store.savedStates()).get('contacts') ?? 'null')).toEqual({ accounts: states });
        },
        { ...many, groups: { groupMs: 60_000 } },
      ));

    it("a checkpoint refused for one account stops that account's stream alone: the others' rows and states written, its own state kept as last committed", () =>
      withStore(
        'accounts-one-fails',
        async (store) => {
          await store.commit(of('a', 'contacts', [contact('c1', 1)], 1));
          // A's next checkpoint holds a record without its id: refused, nothing of it written, its state (minute 2) not saved.
          const err = await connectorFailure(() => store.write(of('a', 'contacts', [contact('c2', 2), { name: 'no id', account: 'a' }], 2)));
          expect(err.message).toMatch(/record 2 of the checkpoint has no id/);
          // B's checkpoints of the same stream, in the same run: written, A's state kept as last committed.
          await store.write(of('b', 'contacts', [contact('c1', 3)], 3));
          await store.write(of('b', 'contacts', [contact('c2', 4)], 4));
          // A's other streams go on; A's contacts do not.
          await store.write(of('a', 'stage_events', [{ id: 'e1', contact_id: 'c1', created_at: at(1) }], 1));
          const later = await connectorFailure(() => store.write(of('a', 'contacts', [contact('c3', 5)], 5)));
          expect(later.message).toMatch(/An earlier checkpoint of contacts of account "a" could not be written \(record 2 of the checkpoint has no id\)/);
          await store.flush();
          expect(await keys(store, 'contacts')).toEqual(['a/c1', 'b/c1', 'b/c2']);
          expect(await keys(store, 'stage_events')).toEqual(['a/e1']);
          expect(JSON.parse((await store.savedStates()).get('contacts') ?? 'null')).toEqual({ accounts: { a: { sync_watermark: at(1) }, b: { sync_watermark: at(4) } } });
          // An account that never committed the stream is left out of its state (its next run reads it from the start).
          await connectorFailure(() => store.write(of('b', 'stage_events', [{ contact_id: 'c1', created_at: at(2), account: 'b' }], 2)));
          await store.commit(of('a', 'stage_events', [{ id: 'e2', contact_id: 'c1', created_at: at(3) }], 3));
          expect(await keys(store, 'stage_events')).toEqual(['a/e1', 'a/e2']);
          expect(JSON.parse((await store.savedStates()).get('stage_events') ?? 'null')).toEqual({ accounts: { a: { sync_watermark: at(3) } } });
        },
        many,
      ));

    it("splits the one state row per stream of a store an earlier version wrote (every account's state in it) into its accounts' rows at open", async () => {
      const stateRows = async (store: SuiteStore): Promise<string[]> =>
        (await h.rows(store, 'SELECT stream, CAST(committed_at AS VARCHAR) AS at FROM {schema}._replica_state ORDER BY stream')).map((r) => `${String(r.stream)} ${String(r.at)}`);
      let committed = '';
      await withStore(
        'accounts-format-1',
        async (store) => {
          await store.commit(of('a', 'contacts', [contact('c1', 1)], 1));
          await store.commit(of('b', 'contacts', [contact('c1', 2)], 2));
          // As the earlier version kept it: the stream's one row, committed with b's checkpoint; layout version 1.
          const joined = JSON.stringify({ accounts: { a: { sync_watermark: at(1) }, b: { sync_watermark: at(2) } } });
          await h.rows(store, "DELETE FROM {schema}._replica_state WHERE stream = 'contacts/a'");
          await h.rows(store, `UPDATE {schema}._replica_state SET stream = 'contacts', state = '${joined}' WHERE stream = 'contacts/b'`);
          await h.rows(store, "UPDATE {schema}._replica_metadata SET value = '1' WHERE key = 'format_version'");
          committed = (await stateRows(store))[0]?.split(' ').slice(1).join(' ') ?? '';
        },
        many,
      );
      await withStore(
        'accounts-format-1',
        async (store) => {
          expect(await stateRows(store)).toEqual([`contacts/a ${committed}`, `contacts/b ${committed}`]);
          expect(await store.metadata('format_version')).toBe('2');
          expect((await store.loadStates()).get('contacts')).toEqual({ accounts: { a: { sync_watermark: at(1) }, b: { sync_watermark: at(2) } } });
          // An account's next checkpoint writes its own row alone.
          await store.commit(of('b', 'contacts', [contact('c2', 3)], 3));
          expect((await store.loadStates()).get('contacts')).toEqual({ accounts: { a: { sync_watermark: at(1) }, b: { sync_watermark: at(3) } } });
          expect((await stateRows(store))[0]).toBe(`contacts/a ${committed}`);
        },
        many,
      );
    });

    it('splits the state rows of an earlier version holding 300 accounts each (a DuckDB store of that version ran 150) at open', async () => {
      // Each account's state as a run keeps it (about 170 bytes), in each of the five streams' one row.
      const names = Array.from({ length: 300 }, (_, i) => `acct-${String(i).padStart(3, '0')}`);
      const accounts = Object.fromEntries(names.map((name, i) => [name, { sync_watermark: at(1), account: { name: `Account ${i}`, base_url: 'https://api.example.com' } }]));
      const streams = ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages'];
      await withStore(
        'accounts-format-1-many',
        async (store) => {
          await store.commit(of('a', 'contacts', [contact('c1', 1)], 1));
          await h.rows(store, 'DELETE FROM {schema}._replica_state');
          for (const stream of streams) {
            await h.rows(store, `INSERT INTO {schema}._replica_state (stream, state, committed_at) VALUES ('${stream}', '${JSON.stringify({ accounts })}', now())`);
          }
          await h.rows(store, "UPDATE {schema}._replica_metadata SET value = '1' WHERE key = 'format_version'");
        },
        many,
      );
      await withStore(
        'accounts-format-1-many',
        async (store) => {
          expect(await store.metadata('format_version')).toBe('2');
          expect(Number((await h.rows(store, 'SELECT count(*) AS n FROM {schema}._replica_state'))[0]?.n)).toBe(streams.length * names.length);
          const states = await store.loadStates();
          for (const stream of streams) expect(states.get(stream), stream).toEqual({ accounts });
        },
        many,
      );
    });

    it('refuses a store a later version wrote (its layout version above this one), changing nothing', async () => {
      await withStore('later-format', async (store) => {
        await store.commit(of('a', 'contacts', [contact('c1', 1)], 1));
        await h.rows(store, "UPDATE {schema}._replica_metadata SET value = '3' WHERE key = 'format_version'");
      }, many);
      const err = await connectorFailure(() => h.open('later-format', many));
      expect(err.failureType).toBe('config_error');
      expect(err.message).toMatch(/was written by a later version of the connector \(layout version 3; this one writes version 2\)\. Nothing was changed in it\./);
      // Nothing was: its version is still the later one.
      expect((await connectorFailure(() => h.open('later-format', many))).message).toMatch(/layout version 3;/);
    });

    it('refuses a record of another account than its checkpoint, and a checkpoint that names none', () =>
      withStore(
        'accounts-refused',
        async (store) => {
          const err = await connectorFailure(() => store.commit({ ...of('a', 'contacts', [contact('c1', 1)], 1), records: [{ ...contact('c1', 1), account: 'b' }] }));
          expect(err.message).toMatch(/checkpoint of account "a" has account "b"/);
          await expect(store.commit(checkpoint('stage_events', [{ id: 'e1', contact_id: 'a', created_at: at(1), account: 'a' }], 1))).rejects.toThrow(/names no account/);
          expect(await keys(store, 'contacts')).toEqual([]);
        },
        many,
      ));

    it('moves values from _extra into a widened column per (account, id)', async () => {
      await withStore(
        'accounts-drift',
        async (store) => {
          await store.commit(of('a', 'contacts', [contact('c1', 1, { qualification_score: 7.5 })], 1));
          await store.commit(of('b', 'contacts', [contact('c1', 1, { qualification_score: 8.25 })], 1));
        },
        many,
      );
      await withStore(
        'accounts-drift',
        async (store) => {
          expect(store.changes).toEqual([`contacts.qualification_score: ${h.types.int64} -> ${h.types.number}`]);
          const rows = await h.rows(store, 'SELECT account, CAST(qualification_score AS VARCHAR) AS q, CAST(_extra AS VARCHAR) AS extra FROM {schema}.contacts ORDER BY account');
          expect(rows).toEqual([
            { account: 'a', q: '7.5', extra: null },
            { account: 'b', q: '8.25', extra: null },
          ]);
        },
        many,
      );
    });

    it('a store of one account given accounts, and the reverse: refused (config_error), nothing changed', async () => {
      await withStore('one-key', async (store) => {
        await store.commit(checkpoint('contacts', [contact('c1', 1)], 1));
      });
      const one = await connectorFailure(() => h.open('one-key', many));
      expect(one.failureType).toBe('config_error');
      expect(one.message).toMatch(/built from a config with one api_key .* lists "accounts"/);
      await withStore('one-key', async (store) => expect(await ids(store, 'contacts')).toEqual(['c1']));
      await withStore('accounts-shape', async (store) => void (await store.commit(of('a', 'contacts', [contact('c1', 1)], 1))), many);
      const reverse = await connectorFailure(() => h.open('accounts-shape'));
      expect(reverse.failureType).toBe('config_error');
      expect(reverse.message).toMatch(/built from a config with "accounts" .* gives one api_key/);
      await withStore('accounts-shape', async (store) => expect(await keys(store, 'contacts')).toEqual(['a/c1']), many);
    });

    it('binds each entry to its service account: another account under an entry is refused, a new entry recorded', () =>
      withStore(
        'accounts-bound',
        async (store) => {
          const acme = { account: { name: 'Acme', base_url: 'http://127.0.0.1:1' }, entry: 'acme-br' };
          expect(await store.recordFacts(entryFacts('"bound"', acme))).toEqual([]);
          expect(JSON.parse((await store.metadata('account:acme-br')) ?? '{}')).toMatchObject({ account_name: 'Acme' });
          expect(await store.recordFacts(entryFacts('"bound"', acme))).toEqual([]);
          const err = await connectorFailure(() => store.recordFacts(entryFacts('"bound"', { ...acme, account: { ...acme.account, name: 'Globex' } })));
          expect(err.failureType).toBe('config_error');
          expect(err.message).toMatch(/"Acme".*"Globex"|"Globex".*"Acme"/);
          expect(JSON.parse((await store.metadata('account:acme-br')) ?? '{}')).toMatchObject({ account_name: 'Acme' });
          await store.recordFacts(entryFacts('"bound"', { account: { name: 'Globex', base_url: 'http://127.0.0.1:1' }, entry: 'globex' }));
          expect(JSON.parse((await store.metadata('account:globex')) ?? '{}')).toMatchObject({ account_name: 'Globex' });
        },
        many,
      ));
  });
}
