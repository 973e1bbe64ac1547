/**
 * Records to rows and back, losslessly: a value that fits its column's type
 * goes into the column; anything else (unknown fields, a value of another
 * type than declared) goes into `_extra` as JSON; declared fields the record
 * lacks are listed in `_absent`. `rowToRecord(recordToRow(r))` deep-equals `r`.
 *
 * Numbers keep their text digit for digit: an integer of SQLite's 64-bit
 * range goes into an INTEGER column exactly (as a BigInt beyond 2^53); a
 * number a double does not write back the same (a decimal with more digits
 * than a double holds, `1.50`, `1e3`, `-0`, an integer beyond 2^53) arrives
 * as a raw JSON number: a REAL column holds its nearest double, for SQL, and
 * `_extra` its text (`_extra -> '$.field'` reads it back in SQL), which reads
 * back first; an INTEGER column cannot hold it (beyond the 64-bit range, or
 * not an integer), so it goes into `_extra` alone.
 * Rows with such integers must be read with `setReadBigInts(true)`.
 *
 * A string that is not well-formed Unicode (a lone surrogate) goes into its
 * TEXT column as SQLite stores it, with U+FFFD, and into `_extra` exactly.
 */
import type { SQLInputValue, SQLOutputValue } from 'node:sqlite';
import type { Data } from '../engine/sync-sink.js';
import { isRawNumber, parseExactJson, parseExactObject, rawNumber } from '../exact-json.js';
import { isWellFormed } from '../stores/columns.js';
import { declaredOf, put } from '../stores/values.js';
import { ABSENT_COLUMN, EXTRA_COLUMN, type ColumnKind, type TableLayout } from './layout.js';

/** Column values in the layout's order, then _extra, then _absent. */
export type RowValues = SQLInputValue[];

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const INTEGER_TEXT = /^-?(?:0|[1-9]\d*)$/;

/**
 * An integer SQLite stores exactly, else undefined: a raw JSON number written
 * as BigInt would write it, or a JavaScript number beyond 2^53 that the parse
 * kept (its text is the number's own, e.g. 9007199254740994: exact-json.ts
 * makes a raw number only of those it would change).
 */
function int64Of(value: unknown): bigint | undefined {
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || Number.isSafeInteger(value)) return undefined;
    const n = BigInt(value);
    return n >= INT64_MIN && n <= INT64_MAX && String(n) === String(value) ? n : undefined;
  }
  if (!isRawNumber(value)) return undefined;
  const text = value.rawJSON;
  if (!INTEGER_TEXT.test(text) || text === '-0') return undefined;
  const n = BigInt(text);
  return n >= INT64_MIN && n <= INT64_MAX ? n : undefined;
}

function fits(kind: ColumnKind, value: unknown): boolean {
  switch (kind) {
    case 'text':
      return typeof value === 'string';
    case 'integer':
      return (Number.isSafeInteger(value) && !Object.is(value, -0)) || int64Of(value) !== undefined;
    case 'real':
      return typeof value === 'number' ? Number.isFinite(value) && !Object.is(value, -0) : nearestDouble(value) !== undefined;
    case 'boolean':
      return typeof value === 'boolean';
    case 'json':
      return value !== undefined;
  }
}

/** The finite double nearest to a raw JSON number (`1.50`, `1e3`, 20 digits), else undefined; `-0` as 0. */
function nearestDouble(value: unknown): number | undefined {
  if (!isRawNumber(value)) return undefined;
  const n = Number(value.rawJSON);
  return Number.isFinite(n) ? n + 0 : undefined;
}

function toSql(kind: ColumnKind, value: unknown): SQLInputValue {
  if (kind === 'boolean') return value ? 1 : 0;
  if (kind === 'json') return JSON.stringify(value);
  if (kind === 'integer' && !Number.isSafeInteger(value)) return int64Of(value) ?? null;
  if (kind === 'real' && typeof value !== 'number') return nearestDouble(value) ?? null;
  return value as string | number;
}

/**
 * An INTEGER read back (a BigInt when read with setReadBigInts): a number when
 * JavaScript writes it back with the same digits (as the parse of the record
 * gave it), else the exact raw number.
 */
function integerOf(value: number | bigint): unknown {
  if (typeof value === 'number') return value;
  const n = Number(value);
  return String(n) === value.toString() ? n : rawNumber(value.toString());
}

function fromSql(kind: ColumnKind, value: SQLOutputValue): unknown {
  if (value === null) return null;
  switch (kind) {
    case 'boolean':
      return Number(value) !== 0;
    case 'json':
      return parseExactJson(String(value));
    case 'integer':
      return typeof value === 'bigint' || typeof value === 'number' ? integerOf(value) : value;
    case 'real':
      return typeof value === 'bigint' ? Number(value) : value;
    case 'text':
      return value;
  }
}

export function recordToRow(layout: TableLayout, record: Data): RowValues {
  const columns = layout.columns;
  const values: RowValues = new Array<SQLInputValue>(columns.length + 2);
  let extra: Data | undefined;
  let absent: string[] | undefined;
  let carried = 0;
  for (let i = 0; i < columns.length; i++) {
    const { field, kind } = columns[i] as (typeof columns)[number];
    if (!Object.hasOwn(record, field)) {
      (absent ??= []).push(field);
      values[i] = null;
      continue;
    }
    carried++;
    const value = record[field];
    if (value === null) values[i] = null;
    else if (fits(kind, value)) {
      values[i] = toSql(kind, value);
      // SQLite holds text as UTF-8: a lone surrogate (JSON can carry one as an escape) reaches the column as U+FFFD,
      // and a REAL column a raw number's nearest double, so the exact value is kept in _extra too, which reads back first.
      if (kind === 'text' ? !isWellFormed(value as string) : kind === 'real' && typeof value !== 'number') put((extra ??= {}), field, value);
    } else {
      values[i] = null;
      put((extra ??= {}), field, value);
    }
  }
  const keys = Object.keys(record);
  if (keys.length > carried) {
    // Fields the layout does not declare (in the record's order, after the declared ones that did not fit).
    const declared = declaredOf(layout);
    for (const field of keys) if (!declared.has(field)) put((extra ??= {}), field, record[field]);
  }
  values[columns.length] = extra === undefined ? null : JSON.stringify(extra);
  values[columns.length + 1] = absent === undefined ? null : JSON.stringify(absent);
  return values;
}

function parseJsonObject(value: SQLOutputValue | undefined): Data {
  return value === null || value === undefined ? {} : parseExactObject(String(value));
}

function parseJsonArray(value: SQLOutputValue | undefined): Set<string> {
  if (value === null || value === undefined) return new Set();
  const parsed = JSON.parse(String(value)) as unknown;
  return new Set(Array.isArray(parsed) ? parsed.filter((v): v is string => typeof v === 'string') : []);
}

/** A row read with `SELECT *` (column names as keys) back to the record it was made from. */
export function rowToRecord(layout: TableLayout, row: Record<string, SQLOutputValue>): Data {
  const extra = parseJsonObject(row[EXTRA_COLUMN]);
  const absent = parseJsonArray(row[ABSENT_COLUMN]);
  const record: Data = {};
  for (const { field, kind } of layout.columns) {
    if (absent.has(field) || Object.hasOwn(extra, field)) continue;
    put(record, field, fromSql(kind, row[field] ?? null));
  }
  for (const [field, value] of Object.entries(extra)) put(record, field, value);
  return record;
}
