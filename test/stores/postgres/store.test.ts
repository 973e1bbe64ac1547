/**
 * The PostgreSQL store against a real server: typed tables, checkpoints with
 * their state in one transaction, deletions and their guard, full refreshes,
 * the long-pause sweep, drift, the writer lock, and what a killed
 * checkpoint leaves (nothing).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { ConnectorError } from '../../../src/errors.js';
import { PostgresStore } from '../../../src/stores/postgres/store.js';
import { advisoryKey } from '../../../src/stores/postgres/lock.js';
import { parseStoreTarget, type PostgresTarget } from '../../../src/stores/target.js';
import { recordJsonSchema } from '../../../src/schemas/json-schema.js';
import { findStream } from '../../../src/streams.js';
import { rawNumber } from '../../../src/json/exact-json.js';
import { adminClient, freshDatabase, type TestDatabase } from '../../helpers/postgres.js';
import { at, checkpoint, contact, deletion } from '../records.js';

let db: TestDatabase;
let admin: pg.Client;
const open: PostgresStore[] = [];

beforeAll(async () => {
  db = await freshDatabase('store');
  admin = await adminClient(db.url);
}, 120_000);
afterEach(async () => {
  for (const store of open.splice(0)) await store.close();
});
afterAll(async () => {
  await admin?.end();
  await db?.drop();
});

function target(schema: string): PostgresTarget {
  const t = parseStoreTarget(db.url, schema, {});
  if (t.kind !== 'postgres') throw new Error('not postgres');
  return t;
}

async function openStore(schema: string, options: Parameters<typeof PostgresStore.open>[1] = {}): Promise<PostgresStore> {
  const store = await PostgresStore.open(target(schema), options);
  open.push(store);
  return store;
}

async function closeStore(store: PostgresStore): Promise<void> {
  open.splice(open.indexOf(store), 1);
  await store.close();
}

async function failure(run: () => Promise<unknown>): Promise<ConnectorError> {
  try {
    await run();
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectorError);
    return err as ConnectorError;
  }
  throw new Error('no error');
}

async function columnTypes(schema: string, table: string): Promise<Record<string, string>> {
  const { rows } = await admin.query<{ column_name: string; data_type: string }>(
    'SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2',
    [schema, table],
  );
  return Object.fromEntries(rows.map((r) => [r.column_name, r.data_type]));
}

async function ids(schema: string, table: string): Promise<string[]> {
  const { rows } = await admin.query<{ id: string }>(`SELECT id FROM "${schema}"."${table}" ORDER BY id`);
  return rows.map((r) => r.id);
}

describe('opening', () => {
  it('creates the missing schema, a typed table per stream with primary key id, and the bookkeeping tables', async () => {
    await openStore('data_read');
    const types = await columnTypes('data_read', 'contacts');
    expect(types).toMatchObject({
      id: 'text',
      updated_at: 'timestamp with time zone',
      name: 'text',
      qualification_score: 'bigint',
      do_not_contact: 'boolean',
      _extra: 'json',
      _absent: 'jsonb',
      _synced_at: 'timestamp with time zone',
    });
    const { rows } = await admin.query(
      `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
        WHERE i.indrelid = 'data_read.contacts'::regclass AND i.indisprimary`,
    );
    expect(rows.map((r) => r.attname)).toEqual(['id']);
    const tables = await admin.query<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = 'data_read' ORDER BY 1");
    expect(tables.rows.map((r) => r.table_name)).toEqual(
      expect.arrayContaining(['contacts', 'conversations', 'deletions', 'pipeline_stages', 'stage_events', '_replica_state', '_replica_tables', '_replica_metadata', '_replica_full_read']),
    );
    const meta = await admin.query("SELECT value FROM data_read._replica_metadata WHERE key = 'format_version'");
    expect(meta.rows[0]?.value).toBe('1');
  });
});

describe('writing checkpoints', () => {
  it('writes rows and the state in one commit, and gives the records back exactly', async () => {
    const store = await openStore('s_write');
    const records = [
      contact('c1', 10),
      contact('c2', 11, { qualification_score: rawNumber('9007199254740993'), name: 'tab\there\nnew "line" \\ back', email: null }),
      contact('c3', 12, { updated_at: '2026-01-01T00:12:00.123456+02:00', extra_field: { nested: [1, 'two'] } }),
    ];
    delete (records[0] as Record<string, unknown>).phone; // an absent field stays absent
    const result = await store.write(checkpoint('contacts', records, 12));
    expect(result).toMatchObject({ upserted: 3, skippedDeleted: 0, deletedRows: 0, sweptRows: 0 });
    expect(result.drift).toEqual(['extra_field']);
    const back = await store.readRecords('contacts');
    expect(back).toEqual(records);
    expect(Object.hasOwn(back[0] as object, 'phone')).toBe(false);
    // The typed column holds the instant; the exact text the service sent is kept beside it.
    const { rows } = await admin.query("SELECT updated_at = '2026-01-01T00:12:00.123456+02:00'::timestamptz AS same, qualification_score::text AS q FROM s_write.contacts WHERE id IN ('c2', 'c3') ORDER BY id");
    expect(rows).toEqual([{ same: false, q: '9007199254740993' }, { same: true, q: '42' }]);
    expect(await store.loadStates()).toEqual(new Map([['contacts', JSON.stringify({ resume: { sync_watermark: at(12) } })]]));
  });

  it('keeps the last record of an id a checkpoint carries twice', async () => {
    const store = await openStore('s_twice');
    await store.write(checkpoint('contacts', [contact('c1', 1, { name: 'first' }), contact('c1', 2, { name: 'second' })], 2));
    expect((await store.readRecords('contacts')).map((r) => r.name)).toEqual(['second']);
  });

  it('applies deletion records, keeps a row changed after its deletion, and reports unknown types', async () => {
    const store = await openStore('s_delete');
    await store.write(checkpoint('contacts', [contact('c1', 10), contact('c2', 30), contact('c3', 10)], 30));
    const result = await store.write(
      checkpoint('deletions', [deletion('d1', 'contact', 'c1', 20), deletion('d2', 'contact', 'c2', 20), deletion('d3', 'invoice', 'i1', 20), deletion('d4', 'contact', 'nobody', 20)], 20),
    );
    expect(result.deletedRows).toBe(1);
    expect(result.unknownTypes).toEqual([['"invoice"', 'd3']]);
    expect(await ids('s_delete', 'contacts')).toEqual(['c2', 'c3']);
    expect(await ids('s_delete', 'deletions')).toEqual(['d1', 'd2', 'd3', 'd4']);
  });

  it('skips an upsert whose cursor is not later than a known deletion of the object (no resurrection)', async () => {
    const store = await openStore('s_guard');
    await store.write(checkpoint('deletions', [deletion('d1', 'contact', 'c1', 20), deletion('d2', 'contact', 'c2', 20)], 20));
    const result = await store.write(checkpoint('contacts', [contact('c1', 20), contact('c2', 21), contact('c3', 5)], 21));
    expect(result).toMatchObject({ upserted: 2, skippedDeleted: 1 });
    expect(await ids('s_guard', 'contacts')).toEqual(['c2', 'c3']);
  });

  it('empties a full-refresh table on replaceAll, in the same transaction as the new rows', async () => {
    const store = await openStore('s_replace');
    await store.write(checkpoint('pipeline_stages', [{ id: 'a' }, { id: 'b' }, { id: 'c' }], 1, { replaceAll: true }));
    await store.write(checkpoint('pipeline_stages', [{ id: 'b', name: 'B' }, { id: 'd' }], 2, { replaceAll: true }));
    expect(await ids('s_replace', 'pipeline_stages')).toEqual(['b', 'd']);
    expect(await store.readRecords('pipeline_stages')).toEqual([{ id: 'b', name: 'B' }, { id: 'd' }]);
  });

  it("a full read removes at its last checkpoint the rows it did not return, and clears its marks", async () => {
    const store = await openStore('s_sweep');
    await store.write(checkpoint('contacts', [contact('a', 1), contact('b', 1), contact('c', 1), contact('d', 1)], 1));
    await store.write(checkpoint('contacts', [contact('a', 2)], 2, { fullRead: { first: true, last: false } }));
    expect(await ids('s_sweep', 'contacts')).toEqual(['a', 'b', 'c', 'd']);
    const last = await store.write(checkpoint('contacts', [contact('c', 2)], 3, { fullRead: { first: false, last: true } }));
    expect(last.sweptRows).toBe(2);
    expect(await ids('s_sweep', 'contacts')).toEqual(['a', 'c']);
    expect((await admin.query('SELECT count(*)::int AS n FROM s_sweep._replica_full_read')).rows[0].n).toBe(0);
  });

  it('a full read that starts again drops the marks of the one a killed run left', async () => {
    const store = await openStore('s_sweep2');
    await store.write(checkpoint('contacts', [contact('a', 1), contact('b', 1)], 1));
    await store.write(checkpoint('contacts', [contact('b', 2)], 2, { fullRead: { first: true, last: false } }));
    await store.write(checkpoint('contacts', [contact('a', 3)], 3, { fullRead: { first: true, last: true } }));
    expect(await ids('s_sweep2', 'contacts')).toEqual(['a']);
  });

  it('refuses a record without its key before writing anything of the checkpoint, then that stream only', async () => {
    const store = await openStore('s_keyless');
    const err = await failure(() => store.write(checkpoint('contacts', [contact('a', 1), { name: 'no id' }], 1)));
    expect(err.message).toMatch(/record 2 of the checkpoint has no id/);
    await failure(() => store.write(checkpoint('contacts', [contact('b', 1)], 2)));
    await store.write(checkpoint('stage_events', [{ id: 'e1', contact_id: 'a', created_at: at(1) }], 1));
    expect(await ids('s_keyless', 'contacts')).toEqual([]);
    expect(await ids('s_keyless', 'stage_events')).toEqual(['e1']);
  });
});

describe('drift', () => {
  it('keeps unfitting values in _extra for the run, then adds and widens columns at the next open, moving the values in', async () => {
    const schema = 's_drift';
    let store = await openStore(schema);
    const records = [
      contact('c1', 1, { lifecycle: 'lead', qualification_score: 7 }),
      contact('c2', 2, { lifecycle: 'customer', qualification_score: 7.5, do_not_contact: 'unknown' }),
      contact('c3', 3, { qualification_score: rawNumber('123456789012345678901234567890') }),
    ];
    const first = await store.write(checkpoint('contacts', records, 3));
    expect(new Set(first.drift)).toEqual(new Set(['lifecycle', 'qualification_score', 'do_not_contact']));
    expect(await store.readRecords('contacts')).toEqual(records);
    expect(store.changes).toEqual([]);
    await closeStore(store);

    store = await openStore(schema);
    expect(store.changes).toEqual([
      'contacts.qualification_score: bigint -> numeric',
      'contacts.do_not_contact: boolean -> text',
      'contacts.lifecycle: new column (text)',
    ]);
    expect(await columnTypes(schema, 'contacts')).toMatchObject({ qualification_score: 'numeric', do_not_contact: 'text', lifecycle: 'text' });
    const { rows } = await admin.query(`SELECT id, qualification_score::text AS q, do_not_contact AS d, lifecycle, _extra::text AS extra FROM ${schema}.contacts ORDER BY id`);
    expect(rows).toEqual([
      { id: 'c1', q: '7', d: 'false', lifecycle: 'lead', extra: null },
      { id: 'c2', q: '7.5', d: 'unknown', lifecycle: 'customer', extra: null },
      { id: 'c3', q: '123456789012345678901234567890', d: 'false', lifecycle: null, extra: null },
    ]);
    // Records still come back exactly, except that a widened column gives its old values as its new type (text).
    const back = await store.readRecords('contacts');
    expect(back[1]).toEqual(records[1]);
    expect(back[0]).toEqual({ ...records[0], do_not_contact: 'false' });
    // Reported once: the next open changes nothing.
    await closeStore(store);
    store = await openStore(schema);
    expect(store.changes).toEqual([]);
  });

  it("adds a column at open for a field the service's description declares", async () => {
    const schema = 's_described';
    await closeStore(await openStore(schema));
    const stream = findStream('contacts');
    if (!stream) throw new Error('no contacts stream');
    const described = recordJsonSchema(stream);
    const schemas = new Map([['contacts', { ...described, properties: { ...(described.properties as object), score_v2: { type: ['null', 'number'] }, renewed_at: { type: 'string', format: 'date-time' } } }]]);
    const store = await openStore(schema, { schemas });
    expect(store.changes).toEqual(['contacts.score_v2: new column (numeric)', 'contacts.renewed_at: new column (timestamptz)']);
    expect(await columnTypes(schema, 'contacts')).toMatchObject({ score_v2: 'numeric', renewed_at: 'timestamp with time zone' });
  });

  it('widens a timestamp column to text with the instants written as the service wrote them, and an object turns a text column into jsonb', async () => {
    const schema = 's_widen';
    let store = await openStore(schema);
    await store.write(checkpoint('contacts', [contact('c1', 1), contact('c2', 2, { won_at: 'not a date', job_title: { title: 'Buyer', level: 2 } })], 2));
    await closeStore(store);
    store = await openStore(schema);
    expect(store.changes).toEqual(['contacts.job_title: text -> jsonb', 'contacts.won_at: timestamptz -> text']);
    const { rows } = await admin.query(`SELECT id, won_at, job_title::text AS job FROM ${schema}.contacts ORDER BY id`);
    expect(rows).toEqual([
      { id: 'c1', won_at: null, job: '"Buyer"' },
      { id: 'c2', won_at: 'not a date', job: '{"level": 2, "title": "Buyer"}' },
    ]);
    const before = (await admin.query(`SELECT created_at FROM ${schema}.contacts WHERE id = 'c1'`)).rows[0];
    expect(before.created_at).toBeInstanceOf(Date);
    expect((await store.readRecords('contacts'))[0]).toEqual(contact('c1', 1));
  });
});

describe('one writer', () => {
  it('a second run on the same schema is refused at once (75), naming the holder; another schema is not', async () => {
    const first = await openStore('s_lock');
    const err = await failure(() => PostgresStore.open(target('s_lock')));
    expect(err.failureType).toBe('transient_error');
    expect(err.message).toMatch(new RegExp(`Another replicate run is writing the schema "s_lock" of postgresql://postgres:\\*\\*\\*@127\\.0\\.0\\.1:\\d+/${db.name}\\?sslmode=disable \\("source-data-read replicate pid ${process.pid} on [^"]+", server pid \\d+, from 127\\.0\\.0\\.1`));
    expect(err.message).not.toContain(new URL(db.url).password);
    await openStore('s_lock_other');
    await closeStore(first);
    await openStore('s_lock');
  });

  it("is freed by the server when the holder's session dies (a killed run)", async () => {
    const first = await openStore('s_lock_kill');
    const [k1, k2] = advisoryKey('s_lock_kill');
    const { rows } = await admin.query(
      "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::bigint::oid AND objid = $2::bigint::oid AND granted",
      [k1, k2],
    );
    expect(rows).toHaveLength(1);
    await admin.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
    await openStore('s_lock_kill');
    // The first run's next write fails as transient: its connection is gone, and with it its open transaction.
    const err = await failure(() => first.write(checkpoint('contacts', [contact('x', 1)], 1)));
    expect(err.failureType).toBe('transient_error');
  });
});

describe('transactions', () => {
  it('a checkpoint killed before its commit leaves nothing, and readers meanwhile see the last commit', async () => {
    const schema = 's_kill';
    const store = await openStore(schema);
    await store.write(checkpoint('contacts', [contact('c1', 1), contact('c2', 1)], 1));
    // Hold c1 so that the next checkpoint's upsert waits inside its transaction (after its COPY).
    const blocker = await adminClient(db.url);
    await blocker.query('BEGIN');
    await blocker.query(`SELECT 1 FROM ${schema}.contacts WHERE id = 'c1' FOR UPDATE`);
    const writing = store.write(checkpoint('contacts', [contact('c1', 5), contact('c3', 5)], 5)).then(
      () => undefined,
      (e: unknown) => e,
    );
    const pid = (await store.session.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]?.pid;
    for (let i = 0; i < 200; i++) {
      const { rows } = await admin.query("SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1", [pid]);
      if (rows[0]?.wait_event_type === 'Lock') break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    // A reader sees the stream as of its last commit.
    expect(await ids(schema, 'contacts')).toEqual(['c1', 'c2']);
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    const err = await writing;
    expect(err).toBeInstanceOf(ConnectorError);
    expect((err as ConnectorError).failureType).toBe('transient_error');
    await blocker.query('ROLLBACK');
    await blocker.end();
    expect(await ids(schema, 'contacts')).toEqual(['c1', 'c2']);
    const state = await admin.query(`SELECT state FROM ${schema}._replica_state WHERE stream = 'contacts'`);
    expect(JSON.parse(state.rows[0].state)).toEqual({ resume: { sync_watermark: at(1) } });
    await closeStore(store);
    // The next run resumes from that commit.
    const next = await openStore(schema);
    expect((await next.loadStates()).get('contacts')).toBe(JSON.stringify({ resume: { sync_watermark: at(1) } }));
  });

  it('a checkpoint the server refuses (a trigger someone added) is rolled back whole; its stream stops, the others go on', async () => {
    const schema = 's_refused';
    const store = await openStore(schema);
    await admin.query(`CREATE FUNCTION ${schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.id = 'bad' THEN RAISE EXCEPTION 'refused %', NEW.id; END IF; RETURN NEW; END $$`);
    await admin.query(`CREATE TRIGGER refuse BEFORE INSERT ON ${schema}.contacts FOR EACH ROW EXECUTE FUNCTION ${schema}.refuse()`);
    const err = await failure(() => store.write(checkpoint('contacts', [contact('ok', 1), contact('bad', 1)], 1)));
    expect(err.message).toMatch(/refused bad/);
    expect(await ids(schema, 'contacts')).toEqual([]);
    expect((await store.loadStates()).has('contacts')).toBe(false);
    await failure(() => store.write(checkpoint('contacts', [contact('ok', 2)], 2)));
    await store.write(checkpoint('stage_events', [{ id: 'e1', contact_id: 'ok', created_at: at(1) }], 1));
    expect(await ids(schema, 'stage_events')).toEqual(['e1']);
  });
});

describe('personal data and metadata', () => {
  it('refuses a run with other treatments before changing anything, and keeps the metadata it is given', async () => {
    const schema = 's_treat';
    const store = await openStore(schema, { treatments: { email: 'hash' } });
    await store.setMetadata('account', JSON.stringify({ account_name: 'acme' }));
    expect(await store.metadata('account')).toBe('{"account_name":"acme"}');
    await closeStore(store);
    const err = await failure(() => PostgresStore.open(target(schema), { treatments: {} }));
    expect(err.failureType).toBe('config_error');
    expect(err.message).toMatch(/other personal-data treatments than this config's \(email: hash then, keep now\)/);
    await openStore(schema, { treatments: { email: 'hash' } });
  });
});
