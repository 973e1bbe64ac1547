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

/** The COPY text of `rows` (cells in `columns` order). */
export function copyText(rows: readonly (readonly (string | boolean | null)[])[]): string {
  const lines = new Array<string>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as readonly (string | boolean | null)[];
    let line = '';
    for (let j = 0; j < row.length; j++) line += (j === 0 ? '' : '\t') + copyCell(row[j] ?? null);
    lines[i] = line;
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/** COPY `rows` into `table` (already quoted, or a temporary table's plain name), its `columns` named. */
export async function copyRows(
  client: Client,
  driver: PgDriver,
  table: string,
  columns: readonly string[],
  rows: readonly (readonly (string | boolean | null)[])[],
): Promise<number> {
  if (rows.length === 0) return 0;
  const stream = client.query(driver.copy.from(`COPY ${table} (${columns.map(quoteIdent).join(', ')}) FROM STDIN`));
  // Rejects when the stream emits 'error' first (the server refused a row, the connection dropped).
  const done = once(stream, 'finish');
  stream.end(copyText(rows));
  await done;
  return rows.length;
}
