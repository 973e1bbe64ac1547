/**
 * Asset keys as Dagster Pipes writes them: parts joined by "/", a backslash
 * escaping the next character. Each stream reports to the context's asset key
 * whose last part is the stream's name, else to the stream's own name.
 */

/** The parts of an escaped asset key ("raw/orders" -> ["raw", "orders"]; "a\/b" -> ["a/b"]). */
export function assetKeyParts(key: string): string[] {
  const parts: string[] = [];
  let part = '';
  let escaped = false;
  for (const ch of key) {
    if (escaped) {
      part += ch;
      escaped = false;
    } else if (ch === '\\') {
      escaped = true;
    } else if (ch === '/') {
      parts.push(part);
      part = '';
    } else {
      part += ch;
    }
  }
  if (part !== '') parts.push(part);
  return parts;
}

/** One part, escaped for an asset key string (a "/" or "\" in a stream name stays inside its part). */
function escapeKeyPart(part: string): string {
  return part.replace(/[\\/]/g, (ch) => `\\${ch}`);
}

/** The asset key a stream's materialization is reported under. */
export function assetKeyFor(stream: string, contextKeys: readonly string[] | null | undefined): string {
  const match = (contextKeys ?? []).find((key) => assetKeyParts(key).at(-1) === stream);
  return match ?? escapeKeyPart(stream);
}
