/** Reading a replica from a test: one query on a connection of its own, read-only, closed after. */
import { existsSync } from 'node:fs';
import { DatabaseSync, type SQLOutputValue } from 'node:sqlite';

/** The first row `sql` returns from the database at `path` (undefined when none). */
export function queryOne(path: string, sql: string): Record<string, SQLOutputValue> | undefined {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return db.prepare(sql).get();
  } finally {
    db.close();
  }
}

/** Who holds the writer lock of the replica at `path`, or undefined: nobody, or no replica (or its lock table) yet. */
export function lockHolder(path: string): { pid: number; host: string } | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const row = queryOne(path, 'SELECT pid, host FROM _replica_lock');
    return row === undefined ? undefined : { pid: Number(row.pid), host: String(row.host) };
  } catch {
    return undefined; // not created yet
  }
}
