/**
 * A fast proof that every number in a JSON text is written as JavaScript
 * writes it (so JSON.parse changed none), for the common case: a service that
 * writes compact JSON as JSON.stringify would. Given the text and its parsed
 * value, the layout of the text the value would have is computed key by key
 * (string lengths from the parsed strings), and every number is checked where
 * that layout puts it: the whole member, `{"key":` or `,"key":`, then its
 * digits exactly as `String(value)` writes them, then `,` or `}`.
 *
 * Why that suffices: members appear in the text in the order the parsed
 * object enumerates them (JSON.parse keeps insertion order; objects with
 * array-index keys, which JavaScript enumerates first, are not walked), and
 * the walk of an object follows that order (checked key by key), so
 * whatever moves the layout (a string written with escapes, whitespace) only
 * pushes the real text further than computed. A check then looks before the
 * number's own member, where a member with the same key and a number can only
 * be one that was walked, and checked, before: it fails. So each check that
 * passes is at the number's own member, and the last one ends where the text
 * ends. (An object with a duplicate key, which JSON.parse resolves to the last
 * value, is beyond this reasoning; the final length check makes a miss there
 * need several contrived coincidences.) Numbers in arrays are not proven
 * here. On false the caller scans the text the slow way: false only costs
 * speed.
 *
 * Records of a page share a key sequence, so the walk of an object is
 * compiled once per key sequence into straight-line code (`new Function`, key
 * names only as JSON string literals): a record costs a key comparison, a
 * property read and an addition per field, and a few character reads per
 * number.
 */

type ObjectWalker = (text: string, object: Record<string, unknown>, at: number) => number;

const QUOTE = 34;
const COMMA = 44;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;

/**
 * A member whose value is not a string, at its separator `at` (`before`: the
 * length of separator, key and colon; `head`: their text): the end of its
 * value, or -1. Shared by every compiled walker, which inlines only strings.
 */
function otherMember(t: string, v: unknown, at: number, before: number, head: string): number {
  if (typeof v === 'number') {
    const s = String(v);
    if (!t.startsWith(head, at) || !t.startsWith(s, at + before)) return -1;
    const end = at + before + s.length;
    const c = t.charCodeAt(end);
    return c === COMMA || c === CLOSE_BRACE ? end : -1;
  }
  if (v === null || v === true) return at + before + 4;
  if (v === false) return at + before + 5;
  if (v === undefined) return -1;
  return walk(t, v, at + before);
}

/** JavaScript source reading the member `key` of `r` whose separator (`{` or `,`) is at `at`, leaving `at` after its value; -1 on a mismatch. */
function memberSource(key: string, first: boolean): string {
  const keyText = JSON.stringify(key);
  const head = JSON.stringify(`${first ? '{' : ','}${keyText}:`);
  const before = keyText.length + 2; // separator, key, colon
  return `  v = r[${keyText}];
  if (typeof v === 'string') at += ${before + 2} + v.length;
  else if ((at = other(t, v, at, ${before}, ${head})) < 0) return -1;`;
}

/** Keys that JavaScript enumerates before the others, whatever their place in the text. */
const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;

function compileObjectWalker(keys: readonly string[]): ObjectWalker {
  if (keys.some((key) => ARRAY_INDEX.test(key))) return () => -1;
  const body = keys.length === 0 ? `at++;` : keys.map((key, i) => memberSource(key, i === 0)).join('\n');
  const open = keys.length === 0 ? `if (t.charCodeAt(at) !== ${OPEN_BRACE}) return -1;` : '';
  // The object's keys, in order, must be these: then the layout's order is the text's.
  const order = `let i = 0;\n  for (const k in r) { if (k !== K[i]) return -1; i++; }\n  if (i !== ${keys.length}) return -1;`;
  const source =
    `return function walkObject(t, r, at) {\n  let v;\n  ${order}\n  ${open}\n${body}\n` +
    `  if (t.charCodeAt(at) !== ${CLOSE_BRACE}) return -1;\n  return at + 1;\n};`;
  type Other = typeof otherMember;
  return (new Function('K', 'other', source) as (keys: readonly string[], other: Other) => ObjectWalker)(keys, otherMember);
}

/** Compiled walkers by key sequence (keys joined by NUL); bounded, so odd data cannot grow it without end. */
const walkers = new Map<string, ObjectWalker>();
const MAX_WALKERS = 256;
/** The walker that fitted last: consecutive records nearly always share it. */
let lastWalker: ObjectWalker | undefined;

function walkerFor(object: Record<string, unknown>): ObjectWalker | undefined {
  const keys = Object.keys(object);
  const id = keys.join('\u0000');
  let walker = walkers.get(id);
  if (walker === undefined) {
    if (walkers.size >= MAX_WALKERS) return undefined;
    walker = compileObjectWalker(keys);
    walkers.set(id, walker);
  }
  return walker;
}

function walkObject(text: string, object: Record<string, unknown>, at: number): number {
  if (lastWalker !== undefined) {
    const end = lastWalker(text, object, at);
    if (end >= 0) return end;
  }
  const walker = walkerFor(object);
  if (walker === undefined || walker === lastWalker) return -1;
  lastWalker = walker;
  return walker(text, object, at);
}

function walkArray(text: string, array: readonly unknown[], at: number): number {
  if (text.charCodeAt(at) !== OPEN_BRACKET) return -1;
  at++;
  for (let i = 0; i < array.length; i++) {
    if (i > 0) {
      if (text.charCodeAt(at) !== COMMA) return -1;
      at++;
    }
    at = walk(text, array[i], at);
    if (at < 0) return -1;
  }
  return text.charCodeAt(at) === CLOSE_BRACKET ? at + 1 : -1;
}

/** The end of `value`'s text starting at `at`, or -1 when the text is not laid out as expected (or holds a number in an array). */
function walk(text: string, value: unknown, at: number): number {
  if (typeof value === 'string') {
    if (text.charCodeAt(at) !== QUOTE) return -1;
    const end = at + value.length + 1;
    return text.charCodeAt(end) === QUOTE ? end + 1 : -1;
  }
  if (value === null) return text.startsWith('null', at) ? at + 4 : -1;
  if (value === true) return text.startsWith('true', at) ? at + 4 : -1;
  if (value === false) return text.startsWith('false', at) ? at + 5 : -1;
  if (Array.isArray(value)) return walkArray(text, value, at);
  if (typeof value === 'object') return walkObject(text, value as Record<string, unknown>, at);
  return -1; // a number outside an object member: the slow scan decides
}

/**
 * Whether `text` is laid out exactly as the compact JSON of `value` (its
 * parse), every number as JavaScript writes it. True proves that JSON.parse
 * changed no number; false proves nothing.
 */
export function numbersWrittenAsParsed(text: string, value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  return walk(text, value, 0) === text.length;
}
