/**
 * The three stores of `replicate` as the end-to-end suites see them (a
 * SQLite file, a PostgreSQL database on the tests' server, a DuckDB file):
 * a new store's --db, and what a store holds read back, the same way for
 * each (test/e2e/replica/stores/).
 */
import { afterAll } from 'vitest';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { DuckDBInstance } from '@duckdb/node-api';
import { DuckdbStore } from '../../src/stores/duckdb/store.js';
import { PostgresStore } from '../../src/stores/postgres/store.js';
import { parseStoreTarget } from '../../src/stores/target.js';
import { replicaRecords, replicaStates } from '../../src/replica/records.js';
import type { StreamState } from '../../src/engine/state.js';
import { LISTS, replicaAsDump } from './emulator-runs.js';
import { adminClient, freshDatabase, type TestDatabase } from './postgres.js';
import { readDatabase } from './sqlite.js';

/** A store as the suite sees it: a new one's --db, and what it holds. */
export interface StoreKind {
  readonly name: 'sqlite' | 'postgres' | 'duckdb';
  /** The --db of a new, empty store named `label` (in `dir` for a file). */
  fresh(dir: string, label: string): Promise<string>;
  /** Every list's records, in the dump's shape and order (each list by id). */
  dump(db: string): Promise<Record<string, unknown[]>>;
  /** The state saved by each stream's last commit. */
  states(db: string): Promise<Map<string, StreamState>>;
  /** The columns of a table. */
  columns(db: string, table: string): Promise<string[]>;
  /** A store of many accounts: every list's rows (with their account column), and the states saved. */
  accounts(db: string): Promise<Record<string, Record<string, unknown>[]>>;
  accountStates(db: string): Promise<Map<string, StreamState>>;
  /** The primary key's columns of a table, in order. */
  primaryKey(db: string, table: string): Promise<string[]>;
  /** Run SQL text of one or more statements as a user would (sqlite3, psql, duckdb), no run writing the store. */
  exec(db: string, sql: string): Promise<void>;
  /** The rows of one query. */
  rows(db: string, sql: string): Promise<Record<string, unknown>[]>;
}

/** The databases the PostgreSQL runs made, dropped at the end of the file that made them (storeKinds). */
const databases: TestDatabase[] = [];

async function readStore<T>(open: () => Promise<PostgresStore | DuckdbStore>, read: (store: PostgresStore | DuckdbStore) => Promise<T>): Promise<T> {
  const store = await open();
  try {
    return await read(store);
  } finally {
    await store.close();
  }
}

async function asDump(store: PostgresStore | DuckdbStore): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const list of LISTS) out[list] = await store.readRecords(list);
  return out;
}

const pgTarget = (url: string) => parseStoreTarget(url, undefined, {});
const openPg = (url: string, accountKey = false) => () => PostgresStore.open(pgTarget(url) as Parameters<typeof PostgresStore.open>[0], { lock: false, accountKey });
const openDuck = (path: string, accountKey = false) => () => DuckdbStore.open(parseStoreTarget(`duckdb:${path}`, undefined, {}) as Parameters<typeof DuckdbStore.open>[0], { accountKey });

async function asRows(store: PostgresStore | DuckdbStore): Promise<Record<string, Record<string, unknown>[]>> {
  const out: Record<string, Record<string, unknown>[]> = {};
  for (const list of LISTS) out[list] = await store.readRecords(list);
  return out;
}

async function pgRows<T extends Record<string, unknown>>(db: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = await adminClient(db);
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

const STORES: readonly StoreKind[] = [
  {
    name: 'sqlite',
    fresh: async (dir, label) => join(dir, `${label}.db`),
    dump: async (db) => replicaAsDump(db),
    columns: async (db, table) => readDatabase(db, (h) => h.prepare(`SELECT name FROM pragma_table_info('${table}')`).all().map((r) => String(r.name))),
    accounts: async (db) => {
      const records = replicaRecords(db);
      return Object.fromEntries(LISTS.map((list) => [list, (records.get(list) ?? []) as Record<string, unknown>[]]));
    },
    states: async (db) => replicaStates(db),
    accountStates: async (db) => replicaStates(db),
    primaryKey: async (db, table) =>
      readDatabase(db, (h) =>
        h
          .prepare(`SELECT name, pk FROM pragma_table_info('${table}') WHERE pk > 0 ORDER BY pk`)
          .all()
          .map((r) => String(r.name)),
      ),
    exec: async (db, sql) => {
      const handle = new DatabaseSync(db);
      try {
        handle.exec(sql);
      } finally {
        handle.close();
      }
    },
    rows: async (db, sql) => readDatabase(db, (h) => h.prepare(sql).all() as Record<string, unknown>[]),
  },
  {
    name: 'postgres',
    fresh: async (_dir, label) => {
      const db = await freshDatabase(`e2e_${label.replace(/\W/g, '_')}`);
      databases.push(db);
      return db.url;
    },
    dump: (db) => readStore(openPg(db), asDump),
    states: (db) => readStore(openPg(db), (s) => s.loadStates()),
    columns: async (db, table) => {
      const client = await adminClient(db);
      try {
        const { rows } = await client.query<{ column_name: string }>("SELECT column_name FROM information_schema.columns WHERE table_schema = 'data_read' AND table_name = $1", [table]);
        return rows.map((r) => r.column_name);
      } finally {
        await client.end();
      }
    },
    accounts: (db) => readStore(openPg(db, true), asRows),
    accountStates: (db) => readStore(openPg(db, true), (s) => s.loadStates()),
    primaryKey: async (db, table) =>
      (
        await pgRows<{ name: string }>(
          db,
          `SELECT a.attname AS name FROM pg_index i JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) ON true
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
            WHERE i.indrelid = ('data_read.' || quote_ident($1))::regclass AND i.indisprimary ORDER BY k.n`,
          [table],
        )
      ).map((r) => r.name),
    exec: async (db, sql) => {
      const client = await adminClient(db);
      try {
        await client.query(sql);
      } finally {
        await client.end();
      }
    },
    rows: (db, sql) => pgRows(db, sql),
  },
  {
    name: 'duckdb',
    fresh: async (dir, label) => join(dir, `${label}.duckdb`),
    dump: (db) => readStore(openDuck(db), asDump),
    states: (db) => readStore(openDuck(db), (s) => s.loadStates()),
    columns: (db) => readStore(openDuck(db), async (s) => s.layoutOf('contacts').columns.map((c) => c.field)),
    accounts: (db) => readStore(openDuck(db, true), asRows),
    accountStates: (db) => readStore(openDuck(db, true), (s) => s.loadStates()),
    primaryKey: (db, table) =>
      readStore(openDuck(db, true), async (s) => {
        // DuckDB's stream tables carry no PRIMARY KEY constraint (duckdb/tables.ts): their key is the NOT NULL columns before the bookkeeping ones.
        const reader = await (s as DuckdbStore).session.runAndReadAll(
          `SELECT c.column_name AS c FROM duckdb_columns() c WHERE c.schema_name = 'main' AND c.table_name = '${table}' AND NOT c.is_nullable AND NOT starts_with(c.column_name, '_') ORDER BY c.column_index`,
        );
        return reader.getRowObjectsJS().map((r) => String(r.c));
      }),
    exec: async (db, sql) => {
      const instance = await DuckDBInstance.create(db);
      const connection = await instance.connect();
      try {
        await connection.run(sql);
      } finally {
        connection.closeSync();
        instance.closeSync();
      }
    },
    rows: async (db, sql) => {
      const instance = await DuckDBInstance.create(db, { access_mode: 'READ_ONLY' });
      const connection = await instance.connect();
      try {
        return (await connection.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];
      } finally {
        connection.closeSync();
        instance.closeSync();
      }
    },
  },
];

/** The three stores, for describe.each; the PostgreSQL databases made are dropped after the calling file. */
export function storeKinds(): readonly StoreKind[] {
  afterAll(async () => {
    for (const db of databases.splice(0)) await db.drop();
  });
  return STORES;
}
