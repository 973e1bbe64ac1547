/** Reading a replica from a test: on a connection of its own, read-only, closed after. */
import { existsSync } from 'node:fs';
import { DatabaseSync, type SQLOutputValue } from 'node:sqlite';

/** What `read` makes of the database at `path`, opened read-only (waiting up to `timeoutMs` for a writer's lock) and closed after. */
export function readDatabase<T>(path: string, read: (db: DatabaseSync) => T, timeoutMs?: number): T {
  const db = new DatabaseSync(path, { readOnly: true, ...(timeoutMs === undefined ? {} : { timeout: timeoutMs }) });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/** The first row `sql` returns from the database at `path` (undefined when none). */
export function queryOne(path: string, sql: string): Record<string, SQLOutputValue> | undefined {
  return readDatabase(path, (db) => db.prepare(sql).get());
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
