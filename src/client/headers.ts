/** Small helpers over undici's response headers (lower-case names; a value may repeat). */
import type { IncomingHttpHeaders } from 'node:http';

/** The first value of a header, or undefined. */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  if (Array.isArray(value)) return value[0];
  return value;
}
