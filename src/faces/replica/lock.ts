/**
 * One writer per replica: two `replicate` runs on the same file (a cron job
 * that overlaps the previous one) would each commit what they read, and the
 * later commit of an older read could put back an older version of a row.
 * The lock is a row in the database naming the writing process; a row left by
 * a process that no longer runs (killed) is taken over.
 */
import { hostname } from 'node:os';
import type { DatabaseSync } from 'node:sqlite';
import { ConfigError } from '../../errors.js';

const LOCK_TABLE = '_replica_lock';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}

/** Take the replica's writer lock, or throw ConfigError naming the process that holds it. */
export function acquireLock(db: DatabaseSync, path: string): void {
  db.exec(`CREATE TABLE IF NOT EXISTS ${LOCK_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER NOT NULL, host TEXT NOT NULL, started_at TEXT NOT NULL)`);
  db.exec('BEGIN IMMEDIATE');
  try {
    const row = db.prepare(`SELECT pid, host, started_at FROM ${LOCK_TABLE} WHERE id = 1`).get();
    if (row) {
      const pid = Number(row.pid);
      const host = String(row.host);
      const held = host !== hostname() || (pid !== process.pid && alive(pid));
      if (held) {
        throw new ConfigError(
          `Another replicate run is writing "${path}" (pid ${pid} on ${host}, started ${String(row.started_at)}). ` +
            `Wait for it to finish. If no such run exists, clear the lock: sqlite3 "${path}" "DELETE FROM ${LOCK_TABLE}".`,
          { field: 'db' },
        );
      }
    }
    db.prepare(`INSERT OR REPLACE INTO ${LOCK_TABLE} (id, pid, host, started_at) VALUES (1, ?, ?, ?)`).run(
      process.pid,
      hostname(),
      new Date().toISOString(),
    );
    db.exec('COMMIT');
  } catch (err) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw err;
  }
}

/** Give the lock back (only if this process holds it). */
export function releaseLock(db: DatabaseSync): void {
  try {
    db.prepare(`DELETE FROM ${LOCK_TABLE} WHERE id = 1 AND pid = ? AND host = ?`).run(process.pid, hostname());
  } catch {
    // a lock left behind is taken over by the next run
  }
}
