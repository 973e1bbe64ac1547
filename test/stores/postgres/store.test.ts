/**
 * The PostgreSQL store against a real server: typed tables, checkpoints with
 * their state in one transaction, deletions and their guard, full refreshes,
 * the long-pause sweep, drift, the writer lock, and what a killed
 * checkpoint leaves (nothing).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type pg from 'pg';
import { ConnectorError } from '../../../src/errors.js';
import { PostgresStore } from '../../../src/stores/postgres/store.js';
import { advisoryKey, takeWriterLock } from '../../../src/stores/postgres/lock.js';
import { parseStoreTarget, type PostgresTarget } from '../../../src/stores/target.js';
import { recordJsonSchema } from '../../../src/schemas/json-schema.js';
import { findStream } from '../../../src/streams.js';
import { rawNumber } from '../../../src/exact-json.js';
import { adminClient, freshDatabase, postgresAdminUrl, withDatabase, type TestDatabase } from '../../helpers/postgres.js';
import { at, checkpoint, connectorFailure, contact, deletion } from '../records.js';
import { storeSuite } from '../store-suite.js';

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
    expect(meta.rows[0]?.value).toBe('2');
  });

  it('refuses a database whose encoding is not UTF8 (an emoji in a name would stop its stream at every run), creating nothing', async () => {
    const name = `${db.name}_latin1`;
    const server = await adminClient(await postgresAdminUrl());
    try {
      await server.query(`CREATE DATABASE "${name}" ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`);
      const latin1 = parseStoreTarget(withDatabase(db.url, name), 'data_read', {});
      if (latin1.kind !== 'postgres') throw new Error('not postgres');
      const err = await connectorFailure(() => PostgresStore.open(latin1));
      expect(err.failureType).toBe('config_error');
      expect(err.message).toMatch(/encoding LATIN1.*UTF8/);
      const other = await adminClient(withDatabase(db.url, name));
      try {
        expect((await other.query("SELECT 1 FROM pg_namespace WHERE nspname = 'data_read'")).rows).toEqual([]);
      } finally {
        await other.end();
      }
    } finally {
      await server.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await server.end();
    }
  });

  it('a role that may not create schemas writes into a schema made for it (its own, or one it was granted CREATE on)', async () => {
    // The set-up the missing-privilege message itself advises: CREATE SCHEMA ... AUTHORIZATION the role, or GRANT USAGE, CREATE on it.
    const role = `loader_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(8).toString('hex');
    const as = (schema: string): PostgresTarget => {
      const u = new URL(db.url);
      u.username = role;
      u.password = password;
      const t = parseStoreTarget(u.toString(), schema, {});
      if (t.kind !== 'postgres') throw new Error('not postgres');
      return t;
    };
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
    try {
      expect((await admin.query(`SELECT has_database_privilege('${role}', current_database(), 'CREATE') AS may`)).rows[0]?.may).toBe(false);
      await admin.query(`CREATE SCHEMA made_for AUTHORIZATION ${role}`);
      await admin.query('CREATE SCHEMA granted');
      await admin.query(`GRANT USAGE, CREATE ON SCHEMA granted TO ${role}`);
      for (const schema of ['made_for', 'granted']) {
        const store = await PostgresStore.open(as(schema));
        try {
          await store.commit(checkpoint('contacts', [contact('c1', 1)], 1));
        } finally {
          await store.close();
        }
        expect(await ids(schema, 'contacts')).toEqual(['c1']);
      }
    } finally {
      await admin.query('DROP SCHEMA IF EXISTS made_for, granted CASCADE');
      await admin.query(`DROP OWNED BY ${role}`);
      await admin.query(`DROP ROLE ${role}`);
    }
  });

  it('opening again with nothing changed rewrites no row of the bookkeeping tables (each rewrite leaves a dead row version)', async () => {
    // Runs every hour for months: _replica_tables' few rows, rewritten at each open, never reached autovacuum's threshold
    // and its file grew a page every few runs. A row version's xmin is the transaction that wrote it.
    const versions = async () =>
      (await admin.query<{ stream: string; xmin: string }>('SELECT stream, xmin::text AS xmin FROM unchanged._replica_tables ORDER BY stream')).rows;
    await closeStore(await openStore('unchanged'));
    const before = await versions();
    expect(before).toHaveLength(5);
    for (let i = 0; i < 3; i++) await closeStore(await openStore('unchanged'));
    expect(await versions()).toEqual(before);
  });
});

describe('what PostgreSQL holds', () => {
  it('an instant in timestamptz to the microsecond (the text sent kept beside it), an integer beyond 2^53 exactly', async () => {
    const store = await openStore('s_exact');
    await store.commit(checkpoint('contacts', [contact('c2', 11, { qualification_score: rawNumber('9007199254740993') }), contact('c3', 12, { updated_at: '2026-01-01T00:12:00.123456+02:00' })], 12));
    const { rows } = await admin.query(
      "SELECT id, updated_at = '2026-01-01T00:12:00.123456+02:00'::timestamptz AS same, qualification_score::text AS q, _extra::text AS extra FROM s_exact.contacts ORDER BY id",
    );
    expect(rows).toEqual([
      { id: 'c2', same: false, q: '9007199254740993', extra: null },
      { id: 'c3', same: true, q: '42', extra: '{"updated_at":"2026-01-01T00:12:00.123456+02:00"}' },
    ]);
  });

  it('an instant whose offset is beyond what timestamptz takes (+16:00) is written, its column widened to text at the next open', async () => {
    // PostgreSQL refuses a displacement past 15:59 ("time zone displacement out of range"); Date reads +23:59.
    const records = [contact('c1', 1, { won_at: '2026-01-01T00:00:00+15:59' }), contact('c2', 2, { won_at: '2026-01-01T00:00:00+16:00' }), contact('c3', 3, { won_at: '2026-01-01T00:00:00-2359' })];
    let store = await openStore('s_offsets');
    expect((await store.commit(checkpoint('contacts', records, 3))).drift).toEqual(['won_at']);
    expect(await store.readRecords('contacts')).toEqual(records);
    await closeStore(store);
    store = await openStore('s_offsets');
    expect(store.changes).toEqual(['contacts.won_at: timestamptz -> text']);
    expect(await store.readRecords('contacts')).toEqual(records);
  });

  it("changes no instant under the server's own TimeZone and DateStyle (America/Sao_Paulo, DMY): deletions, text columns, records read back", async () => {
    await admin.query(`ALTER DATABASE "${db.name}" SET timezone = 'America/Sao_Paulo'`);
    await admin.query(`ALTER DATABASE "${db.name}" SET datestyle = 'SQL, DMY'`);
    try {
      const schema = 's_zone';
      // c2 and c3: the same instants as at(30), written with an offset; won_at then widens to text at the next open.
      const records = [
        contact('c1', 10),
        contact('c2', 30, { updated_at: '2025-12-31T21:30:00.000-03:00' }),
        contact('c3', 30, { updated_at: '2026-01-01T06:00:00.000+05:30', won_at: 'not a date' }),
      ];
      let store = await openStore(schema);
      expect((await store.session.query('SHOW TimeZone')).rows[0]).toEqual({ TimeZone: 'America/Sao_Paulo' });
      await store.commit(checkpoint('contacts', records, 30));
      await closeStore(store);
      store = await openStore(schema);
      expect(store.changes).toEqual(['contacts.won_at: timestamptz -> text']);
      // A deletion at the row's own instant removes it; one more than 5 minutes before its last change leaves it.
      await store.commit(checkpoint('deletions', [deletion('d1', 'contact', 'c1', 10), deletion('d2', 'contact', 'c2', 24), deletion('d3', 'contact', 'c3', 30)], 31));
      expect(await ids(schema, 'contacts')).toEqual(['c2']);
      // An upsert not later than a known deletion is skipped, whatever offset it is written with.
      await store.commit(checkpoint('contacts', [contact('c3', 30, { updated_at: '2025-12-31T21:30:00.000-03:00' })], 32));
      expect(await ids(schema, 'contacts')).toEqual(['c2']);
      expect(await store.readRecords('contacts')).toEqual([records[1]]);
      expect((await store.readRecords('deletions')).map((d) => d.deleted_at)).toEqual([at(10), at(24), at(30)]);
      const { rows } = await admin.query(`SELECT id, created_at = '2026-01-01T00:00:00Z'::timestamptz AS same FROM ${schema}.contacts`);
      expect(rows).toEqual([{ id: 'c2', same: true }]);
    } finally {
      await admin.query(`ALTER DATABASE "${db.name}" RESET timezone`);
      await admin.query(`ALTER DATABASE "${db.name}" RESET datestyle`);
    }
  });

  it("reads instants in text columns alike with the database's standard_conforming_strings off: a row changed after its deletion stays", async () => {
    await admin.query(`ALTER DATABASE "${db.name}" SET standard_conforming_strings = off`);
    try {
      const schema = 's_escapes';
      // updated_at, the cursor, widens to text at the next open: the deletions then compare instants read from text.
      let store = await openStore(schema);
      await store.commit(checkpoint('contacts', [contact('c1', 10), contact('c2', 30), contact('odd', 30, { updated_at: 'not a date' })], 30));
      await closeStore(store);
      store = await openStore(schema);
      expect(store.changes).toEqual(['contacts.updated_at: timestamptz -> text']);
      // c1 deleted at its own instant goes; c2, changed more than 5 minutes after its deletion, stays.
      await store.commit(checkpoint('deletions', [deletion('d1', 'contact', 'c1', 10), deletion('d2', 'contact', 'c2', 24)], 31));
      expect(await ids(schema, 'contacts')).toEqual(['c2', 'odd']);
    } finally {
      await admin.query(`ALTER DATABASE "${db.name}" RESET standard_conforming_strings`);
    }
  });

  it('a number numeric writes otherwise (-0, 1e3) keeps its text in _extra beside its column, and reads back as sent', async () => {
    const records = [contact('c1', 1, { ratio: rawNumber('-0') }), contact('c2', 2, { ratio: rawNumber('1e3') }), contact('c3', 3, { ratio: rawNumber('2.50') })];
    let store = await openStore('s_notation');
    await store.commit(checkpoint('contacts', records, 3));
    await closeStore(store);
    store = await openStore('s_notation');
    expect(store.changes).toEqual(['contacts.ratio: new column (numeric)']);
    const { rows } = await admin.query('SELECT id, ratio::text AS r, _extra::text AS extra FROM s_notation.contacts ORDER BY id');
    expect(rows).toEqual([
      { id: 'c1', r: '0', extra: '{"ratio":-0}' },
      { id: 'c2', r: '1000', extra: '{"ratio":1e3}' },
      { id: 'c3', r: '2.50', extra: null },
    ]);
    expect(JSON.stringify(await store.readRecords('contacts'))).toBe(JSON.stringify(records));
  });
});

storeSuite({
  open: (name, options = {}) => openStore(`suite_${name}`, options).then((store) => {
    open.splice(open.indexOf(store), 1);
    return store;
  }),
  rows: async (store, sql) => {
    const schema = (store as PostgresStore).target.schema;
    const { rows } = await (store as PostgresStore).session.query(sql.replaceAll('{schema}', `"${schema}"`));
    return rows;
  },
  types: { int64: 'bigint', number: 'numeric', text: 'text', boolean: 'boolean', timestamp: 'timestamptz' },
});

describe('drift in PostgreSQL', () => {
  it('widens bigint to numeric for an integer beyond 64 bits, exactly', async () => {
    const schema = 's_drift';
    let store = await openStore(schema);
    const big = contact('c3', 3, { qualification_score: rawNumber('123456789012345678901234567890') });
    await store.commit(checkpoint('contacts', [contact('c1', 1), big], 3));
    await closeStore(store);
    store = await openStore(schema);
    expect(store.changes).toEqual(['contacts.qualification_score: bigint -> numeric']);
    const { rows } = await admin.query(`SELECT id, qualification_score::text AS q, _extra::text AS extra FROM ${schema}.contacts ORDER BY id`);
    expect(rows).toEqual([
      { id: 'c1', q: '42', extra: null },
      { id: 'c3', q: '123456789012345678901234567890', extra: null },
    ]);
    expect((await store.readRecords('contacts'))[1]).toEqual(big);
  });

  it('gives a field a column only when its name fits in 63 bytes; a longer one stays in _extra, never announced as drift', async () => {
    // PostgreSQL cuts a longer name to 63 bytes: two names alike in their first 63 would name one column.
    const fits = `${'é'.repeat(31)}x`;
    const records = [contact('c1', 1, { [fits]: 'kept', [`${'f'.repeat(63)}_a`]: 'a', [`${'f'.repeat(63)}_b`]: 'b' })];
    let store = await openStore('s_long_names');
    expect((await store.commit(checkpoint('contacts', records, 1))).drift).toEqual([fits]);
    await closeStore(store);
    store = await openStore('s_long_names');
    expect(store.changes).toEqual([`contacts.${fits}: new column (text)`]);
    expect((await store.commit(checkpoint('contacts', records, 2))).drift).toEqual([]);
    // The summary lists the column added, and nothing left for the next run.
    expect(store.schemaChanges()).toEqual([{ stream: 'contacts', column: fits, change: 'added', from: null, to: 'text' }]);
    expect(await store.readRecords('contacts')).toEqual(records);
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

  it('readers wait for the ALTER alone, not for the updates of every row that follow it (an added column marked absent)', async () => {
    const schema = 's_alter_alone';
    await closeStore(await openStore(schema));
    let store = await openStore(schema);
    await store.commit(checkpoint('contacts', [contact('c1', 1), contact('c2', 2)], 2));
    await closeStore(store);
    // The rows' updates are held up at will: a trigger someone added waits for an advisory lock the test holds.
    await admin.query(`CREATE FUNCTION ${schema}.hold() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock(4242); RETURN NEW; END $$`);
    await admin.query(`CREATE TRIGGER hold BEFORE UPDATE ON ${schema}.contacts FOR EACH ROW EXECUTE FUNCTION ${schema}.hold()`);
    await admin.query('SELECT pg_advisory_lock(4242)');
    const stream = findStream('contacts');
    if (!stream) throw new Error('no contacts stream');
    const described = recordJsonSchema(stream);
    const schemas = new Map([['contacts', { ...described, properties: { ...(described.properties as object), score_v2: { type: ['null', 'number'] } } }]]);
    const opening = openStore(schema, { schemas });
    const reader = await adminClient(db.url);
    try {
      await vi.waitFor(
        async () => expect((await admin.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242 AND NOT granted")).rows).toHaveLength(1),
        { timeout: 20_000, interval: 20 },
      );
      // While the rows are updated, a reader takes its lock on the table at once (NOWAIT: it would fail if it had to wait).
      await reader.query('BEGIN');
      await reader.query(`LOCK TABLE ${schema}.contacts IN ACCESS SHARE MODE NOWAIT`);
      expect((await reader.query(`SELECT count(*)::int AS n FROM ${schema}.contacts`)).rows[0].n).toBe(2);
      await reader.query('COMMIT');
    } finally {
      await admin.query('SELECT pg_advisory_unlock(4242)');
      await reader.end();
    }
    store = await opening;
    await admin.query(`DROP TRIGGER hold ON ${schema}.contacts`);
    expect(store.changes).toEqual(['contacts.score_v2: new column (numeric)']);
    expect(await store.readRecords('contacts')).toEqual([contact('c1', 1), contact('c2', 2)]);
  });

  it("keeps a dashboard role's grants and views across drift, full refreshes and full reads (no table is made again)", async () => {
    const schema = 's_grants';
    let store = await openStore(schema);
    await store.commit(checkpoint('contacts', [contact('c1', 1), contact('c2', 2, { job_title: { title: 'Buyer' }, lifetime_value: 3 })], 2));
    await store.commit(checkpoint('pipeline_stages', [{ id: 'a' }, { id: 'b' }], 2, { fullRead: { first: true, last: true } }));
    await closeStore(store);
    const role = `dash_${db.name}`; // roles are the server's, not the database's: one of this file's own
    await admin.query(`CREATE ROLE ${role}`);
    await admin.query(`GRANT USAGE ON SCHEMA ${schema} TO ${role}`);
    await admin.query(`GRANT SELECT ON ${schema}.contacts, ${schema}.pipeline_stages TO ${role}`);
    await admin.query(`CREATE VIEW ${schema}.names AS SELECT id, name FROM ${schema}.contacts`);
    const oids = async () => (await admin.query(`SELECT relname, oid::text FROM pg_class WHERE relnamespace = '${schema}'::regnamespace AND relname IN ('contacts', 'pipeline_stages') ORDER BY relname`)).rows;
    const before = await oids();
    // An added column and a widened one; a full refresh and a full read that remove rows.
    store = await openStore(schema);
    expect(store.changes).toEqual(['contacts.job_title: text -> jsonb', 'contacts.lifetime_value: new column (bigint)']);
    await store.commit(checkpoint('pipeline_stages', [{ id: 'b' }], 3, { fullRead: { first: true, last: true } }));
    await store.commit(checkpoint('contacts', [contact('c2', 3, { job_title: { title: 'Buyer' }, lifetime_value: 3 })], 3, { fullRead: { first: true, last: true } }));
    await closeStore(store);
    expect(await oids()).toEqual(before);
    const reader = await adminClient(db.url);
    try {
      await reader.query(`SET ROLE ${role}`);
      expect((await reader.query(`SELECT id FROM ${schema}.contacts`)).rows).toEqual([{ id: 'c2' }]);
      expect((await reader.query(`SELECT id FROM ${schema}.pipeline_stages`)).rows).toEqual([{ id: 'b' }]);
    } finally {
      await reader.end();
    }
    expect((await admin.query(`SELECT id, name FROM ${schema}.names`)).rows).toEqual([{ id: 'c2', name: 'Name c2' }]);
  });

  it('a table dropped by hand is made again and its stream read again from the start: its saved state is forgotten with it', async () => {
    const schema = 's_dropped_table';
    let store = await openStore(schema);
    await store.commit(checkpoint('contacts', [contact('c1', 1), contact('c2', 2)], 2));
    await store.commit(checkpoint('pipeline_stages', [{ id: 'a' }], 2, { fullRead: { first: true, last: true } }));
    await closeStore(store);
    await admin.query(`DROP TABLE ${schema}.contacts`);
    store = await openStore(schema);
    // Going on from the saved state would leave the rows written before the drop out of the copy for good.
    expect([...(await store.savedStates()).keys()]).toEqual(['pipeline_stages']);
    expect(store.notes).toContainEqual({ level: 'WARN', message: expect.stringMatching(/^contacts: its table or a column of it was missing in .* \(dropped by hand\?\): made again, and the stream is read again from the start\.$/) });
    expect(await ids(schema, 'contacts')).toEqual([]);
    expect(await ids(schema, 'pipeline_stages')).toEqual(['a']);
  });

  it('a column dropped by hand is added again and its stream read again from the start (its rows would fail to write for good)', async () => {
    const schema = 's_dropped_column';
    let store = await openStore(schema);
    await store.commit(checkpoint('contacts', [contact('c1', 1), contact('c2', 2)], 2));
    await closeStore(store);
    await admin.query(`ALTER TABLE ${schema}.contacts DROP COLUMN name`);
    store = await openStore(schema);
    expect(await store.savedStates()).toEqual(new Map());
    expect(store.notes.filter((n) => /made again/.test(n.message))).toHaveLength(1);
    expect(await columnTypes(schema, 'contacts')).toMatchObject({ name: 'text' });
    await store.commit(checkpoint('contacts', [contact('c1', 1), contact('c2', 2)], 2));
    expect(await store.readRecords('contacts')).toEqual([contact('c1', 1), contact('c2', 2)]);
  });

  it('a bookkeeping column dropped by hand (_extra, _absent, _synced_at) is added again and its stream read again from the start', async () => {
    const schema = 's_dropped_bookkeeping';
    let store = await openStore(schema);
    await store.commit(checkpoint('contacts', [contact('c1', 1), contact('c2', 2)], 2));
    await closeStore(store);
    await admin.query(`ALTER TABLE ${schema}.contacts DROP COLUMN _absent, DROP COLUMN _synced_at`);
    store = await openStore(schema);
    expect(await store.savedStates()).toEqual(new Map());
    await store.commit(checkpoint('contacts', [contact('c1', 1), contact('c2', 2)], 2));
    expect(await store.readRecords('contacts')).toEqual([contact('c1', 1), contact('c2', 2)]);
  });

  it("while a long query holds a table, the ALTER that waits for it lets the readers queued behind it through", async () => {
    const schema = 's_alter_queue';
    await closeStore(await openStore(schema));
    const stream = findStream('contacts');
    if (!stream) throw new Error('no contacts stream');
    const described = recordJsonSchema(stream);
    const schemas = new Map([['contacts', { ...described, properties: { ...(described.properties as object), score_v2: { type: ['null', 'number'] } } }]]);
    // A dashboard's long query holds the table (ACCESS SHARE) as the run opens and asks for ACCESS EXCLUSIVE.
    const long = await adminClient(db.url);
    const other = await adminClient(db.url);
    await long.query('BEGIN');
    await long.query(`SELECT count(*) FROM ${schema}.contacts`);
    const opening = openStore(schema, { schemas });
    try {
      await vi.waitFor(
        async () => expect((await admin.query(`SELECT 1 FROM pg_locks WHERE relation = '${schema}.contacts'::regclass AND mode = 'AccessExclusiveLock' AND NOT granted`)).rows).toHaveLength(1),
        { timeout: 20_000, interval: 10 },
      );
      // Another dashboard's query, queued behind the ALTER: it gets through while the run still tries (the long one
      // ends only after it), and the run then makes its change.
      expect((await other.query(`SELECT count(*)::int AS n FROM ${schema}.contacts`)).rows[0].n).toBe(0);
    } finally {
      await long.query('COMMIT');
      await long.end();
      await other.end();
    }
    const store = await opening;
    expect(store.postponed).toEqual([]);
    expect(store.changes).toEqual(['contacts.score_v2: new column (numeric)']);
  });

  it('a table a long query holds all along keeps its layout until the next run, which changes it; the run writes meanwhile', async () => {
    const schema = 's_alter_postponed';
    let store = await openStore(schema);
    const big = contact('c2', 2, { qualification_score: rawNumber('123456789012345678901234567890') });
    await store.commit(checkpoint('contacts', [contact('c1', 1), big], 2));
    await closeStore(store);
    const long = await adminClient(db.url);
    try {
      await long.query('BEGIN');
      await long.query(`SELECT count(*) FROM ${schema}.contacts`);
      store = await openStore(schema);
      expect(store.changes).toEqual([]);
      expect(store.postponed).toEqual(['contacts.qualification_score: bigint -> numeric']);
      expect(store.notes.map((n) => n.message)).toEqual([expect.stringMatching(/qualification_score: bigint -> numeric is left for the next run \(a reader held the table\)/)]);
      const bigger = contact('c3', 3, { qualification_score: rawNumber('99999999999999999999999') });
      await store.commit(checkpoint('contacts', [bigger], 3));
      expect(await store.readRecords('contacts')).toEqual([contact('c1', 1), big, bigger]);
      await closeStore(store);
    } finally {
      await long.query('COMMIT');
      await long.end();
    }
    store = await openStore(schema);
    expect(store.changes).toEqual(['contacts.qualification_score: bigint -> numeric']);
    expect(await columnTypes(schema, 'contacts')).toMatchObject({ qualification_score: 'numeric' });
  });

  it('widens a timestamp column to text with the instants written as the service wrote them, and an object turns a text column into jsonb', async () => {
    const schema = 's_widen';
    let store = await openStore(schema);
    await store.commit(checkpoint('contacts', [contact('c1', 1), contact('c2', 2, { won_at: 'not a date', job_title: { title: 'Buyer', level: 2 } })], 2));
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

  it("a widening a dashboard's view refuses is left undone with a WARN naming the view, the rest applied; the run writes; once the view is gone it widens", async () => {
    const schema = 's_view';
    let store = await openStore(schema);
    const big = contact('c2', 2, { qualification_score: rawNumber('123456789012345678901234567890'), lifetime_value: 7 });
    await store.commit(checkpoint('contacts', [contact('c1', 1), big], 2));
    await closeStore(store);
    await admin.query(`CREATE VIEW ${schema}.scores AS SELECT id, qualification_score FROM ${schema}.contacts`);
    store = await openStore(schema);
    // The new column is made; the widening is not, and the run says why and what to do.
    expect(store.changes).toEqual(['contacts.lifetime_value: new column (bigint)']);
    const warns = store.notes.filter((n) => n.level === 'WARN').map((n) => n.message);
    expect(warns).toHaveLength(1);
    expect(warns[0]).toContain('contacts.qualification_score: bigint -> numeric cannot be made');
    expect(warns[0]).toContain(`view ${schema}.scores`);
    expect(store.schemaChanges()).toEqual([
      { stream: 'contacts', column: 'lifetime_value', change: 'added', from: null, to: 'bigint' },
      { stream: 'contacts', column: 'qualification_score', change: 'left_for_next_run', from: 'bigint', to: 'numeric' },
    ]);
    // The run writes; a value the column cannot hold is kept whole in _extra, and every record reads back as sent.
    const bigger = contact('c3', 3, { qualification_score: rawNumber('99999999999999999999999') });
    await store.commit(checkpoint('contacts', [bigger], 3));
    expect(await store.readRecords('contacts')).toEqual([contact('c1', 1), big, bigger]);
    await closeStore(store);
    expect(await columnTypes(schema, 'contacts')).toMatchObject({ qualification_score: 'bigint', lifetime_value: 'bigint' });
    expect((await admin.query(`SELECT count(*)::int AS n FROM ${schema}.scores`)).rows[0].n).toBe(3);
    // Every run asks again; once the view is dropped, the column widens and the values move into it.
    await admin.query(`DROP VIEW ${schema}.scores`);
    store = await openStore(schema);
    expect(store.changes).toEqual(['contacts.qualification_score: bigint -> numeric']);
    const { rows } = await admin.query(`SELECT id, qualification_score::text AS q FROM ${schema}.contacts ORDER BY id`);
    expect(rows).toEqual([
      { id: 'c1', q: '42' },
      { id: 'c2', q: '123456789012345678901234567890' },
      { id: 'c3', q: '99999999999999999999999' },
    ]);
    expect(await store.readRecords('contacts')).toEqual([contact('c1', 1), big, bigger]);
  });

  it('keeps JSON holding U+0000 in _extra (jsonb refuses it) without asking for a jsonb column, and opens again', async () => {
    const schema = 's_nul_json';
    const records = [contact('c1', 1, { job_title: { title: 'nul \u0000 inside' }, nested_field: ['\u0000'] }), contact('c2', 2, { nested_field: ['plain'], segment: 'b2b' })];
    let store = await openStore(schema);
    expect((await store.commit(checkpoint('contacts', records, 2))).drift).toEqual(['nested_field', 'segment']);
    await closeStore(store);
    store = await openStore(schema);
    expect(store.changes).toEqual(['contacts.nested_field: new column (jsonb)', 'contacts.segment: new column (text)']);
    expect(await store.readRecords('contacts')).toEqual(records);
    expect(await columnTypes(schema, 'contacts')).toMatchObject({ job_title: 'text', nested_field: 'jsonb' });
    const { rows } = await admin.query(`SELECT id, job_title, nested_field::text AS nested FROM ${schema}.contacts ORDER BY id`);
    expect(rows).toEqual([
      { id: 'c1', job_title: null, nested: null },
      { id: 'c2', job_title: 'Buyer', nested: '["plain"]' },
    ]);
    await closeStore(store);
    store = await openStore(schema);
    expect(store.changes).toEqual([]);
    expect(await store.readRecords('contacts')).toEqual(records);
  });

  it("keeps a number beyond numeric's range in _extra, exactly, without asking for a numeric column, and opens again", async () => {
    const schema = 's_numeric_range';
    const records = [
      contact('c1', 1, { weight: 2.5 }),
      // numeric holds 131072 digits before the point and 16383 after it.
      contact('c2', 2, { weight: rawNumber('1e200000'), qualification_score: rawNumber('1e131072'), nested_field: { n: rawNumber('1.00e-16382') } }),
      // At the limits: they fit (numeric writes them with all their digits, so only their values are compared).
      contact('c3', 3, { weight: rawNumber('9.5e131071'), nested_field: { n: rawNumber('1.0e-16382') } }),
    ];
    const exact = records.slice(0, 2);
    let store = await openStore(schema);
    expect((await store.commit(checkpoint('contacts', records, 3))).drift).toEqual(['weight', 'nested_field']);
    await closeStore(store);
    store = await openStore(schema);
    expect(store.changes).toEqual(['contacts.weight: new column (numeric)', 'contacts.nested_field: new column (jsonb)']);
    expect((await store.readRecords('contacts')).slice(0, 2)).toEqual(exact);
    const { rows } = await admin.query(`SELECT id, weight IS NULL AS no_weight, qualification_score AS q, nested_field IS NULL AS no_nested FROM ${schema}.contacts ORDER BY id`);
    expect(rows).toEqual([
      { id: 'c1', no_weight: false, q: '42', no_nested: true },
      { id: 'c2', no_weight: true, q: null, no_nested: true },
      { id: 'c3', no_weight: false, q: '42', no_nested: false },
    ]);
    await closeStore(store);
    store = await openStore(schema);
    expect(store.changes).toEqual([]);
    expect((await store.readRecords('contacts')).slice(0, 2)).toEqual(exact);
    const limits = await admin.query(`SELECT weight = 9.5e131071 AS w, nested_field -> 'n' = '1e-16382'::jsonb AS n FROM ${schema}.contacts WHERE id = 'c3'`);
    expect(limits.rows).toEqual([{ w: true, n: true }]);
  });

  it("keeps a field named as a system column (ctid, xmin...) in _extra, never announced as drift, and opens again; CTID in capitals is a column", async () => {
    const schema = 's_system_names';
    const records = [contact('c1', 1, { tableoid: 't', xmin: 1, cmin: 2, xmax: 3, cmax: 4, ctid: '(0,1)', CTID: 'upper' })];
    let store = await openStore(schema);
    expect((await store.commit(checkpoint('contacts', records, 1))).drift).toEqual(['CTID']);
    await closeStore(store);
    for (let i = 0; i < 2; i++) {
      store = await openStore(schema);
      expect(store.changes).toEqual(i === 0 ? ['contacts.CTID: new column (text)'] : []);
      expect(await store.readRecords('contacts')).toEqual(records);
      await closeStore(store);
    }
  });
});

describe('one writer per schema', () => {
  it('a second run on the same schema is refused at once (75), naming the holder; another schema is not', async () => {
    const first = await openStore('s_lock');
    const err = await connectorFailure(() => PostgresStore.open(target('s_lock')));
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
    // pg_terminate_backend only signals the session; the lock goes when its process has ended, which the
    // timeout form waits for (PostgreSQL 14+). Opening at once could meet the lock still held on a busy machine.
    const ended = await admin.query('SELECT pg_terminate_backend($1, 10000) AS ended', [rows[0].pid]);
    expect(ended.rows[0].ended).toBe(true);
    await openStore('s_lock_kill');
    // The first run's next write fails as transient: its connection is gone, and with it its open transaction.
    const err = await connectorFailure(() => first.commit(checkpoint('contacts', [contact('x', 1)], 1)));
    expect(err.failureType).toBe('transient_error');
  });
});

describe("the role's or the database's search_path", () => {
  it('names its temporary tables by pg_temp: a table of the same name in a schema listed before pg_temp is neither used, changed nor dropped', async () => {
    const odd = await freshDatabase('path');
    const setup = await adminClient(odd.url);
    try {
      // pg_temp listed after another schema: unqualified names find that schema's tables first.
      await setup.query('CREATE SCHEMA decoy');
      for (let i = 0; i < 10; i++) await setup.query(`CREATE TABLE decoy._replica_stage_${i} (x int)`);
      await setup.query('INSERT INTO decoy._replica_stage_0 VALUES (7)');
      await setup.query('CREATE TABLE decoy._replica_moves (x int)');
      await setup.query(`ALTER DATABASE "${odd.name}" SET search_path = decoy, pg_temp, pg_catalog, public`);
      const t = parseStoreTarget(odd.url, 's_path', {}) as PostgresTarget;
      const big = contact('c2', 1, { qualification_score: rawNumber('123456789012345678901234567890') });
      let store = await PostgresStore.open(t);
      try {
        await store.commit(checkpoint('contacts', [contact('c1', 1), big], 1));
        await store.commit(checkpoint('pipeline_stages', [{ id: 'a' }], 1, { fullRead: { first: true, last: true } }));
      } finally {
        await store.close();
      }
      // The next open widens the column and moves the value kept in _extra into it, through a temporary table too.
      store = await PostgresStore.open(t);
      try {
        expect(store.changes).toEqual(['contacts.qualification_score: bigint -> numeric']);
      } finally {
        await store.close();
      }
      expect((await setup.query('SELECT id, qualification_score::text AS q FROM s_path.contacts ORDER BY id')).rows).toEqual([
        { id: 'c1', q: '42' },
        { id: 'c2', q: '123456789012345678901234567890' },
      ]);
      expect((await setup.query('SELECT id FROM s_path.pipeline_stages')).rows.map((r) => r.id)).toEqual(['a']);
      expect((await setup.query('SELECT x FROM decoy._replica_stage_0')).rows).toEqual([{ x: 7 }]);
      expect((await setup.query("SELECT to_regclass('decoy._replica_moves') IS NOT NULL AS kept")).rows).toEqual([{ kept: true }]);
    } finally {
      await setup.end();
      await odd.drop();
    }
  });
});

describe('one writer through a connection pooler', () => {
  it("a run whose server session already holds the lock (a pooler in transaction mode handing it a writer's session) is refused (78), the writer kept", async () => {
    const schema = 's_pool_shared';
    const first = await openStore(schema);
    // A pooler in transaction mode gives a second run's statements the server session the first run took its lock on,
    // between the first run's transactions: there the lock, a session's, is taken again at once (it is re-entrant).
    const err = await connectorFailure(() => takeWriterLock(first.session, target(schema)));
    expect(err.failureType).toBe('config_error');
    expect(err.message).toMatch(/connection pooler in transaction or statement mode/);
    expect(err.message).toMatch(/session pooling/);
    // Refused without taking it a second time: the writer's lock is held once, and it goes on writing.
    const [k1, k2] = advisoryKey(schema);
    const { rows } = await admin.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::bigint::oid AND objid = $2::bigint::oid AND granted", [k1, k2]);
    expect(rows[0].n).toBe(1);
    await first.commit(checkpoint('contacts', [contact('c1', 1)], 1));
    await closeStore(first);
    expect((await admin.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::bigint::oid AND objid = $2::bigint::oid", [k1, k2])).rows[0].n).toBe(0);
  });

  it("a checkpoint's transaction run on a server session that does not hold the lock (a pooler's other one) is refused (78), nothing of it kept", async () => {
    const schema = 's_pool_moved';
    const first = await openStore(schema);
    await first.commit(checkpoint('contacts', [contact('c1', 1)], 1));
    // Between two transactions a pooler in transaction mode may run the next one on another server session, where the
    // lock is not held; here the run's own session stops holding it, which is the same to the server: meanwhile a
    // second run takes the lock and writes.
    await first.session.query('SELECT pg_advisory_unlock_all()');
    const second = await openStore(schema);
    await second.commit(checkpoint('contacts', [contact('c2', 2)], 2));
    const err = await connectorFailure(() => first.commit(checkpoint('contacts', [contact('c3', 3)], 3)));
    expect(err.failureType).toBe('config_error');
    expect(err.message).toMatch(/does not hold the writer lock/);
    expect(err.message).toMatch(/connection pooler in transaction or statement mode/);
    expect(await ids(schema, 'contacts')).toEqual(['c1', 'c2']);
    expect(JSON.parse((await admin.query(`SELECT state FROM ${schema}._replica_state WHERE stream = 'contacts'`)).rows[0].state).resume.sync_watermark).toBe(at(2));
  });

  it("writes through a staging table left on its server session by an earlier run of another layout (a pooler's session, not reset)", async () => {
    const schema = 's_pool_stale_stage';
    const store = await openStore(schema);
    // A pooler in transaction mode resets nothing between clients: an earlier run's temporary staging tables, of
    // another layout (before a column was added, or of another schema's streams), are still there.
    for (let i = 0; i < 10; i++) await store.session.query(`CREATE TEMP TABLE _replica_stage_${i} (x int) ON COMMIT DELETE ROWS`);
    await store.commit(checkpoint('contacts', [contact('c1', 1), contact('c2', 1)], 1));
    await store.commit(checkpoint('pipeline_stages', [{ id: 'a' }], 1, { fullRead: { first: true, last: true } }));
    expect(await ids(schema, 'contacts')).toEqual(['c1', 'c2']);
    expect(await ids(schema, 'pipeline_stages')).toEqual(['a']);
  });
});

describe('transactions', () => {
  it('a checkpoint killed before its commit leaves nothing, and readers meanwhile see the last commit', async () => {
    const schema = 's_kill';
    const store = await openStore(schema);
    await store.commit(checkpoint('contacts', [contact('c1', 1), contact('c2', 1)], 1));
    // Hold c1 so that the next checkpoint's upsert waits inside its transaction (after its COPY).
    const blocker = await adminClient(db.url);
    await blocker.query('BEGIN');
    await blocker.query(`SELECT 1 FROM ${schema}.contacts WHERE id = 'c1' FOR UPDATE`);
    const pid = (await store.session.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    const writing = store.commit(checkpoint('contacts', [contact('c1', 5), contact('c3', 5)], 5)).then(
      () => undefined,
      (e: unknown) => e,
    );
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
    expect((await next.savedStates()).get('contacts')).toBe(JSON.stringify({ resume: { sync_watermark: at(1) } }));
  });

  it('a stream the server refuses (a trigger someone added) is rolled back whole and stops; its group is written again without it', async () => {
    const schema = 's_refused';
    const store = await openStore(schema);
    await admin.query(`CREATE FUNCTION ${schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.id = 'bad' THEN RAISE EXCEPTION 'refused %', NEW.id; END IF; RETURN NEW; END $$`);
    await admin.query(`CREATE TRIGGER refuse BEFORE INSERT ON ${schema}.contacts FOR EACH ROW EXECUTE FUNCTION ${schema}.refuse()`);
    // One group: the refused stream's checkpoints and another stream's; the group is written again without the refused one.
    const failed: string[] = [];
    store.onStreamFailed = (stream, error) => failed.push(`${stream}: ${error.message}`);
    await store.write(checkpoint('contacts', [contact('ok', 1), contact('bad', 1)], 1));
    await store.write(checkpoint('stage_events', [{ id: 'e1', contact_id: 'ok', created_at: at(1) }], 1));
    await store.flush();
    expect(failed).toEqual([expect.stringMatching(/^contacts: .*refused bad/)]);
    expect(await ids(schema, 'contacts')).toEqual([]);
    expect(await ids(schema, 'stage_events')).toEqual(['e1']);
    expect([...(await store.savedStates()).keys()]).toEqual(['stage_events']);
    const err = await connectorFailure(() => store.commit(checkpoint('contacts', [contact('ok', 2)], 2)));
    expect(err.message).toMatch(/An earlier checkpoint of contacts could not be written .*refused bad/);
    await store.commit(checkpoint('stage_events', [{ id: 'e2', contact_id: 'ok', created_at: at(2) }], 2));
    expect(await ids(schema, 'stage_events')).toEqual(['e1', 'e2']);
  });

  it('two streams the server refuses in one group both stop; the rest of the group is written, and the run goes on', async () => {
    const schema = 's_refused_two';
    const store = await openStore(schema);
    await admin.query(`CREATE FUNCTION ${schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.id = 'bad' THEN RAISE EXCEPTION 'refused %', NEW.id; END IF; RETURN NEW; END $$`);
    for (const table of ['contacts', 'stage_events']) {
      await admin.query(`CREATE TRIGGER refuse BEFORE INSERT ON ${schema}.${table} FOR EACH ROW EXECUTE FUNCTION ${schema}.refuse()`);
    }
    const failed: string[] = [];
    store.onStreamFailed = (stream, error) => failed.push(`${stream}: ${error.message}`);
    // One group: two refused streams' checkpoints and another stream's.
    await store.write(checkpoint('contacts', [contact('ok', 1), contact('bad', 1)], 1));
    await store.write(checkpoint('stage_events', [{ id: 'bad', contact_id: 'ok', created_at: at(1) }], 1));
    await store.write(checkpoint('pipeline_stages', [{ id: 's1' }], 1, { fullRead: { first: true, last: false } }));
    await store.flush();
    expect(failed.sort()).toEqual([expect.stringMatching(/^contacts: .*refused bad/), expect.stringMatching(/^stage_events: .*refused bad/)]);
    expect(await ids(schema, 'contacts')).toEqual([]);
    expect(await ids(schema, 'stage_events')).toEqual([]);
    expect(await ids(schema, 'pipeline_stages')).toEqual(['s1']);
    expect([...(await store.savedStates()).keys()]).toEqual(['pipeline_stages']);
    // The other streams go on.
    await store.commit(checkpoint('pipeline_stages', [{ id: 's2' }], 2, { fullRead: { first: false, last: true } }));
    expect(await ids(schema, 'pipeline_stages')).toEqual(['s1', 's2']);
  });

  it("a stream stopped by a refusal the user must see to (the server turned read-only) refuses its later checkpoints with that refusal's status", async () => {
    const store = await openStore('s_refusal_kind');
    await store.commit(checkpoint('contacts', [contact('c1', 1)], 1));
    // As a failover or a full disk on a managed service does: the server takes no more writes.
    await store.session.query('SET default_transaction_read_only = on');
    const refused = await connectorFailure(() => store.commit(checkpoint('contacts', [contact('c2', 2)], 2)));
    expect(refused.failureType).toBe('config_error');
    expect(refused.message).toMatch(/accepts no writes/);
    const later = await connectorFailure(() => store.write(checkpoint('contacts', [contact('c3', 3)], 3)));
    expect(later.failureType).toBe('config_error');
    expect(later.message).toMatch(/accepts no writes/);
    await store.session.query('SET default_transaction_read_only = off');
    expect(await ids('s_refusal_kind', 'contacts')).toEqual(['c1']);
  });

  it('a session holding a lock the writes need (left idle in a transaction) ends their wait: a transient error naming it, nothing half-written', async () => {
    const schema = 's_lock_held';
    const store = await openStore(schema, { lockWaitMs: 300 });
    await store.commit(checkpoint('contacts', [contact('c1', 1)], 1));
    // A dashboard team's session locked the table (or rows of it) and was left idle in its transaction.
    const holder = await adminClient(db.url);
    try {
      await holder.query("SET application_name = 'team-notebook'");
      await holder.query('BEGIN');
      await holder.query(`LOCK TABLE ${schema}.contacts IN SHARE MODE`);
      const failed: ConnectorError[] = [];
      store.onStreamFailed = (_stream, error) => failed.push(error);
      await store.write(checkpoint('contacts', [contact('c1', 2), contact('c2', 2)], 2));
      await store.write(checkpoint('stage_events', [{ id: 'e1', contact_id: 'c1', created_at: at(2) }], 2));
      await store.flush();
      expect(failed).toHaveLength(1);
      expect(failed[0]?.failureType).toBe('transient_error');
      expect(failed[0]?.message).toMatch(/lock/);
      expect(failed[0]?.message).toMatch(/"team-notebook".*idle in transaction.*ShareLock on contacts/);
      // The other streams are written; contacts stays as last committed, its state too.
      expect(await ids(schema, 'stage_events')).toEqual(['e1']);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    expect(await ids(schema, 'contacts')).toEqual(['c1']);
    expect((await admin.query(`SELECT updated_at FROM ${schema}.contacts`)).rows[0].updated_at).toEqual(new Date(at(1)));
    expect(JSON.parse((await store.savedStates()).get('contacts') ?? '{}')).toEqual({ resume: { sync_watermark: at(1) } });
  });

  it('a session holding a table past the write\'s wait does not hold the run\'s end as long again: that table is not counted', async () => {
    const schema = 's_lock_count';
    const store = await openStore(schema, { lockWaitMs: 300 });
    await store.commit(checkpoint('contacts', [contact('c1', 1)], 1));
    // `LOCK TABLE` without a mode: ACCESS EXCLUSIVE, which keeps even a count(*) out.
    const holder = await adminClient(db.url);
    try {
      await holder.query('BEGIN');
      await holder.query(`LOCK TABLE ${schema}.contacts`);
      const failed: ConnectorError[] = [];
      store.onStreamFailed = (_stream, error) => failed.push(error);
      await store.write(checkpoint('contacts', [contact('c2', 2)], 2));
      await store.write(checkpoint('stage_events', [{ id: 'e1', contact_id: 'c1', created_at: at(2) }], 2));
      await store.flush();
      expect(failed).toHaveLength(1);
      // The run's last line: the tables it could count, not a second wait (and a second failure) on the held one.
      const counts = await store.finish();
      expect(counts.has('contacts')).toBe(false);
      expect(counts.get('stage_events')).toBe(1);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  });

  it('names the sessions of its own database only: a copy of it (the same table oids) whose session holds a lock is not named', async () => {
    const schema = 's_lock_copy';
    const source = await freshDatabase('src');
    const adminUrl = await postgresAdminUrl();
    const copyName = `${source.name}_copy`;
    const t = parseStoreTarget(source.url, schema, {}) as PostgresTarget;
    const clients: pg.Client[] = [];
    try {
      await (await PostgresStore.open(t)).close();
      // A copy made from it as a template (a staging database) has the same tables under the same oids.
      const server = await adminClient(adminUrl);
      await server.query(`CREATE DATABASE "${copyName}" TEMPLATE "${source.name}"`);
      await server.end();
      const store = await PostgresStore.open(t, { lockWaitMs: 300 });
      try {
        const hold = async (url: string, name: string): Promise<void> => {
          const client = await adminClient(url);
          clients.push(client);
          await client.query(`SET application_name = '${name}'`);
          await client.query('BEGIN');
          await client.query(`LOCK TABLE ${schema}.contacts IN SHARE MODE`);
        };
        await hold(withDatabase(adminUrl, copyName), 'in-the-copy');
        await hold(source.url, 'team-notebook');
        const failed: ConnectorError[] = [];
        store.onStreamFailed = (_stream, error) => failed.push(error);
        await store.write(checkpoint('contacts', [contact('c1', 1)], 1));
        await store.flush();
        expect(failed).toHaveLength(1);
        expect(failed[0]?.message).toMatch(/"team-notebook".*ShareLock on contacts/);
        expect(failed[0]?.message).not.toContain('in-the-copy');
      } finally {
        for (const client of clients) await client.end();
        await store.close();
      }
    } finally {
      const server = await adminClient(adminUrl);
      await server.query(`DROP DATABASE IF EXISTS "${copyName}" WITH (FORCE)`);
      await server.end();
      await source.drop();
    }
  });

  it("in a store of many accounts, a refused row stops that account's part of the stream alone; its state is kept as last committed", async () => {
    const schema = 's_refused_accounts';
    const store = await openStore(schema, { accountKey: true });
    await admin.query(`CREATE FUNCTION ${schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.id = 'bad' THEN RAISE EXCEPTION 'refused %', NEW.id; END IF; RETURN NEW; END $$`);
    await admin.query(`CREATE TRIGGER refuse BEFORE INSERT ON ${schema}.contacts FOR EACH ROW EXECUTE FUNCTION ${schema}.refuse()`);
    const of = (account: string, records: ReturnType<typeof contact>[], states: Record<string, number>) => ({
      ...checkpoint('contacts', records.map((r) => ({ ...r, account })), 1),
      account,
      // The run's state of every account (minutes); the checkpoint carries its own account's.
      state: JSON.stringify({ sync_watermark: at(states[account] ?? 0) }),
    });
    await store.commit(of('a', [contact('a1', 1)], { a: 1 }));
    const failed: string[] = [];
    store.onStreamFailed = (stream, error, account) => failed.push(`${stream}/${account}: ${error.message}`);
    // One group: B's rows, A's refused row, B's again (its state holding A's refused one).
    await store.write(of('b', [contact('b1', 2)], { a: 1, b: 2 }));
    await store.write(of('a', [contact('bad', 3)], { a: 3, b: 2 }));
    await store.write(of('b', [contact('b2', 4)], { a: 3, b: 4 }));
    await store.flush();
    expect(failed).toEqual([expect.stringMatching(/^contacts\/a: .*refused bad/)]);
    const { rows } = await admin.query(`SELECT account || '/' || id AS k FROM ${schema}.contacts ORDER BY 1`);
    expect(rows.map((r) => r.k)).toEqual(['a/a1', 'b/b1', 'b/b2']);
    expect(JSON.parse((await store.savedStates()).get('contacts') ?? 'null')).toEqual({ accounts: { a: { sync_watermark: at(1) }, b: { sync_watermark: at(4) } } });
    const err = await connectorFailure(() => store.commit(of('a', [contact('a2', 5)], { a: 5, b: 4 })));
    expect(err.message).toMatch(/An earlier checkpoint of contacts of account "a" could not be written .*refused bad/);
    await store.commit(of('b', [contact('b3', 6)], { a: 5, b: 6 }));
    expect(JSON.parse((await store.savedStates()).get('contacts') ?? 'null')).toEqual({ accounts: { a: { sync_watermark: at(1) }, b: { sync_watermark: at(6) } } });
  });

  it("in a store of many accounts, a refused state row stops that account's part alone, the group's other rows and states committed", async () => {
    const schema = 's_refused_state';
    const store = await openStore(schema, { accountKey: true });
    await admin.query(`CREATE FUNCTION ${schema}.refuse_state() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.stream = 'contacts/a' THEN RAISE EXCEPTION 'refused %', NEW.stream; END IF; RETURN NEW; END $$`);
    await admin.query(`CREATE TRIGGER refuse_state BEFORE INSERT OR UPDATE ON ${schema}._replica_state FOR EACH ROW EXECUTE FUNCTION ${schema}.refuse_state()`);
    const of = (account: string, stream: string, records: Record<string, unknown>[], minute: number) => ({
      ...checkpoint(stream, records.map((r) => ({ ...r, account })), minute),
      account,
      state: JSON.stringify({ sync_watermark: at(minute) }),
    });
    const failed: string[] = [];
    store.onStreamFailed = (stream, error, account) => failed.push(`${stream}/${account}: ${error.message}`);
    // One group of three parts; the trigger refuses the state row of a's contacts.
    await store.write(of('a', 'contacts', [contact('a1', 1)], 1));
    await store.write(of('b', 'contacts', [contact('b1', 2)], 2));
    await store.write(of('a', 'stage_events', [{ id: 'e1', contact_id: 'a1', created_at: at(3) }], 3));
    await store.flush();
    expect(failed).toEqual([expect.stringMatching(/^contacts\/a: .*refused contacts\/a/)]);
    const { rows } = await admin.query(`SELECT account || '/' || id AS k FROM ${schema}.contacts ORDER BY 1`);
    expect(rows.map((r) => r.k)).toEqual(['b/b1']);
    expect(JSON.parse((await store.savedStates()).get('contacts') ?? 'null')).toEqual({ accounts: { b: { sync_watermark: at(2) } } });
    expect(JSON.parse((await store.savedStates()).get('stage_events') ?? 'null')).toEqual({ accounts: { a: { sync_watermark: at(3) } } });
  });
});
