/**
 * What a replica in PostgreSQL or DuckDB holds, for the image check
 * (scripts/image-check/stores.sh): per table of a list, each row's id and
 * its version (the instant of its cursor field, `updated_at`, `created_at`
 * or `deleted_at`, as epoch milliseconds; null for a table without one), as
 * one JSON object on stdout. Read with the drivers of this checkout's
 * node_modules, on plain SQL, not with the connector's own code.
 *
 *   node scripts/store-rows.ts duckdb FILE [SCHEMA]      (default main)
 *   node scripts/store-rows.ts postgres [SCHEMA]         (default data_read; the server from PG* variables)
 *
 * Plain JavaScript with type annotations only: Node strips them itself.
 */
import pg from 'pg';
import { DuckDBInstance } from '@duckdb/node-api';

const LISTS = ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages'];
const VERSIONS = ['updated_at', 'created_at', 'deleted_at'];

type Rows = Record<string, [string, number | null][]>;
type Query = (sql: string, params: unknown[]) => Promise<Record<string, unknown>[]>;

async function collect(query: Query, schema: string, epochMs: (column: string) => string): Promise<Rows> {
  const out: Rows = {};
  for (const list of LISTS) {
    const columns = (await query('SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2', [schema, list])).map((r) => String(r.column_name));
    if (columns.length === 0) throw new Error(`no table ${schema}.${list}`);
    const version = VERSIONS.find((c) => columns.includes(c));
    const rows = await query(`SELECT id, ${version === undefined ? 'NULL' : epochMs(`"${version}"`)} AS v FROM "${schema}"."${list}"`, []);
    out[list] = rows.map((r) => [String(r.id), r.v === null || r.v === undefined ? null : Number(r.v)] as [string, number | null]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }
  return out;
}

async function fromPostgres(schema: string): Promise<Rows> {
  const client = new pg.Client(); // PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE from the environment
  await client.connect();
  try {
    return await collect(async (sql, params) => (await client.query(sql, params)).rows as Record<string, unknown>[], schema, (c) => `floor(extract(epoch FROM ${c}) * 1000)::bigint::text`);
  } finally {
    await client.end();
  }
}

async function fromDuckdb(file: string, schema: string): Promise<Rows> {
  const instance = await DuckDBInstance.create(file, { access_mode: 'READ_ONLY' });
  const connection = await instance.connect();
  try {
    const query: Query = async (sql, params) => {
      const reader = await connection.runAndReadAll(sql, params as never);
      return reader.getRowObjectsJS() as Record<string, unknown>[];
    };
    return await collect(query, schema, (c) => `CAST(epoch_ms(${c}) AS VARCHAR)`);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

const [kind, ...rest] = process.argv.slice(2);
try {
  const rows = kind === 'duckdb' ? await fromDuckdb(rest[0] ?? '', rest[1] ?? 'main') : kind === 'postgres' ? await fromPostgres(rest[0] ?? 'data_read') : undefined;
  if (rows === undefined) throw new Error('usage: store-rows.ts duckdb FILE [SCHEMA] | postgres [SCHEMA]');
  process.stdout.write(`${JSON.stringify(rows)}\n`);
} catch (err) {
  process.stderr.write(`store-rows: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
