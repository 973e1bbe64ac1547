/**
 * JSON that keeps every number exactly as written. `JSON.parse` turns
 * 9007199254740993 into 9007199254740992 and `1.50` into 1.5; a replication
 * tool must pass both on digit for digit. `parseExactJson` gives such a number
 * as a raw JSON value (`JSON.rawJSON(text)`), which `JSON.stringify` writes
 * back verbatim, so the faces need no special case to emit it.
 *
 * Nearly every page holds only numbers that survive a parse (small integers,
 * short decimals): for those the one `JSON.parse` is kept. The text is
 * scanned by a regular expression for the numbers that may not survive (a
 * superset: a match inside a string value only costs speed), and only a page
 * with one is parsed again by `JSON.parse` with a reviver that sees each
 * number's source text (`context.source`, Node 22+). The reviver alone would
 * do, but it makes a parse several times slower: a call per value, a string
 * per number's text.
 */
/** A number kept as its JSON text (`JSON.rawJSON`): frozen, null prototype, serialized verbatim. */
export interface RawNumber {
  readonly rawJSON: string;
}

interface JsonWithSource {
  parse(text: string, reviver: (this: unknown, key: string, value: unknown, context: { readonly source?: string }) => unknown): unknown;
  rawJSON(text: string): RawNumber;
  isRawJSON(value: unknown): value is RawNumber;
}

const JSON_SOURCE = JSON as unknown as JsonWithSource;

/**
 * A number token whose text JavaScript may not write back the same: 16 or
 * more digits (beyond 2^53, or more than a double holds), an exponent, a
 * fraction ending in 0 (`1.50`, `2.0`), a value below 10^-6 (JavaScript
 * writes it with an exponent), or `-0`. A number that is none of these has at
 * most 15 significant digits, no exponent and no trailing zero, and
 * `String(JSON.parse(text))` gives its text back.
 */
const RISKY_NUMBER = String.raw`(?:-?(?:\d[\d.]{15}|0\.0{6}|\d+(?:\.\d+)?[eE]|\d+\.\d*0\s*[,\]}])|-0\s*[,\]}])`;
/** Such a number as an object member (after `"key":`): the common case, and a scan twice as fast as the next one. */
const RISKY_MEMBER = new RegExp(String.raw`"\s*:\s*${RISKY_NUMBER}`);
/** Such a number anywhere (members and array elements), for text that holds arrays. */
const RISKY_ANY = new RegExp(String.raw`[:,[]\s*${RISKY_NUMBER}`);

/** Whether a parsed value is an array whose items are all objects (a page's `data`). */
function isArrayOfObjects(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return false;
  }
  return true;
}

/**
 * Whether `text` (already parsed into `value`) may hold a number that
 * JSON.parse changed; false positives allowed. A number is an object member
 * or an array item. When the text holds a single `[` (found at memchr speed)
 * and that array is `value.data` with objects only (a page), no number is an
 * array item, and the faster scan of members suffices.
 */
export function mayHoldInexactNumber(text: string, value: unknown): boolean {
  const first = text.indexOf('[');
  const membersOnly =
    first < 0 ||
    (text.indexOf('[', first + 1) < 0 && typeof value === 'object' && value !== null && isArrayOfObjects((value as { data?: unknown }).data));
  return membersOnly ? RISKY_MEMBER.test(text) : RISKY_ANY.test(text);
}

function keepSource(this: unknown, _key: string, value: unknown, context: { readonly source?: string }): unknown {
  if (typeof value !== 'number') return value;
  const source = context.source;
  return source === undefined || String(value) === source ? value : JSON_SOURCE.rawJSON(source);
}

/**
 * Parse JSON text; numbers whose text a JavaScript number would change come
 * out as raw JSON values (see RawNumber). Throws as JSON.parse does.
 */
export function parseExactJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  if (typeof value === 'number') {
    const source = text.trim();
    return String(value) === source ? value : JSON_SOURCE.rawJSON(source);
  }
  if (typeof value !== 'object' || value === null) return value;
  if (!mayHoldInexactNumber(text, value)) return value;
  return JSON_SOURCE.parse(text, keepSource);
}

/** Whether a value is a JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The JSON object `text` holds, its numbers exact; {} when it is not a string or holds no object. Throws as JSON.parse does. */
export function parseExactObject(text: unknown): Record<string, unknown> {
  if (typeof text !== 'string') return {};
  const parsed = parseExactJson(text);
  return isObject(parsed) ? parsed : {};
}

/** Whether a value is a number kept as its JSON text. */
export function isRawNumber(value: unknown): value is RawNumber {
  return JSON_SOURCE.isRawJSON(value);
}

/** A raw JSON number for `text` (which must be a JSON number). */
export function rawNumber(text: string): RawNumber {
  return JSON_SOURCE.rawJSON(text);
}
