/**
 * How a stream's records are laid out in a SQLite table: one typed column per
 * field of the stream's JSON schema, plus three bookkeeping columns. The
 * layout is stored in the database beside the tables, so rows convert back to
 * records with the layout they were written with, whatever the code's
 * version.
 */
import { recordJsonSchema } from '../../schemas/json-schema.js';
import type { StreamDefinition } from '../../streams.js';

/** How one field is stored. */
export type ColumnKind = 'text' | 'integer' | 'real' | 'boolean' | 'json';

export interface ColumnSpec {
  /** Field name in the record; also the column name. */
  readonly field: string;
  readonly kind: ColumnKind;
}

export interface TableLayout {
  readonly stream: string;
  /** Table name (the stream name). */
  readonly table: string;
  readonly primaryKey: string;
  /** Cursor field (updated_at, created_at, deleted_at), null for full-refresh streams. */
  readonly cursorField: string | null;
  readonly columns: readonly ColumnSpec[];
}

/**
 * Fields of a record that have no typed column, or whose value does not fit
 * its column's type (kept exactly as received): a JSON object, NULL when none.
 */
export const EXTRA_COLUMN = '_extra';
/** Declared fields the record did not carry at all (not even null): a JSON array, NULL when none. */
export const ABSENT_COLUMN = '_absent';
/** When the row was last written by the replica (ISO instant). */
export const SYNCED_AT_COLUMN = '_synced_at';

export const BOOKKEEPING_COLUMNS: readonly string[] = [EXTRA_COLUMN, ABSENT_COLUMN, SYNCED_AT_COLUMN];

export const SQL_TYPES: Readonly<Record<ColumnKind, 'TEXT' | 'INTEGER' | 'REAL'>> = {
  text: 'TEXT',
  integer: 'INTEGER',
  real: 'REAL',
  boolean: 'INTEGER',
  json: 'TEXT',
};

function kindOf(property: unknown): ColumnKind {
  if (typeof property !== 'object' || property === null) return 'json';
  const declared = (property as { type?: unknown }).type;
  const types = (Array.isArray(declared) ? declared : [declared]).filter((t) => t !== 'null');
  if (types.length !== 1) return 'json';
  switch (types[0]) {
    case 'string':
      return 'text'; // date-times included: ISO 8601 text, exactly as the service wrote it
    case 'integer':
      return 'integer';
    case 'number':
      return 'real';
    case 'boolean':
      return 'boolean';
    default:
      return 'json';
  }
}

/** The layout of a stream's table, from its discovered JSON schema. */
export function layoutFor(stream: StreamDefinition): TableLayout {
  const schema = recordJsonSchema(stream);
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  const columns: ColumnSpec[] = [];
  for (const [field, property] of Object.entries(properties)) {
    if (BOOKKEEPING_COLUMNS.includes(field)) continue; // never shadow a bookkeeping column; the value goes to _extra
    columns.push({ field, kind: field === stream.primaryKey ? 'text' : kindOf(property) });
  }
  if (!columns.some((c) => c.field === stream.primaryKey)) columns.unshift({ field: stream.primaryKey, kind: 'text' });
  return { stream: stream.name, table: stream.name, primaryKey: stream.primaryKey, cursorField: stream.cursorField, columns };
}

const KINDS: readonly ColumnKind[] = ['text', 'integer', 'real', 'boolean', 'json'];

/** Parse a layout stored in the database; undefined when it is not one. */
export function parseLayout(text: string): TableLayout | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.stream !== 'string' || typeof v.table !== 'string' || typeof v.primaryKey !== 'string') return undefined;
  if (!(v.cursorField === null || typeof v.cursorField === 'string') || !Array.isArray(v.columns)) return undefined;
  const columns: ColumnSpec[] = [];
  for (const c of v.columns as unknown[]) {
    if (typeof c !== 'object' || c === null) return undefined;
    const { field, kind } = c as Record<string, unknown>;
    if (typeof field !== 'string' || !KINDS.includes(kind as ColumnKind)) return undefined;
    columns.push({ field, kind: kind as ColumnKind });
  }
  return { stream: v.stream, table: v.table, primaryKey: v.primaryKey, cursorField: v.cursorField as string | null, columns };
}

/** A SQL identifier, quoted. */
export function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
