/**
 * JSON text to a value whose numbers keep their text where a JavaScript
 * number would change it (9007199254740993, 1.50, 1e3): they become raw JSON
 * values (`JSON.rawJSON`), which `JSON.stringify` writes verbatim, so the
 * emulator serves them exactly as a service that stores decimals or 64-bit
 * integers would. For the `setJson` mutation (tests of exactness).
 */
interface JsonWithSource {
  parse(text: string, reviver: (key: string, value: unknown, context: { readonly source?: string }) => unknown): unknown;
  rawJSON(text: string): unknown;
}

const SOURCE_JSON = JSON as unknown as JsonWithSource;

/** Parse JSON text (throws SyntaxError as JSON.parse does). */
export function parseKeepingNumbers(text: string): unknown {
  return SOURCE_JSON.parse(text, (_key, value, context) =>
    typeof value === 'number' && context.source !== undefined && String(value) !== context.source ? SOURCE_JSON.rawJSON(context.source) : value,
  );
}
