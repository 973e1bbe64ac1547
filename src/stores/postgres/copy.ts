/**
 * Rows into a table through `COPY ... FROM STDIN` (text format): one round
 * trip for a whole checkpoint, parsed by the server at its fastest, where an
 * INSERT per row (or a multi-row INSERT's bound parameters) costs far more.
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

/** One row's line of COPY text, its newline included (cells in the COPY's columns' order). */
export function copyLine(row: readonly (string | boolean | null)[]): string {
  // One flat string from join (a line built with += stays a tree of its pieces until something flattens it).
  const cells = new Array<string>(row.length);
  for (let j = 0; j < row.length; j++) cells[j] = copyCell(row[j] ?? null);
  cells[row.length - 1] += '\n';
  return cells.join('\t');
}

/** Lines per write to the COPY stream: a few hundred KB at a time, never the whole group's text as one string. */
const LINES_PER_WRITE = 500;

/** COPY `lines` (copyLine's) into `table` (already quoted, or a temporary table's plain name), its `columns` named. */
export async function copyLines(client: Client, driver: PgDriver, table: string, columns: readonly string[], lines: readonly string[]): Promise<number> {
  if (lines.length === 0) return 0;
  const stream = client.query(driver.copy.from(`COPY ${table} (${columns.map(quoteIdent).join(', ')}) FROM STDIN`));
  // Rejects when the stream emits 'error' first (the server refused a row, the connection dropped).
  const done = once(stream, 'finish');
  for (let i = 0; i < lines.length; i += LINES_PER_WRITE) {
    if (!stream.write(lines.slice(i, i + LINES_PER_WRITE).join(''))) {
      // The socket's buffer is full: wait for it to drain (or for the error that ends the COPY).
      await Promise.race([once(stream, 'drain'), done]);
    }
  }
  stream.end();
  await done;
  return lines.length;
}

/** COPY `rows` (cells in `columns` order) into `table`. */
export function copyRows(client: Client, driver: PgDriver, table: string, columns: readonly string[], rows: readonly (readonly (string | boolean | null)[])[]): Promise<number> {
  return copyLines(client, driver, table, columns, rows.map(copyLine));
}
