/**
 * Rows into a table through `COPY ... FROM STDIN` (text format): one round
 * trip for a group's rows of a stream, parsed by the server at its fastest,
 * where an INSERT per row (or a multi-row INSERT's bound parameters) costs
 * far more.
 */
import { once } from 'node:events';
import type { Client } from 'pg';
import { quoteIdent } from '../columns.js';
import type { PgDriver } from './connection.js';

/** A cell of COPY's text format: `\N` for NULL, backslash, tab, newline and carriage return escaped. */
function copyCell(value: string | boolean | null): string {
  if (value === null) return '\\N';
  if (typeof value === 'boolean') return value ? 't' : 'f';
  // Most cells have nothing to escape: one scan, no copy.
  if (!/[\\\t\n\r]/.test(value)) return value;
  return value.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}

/** The size of the buffer copyText writes a checkpoint's text into before copying out its exact length: a usual checkpoint's. */
const SCRATCH_BYTES = 256 * 1024;
/** Kept between calls; grown for a larger checkpoint, and let go after it (a page may hold up to 64 MiB). */
let scratch = Buffer.allocUnsafe(SCRATCH_BYTES);

/**
 * Rows (cells in the COPY's columns' order) as COPY text, a line each, in
 * bytes. Each line goes into the bytes as soon as it is made: the text of a
 * whole checkpoint as one string (hundreds of KB) would be a large object,
 * which V8 moves to the old generation at the first scavenge it lives
 * through, so that checkpoint after checkpoint they would fill it and call
 * for full collections (bench/stores-replicate.ts).
 */
export function copyText(rows: readonly (readonly (string | boolean | null)[])[]): Buffer {
  let at = 0;
  for (const row of rows) {
    const cells = new Array<string>(row.length);
    for (let j = 0; j < row.length; j++) cells[j] = copyCell(row[j] ?? null);
    const line = cells.join('\t');
    // UTF-8 takes at most 3 bytes per UTF-16 code unit; one more for the newline.
    const most = line.length * 3 + 1;
    if (at + most > scratch.length) {
      const larger = Buffer.allocUnsafe(Math.max(scratch.length * 2, at + most));
      scratch.copy(larger, 0, 0, at);
      scratch = larger;
    }
    at += scratch.write(line, at);
    scratch[at++] = 0x0a;
  }
  const text = Buffer.from(scratch.subarray(0, at));
  if (scratch.length > SCRATCH_BYTES) scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
  return text;
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

/** COPY `rows` (cells in `columns` order) into `table`. */
export function copyRows(client: Client, driver: PgDriver, table: string, columns: readonly string[], rows: readonly (readonly (string | boolean | null)[])[]): Promise<void> {
  return copyChunks(client, driver, table, columns, rows.length === 0 ? [] : [copyText(rows)]);
}
