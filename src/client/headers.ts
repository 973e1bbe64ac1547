/** Small helpers over undici's response headers (lower-case names; a value may repeat). */
import type { IncomingHttpHeaders } from 'node:http';

/** The first value of a header, or undefined. */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  if (Array.isArray(value)) return value[0];
  return value;
}

/** A non-negative finite number from a header, or undefined. */
export function headerNumber(headers: IncomingHttpHeaders, name: string): number | undefined {
  const raw = headerValue(headers, name);
  if (raw === undefined) return undefined;
  const trimmed = raw.trim();
  if (!/^\d+(\.\d+)?$/.test(trimmed)) return undefined;
  return Number(trimmed);
}

/**
 * A number of seconds (Retry-After's delta-seconds, RateLimit-Reset) as whole
 * ms, or undefined when it is not a non-negative decimal number. A fraction
 * of a ms is rounded up: a wait never ends before the service said, and the
 * instant it ends is whole ms (Airbyte's quota_reset is an integer). Read
 * from the digits, so 1.1 s is 1100 ms (1.1 * 1000 in floating point is not).
 * A number written loosely ("+5", "5.") is still the seconds it says.
 */
export function secondsAsMs(text: string): number | undefined {
  const match = /^\+?(\d+)(?:\.(\d*))?$/.exec(text.trim());
  if (!match) return undefined;
  const fraction = match[2] ?? '';
  const ms = Number(match[1]) * 1000 + Number(fraction.slice(0, 3).padEnd(3, '0'));
  return /[1-9]/.test(fraction.slice(3)) ? ms + 1 : ms;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
/** IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT". */
const IMF_FIXDATE = /^[a-z]{3}, (?<day>\d{2}) (?<month>[a-z]{3}) (?<year>\d{4}) (?<time>\d{2}:\d{2}:\d{2}) GMT$/i;
/** RFC 850's form: "Sunday, 06-Nov-94 08:49:37 GMT". */
const RFC850_DATE = /^[a-z]{6,9}, (?<day>\d{2})-(?<month>[a-z]{3})-(?<year>\d{2}) (?<time>\d{2}:\d{2}:\d{2}) GMT$/i;
/** asctime's form: "Sun Nov  6 08:49:37 1994". */
const ASCTIME_DATE = /^[a-z]{3} (?<month>[a-z]{3}) (?<day>[ \d]\d) (?<time>\d{2}:\d{2}:\d{2}) (?<year>\d{4})$/i;

/**
 * An HTTP-date (RFC 9110, section 5.6.7: IMF-fixdate, or the obsolete RFC 850
 * and asctime forms, all in GMT) as epoch ms, or undefined for anything else.
 * Not Date.parse: it reads almost any text as some date ("5." and "+5" as
 * 1 May 2001), and a Retry-After of such a date is "again now" where the
 * service meant a wait.
 */
export function httpDate(text: string): number | undefined {
  const value = text.trim();
  const found = (IMF_FIXDATE.exec(value) ?? RFC850_DATE.exec(value) ?? ASCTIME_DATE.exec(value))?.groups;
  if (found === undefined) return undefined;
  const { day: dayText = '', month: monthText = '', year: yearText = '', time = '' } = found;
  const day = Number(dayText.trim());
  const month = MONTHS.indexOf(monthText.toLowerCase());
  // RFC 850's two-digit year: 00 to 49 in this century, 50 to 99 in the last one.
  const year = yearText.length === 2 ? Number(yearText) + (Number(yearText) < 50 ? 2000 : 1900) : Number(yearText);
  const [hour = 0, minute = 0, second = 0] = time.split(':').map(Number);
  if (month < 0 || hour > 23 || minute > 59 || second > 60) return undefined;
  const ms = Date.UTC(year, month, day, hour, minute, second);
  // 31 Feb is no date (Date.UTC would roll it into March).
  return new Date(ms).getUTCDate() === day ? ms : undefined;
}

/**
 * Longest RateLimit-Reset read as seconds to wait, and farthest from the
 * service's clock a Reset read as an epoch time may lie: a day. The API's
 * Reset is the seconds until the minute restarts (section 4.1); a gateway
 * counting a day may say up to a day.
 */
const RESET_MAX_MS = 86_400_000;

/**
 * RateLimit-Reset as a wait in ms, or undefined. Seconds to wait (whole ms,
 * rounded up: secondsAsMs) up to a day. A larger value is no wait of the
 * API's minute: a service or gateway that sends the reset instant in epoch
 * seconds (as X-RateLimit-Reset often is) means that instant, which is read
 * on the service's clock (the response's Date, or `now` without one) when it
 * lies within a day of it (one just past is no wait: 0). Anything else counts
 * as no Reset, never a wait of years.
 */
export function resetAsMs(headers: IncomingHttpHeaders, now: number): number | undefined {
  const raw = headerValue(headers, 'ratelimit-reset');
  const ms = raw === undefined ? undefined : secondsAsMs(raw);
  if (ms === undefined || ms <= RESET_MAX_MS) return ms;
  const date = headerValue(headers, 'date');
  const wait = ms - ((date === undefined ? undefined : httpDate(date)) ?? now);
  return Math.abs(wait) <= RESET_MAX_MS ? Math.max(0, wait) : undefined;
}
