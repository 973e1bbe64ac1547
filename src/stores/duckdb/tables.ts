/**
 * The tables of a DuckDB store, made and changed when the store opens
 * (drift as columns.ts says; never during the run's writes).
 *
 * Types: text -> VARCHAR, timestamp -> TIMESTAMPTZ, boolean -> BOOLEAN,
 * int64 -> BIGINT, int128 -> HUGEINT (exact integers to 2^127), number ->
 * DOUBLE, json -> JSON. DuckDB has no exact decimal of any scale, so a
 * number column holds the nearest double, and the row's `_extra` the
 * number's exact text when the double does not give it back digit for digit
 * (values.ts); an integer beyond HUGEINT asks for a number column the same
 * way. `_extra` and `_absent` are JSON (kept as written), `_synced_at`
 * TIMESTAMPTZ.
 *
 * A widened column is rewritten in place (`ALTER ... SET DATA TYPE ...
 * USING`, old values converted as in the PostgreSQL store; a DOUBLE to the
 * text JavaScript writes for it, in VARCHAR and in JSON alike); an integer
 * column widened to DOUBLE first copies into `_extra` the exact text of each
 * value a double cannot hold. Then the values a run kept in `_extra`
 * because they did not fit move into the column.
 */
import { parseExactObject, rawNumber } from '../../exact-json.js';
import { ABSENT_COLUMN, EXTRA_COLUMN, SYNCED_AT_COLUMN, createTableSql, droppedColumns, qualified, quoteIdent, rowKeySql, type BookkeepingTypes, type ColumnChange, type StoreKind, type StoreLayout } from '../columns.js';
import { METADATA_TABLE, TABLES_TABLE, forgetStream, type StoreTableSpec } from '../checkpoint.js';
import { jsonText, movedFromExtra, type Cell, type Data, type StoreDialect } from '../values.js';
import type { DuckdbConnection } from './connection.js';
import { RefusedWidening, openEachTable, type OpenedTables } from '../notes.js';

export const DUCKDB_TYPES: Readonly<Record<StoreKind, string>> = {
  text: 'VARCHAR',
  timestamp: 'TIMESTAMPTZ',
  boolean: 'BOOLEAN',
  int64: 'BIGINT',
  int128: 'HUGEINT',
  number: 'DOUBLE',
  json: 'JSON',
};

/** DuckDB's names ignore case: two fields that differ only in case cannot both have a column. */
export const DUCKDB_NAMING = { key: (name: string) => name.toLowerCase(), maxBytes: 1024 } as const;

/** A number is exact in a DOUBLE when JavaScript writes the double back with the same text. */
export const DUCKDB_DIALECT: StoreDialect = {
  numberExact: (text) => String(Number(text)) === text,
  storesString: (text) => !text.includes('\u0000'),
  naming: DUCKDB_NAMING,
  textOf,
  instantOf,
};

/** The ISO 8601 text of a TIMESTAMPTZ column, as the service writes instants (UTC, milliseconds, Z). */
export function isoText(expr: string): string {
  return `strftime(${expr} AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%gZ')`;
}

/** A column's value as text (to compare ids across kinds). */
function textOf(kind: StoreKind, expr: string): string {
  if (kind === 'text') return expr;
  if (kind === 'json') return `json_extract_string(${expr}, '$')`;
  if (kind === 'timestamp') return isoText(expr);
  return `CAST(${expr} AS VARCHAR)`;
}

/** A column's value as an instant (NULL when it is not one). */
function instantOf(kind: StoreKind, expr: string): string {
  return kind === 'timestamp' ? expr : `TRY_CAST(${textOf(kind, expr)} AS TIMESTAMPTZ)`;
}

/** Rows of a query, as JS values (BIGINTs as bigint). */
export async function rowsOf(connection: DuckdbConnection, sql: string, values?: (string | number | boolean | null)[]): Promise<Record<string, unknown>[]> {
  const reader = await connection.runAndReadAll(sql, values);
  return reader.getRowObjectsJS() as Record<string, unknown>[];
}

async function tableExists(connection: DuckdbConnection, schema: string, table: string): Promise<boolean> {
  const rows = await rowsOf(connection, 'SELECT 1 AS x FROM duckdb_tables() WHERE schema_name = $1 AND table_name = $2 AND NOT temporary', [schema, table]);
  return rows.length > 0;
}

/** Whether the schema holds the store's bookkeeping. */
export async function storeExists(connection: DuckdbConnection, schema: string): Promise<boolean> {
  return tableExists(connection, schema, METADATA_TABLE);
}

/** The types of the columns every stream's table has beside its fields. */
const BOOKKEEPING_TYPES: BookkeepingTypes = { [EXTRA_COLUMN]: 'JSON', [ABSENT_COLUMN]: 'JSON', [SYNCED_AT_COLUMN]: 'TIMESTAMPTZ' };

/**
 * Whether a stream's table gets a PRIMARY KEY constraint: no. Its key
 * columns (the id; the account and the id in a store of many accounts) are
 * NOT NULL only: DuckDB keeps a key's index (ART) in memory, whole, for as
 * long as the file is open, and checks it on every insert, so that a
 * constraint made the run's memory grow with the table (21 MB of index
 * for 300k contacts) and made each group's INSERT about three times slower.
 * Ids stay unique because the store is their only writer (the file lock)
 * and each group replaces the rows of its ids in one transaction: the group
 * holds one row per id (group-writer.ts), its DELETE takes the table's rows
 * of those ids, its INSERT puts the new ones (writer.ts). Tables made by
 * earlier versions keep their constraint; both are written the same way.
 */
const KEY_CONSTRAINT = false;

/**
 * The text JavaScript's String(Number) writes for a DOUBLE (what the other
 * stores write: `3`, `100000000000000000000`, `1e+21`, `1e-7`), from
 * DuckDB's own text, which has the same shortest digits but its own form
 * (`3.0`, `1e+20`, `1e-07`): its sign, digits and exponent rewritten by
 * ECMAScript's Number::toString rules. inf and nan keep DuckDB's text.
 * Inline (no lambda): DuckDB 1.5 fails on a lambda in ALTER ... USING.
 */
function jsNumberText(expr: string): string {
  const text = `CAST(${expr} AS VARCHAR)`;
  const part = (group: number): string => `regexp_extract(${text}, '^(-?)([0-9]+)(?:[.]([0-9]+))?(?:e([-+][0-9]+))?$', ${group})`;
  const written = `(${part(2)} || ${part(3)})`;
  const digits = `rtrim(ltrim(${written}, '0'), '0')`;
  // The value is 0.DIGITS times 10^n.
  const n = `(length(${part(2)}) + coalesce(TRY_CAST(nullif(${part(4)}, '') AS INTEGER), 0) - (length(${written}) - length(ltrim(${written}, '0'))))`;
  const exponent = `'e' || CASE WHEN ${n} >= 1 THEN '+' ELSE '-' END || CAST(abs(${n} - 1) AS VARCHAR)`;
  return `CASE WHEN ${part(2)} = '' THEN ${text} WHEN ${digits} = '' THEN '0' ELSE ${part(1)} || CASE
    WHEN length(${digits}) <= ${n} AND ${n} <= 21 THEN ${digits} || repeat('0', ${n} - length(${digits}))
    WHEN 0 < ${n} AND ${n} <= 21 THEN ${digits}[1:${n}] || '.' || ${digits}[${n} + 1:]
    WHEN -6 < ${n} AND ${n} <= 0 THEN '0.' || repeat('0', -${n}) || ${digits}
    ELSE ${digits}[1:1] || CASE WHEN length(${digits}) > 1 THEN '.' || ${digits}[2:] ELSE '' END || ${exponent} END END`;
}

function convertSql(from: StoreKind, to: StoreKind, column: string): string {
  if (to === 'json') {
    if (from === 'timestamp') return `to_json(${isoText(column)})`;
    // to_json writes a DOUBLE as DuckDB's text (3.0, 1e21): the number JavaScript writes instead, as the text widening does.
    if (from === 'number') return `CAST(${jsNumberText(column)} AS JSON)`;
    return `to_json(${column})`;
  }
  if (to === 'text') {
    if (from === 'timestamp') return isoText(column);
    if (from === 'boolean') return `CASE WHEN ${column} THEN 'true' WHEN NOT ${column} THEN 'false' END`;
    if (from === 'number') return jsNumberText(column);
    return `CAST(${column} AS VARCHAR)`;
  }
  return `CAST(${column} AS ${DUCKDB_TYPES[to]})`;
}

/**
 * Record a stream's layout, when it differs from the one stored (`before`): every run opens the store, and the
 * statement of an unchanged layout cost about as much as the rest of its table's opening.
 */
async function saveLayout(connection: DuckdbConnection, schema: string, layout: StoreLayout, before: StoreLayout | undefined): Promise<void> {
  if (before !== undefined && JSON.stringify(before) === JSON.stringify(layout)) return;
  await connection.run(`INSERT OR REPLACE INTO ${qualified(schema, TABLES_TABLE)} (stream, layout) VALUES ($1, $2)`, [layout.stream, JSON.stringify(layout)]);
}

/** Set `field` and `_extra` of the rows named (by primary key) through a staging table: [id, cell as text, _extra text]. */
async function rewriteRows(connection: DuckdbConnection, schema: string, layout: StoreLayout, field: string, kind: StoreKind, rows: readonly (readonly [string, Cell | undefined, string | null])[]): Promise<void> {
  if (rows.length === 0) return;
  await connection.run('CREATE OR REPLACE TEMP TABLE _replica_moves (id VARCHAR, cell VARCHAR, extra VARCHAR, keep BOOLEAN)');
  const appender = await connection.createAppender('_replica_moves', 'main', 'temp');
  for (const [id, cell, extra] of rows) {
    appender.appendVarchar(id);
    if (cell === undefined || cell === null) appender.appendNull();
    else appender.appendVarchar(typeof cell === 'boolean' ? String(cell) : cell);
    if (extra === null) appender.appendNull();
    else appender.appendVarchar(extra);
    appender.appendBoolean(cell === undefined);
    appender.endRow();
  }
  appender.flushSync();
  appender.closeSync();
  const column = quoteIdent(field);
  const value = kind === 'timestamp' ? 'CAST(m.cell AS TIMESTAMPTZ)' : `CAST(m.cell AS ${DUCKDB_TYPES[kind]})`;
  await connection.run(
    `UPDATE ${qualified(schema, layout.table)} AS t SET ${column} = CASE WHEN m.keep THEN t.${column} ELSE ${value} END, ${quoteIdent(EXTRA_COLUMN)} = CAST(m.extra AS JSON) ` +
      `FROM _replica_moves m WHERE ${rowKeySql(layout, 't')} = m.id`,
  );
  await connection.run('DROP TABLE _replica_moves');
}

const extraText = (extra: Data): string | null => (Object.keys(extra).length === 0 ? null : (jsonText(extra) as string));

/** Before an integer column becomes DOUBLE: the exact text of each value a double cannot hold goes to `_extra`. */
async function keepExactIntegers(connection: DuckdbConnection, schema: string, layout: StoreLayout, field: string, kind: StoreKind): Promise<void> {
  const column = quoteIdent(field);
  const rows = await rowsOf(
    connection,
    `SELECT ${rowKeySql(layout)} AS id, CAST(${column} AS VARCHAR) AS v, CAST(${quoteIdent(EXTRA_COLUMN)} AS VARCHAR) AS extra FROM ${qualified(schema, layout.table)} ` +
      `WHERE ${column} > 9007199254740992 OR ${column} < -9007199254740992`, // not abs(), which overflows on the type's smallest value
  );
  const updates = rows.map((row) => {
    const extra = parseExactObject(row.extra);
    extra[field] = rawNumber(String(row.v));
    return [String(row.id), undefined, extraText(extra)] as const;
  });
  await rewriteRows(connection, schema, layout, field, kind, updates);
}

/**
 * After `field`'s column was added: the rows whose record did not carry the
 * field (no value of it kept in `_extra`) list it in `_absent`, so that they
 * read back without it, as they were written, rather than with a null.
 */
async function markAbsent(connection: DuckdbConnection, schema: string, layout: StoreLayout, field: string): Promise<void> {
  const absent = quoteIdent(ABSENT_COLUMN);
  const extra = quoteIdent(EXTRA_COLUMN);
  await connection.run(
    `UPDATE ${qualified(schema, layout.table)} SET ${absent} = CAST(list_append(coalesce(CAST(${absent} AS VARCHAR[]), []), $1) AS JSON) ` +
      `WHERE ${extra} IS NULL OR NOT list_contains(json_keys(${extra}), $1)`,
    [field],
  );
}

/**
 * Move the values a run kept in `_extra` into `field`'s column where they now fit (movedFromExtra): those that did not
 * fit (the column is null there), and those the column held in its own form beside their text as sent (an instant with
 * an offset, a number with an exponent), which a column widened to text or JSON now holds as sent, as it does in rows
 * written after the widening.
 */
async function moveFromExtra(connection: DuckdbConnection, schema: string, layout: StoreLayout, field: string, kind: StoreKind): Promise<void> {
  const rows = await rowsOf(
    connection,
    `SELECT ${rowKeySql(layout)} AS id, CAST(${quoteIdent(EXTRA_COLUMN)} AS VARCHAR) AS extra FROM ${qualified(schema, layout.table)} ` +
      `WHERE ${quoteIdent(EXTRA_COLUMN)} IS NOT NULL AND list_contains(json_keys(${quoteIdent(EXTRA_COLUMN)}), $1)`,
    [field],
  );
  const updates: (readonly [string, Cell | undefined, string | null])[] = [];
  for (const row of rows) {
    const moved = movedFromExtra(parseExactObject(row.extra), field, kind, DUCKDB_DIALECT);
    if (moved !== undefined) updates.push([String(row.id), moved.cell, moved.extra]);
  }
  await rewriteRows(connection, schema, layout, field, kind, updates);
}

/**
 * DuckDB refuses to change any column's type in a table with an index (one a
 * dashboard's user made to speed up its queries), not only the indexed one's.
 */
const DEPENDENCY = /depends on it|Dependency Error/i;

/** The indexes on `table`, named for the warning (DuckDB's message names none). */
async function indexesOn(connection: DuckdbConnection, schema: string, table: string): Promise<string[]> {
  const rows = await rowsOf(connection, 'SELECT index_name FROM duckdb_indexes() WHERE schema_name = $1 AND table_name = $2 ORDER BY index_name', [schema, table]);
  return rows.map((r) => String(r.index_name));
}

/**
 * The columns of each table of `schema` in the store's file (not its views, nor the session's temporary tables), by
 * table: read once as the store opens, where a query for each table's presence and another for its columns took about
 * five times as long for the usual five tables. Each table's entry is read by its own opening only, before it changes
 * the table (a refused widening undoes its changes before the table is opened again).
 */
async function tableColumns(connection: DuckdbConnection, schema: string): Promise<Map<string, Set<string>>> {
  const rows = await rowsOf(
    connection,
    'SELECT t.table_name AS t, c.column_name AS name FROM duckdb_tables() t JOIN duckdb_columns() c ON c.table_oid = t.table_oid ' +
      'WHERE t.database_name = current_database() AND t.schema_name = $1 AND NOT t.temporary',
    [schema],
  );
  const tables = new Map<string, Set<string>>();
  for (const row of rows) {
    const table = String(row.t);
    const columns = tables.get(table) ?? new Set<string>();
    columns.add(String(row.name));
    tables.set(table, columns);
  }
  return tables;
}

/**
 * Make each stream's table, or change it to `specs`' layout (from the one
 * `stored`), one transaction per table. A widening DuckDB refuses because
 * of an index on the table is left out, the table's other changes made.
 */
export async function openTables(
  connection: DuckdbConnection,
  schema: string,
  specs: readonly StoreTableSpec[],
  stored: ReadonlyMap<string, StoreLayout>,
  changes: readonly ColumnChange[],
): Promise<OpenedTables> {
  const why = async (err: RefusedWidening, spec: StoreTableSpec): Promise<string> => {
    const indexes = await indexesOn(connection, schema, spec.layout.table);
    const named = indexes.length === 0 ? '' : ` (index ${indexes.map((i) => `"${i}"`).join(', ')} on ${spec.layout.table}; DuckDB changes no column's type in a table with an index)`;
    return `${err.why.replace(/\.$/, '')}${named}`;
  };
  const forget = (stream: string): Promise<void> => forgetStream((sql, params) => connection.run(sql, params), schema, stream);
  const tables = await tableColumns(connection, schema);
  return openEachTable(specs, stored, changes, DUCKDB_TYPES, forget, async ({ before, mine, layout, refused, remade }) => {
    if (before !== undefined && refused.size === 0) {
      // In a transaction of its own: DuckDB cannot commit an UPDATE and an ALTER of the same table together.
      // Should the ALTER then fail, an exact text in _extra beside its column is still a valid row.
      for (const change of mine) {
        if (change.from !== undefined && change.to === 'number' && DUCKDB_TYPES[change.from] !== DUCKDB_TYPES[change.to]) {
          await connection.run('BEGIN TRANSACTION');
          try {
            await keepExactIntegers(connection, schema, layout, change.field, change.from);
            await connection.run('COMMIT');
          } catch (err) {
            await connection.run('ROLLBACK').catch(() => {});
            throw err;
          }
        }
      }
    }
    // DuckDB makes a column NOT NULL only in a transaction that wrote nothing before: after the commit.
    let syncedAtAdded = false;
    await connection.run('BEGIN TRANSACTION');
    try {
      const present = tables.get(layout.table);
      if (before === undefined || present === undefined) {
        await connection.run(createTableSql(schema, layout, DUCKDB_TYPES, BOOKKEEPING_TYPES, KEY_CONSTRAINT));
        if (before !== undefined) await remade();
      } else {
        const table = qualified(schema, layout.table);
        const lost = droppedColumns(layout, before, present);
        for (const c of lost.fields) await connection.run(`ALTER TABLE ${table} ADD COLUMN ${quoteIdent(c.field)} ${DUCKDB_TYPES[c.kind]}`);
        // `_synced_at` made again gets the time of this open in the rows the table holds.
        for (const name of lost.bookkeeping) {
          const column = quoteIdent(name);
          await connection.run(`ALTER TABLE ${table} ADD COLUMN ${column} ${BOOKKEEPING_TYPES[name]}${name === SYNCED_AT_COLUMN ? ' DEFAULT now()' : ''}`);
          if (name === SYNCED_AT_COLUMN) syncedAtAdded = true;
        }
        if (lost.fields.length > 0 || lost.bookkeeping.length > 0) await remade();
        // Every ALTER before the first UPDATE: DuckDB refuses to commit a transaction that altered a table it had updated.
        for (const change of mine) {
          const column = quoteIdent(change.field);
          if (change.from === undefined) {
            await connection.run(`ALTER TABLE ${table} ADD COLUMN ${column} ${DUCKDB_TYPES[change.to]}`);
          } else if (DUCKDB_TYPES[change.from] !== DUCKDB_TYPES[change.to]) {
            await connection
              .run(`ALTER TABLE ${table} ALTER COLUMN ${column} SET DATA TYPE ${DUCKDB_TYPES[change.to]} USING ${convertSql(change.from, change.to, column)}`)
              .catch((err: unknown) => {
                throw err instanceof Error && DEPENDENCY.test(err.message) ? new RefusedWidening(change.field, err.message) : err;
              });
          }
        }
        for (const change of mine) if (change.from === undefined) await markAbsent(connection, schema, layout, change.field);
        for (const change of mine) await moveFromExtra(connection, schema, layout, change.field, change.to);
      }
      await saveLayout(connection, schema, layout, before);
      await connection.run('COMMIT');
      if (syncedAtAdded) {
        const column = `${qualified(schema, layout.table)} ALTER COLUMN ${quoteIdent(SYNCED_AT_COLUMN)}`;
        await connection.run(`ALTER TABLE ${column} SET NOT NULL`);
        await connection.run(`ALTER TABLE ${column} DROP DEFAULT`);
      }
      return undefined;
    } catch (err) {
      await connection.run('ROLLBACK').catch(() => {});
      throw err;
    }
  }, why);
}
