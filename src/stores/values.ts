/**
 * Records to the cells of a store's row and back, losslessly, for the
 * PostgreSQL and DuckDB stores (columns.ts says which columns there are).
 *
 * A value goes into its column when it fits the column's kind; its exact
 * form also goes into `_extra` when the column would not give it back the
 * same (a date-time written with another offset or more digits than
 * milliseconds; in DuckDB a decimal that a double does not hold digit for
 * digit), so the column always holds the value for SQL and `_extra` the
 * text the service sent. A value that does not fit (or a field without a
 * column) goes into `_extra` only, and asks for drift: the kind its column
 * should widen to, applied when the store next opens. Declared fields the
 * record lacks are listed in `_absent`. `decodeRow(encodeRow(r))` deep-equals
 * `r` (numbers in JSON columns keep their value; their notation is the
 * store's).
 *
 * Cells are plain: text, booleans, numbers as their decimal text, instants
 * as the ISO 8601 text sent (with a zone; canonicalInstant checks it), JSON
 * as its text; each store turns them into its own values.
 */
import { isRawNumber, parseExactJson, parseExactObject, rawNumber } from '../exact-json.js';
import { ABSENT_COLUMN, EXTRA_COLUMN, mayGetColumn, type ColumnNaming, type StoreKind, type StoreLayout, widen } from './columns.js';

export type Data = Record<string, unknown>;

/** One cell: text (numbers, instants and JSON as text), a boolean, or null. */
export type Cell = string | boolean | null;

/** What a store cannot hold exactly, besides what every store shares. */
export interface StoreDialect {
  /** Whether a finite number written as `text` comes back with the same text from a `number` column. */
  readonly numberExact: (text: string) => boolean;
  /** Whether a string can be stored at all (PostgreSQL refuses U+0000 in text and jsonb). */
  readonly storesString: (text: string) => boolean;
  /** Whether a `number` column holds a finite number written as `text` at all (PostgreSQL's numeric has a range); absent: every one. */
  readonly numberFits?: (text: string) => boolean;
  /**
   * Whether a `json` column holds a JSON text (PostgreSQL's jsonb refuses the
   * escape of U+0000 and numbers beyond numeric's range); absent: every one.
   */
  readonly storesJson?: (text: string) => boolean;
  /**
   * How the store names columns: a field whose name can never have a column
   * (mayGetColumn) asks for no drift, which would tell every run that the next
   * one adds it; absent: every name can.
   */
  readonly naming?: ColumnNaming;
  /** A column of `kind` as text, and as an instant (NULL when not one): SQL expressions of `expr`. */
  readonly textOf: (kind: StoreKind, expr: string) => string;
  readonly instantOf: (kind: StoreKind, expr: string) => string;
}

interface EncodedRow {
  /** One cell per column of the layout, then `_extra` (JSON text or null), then `_absent` (JSON text or null). */
  readonly cells: Cell[];
  /** Fields whose value did not fit: the kind each asks its column to widen to (or a new column to have). */
  readonly drift: ReadonlyMap<string, StoreKind> | undefined;
}

const INTEGER_TEXT = /^-?(?:0|[1-9]\d*)$/;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const INT128_MIN = -(2n ** 127n);
const INT128_MAX = 2n ** 127n - 1n;
/**
 * An ISO 8601 date-time with a zone (years 0001-9999): what both stores parse
 * the same. `Date.parse` then checks the calendar (no 30 February) and gives
 * the instant.
 */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:[Zz]|[+-](\d{2}):?(\d{2}))$/;
/** The largest offset's hours PostgreSQL's timestamptz takes (15:59; Date reads up to 23:59). */
const MAX_OFFSET_HOURS = 15;

/** The days of month `mo` (1-12) of year `y` (proleptic Gregorian, as Date counts them). */
function daysInMonth(y: number, mo: number): number {
  if (mo === 2) return y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28;
  return mo === 4 || mo === 6 || mo === 9 || mo === 11 ? 30 : 31;
}

/** The number the `n` ASCII digits of `text` at `at` write; -1 when one of them is not a digit. */
function digitsAt(text: string, at: number, n: number): number {
  let value = 0;
  for (let i = at; i < at + n; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/** 400 years of the Gregorian calendar (146,097 days), in ms: its dates fall on the same weekdays and leap days again. */
const FOUR_CENTURIES_MS = 146_097 * 86_400_000;

/** Milliseconds since the epoch of a valid UTC date-time; Date.UTC reads years 0-99 as 1900-1999, so those are counted 400 years on. */
function utcMillis(y: number, mo: number, d: number, h: number, mi: number, s: number, ms: number): number {
  return y >= 100 ? Date.UTC(y, mo - 1, d, h, mi, s, ms) : Date.UTC(y + 400, mo - 1, d, h, mi, s, ms) - FOUR_CENTURIES_MS;
}

const [DASH, COLON, DOT, T, Z] = ['-', ':', '.', 'T', 'Z'].map((c) => c.charCodeAt(0)) as [number, number, number, number, number];

/** Whether a text has toISOString's length and its `T`, `.` and `Z` (a valid date-time of that shape is its own canonical text). */
export function isoShaped(text: string): boolean {
  return text.length === 24 && text.charCodeAt(10) === T && text.charCodeAt(19) === DOT && text.charCodeAt(23) === Z;
}

/**
 * Milliseconds since the epoch of a date-time in toISOString's form
 * (`2024-05-01T12:00:00.000Z`: what the service sends), read digit by digit
 * with the calendar checked (years 0001-9999, no 30 February); NaN for any
 * other text (other forms go through DATE_TIME and Date).
 */
export function isoMillis(text: string): number {
  if (!isoShaped(text) || text.charCodeAt(4) !== DASH || text.charCodeAt(7) !== DASH || text.charCodeAt(13) !== COLON || text.charCodeAt(16) !== COLON) return Number.NaN;
  const y = digitsAt(text, 0, 4);
  const mo = digitsAt(text, 5, 2);
  const d = digitsAt(text, 8, 2);
  const h = digitsAt(text, 11, 2);
  const mi = digitsAt(text, 14, 2);
  const s = digitsAt(text, 17, 2);
  const ms = digitsAt(text, 20, 3);
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59 || ms < 0) return Number.NaN;
  return utcMillis(y, mo, d, h, mi, s, ms);
}

/** A JSON number's text: a raw number's own, or the one JavaScript writes. */
function numberText(value: unknown): string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined;
  return isRawNumber(value) ? value.rawJSON : undefined;
}

/** The instant of a date-time string as `toISOString` writes it; undefined when it is not one both stores read alike. */
export function canonicalInstant(text: string): string | undefined {
  // Already in toISOString's form (what the service sends): a valid one is its own canonical text.
  if (!Number.isNaN(isoMillis(text))) return text;
  const m = DATE_TIME.exec(text);
  if (!m || m[1] === '0000') return undefined;
  // The calendar: Date.parse rolls 2024-02-30 over to March; the date written must be the date read.
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) return undefined;
  if (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6]) > 59) return undefined;
  // An offset PostgreSQL refuses would fail the whole checkpoint's write; such a text is a string, not an instant.
  if (m[7] !== undefined && (Number(m[7]) > MAX_OFFSET_HOURS || Number(m[8]) > 59)) return undefined;
  const ms = Date.parse(text.replace(' ', 'T').replace(/(\.\d{3})\d+/, '$1'));
  if (!Number.isFinite(ms)) return undefined;
  const iso = new Date(ms).toISOString();
  return /^\d{4}-/.test(iso) ? iso : undefined;
}

/**
 * The kind a value asks for on its own. Null and undefined ask for nothing,
 * nor does a value no column of the store can hold (a string with U+0000;
 * in PostgreSQL a number beyond numeric's range, or JSON holding either): it
 * stays in `_extra` only, rather than widening a column that could not hold
 * it either.
 */
function naturalKind(value: unknown, dialect: StoreDialect): StoreKind | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'string') return dialect.storesString(value) ? 'text' : undefined;
  if (typeof value === 'boolean') return 'boolean';
  // Most numbers are small integers: every safe integer is within int64.
  if (Number.isSafeInteger(value)) return 'int64';
  const text = numberText(value);
  if (text !== undefined) {
    if (INTEGER_TEXT.test(text) && text !== '-0') {
      const n = BigInt(text);
      if (n >= INT64_MIN && n <= INT64_MAX) return 'int64';
      if (n >= INT128_MIN && n <= INT128_MAX) return 'int128';
    }
    return (dialect.numberFits?.(text) ?? true) ? 'number' : undefined;
  }
  return jsonFits(value, dialect) ? 'json' : undefined;
}

/** Whether the store's `json` columns hold a value. */
function jsonFits(value: unknown, dialect: StoreDialect): boolean {
  if (dialect.storesJson === undefined) return true;
  const text = jsonText(value);
  return text !== undefined && dialect.storesJson(text);
}

/** The cell of a non-null value in a column of `kind`; undefined when the value does not fit (it goes to `_extra`, and asks for drift). */
function cellOf(kind: StoreKind, value: unknown, dialect: StoreDialect): Cell | undefined {
  switch (kind) {
    case 'text':
      if (typeof value === 'string') return dialect.storesString(value) ? value : undefined;
      // A column widened to text holds the text of a number or a boolean, as the widening wrote those before it (the
      // value itself goes to `_extra` too: keptExact).
      return typeof value === 'boolean' ? String(value) : numberText(value);
    case 'timestamp':
      // The text as sent (both stores read it to the microsecond).
      return typeof value === 'string' && canonicalInstant(value) !== undefined ? value : undefined;
    case 'boolean':
      return typeof value === 'boolean' ? value : undefined;
    case 'int64':
    case 'int128':
    case 'number': {
      const natural = naturalKind(value, dialect);
      return natural !== undefined && (natural === kind || widen(natural, kind) === kind) ? numberText(value) : undefined;
    }
    case 'json': {
      const text = jsonText(value);
      return text !== undefined && (dialect.storesJson?.(text) ?? true) ? text : undefined;
    }
  }
}

/** A lone surrogate's escape in JSON.stringify's text (a pair is written as it is, so an escape of U+D800-U+DFFF stands alone), after an even run of backslashes (an odd one makes it text). */
const LONE_SURROGATE = /(?<!\\)((?:\\\\)*)\\ud[89a-f][0-9a-f]{2}/g;

/**
 * A value as JSON text that the stores' JSON parsers accept: a string that
 * is not well-formed Unicode (a lone surrogate, which a service's JSON can
 * carry as an escape) gets U+FFFD in its place, as the drivers write such a
 * string into a text column. PostgreSQL's json functions and jsonb, and
 * DuckDB's JSON functions, refuse the escape, which would stop every later
 * run at the drift that reads `_extra`.
 */
export function jsonText(value: unknown): string | undefined {
  const text = JSON.stringify(value);
  return text !== undefined && text.includes('\\ud') ? text.replace(LONE_SURROGATE, '$1\\ufffd') : text;
}

/**
 * Whether a value that cellOf placed as `cell` in a column of `kind` goes to
 * `_extra` too: the column would give back another text (an instant written
 * with another offset or more digits than milliseconds, which a valid one of
 * toISOString's shape never is; a number its store's column does not hold
 * digit for digit) or another type (a number or a boolean in a text column).
 */
function keptExact(kind: StoreKind, value: unknown, cell: Cell, dialect: StoreDialect): boolean {
  if (kind === 'text') return typeof value !== 'string';
  if (kind === 'timestamp') return !isoShaped(cell as string);
  return kind === 'number' && !dialect.numberExact(cell as string);
}

/**
 * A value a run kept in a row's `_extra` (`extra`, parsed; changed here)
 * moved into `field`'s column of `kind`, which holds it now: its cell, and
 * the row's `_extra` text after (null when nothing is left; the value stays
 * there too where keptExact says). Undefined when there is no such value or
 * it does not fit yet.
 */
export function movedFromExtra(extra: Data, field: string, kind: StoreKind, dialect: StoreDialect): { cell: Cell; extra: string | null } | undefined {
  const value = extra[field];
  if (value === null || value === undefined) return undefined;
  const cell = cellOf(kind, value, dialect);
  if (cell === undefined) return undefined;
  if (!keptExact(kind, value, cell, dialect)) delete extra[field];
  return { cell, extra: Object.keys(extra).length === 0 ? null : (jsonText(extra) as string) };
}

/** Set an own property, even one named __proto__ (records come from JSON.parse and may carry any key). */
export function put(target: Data, field: string, value: unknown): void {
  Object.defineProperty(target, field, { value, enumerable: true, writable: true, configurable: true });
}

/** Declared field names of each layout (built once: rows are encoded for every record of a sync). */
const declaredFields = new WeakMap<object, ReadonlySet<string>>();

/** The field names a layout declares (a store's or the SQLite replica's). */
export function declaredOf(layout: { readonly columns: readonly { readonly field: string }[] }): ReadonlySet<string> {
  let set = declaredFields.get(layout);
  if (!set) declaredFields.set(layout, (set = new Set(layout.columns.map((c) => c.field))));
  return set;
}

/** A record as the cells of a row of `layout` (see EncodedRow). */
export function encodeRow(layout: StoreLayout, record: Data, dialect: StoreDialect): EncodedRow {
  const columns = layout.columns;
  const cells: Cell[] = new Array<Cell>(columns.length + 2);
  let extra: Data | undefined;
  let absent: string[] | undefined;
  let drift: Map<string, StoreKind> | undefined;
  let carried = 0;
  for (let i = 0; i < columns.length; i++) {
    const { field, kind } = columns[i] as (typeof columns)[number];
    if (!Object.hasOwn(record, field)) {
      (absent ??= []).push(field);
      cells[i] = null;
      continue;
    }
    carried++;
    const value = record[field];
    if (value === null || value === undefined) {
      cells[i] = null;
      continue;
    }
    // cellOf and keptExact, as movedFromExtra asks them.
    const cell = cellOf(kind, value, dialect);
    if (cell !== undefined) {
      cells[i] = cell;
      if (keptExact(kind, value, cell, dialect)) put((extra ??= {}), field, value);
      continue;
    }
    put((extra ??= {}), field, value);
    if (field === layout.primaryKey) {
      // A key that is not a string (a number id): its JSON text keys the row, its value stays exact in _extra.
      cells[i] = JSON.stringify(value);
      continue;
    }
    cells[i] = null;
    const natural = naturalKind(value, dialect);
    if (natural !== undefined) (drift ??= new Map()).set(field, widen(drift.get(field) ?? kind, widen(kind, natural)));
  }
  const keys = Object.keys(record);
  if (keys.length > carried) {
    const declared = declaredOf(layout);
    for (const field of keys) {
      if (declared.has(field)) continue;
      const value = record[field];
      put((extra ??= {}), field, value);
      const natural = naturalKind(value, dialect);
      if (natural !== undefined && (dialect.naming === undefined || mayGetColumn(layout, field, dialect.naming))) (drift ??= new Map()).set(field, widen(drift.get(field) ?? natural, natural));
    }
  }
  cells[columns.length] = extra === undefined ? null : (jsonText(extra) as string);
  cells[columns.length + 1] = absent === undefined ? null : (jsonText(absent) as string);
  return { cells, drift };
}

/** A column's value as read back: text (instants as `toISOString` writes them; JSON as its text), or a boolean or a double as the driver gives it. */
export type ReadCell = string | boolean | number | null;

function numberOf(text: string): unknown {
  const n = Number(text);
  return String(n) === text ? n : rawNumber(text);
}

function decodeCell(kind: StoreKind, cell: ReadCell): unknown {
  if (cell === null) return null;
  switch (kind) {
    case 'boolean':
      return typeof cell === 'boolean' ? cell : cell === 'true' || cell === 't';
    case 'int64':
    case 'int128':
    case 'number':
      return numberOf(String(cell));
    case 'json':
      return parseExactJson(String(cell));
    case 'text':
    case 'timestamp':
      return String(cell);
  }
}

/** A row read back (column name -> cell, `_extra` and `_absent` as JSON text) as the record it was made from. */
export function decodeRow(layout: StoreLayout, row: Readonly<Record<string, ReadCell>>): Data {
  const extra = parseExactObject(row[EXTRA_COLUMN]);
  const absentText = row[ABSENT_COLUMN];
  const absent = new Set(typeof absentText === 'string' ? (JSON.parse(absentText) as string[]) : []);
  const record: Data = {};
  for (const { field, kind } of layout.columns) {
    if (absent.has(field)) continue;
    if (Object.hasOwn(extra, field)) put(record, field, extra[field]);
    else put(record, field, decodeCell(kind, row[field] ?? null));
  }
  for (const [field, value] of Object.entries(extra)) if (!Object.hasOwn(record, field)) put(record, field, value);
  return record;
}
