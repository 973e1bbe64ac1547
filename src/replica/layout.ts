/**
 * How a stream's records are laid out in a SQLite table: one typed column per
 * field of the stream's JSON schema, plus three bookkeeping columns, in a
 * table stored in one of two ways. The layout is stored in the database
 * beside the tables, so rows convert back to records with the layout they
 * were written with, whatever the code's version.
 */
import { recordJsonSchema, type JsonSchema } from '../schemas/json-schema.js';
import type { StreamDefinition } from '../streams.js';
import { ACCOUNT_COLUMN, BOOKKEEPING_COLUMNS, isWellFormed, kindOfProperty, layoutObject, type LayoutHead, type StoreKind } from '../stores/columns.js';

/** How one field is stored. */
export type ColumnKind = 'text' | 'integer' | 'real' | 'boolean' | 'json';

export interface ColumnSpec {
  /** Field name in the record; also the column name. */
  readonly field: string;
  readonly kind: ColumnKind;
}

/**
 * How SQLite stores a table's rows.
 * - `rowid`: rows in insertion order (an ordinary table), the primary key a
 *   unique index beside it. New rows are appended, so a sync writes pages
 *   of rows one after the other, and the index entries are small.
 * - `without_rowid`: rows kept in primary-key order (`WITHOUT ROWID`), what
 *   the replica wrote up to version 0.1.0. With random UUID keys every insert
 *   lands in a random leaf holding whole ~1 KB rows: several times slower.
 */
type TableStorage = 'rowid' | 'without_rowid';

export interface TableLayout extends LayoutHead {
  readonly columns: readonly ColumnSpec[];
  readonly storage: TableStorage;
  /**
   * REAL columns hold the nearest double of a number kept exact in `_extra`
   * (rows.ts). Absent from layouts stored before: such a value left its
   * column NULL, and the table's rows are filled when it is next opened.
   */
  readonly realNearest?: true | undefined;
}

/**
 * The column that holds the entry's name in a replica of many accounts, the
 * primary key's columns, and the bookkeeping columns (`_extra`, `_absent`,
 * `_synced_at`, an ISO instant here), every column's name in the order rows
 * are written (storeColumnNames) and a quoted SQL identifier (quoteIdent):
 * the stores' own, one for all.
 */
export { ABSENT_COLUMN, ACCOUNT_COLUMN, BOOKKEEPING_COLUMNS, EXTRA_COLUMN, SYNCED_AT_COLUMN, keyColumns, quoteIdent, storeColumnNames } from '../stores/columns.js';

export const SQL_TYPES: Readonly<Record<ColumnKind, 'TEXT' | 'INTEGER' | 'REAL'>> = {
  text: 'TEXT',
  integer: 'INTEGER',
  real: 'REAL',
  boolean: 'INTEGER',
  json: 'TEXT',
};

/** The kind of a field's column in SQLite, from the kind a PostgreSQL or DuckDB store gives it (date-times: ISO 8601 text, as the service wrote it). */
const SQLITE_KINDS: Readonly<Record<StoreKind, ColumnKind>> = { text: 'text', timestamp: 'text', boolean: 'boolean', int64: 'integer', int128: 'integer', number: 'real', json: 'json' };

/**
 * The layout of a stream's table, from its record schema: the built-in one,
 * or the one merged with the service's description (`schema`).
 */
export function layoutFor(stream: StreamDefinition, schema: JsonSchema = recordJsonSchema(stream), accountKey = false): TableLayout {
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  const columns: ColumnSpec[] = accountKey ? [{ field: ACCOUNT_COLUMN, kind: 'text' }] : [];
  // SQLite column names ignore case: a second field that differs only in case keeps its values in _extra.
  const taken = new Set([...BOOKKEEPING_COLUMNS, ...columns.map((c) => c.field)].map((c) => c.toLowerCase()));
  for (const [field, property] of Object.entries(properties)) {
    if (taken.has(field.toLowerCase())) continue; // never shadow a bookkeeping column; the value goes to _extra
    // SQLite reads SQL text up to its first U+0000: such a name cannot be written in CREATE TABLE. Its values go to _extra.
    // SQL text is UTF-8: a lone surrogate would become U+FFFD, a column of another name (two such names, one name). Likewise.
    if (field.includes('\u0000') || !isWellFormed(field)) continue;
    taken.add(field.toLowerCase());
    columns.push({ field, kind: field === stream.primaryKey ? 'text' : SQLITE_KINDS[kindOfProperty(property)] });
  }
  if (!columns.some((c) => c.field === stream.primaryKey)) columns.splice(accountKey ? 1 : 0, 0, { field: stream.primaryKey, kind: 'text' });
  const layout: TableLayout = { stream: stream.name, table: stream.name, primaryKey: stream.primaryKey, cursorField: stream.cursorField, columns, storage: 'rowid', realNearest: true };
  return accountKey ? { ...layout, accountKey: true } : layout;
}

/**
 * The layout to write a table with, given the one it was written with:
 * merge, never lose. Every stored column stays, in its place, also when the
 * schema no longer declares its field (a description that lost a field, a
 * run pinned to the built-in schemas, or one whose description could not be
 * read); the schema's new fields are appended as new columns. A stored
 * column takes the kind the schema gives its field when `retype` (the schema
 * is the one to follow: the service's, or the built-in one of this version),
 * else it keeps its own (no table rewritten back and forth between runs with
 * and without the description).
 */
export function evolveLayout(wanted: TableLayout, stored: TableLayout | undefined, retype: boolean): TableLayout {
  if (stored === undefined || stored.primaryKey !== wanted.primaryKey || stored.accountKey !== wanted.accountKey) return wanted;
  const kinds = new Map(wanted.columns.map((c) => [c.field, c.kind]));
  const kept = stored.columns.map((c) => ({ field: c.field, kind: retype ? (kinds.get(c.field) ?? c.kind) : c.kind }));
  const names = new Set(kept.map((c) => c.field.toLowerCase()));
  const added = wanted.columns.filter((c) => !names.has(c.field.toLowerCase()));
  return { ...wanted, columns: [...kept, ...added] };
}

const KINDS: readonly ColumnKind[] = ['text', 'integer', 'real', 'boolean', 'json'];

/** Parse a layout stored in the database; undefined when it is not one. */
export function parseLayout(text: string): TableLayout | undefined {
  const v = layoutObject(text);
  if (v === undefined) return undefined;
  const columns: ColumnSpec[] = [];
  for (const c of v.columns as unknown[]) {
    if (typeof c !== 'object' || c === null) return undefined;
    const { field, kind } = c as Record<string, unknown>;
    if (typeof field !== 'string' || !KINDS.includes(kind as ColumnKind)) return undefined;
    columns.push({ field, kind: kind as ColumnKind });
  }
  // A layout stored before `storage` existed describes a WITHOUT ROWID table.
  const storage = v.storage === undefined ? 'without_rowid' : v.storage;
  if (storage !== 'rowid' && storage !== 'without_rowid') return undefined;
  const layout: TableLayout = { stream: v.stream, table: v.table, primaryKey: v.primaryKey, cursorField: v.cursorField as string | null, columns, storage };
  return { ...layout, ...(v.accountKey === true && { accountKey: true }), ...(v.realNearest === true && { realNearest: true }) };
}

/** Whether two layouts describe the same table (same storage, same columns in the same order). */
export function sameLayout(a: TableLayout, b: TableLayout): boolean {
  return (
    a.stream === b.stream &&
    a.table === b.table &&
    a.primaryKey === b.primaryKey &&
    a.cursorField === b.cursorField &&
    a.storage === b.storage &&
    a.accountKey === b.accountKey &&
    a.realNearest === b.realNearest &&
    a.columns.length === b.columns.length &&
    a.columns.every((c, i) => c.field === b.columns[i]?.field && c.kind === b.columns[i]?.kind)
  );
}

