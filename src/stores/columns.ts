/**
 * The typed columns of a stream's table in a PostgreSQL or DuckDB store, and
 * how they follow the data (schema drift), the same for both stores:
 *
 * - one column per field of the stream's record schema (the built-in one,
 *   or the one merged with the service's description), typed by its kind:
 *   `text`, `timestamp` (a date-time field), `boolean`, `int64`, `int128`,
 *   `number`, `json` (objects and arrays; a field of several types); plus
 *   the bookkeeping columns `_extra`, `_absent` and `_synced_at`;
 * - kinds only widen, along one lattice: int64 < int128 < number < text <
 *   json, boolean < text, timestamp < text. A value that does not fit its
 *   column (a decimal in an integer column, a string where a number was, an
 *   object in a text column) asks for the join of the column's kind and its
 *   own; a field without a column asks for a new column of its own kind.
 *   Never a second "variant" column for the same field, never a failed run.
 * - the tables change only when a store opens (before the run reads
 *   anything): a column added (`ALTER TABLE ... ADD COLUMN`) or widened
 *   (`ALTER COLUMN ... TYPE`), from the schema's new fields and from what
 *   the previous run saw. Within a run a value that does not fit is kept
 *   whole in the row's `_extra` (JSON), and what it asks for is saved as
 *   pending drift with the rows; the next open applies it and moves those
 *   values from `_extra` into their column. So an ALTER, which locks the
 *   table against readers while it runs, is never taken in the middle of a
 *   run, where a dashboard's long query would hold it (and everything
 *   queued behind it) up.
 */
import { ACCOUNT_FIELD, recordJsonSchema, type JsonSchema } from '../schemas/json-schema.js';
import type { StreamDefinition } from '../streams.js';

export type StoreKind = 'text' | 'timestamp' | 'boolean' | 'int64' | 'int128' | 'number' | 'json';

const STORE_KINDS: readonly StoreKind[] = ['text', 'timestamp', 'boolean', 'int64', 'int128', 'number', 'json'];

interface StoreColumn {
  /** The field's name in the record; also the column's name. */
  readonly field: string;
  readonly kind: StoreKind;
}

/** A widening a run asked for (a value that did not fit), applied when the store next opens. */
interface PendingDrift {
  readonly field: string;
  readonly kind: StoreKind;
}

/** What every store's layout of a stream's table says besides its columns (the SQLite replica's too). */
export interface LayoutHead {
  readonly stream: string;
  /** The table's name (the stream's). */
  readonly table: string;
  readonly primaryKey: string;
  /** The cursor field (updated_at, created_at, deleted_at); null for full-refresh streams. */
  readonly cursorField: string | null;
  /**
   * The table of a store of many accounts (a config with `accounts`): an
   * `account` column first, the primary key (account, primaryKey). Absent
   * for a store of one account.
   */
  readonly accountKey?: true | undefined;
}

export interface StoreLayout extends LayoutHead {
  readonly columns: readonly StoreColumn[];
  /** Drift seen by a run, not yet applied to the table. */
  readonly pending: readonly PendingDrift[];
}

/** The column that holds the entry's name in a store of many accounts. */
export const ACCOUNT_COLUMN = ACCOUNT_FIELD;

/**
 * A stored layout's JSON text read as far as every store's layout goes (the
 * SQLite replica's too): an object whose stream, table and primaryKey are
 * strings, cursorField a string or null, columns an array; undefined when
 * not. Each store then reads its columns and its own fields.
 */
export function layoutObject(text: string): (Record<string, unknown> & { stream: string; table: string; primaryKey: string; cursorField: string | null; columns: unknown[] }) | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o.stream !== 'string' || typeof o.table !== 'string' || typeof o.primaryKey !== 'string') return undefined;
  if (!(o.cursorField === null || typeof o.cursorField === 'string') || !Array.isArray(o.columns)) return undefined;
  return o as Record<string, unknown> & { stream: string; table: string; primaryKey: string; cursorField: string | null; columns: unknown[] };
}

/** The primary key's columns: [primaryKey], or [account, primaryKey] in a store of many accounts (the SQLite replica's too). */
export function keyColumns(layout: { readonly primaryKey: string; readonly accountKey?: boolean | undefined }): string[] {
  return layout.accountKey === true ? [ACCOUNT_COLUMN, layout.primaryKey] : [layout.primaryKey];
}

/**
 * One text that names a row of the table (`alias.` before each column when
 * given): its id, or `account/id` in a store of many accounts (an entry's
 * name has no `/`, so the text names one row).
 */
export function rowKeySql(layout: StoreLayout, alias?: string): string {
  const at = alias === undefined ? '' : `${alias}.`;
  const id = `${at}${quoteIdent(layout.primaryKey)}`;
  return layout.accountKey === true ? `(${at}${quoteIdent(ACCOUNT_COLUMN)} || '/' || ${id})` : id;
}

/** Fields of a record kept whole as JSON: those without a column, and values their column cannot hold exactly. */
export const EXTRA_COLUMN = '_extra';
/** Declared fields the record did not carry at all (not even null): a JSON array. */
export const ABSENT_COLUMN = '_absent';
/** When the row was last written. */
export const SYNCED_AT_COLUMN = '_synced_at';
export const BOOKKEEPING_COLUMNS = [EXTRA_COLUMN, ABSENT_COLUMN, SYNCED_AT_COLUMN] as const;
/** A store's SQL type of each bookkeeping column. */
export type BookkeepingTypes = Readonly<Record<(typeof BOOKKEEPING_COLUMNS)[number], string>>;

/**
 * The columns of a stream's table that were dropped by hand, from the names `present` in it (PostgreSQL, DuckDB): the
 * fields its stored layout `before` had and `layout` keeps (the key columns aside), and the bookkeeping columns. Every
 * write of the stream would fail on them, and their values are gone: each is added again, in the table's transaction
 * with the stream's state forgotten (forgetStream), and the stream read again from the start.
 */
export function droppedColumns(layout: StoreLayout, before: StoreLayout, present: { has(name: string): boolean }): { fields: StoreColumn[]; bookkeeping: (typeof BOOKKEEPING_COLUMNS)[number][] } {
  const keys = keyColumns(layout);
  return {
    fields: layout.columns.filter((c) => !keys.includes(c.field) && !present.has(c.field) && before.columns.some((b) => b.field === c.field)),
    bookkeeping: BOOKKEEPING_COLUMNS.filter((name) => !present.has(name)),
  };
}

/**
 * The CREATE TABLE of a stream's table (PostgreSQL, DuckDB) in a store's SQL `types`: its fields, the key columns NOT
 * NULL, then the bookkeeping columns, `_synced_at` NOT NULL; with `keyConstraint`, the key columns its PRIMARY KEY.
 */
export function createTableSql(schema: string, layout: StoreLayout, types: Readonly<Record<StoreKind, string>>, bookkeeping: BookkeepingTypes, keyConstraint: boolean): string {
  const keys = keyColumns(layout);
  const onKey = keyConstraint && keys.length === 1 ? ' PRIMARY KEY' : ' NOT NULL';
  const columns = layout.columns.map((c) => `${quoteIdent(c.field)} ${types[c.kind]}${keys.includes(c.field) ? onKey : ''}`);
  columns.push(...BOOKKEEPING_COLUMNS.map((name) => `${quoteIdent(name)} ${bookkeeping[name]}${name === SYNCED_AT_COLUMN ? ' NOT NULL' : ''}`));
  if (keyConstraint && keys.length > 1) columns.push(`PRIMARY KEY (${keys.map(quoteIdent).join(', ')})`);
  return `CREATE TABLE ${qualified(schema, layout.table)} (\n  ${columns.join(',\n  ')}\n)`;
}

/** How a store names columns: the key two names collide under (DuckDB ignores case), the longest name it keeps, and the names it keeps for itself. */
export interface ColumnNaming {
  readonly key: (name: string) => string;
  readonly maxBytes: number;
  /** Names no column of a table may have (PostgreSQL's system columns: ctid, xmin...). */
  readonly reserved?: ReadonlySet<string>;
}

const RANK: Readonly<Record<'int64' | 'int128' | 'number', number>> = { int64: 0, int128: 1, number: 2 };
const isNumeric = (kind: StoreKind): kind is 'int64' | 'int128' | 'number' => kind in RANK;

/** The narrowest kind that holds values of both kinds. */
export function widen(a: StoreKind, b: StoreKind): StoreKind {
  if (a === b) return a;
  if (a === 'json' || b === 'json') return 'json';
  if (isNumeric(a) && isNumeric(b)) return RANK[a] >= RANK[b] ? a : b;
  return 'text';
}

/** The kind of a field's column, from its JSON schema (the SQLite replica's too). */
export function kindOfProperty(property: unknown): StoreKind {
  if (typeof property !== 'object' || property === null) return 'json';
  const { type: declared, format } = property as { type?: unknown; format?: unknown };
  const types = (Array.isArray(declared) ? declared : [declared]).filter((t) => t !== 'null');
  if (types.length !== 1) return 'json';
  switch (types[0]) {
    case 'string':
      return format === 'date-time' ? 'timestamp' : 'text';
    case 'integer':
      return 'int64';
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    default:
      return 'json';
  }
}

/** String.prototype.isWellFormed (ES2024, in every Node this runs on; the compiler's lib predates it): no lone surrogate. */
export const isWellFormed = (text: string): boolean => (text as unknown as { isWellFormed(): boolean }).isWellFormed();

/**
 * Whether a field's name can be a column's: not empty, no U+0000, within the store's length, and well-formed Unicode
 * (the drivers send a lone surrogate as U+FFFD, so the column would not bear the field's name: every later open would
 * take it for a column dropped by hand, and two names alike but for their lone surrogates would name one column).
 */
function fitsName(naming: ColumnNaming, field: string): boolean {
  return field !== '' && !field.includes('\u0000') && isWellFormed(field) && Buffer.byteLength(field, 'utf8') <= naming.maxBytes && naming.reserved?.has(field) !== true;
}

/** The keys (under a store's naming) of the names a table with `columns` holds, bookkeeping columns included. */
function takenKeys(columns: readonly StoreColumn[], naming: ColumnNaming): Set<string> {
  return new Set([...BOOKKEEPING_COLUMNS, ...columns.map((c) => c.field)].map(naming.key));
}

/**
 * Whether a field without a column can get one beside the names `taken`
 * holds: a name the store keeps, and no column's under its naming. One
 * that cannot (an empty name, a bookkeeping column's, one too long, one the
 * store reserves, in DuckDB another case of a column's) stays in `_extra`
 * for good.
 */
function mayTake(taken: ReadonlySet<string>, field: string, naming: ColumnNaming): boolean {
  return fitsName(naming, field) && !taken.has(naming.key(field));
}

/** Each layout's taken keys, built once per layout. */
const layoutTaken = new WeakMap<StoreLayout, ReadonlySet<string>>();

/** Whether a field without a column in `layout` can get one at the next open (evolveLayout's rule, mayTake). */
export function mayGetColumn(layout: StoreLayout, field: string, naming: ColumnNaming): boolean {
  let taken = layoutTaken.get(layout);
  if (!taken) layoutTaken.set(layout, (taken = takenKeys(layout.columns, naming)));
  return mayTake(taken, field, naming);
}

/**
 * The layout of a stream's table from its record schema (the built-in one,
 * or `schema`). A field whose name the store cannot keep (too long, or the
 * same as an earlier one's under the store's naming) has no column: its
 * values go to `_extra`.
 */
export function storeLayoutFor(stream: StreamDefinition, naming: ColumnNaming, schema: JsonSchema = recordJsonSchema(stream), accountKey = false): StoreLayout {
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  const key = stream.primaryKey;
  // In a store of many accounts the entry's name comes first, then the id (the primary key's order).
  const columns: StoreColumn[] = keyColumns({ primaryKey: key, accountKey }).map((field) => ({ field, kind: 'text' }));
  const taken = takenKeys(columns, naming);
  for (const [field, property] of Object.entries(properties)) {
    if (!mayTake(taken, field, naming)) continue;
    taken.add(naming.key(field));
    columns.push({ field, kind: kindOfProperty(property) });
  }
  const layout: StoreLayout = { stream: stream.name, table: stream.name, primaryKey: key, cursorField: stream.cursorField, columns, pending: [] };
  return accountKey ? { ...layout, accountKey: true } : layout;
}

/** One change of a table's columns, as the run summary lists it. */
export interface ColumnChange {
  readonly stream: string;
  readonly field: string;
  /** The kind before (undefined: a new column). */
  readonly from: StoreKind | undefined;
  readonly to: StoreKind;
}

/**
 * The layout to write with, from the one stored (undefined: a new table),
 * the one the schema wants, and the drift the last run saw: every stored
 * column stays, in its place, at the join of its kind and what is asked of
 * it; new fields are appended. Kinds never narrow.
 */
export function evolveLayout(wanted: StoreLayout, stored: StoreLayout | undefined, naming: ColumnNaming): { layout: StoreLayout; changes: ColumnChange[] } {
  if (stored === undefined) return { layout: { ...wanted, pending: [] }, changes: [] };
  const asks = new Map<string, StoreKind>();
  const ask = (field: string, kind: StoreKind): void => {
    const before = asks.get(field);
    asks.set(field, before === undefined ? kind : widen(before, kind));
  };
  for (const c of wanted.columns) ask(c.field, c.kind);
  for (const p of stored.pending) ask(p.field, p.kind);
  const changes: ColumnChange[] = [];
  const columns: StoreColumn[] = stored.columns.map((c) => {
    const asked = asks.get(c.field);
    const kind = asked === undefined ? c.kind : widen(c.kind, asked);
    if (kind !== c.kind) changes.push({ stream: stored.stream, field: c.field, from: c.kind, to: kind });
    return { field: c.field, kind };
  });
  const taken = takenKeys(columns, naming);
  for (const [field, kind] of asks) {
    if (!mayTake(taken, field, naming)) continue;
    taken.add(naming.key(field));
    columns.push({ field, kind });
    changes.push({ stream: stored.stream, field, from: undefined, to: kind });
  }
  return { layout: { ...wanted, primaryKey: stored.primaryKey, columns, pending: [] }, changes };
}

/**
 * `layout` with the `refused` fields' columns kept at their `stored` kind
 * (a widening the database refused: something else depends on the column),
 * and the widening each asked for kept pending in it: saved so, the next
 * open asks for it again, and moves the values kept in `_extra` then.
 */
export function withoutWidenings(layout: StoreLayout, stored: StoreLayout, refused: ReadonlyMap<string, StoreKind>): StoreLayout {
  if (refused.size === 0) return layout;
  const kept = new Map(stored.columns.map((c) => [c.field, c.kind]));
  const columns = layout.columns.map((c) => (refused.has(c.field) ? { field: c.field, kind: kept.get(c.field) ?? c.kind } : c));
  return { ...layout, columns, pending: [...refused].map(([field, kind]) => ({ field, kind })) };
}

/** A stored layout back; undefined when the text is not one. */
export function parseStoreLayout(text: string): StoreLayout | undefined {
  const o = layoutObject(text);
  if (o === undefined) return undefined;
  const column = (c: unknown): StoreColumn | undefined => {
    if (typeof c !== 'object' || c === null) return undefined;
    const { field, kind } = c as Record<string, unknown>;
    return typeof field === 'string' && STORE_KINDS.includes(kind as StoreKind) ? { field, kind: kind as StoreKind } : undefined;
  };
  const columns = (o.columns as unknown[]).map(column);
  const pending = (Array.isArray(o.pending) ? (o.pending as unknown[]) : []).map(column);
  if (columns.some((c) => c === undefined) || pending.some((c) => c === undefined)) return undefined;
  return {
    stream: o.stream,
    table: o.table,
    primaryKey: o.primaryKey,
    cursorField: o.cursorField as string | null,
    columns: columns as StoreColumn[],
    pending: pending as PendingDrift[],
    ...(o.accountKey === true ? { accountKey: true as const } : {}),
  };
}

/** Add `drift` to the layout's pending drift (joined with what is there); undefined when nothing new. */
export function withPending(layout: StoreLayout, drift: ReadonlyMap<string, StoreKind>): StoreLayout | undefined {
  const pending = new Map(layout.pending.map((p) => [p.field, p.kind]));
  let changed = false;
  for (const [field, kind] of drift) {
    const before = pending.get(field);
    const next = before === undefined ? kind : widen(before, kind);
    if (next !== before) {
      pending.set(field, next);
      changed = true;
    }
  }
  return changed ? { ...layout, pending: [...pending].map(([field, kind]) => ({ field, kind })) } : undefined;
}

/** Every column of the table in the order rows are written: the layout's, then the bookkeeping ones. */
export function storeColumnNames(layout: { readonly columns: readonly { readonly field: string }[] }): string[] {
  return [...layout.columns.map((c) => c.field), ...BOOKKEEPING_COLUMNS];
}

/** A quoted SQL identifier (PostgreSQL and DuckDB alike). */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** A table of a store's schema, quoted (PostgreSQL, DuckDB). */
export function qualified(schema: string, table: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(table)}`;
}

/** A SQL string literal (PostgreSQL with standard_conforming_strings, DuckDB). */
export function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** The change in words for the run summary and the log: `contacts.score: new column (bigint)`, `contacts.score: bigint -> numeric`. */
export function describeChange(change: ColumnChange, sqlType: (kind: StoreKind) => string): string {
  return change.from === undefined
    ? `${change.stream}.${change.field}: new column (${sqlType(change.to)})`
    : `${change.stream}.${change.field}: ${sqlType(change.from)} -> ${sqlType(change.to)}`;
}
