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
 */
export function secondsAsMs(text: string): number | undefined {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!match) return undefined;
  const fraction = match[2] ?? '';
  const ms = Number(match[1]) * 1000 + Number(fraction.slice(0, 3).padEnd(3, '0'));
  return /[1-9]/.test(fraction.slice(3)) ? ms + 1 : ms;
}
