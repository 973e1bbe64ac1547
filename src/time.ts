/**
 * Instants as users and the service write them: `YYYY-MM-DD` (midnight UTC)
 * or an ISO 8601 date-time with zone. Plain code, no dependency: the config,
 * the state's watermarks and the replica's rows all read them.
 */
const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME_WITH_ZONE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:?\d{2})$/i;
/** Days of `month` (1-12) in `year`, leap years included. */
function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Epoch ms of a UTC calendar time (years below 100 included, which Date.UTC would shift to 19xx). */
function utcMs(year: number, month: number, day: number, hour: number, minute: number, second: number, ms: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, ms);
  return date.getTime();
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

type Reading = { readonly ms: number; readonly micro: number } | { readonly problem: string | undefined };

/**
 * Read `YYYY-MM-DD` (midnight UTC) or an ISO 8601 date-time with zone (`Z`,
 * `±HH:MM` or the basic form `±HHMM`; seconds and fraction digits optional):
 * `ms` since the epoch, and the `micro`seconds within that millisecond
 * (fraction digits past the sixth are dropped). Fields out of range (year 0000,
 * month 13, February 30, hour 24) are what the service refuses: `problem`
 * says which; undefined when the shape itself is wrong.
 */
export function readInstant(value: string): Reading {
  const dt = DATE_TIME_WITH_ZONE.exec(value);
  const d = dt ?? DATE_ONLY.exec(value);
  if (d === null) return { problem: undefined };
  const [year, month, day] = [Number(d[1]), Number(d[2]), Number(d[3])];
  if (year < 1) return { problem: 'year 0000 does not exist for the service (years run from 0001 to 9999)' };
  if (month < 1 || month > 12) return { problem: `there is no month ${d[2]}` };
  if (day < 1 || day > daysInMonth(year, month)) return { problem: `${MONTHS[month - 1]} ${d[1]} has no day ${d[3]}` };
  if (dt === null) return { ms: utcMs(year, month, day, 0, 0, 0, 0), micro: 0 };
  const [hour, minute, second] = [Number(dt[4]), Number(dt[5]), Number(dt[6] ?? '0')];
  if (hour > 23 || minute > 59 || second > 59) return { problem: `${dt[4]}:${dt[5]}${dt[6] === undefined ? '' : `:${dt[6]}`} is not a time of day` };
  const zone = (dt[8] ?? 'Z').toUpperCase();
  let offsetMinutes = 0;
  if (zone !== 'Z') {
    const [oh, om] = [Number(zone.slice(1, 3)), Number(zone.slice(-2))];
    if (oh > 23 || om > 59) return { problem: `${zone} is not a UTC offset` };
    offsetMinutes = (zone.startsWith('-') ? -1 : 1) * (oh * 60 + om);
  }
  const fraction = `${dt[7] ?? ''}000000`;
  const ms = Number(fraction.slice(0, 3));
  return { ms: utcMs(year, month, day, hour, minute, second, ms) - offsetMinutes * 60_000, micro: Number(fraction.slice(3, 6)) };
}

/** Parse `YYYY-MM-DD` (midnight UTC) or an ISO date-time with zone (`Z`, `±HH:MM`, `±HHMM`); NaN when neither, or out of range. */
export function parseInstant(value: string): number {
  const reading = readInstant(value);
  return 'ms' in reading ? reading.ms : Number.NaN;
}

/**
 * The service's look-back: it looks back 5 minutes behind `updated_since`
 * (API, "Shared list parameters") to cover clock differences, for the
 * records it stamps a little earlier than a watermark it already gave. Its
 * stamps may be that far apart from the order things happened in.
 */
export const LOOK_BACK_MS = 5 * 60 * 1000;

/**
 * Whether `a` is a later instant than `b` by more than `byMs`, to the
 * microsecond (as the PostgreSQL and DuckDB stores compare them); false when
 * either is not an instant's text.
 */
export function isLaterInstant(a: unknown, b: unknown, byMs = 0): boolean {
  if (typeof a !== 'string' || typeof b !== 'string') return false;
  const [x, y] = [readInstant(a), readInstant(b)];
  if (!('ms' in x) || !('ms' in y)) return false;
  const apart = x.ms - y.ms;
  return apart > byMs || (apart === byMs && x.micro > y.micro);
}

/**
 * Whether a row whose cursor is `cursor` changed after the deletion of its
 * object at `deletedAt` (the object came back): only when the cursor is
 * later by more than the look-back. The service's stamps may be that far
 * apart (a clock that went back, a failover), so a change stamped within
 * it is no proof the change came after the deletion: the deletion wins.
 * False when either is not an instant's text.
 */
export function changedAfterDeletion(cursor: unknown, deletedAt: unknown): boolean {
  return isLaterInstant(cursor, deletedAt, LOOK_BACK_MS);
}
