/**
 * Query-string validation. Unknown and repeated parameters are refused (400),
 * so a client bug such as sending created_since to /v1/contacts shows up.
 */
import { ProblemError } from './problem.js';

export const LOOK_BACK_MS = 5 * 60_000;
export const DEFAULT_PAGE_LIMIT = 100;
export const MAX_PAGE_LIMIT = 200;
export const LIMIT_DETAIL = `limit must be an integer from 1 to ${MAX_PAGE_LIMIT}`;

export interface ListQuerySpec {
  /** created_since accepted as a synonym of updated_since. */
  readonly createdSince: boolean;
  /** updated_since accepted at all (not on pipeline_stages). */
  readonly updatedSince: boolean;
}

export interface ListParams {
  /** Instant given by updated_since/created_since (epoch ms), before the look-back; null: none. */
  readonly since: number | null;
  readonly cursor: string | null;
  readonly limit: number;
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:?\d{2})$/;
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const SPACE_FOR_PLUS = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)? \d{2}:?\d{2}$/;

/**
 * Epoch ms of a UTC calendar time, or null when the calendar has no such day
 * or time (February 30, hour 24): the day the Date lands on must be the day
 * asked for. Years below 100 are kept (Date.UTC would shift them to 19xx).
 */
function calendarMs(y: number, mo: number, d: number, h = 0, mi = 0, s = 0, ms = 0): number | null {
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return null;
  const at = new Date(0);
  at.setUTCFullYear(y, mo - 1, d);
  if (at.getUTCDate() !== d) return null;
  return at.setUTCHours(h, mi, s, ms);
}

/**
 * An ISO 8601 date-time with zone (seconds required, fraction optional and cut
 * to milliseconds; zone Z, ±hh:mm or ±hhmm) or a date YYYY-MM-DD (midnight
 * UTC), as epoch ms; null if invalid (year 0000, month 13, February 30...).
 */
export function parseInstant(value: string): number | null {
  const dt = DATE_TIME.exec(value);
  if (dt !== null) {
    const [y, mo, d, h, mi, s] = dt.slice(1, 7).map(Number) as [number, number, number, number, number, number];
    const frac = dt[7] ?? '';
    const zone = dt[8] ?? 'Z';
    let offsetMin = 0;
    if (zone !== 'Z' && zone !== 'z') {
      // ±hh:mm or the ISO 8601 basic form ±hhmm
      const oh = Number(zone.slice(1, 3));
      const om = Number(zone.slice(-2));
      if (oh > 23 || om > 59) return null;
      offsetMin = (zone.startsWith('-') ? -1 : 1) * (oh * 60 + om);
    }
    const local = calendarMs(y, mo, d, h, mi, s, Number((frac + '000').slice(0, 3)));
    return local === null ? null : local - offsetMin * 60_000;
  }
  const date = DATE_ONLY.exec(value);
  if (date !== null) {
    const [y, mo, d] = date.slice(1, 4).map(Number) as [number, number, number];
    return calendarMs(y, mo, d);
  }
  return null;
}

function instantParam(name: string, value: string): number {
  const t = parseInstant(value);
  if (t !== null) return t;
  const hint = SPACE_FOR_PLUS.test(value) ? " (a '+' in the query string must be sent percent-encoded as %2B)" : '';
  throw new ProblemError(400, `${name} must be an ISO 8601 date-time with zone (e.g. 2024-05-01T12:00:00Z) or a date YYYY-MM-DD${hint}`);
}

/** Read a query string into name -> value; repeated or unknown names are 400. */
export function readQuery(search: string, allowed: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  if (search === '') return out;
  for (const [name, value] of new URLSearchParams(search)) {
    if (!allowed.includes(name)) {
      const what = allowed.length === 0 ? 'this operation takes no query parameters' : `allowed: ${allowed.join(', ')}`;
      throw new ProblemError(400, `unknown query parameter '${name}' (${what})`);
    }
    if (out.has(name)) throw new ProblemError(400, `query parameter '${name}' is given more than once`);
    out.set(name, value);
  }
  return out;
}

export function parseListQuery(search: string, spec: ListQuerySpec): ListParams {
  const allowed = ['cursor', 'limit'];
  if (spec.updatedSince) allowed.push('updated_since');
  if (spec.createdSince) allowed.push('created_since');
  const q = readQuery(search, allowed);

  let limit = DEFAULT_PAGE_LIMIT;
  const rawLimit = q.get('limit');
  if (rawLimit !== undefined) {
    if (!/^[0-9]{1,6}$/.test(rawLimit)) throw new ProblemError(400, LIMIT_DETAIL);
    limit = Number(rawLimit);
    if (limit < 1 || limit > MAX_PAGE_LIMIT) throw new ProblemError(400, LIMIT_DETAIL);
  }

  const updated = q.get('updated_since');
  const created = q.get('created_since');
  let since: number | null = null;
  if (updated !== undefined) since = instantParam('updated_since', updated);
  if (created !== undefined) {
    const c = instantParam('created_since', created);
    if (since !== null && since !== c) throw new ProblemError(400, 'updated_since and created_since are synonyms; give one of them (or the same instant in both)');
    since = c;
  }

  const cursor = q.get('cursor');
  if (cursor !== undefined && cursor === '') throw new ProblemError(400, 'cursor must not be empty; omit it on the first page');
  return { since, cursor: cursor ?? null, limit };
}
