/**
 * The tables of a PostgreSQL store, made and changed when the store opens
 * (never during the run's writes: an ALTER TABLE holds an ACCESS EXCLUSIVE
 * lock, which a dashboard's running query delays and which blocks every
 * query queued behind it; at open it tries for LOCK_WAIT_MS at most, and a
 * change it cannot make then is left for the next run, its values kept in
 * `_extra` meanwhile). The ALTERs are committed alone, so that readers wait
 * for them only, not for the updates of every row that follow.
 *
 * Types: text -> text, timestamp -> timestamptz, boolean -> boolean,
 * int64 -> bigint, int128 and number -> numeric (exact: every digit of
 * every JSON number is kept, where double precision would round a decimal
 * and integers past 2^53), json -> jsonb. `_extra` is `json` (the JSON
 * text as written: exact numbers, and strings with U+0000, which text and
 * jsonb refuse), `_absent` jsonb, `_synced_at` timestamptz.
 *
 * A widened column is rewritten in place (`ALTER COLUMN ... TYPE ... USING`,
 * the old values converted: a timestamp to its ISO 8601 text as the service
 * wrote it, a boolean to true/false, a number to its digits, anything to
 * JSON); then the values a run kept in `_extra` because they did not fit
 * move into the column.
 */
import type { Client } from 'pg';
import { ABSENT_COLUMN, EXTRA_COLUMN, SYNCED_AT_COLUMN, createTableSql, droppedColumns, qualified, quoteIdent, rowKeySql, type BookkeepingTypes, type ColumnChange, type StoreKind, type StoreLayout } from '../columns.js';
import { METADATA_TABLE, TABLES_TABLE, forgetStream, type StoreTableSpec } from '../checkpoint.js';
import { parseExactJson } from '../../exact-json.js';
import { movedFromExtra, type Data, type StoreDialect } from '../values.js';
import type { PgDriver } from './connection.js';
import { copyChunks, copyText } from './copy.js';
import { LOCK_NOT_AVAILABLE } from './faults.js';
import { RefusedWidening, openEachTable, type OpenedTables } from '../notes.js';

export const PG_TYPES: Readonly<Record<StoreKind, string>> = {
  text: 'text',
  timestamp: 'timestamptz',
  boolean: 'boolean',
  int64: 'bigint',
  int128: 'numeric',
  number: 'numeric',
  json: 'jsonb',
};

/** The escape of U+0000 in a JSON text (after an even run of backslashes: an odd one makes it text). */
const NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/;

/** The escape's text, to find (a superset of) the `_extra` cells that hold one. */
const NUL_ESCAPE_TEXT = '\\u0000';

/** numeric's limits: digits before the decimal point, and after it (the written ones, trailing zeros too). */
const NUMERIC_MAX_WEIGHT_DIGITS = 131_072;
const NUMERIC_MAX_SCALE = 16_383;

const NUMBER_PARTS = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * Whether numeric holds a JSON number's text: at most 131072 digits before
 * the decimal point (leading zeros aside) and 16383 after it, as written
 * (`1.00e-16382` has 16384); past them PostgreSQL refuses the value ("value
 * overflows numeric format").
 */
function numericHolds(text: string): boolean {
  const m = NUMBER_PARTS.exec(text);
  if (!m) return false;
  const whole = m[1] as string;
  const fraction = m[2] ?? '';
  const exponent = m[3] === undefined ? 0 : Number(m[3]);
  if (fraction.length - exponent > NUMERIC_MAX_SCALE) return false;
  const lead = (whole + fraction).search(/[1-9]/);
  // Zero has no digits before the point, whatever its exponent.
  return lead === -1 || whole.length - lead + exponent <= NUMERIC_MAX_WEIGHT_DIGITS;
}

/** A JSON text's strings (skipped) and numbers (group 1). */
const JSON_NUMBERS = /"(?:[^"\\]|\\.)*"|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;

/** Whether jsonb holds a JSON text: no escape of U+0000, no number numeric refuses. */
function jsonbHolds(text: string): boolean {
  if (NUL_ESCAPE.test(text)) return false;
  // A number numeric refuses has an exponent or thousands of digits.
  if (text.length < NUMERIC_MAX_SCALE && !/\d[eE]/.test(text)) return true;
  for (const m of text.matchAll(JSON_NUMBERS)) if (m[1] !== undefined && !numericHolds(m[1])) return false;
  return true;
}

/**
 * PostgreSQL keeps a name's first 63 bytes (NAMEDATALEN - 1), and tells quoted names apart by case. Every table has
 * the system columns, whose names no column may take ("column name "ctid" conflicts with a system column name").
 */
export const PG_NAMING = { key: (name: string) => name, maxBytes: 63, reserved: new Set(['tableoid', 'xmin', 'cmin', 'xmax', 'cmax', 'ctid']) } as const;

/** What PostgreSQL cannot hold: U+0000 in text and jsonb, and numbers beyond numeric's range; numeric keeps the others' values, and the text of those in plain decimals. */
export const PG_DIALECT: StoreDialect = {
  // numeric gives back plain decimals as written (trailing zeros too), but not an exponent's form (1e3 reads 1000) nor -0.
  numberExact: (text) => /^-?\d+(\.\d+)?$/.test(text) && !/^-0(\.0+)?$/.test(text),
  storesString: (text) => !text.includes('\u0000'),
  numberFits: numericHolds,
  storesJson: jsonbHolds,
  naming: PG_NAMING,
  textOf,
  instantOf,
};


/** How long opening tries for a table lock (a reader's long query) before it leaves a change for the next run. */
const LOCK_WAIT_MS = 5000;
/**
 * How long one try waits. While an ALTER waits for its lock, every query of
 * the table that comes after it waits behind it: in short tries, with
 * LOCK_PAUSE_MS between them for those queries to run, dashboards are held
 * up a moment at a time, not for LOCK_WAIT_MS at once.
 */
const LOCK_TRY_MS = 200;
const LOCK_PAUSE_MS = 300;


/** The ISO 8601 text of a timestamptz column, as the service writes instants (UTC, milliseconds, Z). */
export function isoText(expr: string): string {
  return `to_char(${expr} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** A column's value as text (for comparing ids across kinds). */
function textOf(kind: StoreKind, expr: string): string {
  if (kind === 'text') return expr;
  if (kind === 'json') return `(${expr} #>> '{}')`;
  if (kind === 'timestamp') return isoText(expr);
  return `${expr}::text`;
}

/**
 * An instant's text that timestamptz takes: years 0001-9999, months 01-12, hours 00-23, minutes and seconds 00-59, an
 * offset to 15:59. Anything else (0000, month 13, +16:00) would make the cast, and the whole query, fail.
 */
const INSTANT_TEXT = String.raw`^(000[1-9]|00[1-9]\d|0[1-9]\d\d|[1-9]\d{3})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt ]([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?([Zz]|[+-](0\d|1[0-5])(:?[0-5]\d)?)$`;

/**
 * A column's value as an instant (NULL when it is not one), to compare cursors and deletion times. A text column
 * (one widened because some value was no instant) may hold anything: only a text of INSTANT_TEXT whose day is in
 * its month (no 30 February) is cast. Nested CASEs, as PostgreSQL may evaluate the two sides of an AND in any order.
 */
function instantOf(kind: StoreKind, expr: string): string {
  if (kind === 'timestamp') return expr;
  const text = textOf(kind, expr);
  const lastDay = `extract(day from make_date(substr(${text}, 1, 4)::int, substr(${text}, 6, 2)::int, 1) + interval '1 month - 1 day')`;
  return `(CASE WHEN ${text} ~ '${INSTANT_TEXT}' THEN CASE WHEN substr(${text}, 9, 2)::int <= ${lastDay} THEN (${text})::timestamptz END END)`;
}

/** Whether the schema holds the store's bookkeeping (a store was made there). */
export async function storeExists(client: Client, schema: string): Promise<boolean> {
  const { rows } = await client.query('SELECT to_regclass($1) IS NOT NULL AS present', [`${quoteIdent(schema)}.${quoteIdent(METADATA_TABLE)}`]);
  return rows[0]?.present === true || rows[0]?.present === 't';
}

/**
 * Make the schema where it is missing, and only then: CREATE SCHEMA asks for
 * CREATE on the database even with IF NOT EXISTS and the schema there, which
 * a role given a schema (its own, or CREATE on another role's) lacks.
 */
export async function makeSchema(client: Client, schema: string): Promise<void> {
  const { rows } = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  if (rows.length === 0) await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
}

/** The types of the columns every stream's table has beside its fields. */
const BOOKKEEPING_TYPES: BookkeepingTypes = { [EXTRA_COLUMN]: 'json', [ABSENT_COLUMN]: 'jsonb', [SYNCED_AT_COLUMN]: 'timestamptz' };

/** The expression that converts a column of kind `from` to one of kind `to` (ALTER COLUMN ... TYPE ... USING). */
function convertSql(from: StoreKind, to: StoreKind, column: string): string {
  if (to === 'json') {
    if (from === 'timestamp') return `to_jsonb(${isoText(column)})`;
    return `to_jsonb(${column})`;
  }
  if (to === 'text') {
    if (from === 'timestamp') return isoText(column);
    if (from === 'boolean') return `CASE WHEN ${column} THEN 'true' WHEN NOT ${column} THEN 'false' END`;
    return `${column}::text`;
  }
  return `${column}::${PG_TYPES[to]}`;
}

/**
 * Record a stream's layout, written only when it differs from the one
 * stored: every run opens the store, and an UPDATE that changes nothing
 * still leaves a dead row version. This table's few large rows, rewritten
 * each run, never reach autovacuum's threshold (50 dead rows), so its file
 * grew a page every few runs without end (150 hourly runs: 8 KB to 248 KB).
 */
async function saveLayout(client: Client, schema: string, layout: StoreLayout): Promise<void> {
  await client.query(
    `INSERT INTO ${qualified(schema, TABLES_TABLE)} AS t (stream, layout) VALUES ($1, $2) ON CONFLICT (stream) DO UPDATE SET layout = EXCLUDED.layout WHERE t.layout IS DISTINCT FROM EXCLUDED.layout`,
    [layout.stream, JSON.stringify(layout)],
  );
}

/**
 * The tables (relations) of the schema, in one query: each one's columns with their types as the server names them
 * (`format_type`: `timestamp with time zone`, `bigint`...).
 */
async function columnTypes(client: Client, schema: string): Promise<Map<string, Map<string, string>>> {
  const { rows } = await client.query<{ rel: string; name: string | null; type: string | null }>(
    `SELECT c.relname AS rel, a.attname AS name, format_type(a.atttypid, NULL) AS type
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE n.nspname = $1`,
    [schema],
  );
  const tables = new Map<string, Map<string, string>>();
  for (const { rel, name, type } of rows) {
    let columns = tables.get(rel);
    if (columns === undefined) tables.set(rel, (columns = new Map()));
    if (name !== null) columns.set(name, type as string);
  }
  return tables;
}

/** A type of PG_TYPES as format_type names it. */
function regtypeName(type: string): string {
  return type === 'timestamptz' ? 'timestamp with time zone' : type;
}

/**
 * Whether a row's `_extra` may hold the escape of U+0000, which PostgreSQL's
 * json operators (`->`) refuse ("unsupported Unicode escape sequence"): such
 * rows are read as text and their JSON parsed here. A CASE, so that `->` is
 * never evaluated on them.
 */
function mayHoldNul(extra: string, param: string): string {
  return `strpos(${extra}::text, ${param}) > 0`;
}

/**
 * After `field`'s column was added: the rows whose record did not carry the
 * field (no value of it kept in `_extra`) list it in `_absent`, so that they
 * read back without it, as they were written, rather than with a null.
 */
async function markAbsent(client: Client, schema: string, layout: StoreLayout, field: string): Promise<void> {
  const table = qualified(schema, layout.table);
  const absent = quoteIdent(ABSENT_COLUMN);
  const extra = quoteIdent(EXTRA_COLUMN);
  const mark = `${absent} = coalesce(${absent}, '[]'::jsonb) || to_jsonb($1::text)`;
  await client.query(`UPDATE ${table} SET ${mark} WHERE CASE WHEN ${extra} IS NULL THEN true WHEN ${mayHoldNul(extra, '$2')} THEN false ELSE ${extra} -> $1 IS NULL END`, [
    field,
    NUL_ESCAPE_TEXT,
  ]);
  const { rows } = await client.query<{ id: string; extra: string }>(
    `SELECT ${rowKeySql(layout)} AS id, ${extra}::text AS extra FROM ${table} WHERE ${extra} IS NOT NULL AND ${mayHoldNul(extra, '$1')}`,
    [NUL_ESCAPE_TEXT],
  );
  const lacking = rows.filter((row) => !Object.hasOwn(parseExactJson(row.extra) as Data, field)).map((row) => row.id);
  if (lacking.length > 0) await client.query(`UPDATE ${table} SET ${mark} WHERE ${rowKeySql(layout)} = ANY($2::text[])`, [field, lacking]);
}

/**
 * Move the values a run kept in `_extra` into `field`'s column where they now fit (movedFromExtra): those that did not
 * fit (the column is null there), and those the column held in its own form beside their text as sent (an instant with
 * an offset, a number with an exponent), which a column widened to text or JSON now holds as sent, as it does in rows
 * written after the widening.
 */
async function moveFromExtra(client: Client, driver: PgDriver, schema: string, layout: StoreLayout, field: string, kind: StoreKind): Promise<number> {
  const table = qualified(schema, layout.table);
  const extraColumn = quoteIdent(EXTRA_COLUMN);
  const { rows } = await client.query<{ id: string; extra: string }>(
    `SELECT ${rowKeySql(layout)} AS id, ${extraColumn}::text AS extra FROM ${table} WHERE CASE WHEN ${mayHoldNul(extraColumn, '$2')} THEN true ELSE ${extraColumn} -> $1 IS NOT NULL END`,
    [field, NUL_ESCAPE_TEXT],
  );
  if (rows.length === 0) return 0;
  const moves: (string | null)[][] = [];
  for (const row of rows) {
    const moved = movedFromExtra(parseExactJson(row.extra) as Data, field, kind, PG_DIALECT);
    if (moved === undefined) continue;
    moves.push([row.id, typeof moved.cell === 'boolean' ? (moved.cell ? 't' : 'f') : moved.cell, moved.extra]);
  }
  if (moves.length === 0) return 0;
  // pg_temp named: a search_path may list it after a schema holding a table of that name.
  await client.query('DROP TABLE IF EXISTS pg_temp._replica_moves');
  await client.query('CREATE TEMP TABLE _replica_moves (id text PRIMARY KEY, cell text, extra text) ON COMMIT DROP');
  await copyChunks(client, driver, 'pg_temp._replica_moves', ['id', 'cell', 'extra'], [copyText(moves)]);
  const result = await client.query(
    `UPDATE ${table} t SET ${quoteIdent(field)} = m.cell::${PG_TYPES[kind]}, ${extraColumn} = m.extra::json FROM pg_temp._replica_moves m WHERE ${rowKeySql(layout, 't')} = m.id`,
  );
  return result.rowCount ?? 0;
}

/**
 * The server's words for a widening refused because another object uses the column (0A000: a view, a rule, a policy, a
 * trigger's WHEN): its message and the detail naming the object (`rule _RETURN on view x depends on column "y"`).
 */
function dependentObjectWhy(err: unknown): string | undefined {
  const e = err as { code?: unknown; message?: unknown; detail?: unknown };
  if (e.code !== '0A000') return undefined;
  const detail = typeof e.detail === 'string' && e.detail !== '' ? `: ${e.detail.replace(/\.$/, '')}` : '';
  return `${String(e.message)}${detail}`;
}

/**
 * Make each stream's table, or change it to `specs`' layout (from the one
 * `stored`): one transaction per table, trying LOCK_WAIT_MS at most for its
 * lock (in tries of LOCK_TRY_MS); a table whose lock cannot be had keeps its
 * stored layout (and its pending drift) until the next run. A widening another object refuses (a
 * view over the column) is left out, the table's other changes made.
 */
export async function openTables(
  client: Client,
  driver: PgDriver,
  schema: string,
  specs: readonly StoreTableSpec[],
  stored: ReadonlyMap<string, StoreLayout>,
  changes: readonly ColumnChange[],
): Promise<OpenedTables> {
  // LOCK_WAIT_MS counts from a table's first try, the tries without a refused widening included.
  let opening: StoreTableSpec | undefined;
  let started = 0;
  const present = await columnTypes(client, schema);
  const forget = (stream: string): Promise<void> => forgetStream((sql, params) => client.query(sql, params), schema, stream);
  return openEachTable(specs, stored, changes, PG_TYPES, forget, async ({ spec, before, asked, mine, layout, remade }) => {
    if (spec !== opening) {
      opening = spec;
      started = performance.now();
    }
    for (;;) {
      let altered = false;
      await client.query('BEGIN');
      try {
        await client.query(`SET LOCAL lock_timeout = ${LOCK_TRY_MS}`);
        const columns = present.get(layout.table);
        if (before === undefined || columns === undefined) {
          await client.query(createTableSql(schema, layout, PG_TYPES, BOOKKEEPING_TYPES, true));
          if (before !== undefined) await remade();
        } else {
          // A copy: what this try adds is undone if it fails.
          const types = new Map(columns);
          const table = qualified(schema, layout.table);
          const lost = droppedColumns(layout, before, types);
          for (const c of lost.fields) {
            await client.query(`ALTER TABLE ${table} ADD COLUMN ${quoteIdent(c.field)} ${PG_TYPES[c.kind]}`);
            types.set(c.field, regtypeName(PG_TYPES[c.kind]));
          }
          // `_synced_at` made again gets the time of this open in the rows the table holds.
          for (const name of lost.bookkeeping) {
            await client.query(`ALTER TABLE ${table} ADD COLUMN ${quoteIdent(name)} ${BOOKKEEPING_TYPES[name]}${name === SYNCED_AT_COLUMN ? ' NOT NULL DEFAULT now()' : ''}`);
            if (name === SYNCED_AT_COLUMN) await client.query(`ALTER TABLE ${table} ALTER COLUMN ${quoteIdent(name)} DROP DEFAULT`);
          }
          if (lost.fields.length > 0 || lost.bookkeeping.length > 0) await remade();
          if (mine.length > 0) {
            // The ALTERs alone, committed at once: the ACCESS EXCLUSIVE lock they take holds every reader of the table up
            // until the commit, for an added column a moment. The rows' updates follow in a transaction of their own,
            // which readers do not wait for. A run stopped between the two finds the column there at its next open.
            for (const change of mine) {
              const column = quoteIdent(change.field);
              const type = types.get(change.field);
              if (change.from === undefined) {
                if (type === undefined) await client.query(`ALTER TABLE ${table} ADD COLUMN ${column} ${PG_TYPES[change.to]}`);
              } else if (PG_TYPES[change.from] !== PG_TYPES[change.to] && type !== regtypeName(PG_TYPES[change.to])) {
                await client
                  .query(`ALTER TABLE ${table} ALTER COLUMN ${column} TYPE ${PG_TYPES[change.to]} USING ${convertSql(change.from, change.to, column)}`)
                  .catch((err: unknown) => {
                    const why = dependentObjectWhy(err);
                    throw why === undefined ? err : new RefusedWidening(change.field, why);
                  });
              }
            }
            await client.query('COMMIT');
            altered = true;
            await client.query('BEGIN');
            await client.query(`SET LOCAL lock_timeout = ${LOCK_WAIT_MS}`);
            for (const change of mine) if (change.from === undefined) await markAbsent(client, schema, layout, change.field);
            for (const change of mine) await moveFromExtra(client, driver, schema, layout, change.field, change.to);
          }
        }
        if (spec.deletionLog) {
          await client.query(
            `CREATE INDEX IF NOT EXISTS ${quoteIdent(`_replica_${layout.table}_object`)} ON ${qualified(schema, layout.table)} (${quoteIdent(spec.deletionLog.objectIdField)})`,
          );
        }
        await saveLayout(client, schema, layout);
        await client.query('COMMIT');
        return undefined;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        // A refused widening (no code) goes on up, to be left out. Once the ALTERs are committed the table no longer has
        // the stored layout: a lock not had for the rows' updates fails the open (75), and the next run does them.
        if ((err as { code?: unknown }).code !== LOCK_NOT_AVAILABLE || before === undefined || altered) throw err;
        if (performance.now() - started < LOCK_WAIT_MS) {
          await new Promise((resolve) => setTimeout(resolve, LOCK_PAUSE_MS));
          continue;
        }
        // A reader holds the table: write with the stored layout, and keep what was asked for the next run.
        return { ...before, pending: [...before.pending, ...asked.map((c) => ({ field: c.field, kind: c.to }))] };
      }
    }
  });
}
