/**
 * Rows into a table through `COPY ... FROM STDIN` (text format): one round
 * trip for a group's rows of a stream, parsed by the server at its fastest,
 * where an INSERT per row (or a multi-row INSERT's bound parameters) costs
 * far more.
 */
import { once } from 'node:events';
import type { Client } from 'pg';
import { quoteIdent } from '../columns.js';
import { lineBytes } from '../line-bytes.js';
import type { PgDriver } from './connection.js';

/** A cell of COPY's text format: `\N` for NULL, backslash, tab, newline and carriage return escaped. */
function copyCell(value: string | boolean | null): string {
  if (value === null) return '\\N';
  if (typeof value === 'boolean') return value ? 't' : 'f';
  // Most cells have nothing to escape: one scan, no copy.
  if (!/[\\\t\n\r]/.test(value)) return value;
  return value.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}

/** Rows (cells in the COPY's columns' order) as COPY text, a line each, in bytes (lineBytes). */
export function copyText(rows: readonly (readonly (string | boolean | null)[])[]): Buffer {
  const line = (row: readonly (string | boolean | null)[]): string => {
    const cells = new Array<string>(row.length);
    for (let j = 0; j < row.length; j++) cells[j] = copyCell(row[j] ?? null);
    return cells.join('\t');
  };
  return lineBytes(rows, line) as Buffer;
}

/** COPY the rows of `chunks` (copyText's) into `table` (already quoted, or a temporary table's plain name), its `columns` named. */
export async function copyChunks(client: Client, driver: PgDriver, table: string, columns: readonly string[], chunks: readonly Buffer[]): Promise<void> {
  if (chunks.length === 0) return;
  const stream = client.query(driver.copy.from(`COPY ${table} (${columns.map(quoteIdent).join(', ')}) FROM STDIN`));
  // Rejects when the stream emits 'error' first (the server refused a row, the connection dropped).
  const done = once(stream, 'finish');
  for (const chunk of chunks) {
    if (!stream.write(chunk)) {
      // The socket's buffer is full: wait for it to drain (or for the error that ends the COPY).
      await Promise.race([once(stream, 'drain'), done]);
    }
  }
  stream.end();
  await done;
}
