/** Reading a replica from a test: one query on a connection of its own, read-only, closed after. */
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
