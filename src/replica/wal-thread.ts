/**
 * The replica's WAL thread (started by writer.ts): its own
 * connection to the database, copying the WAL into the database file after
 * each commit of the writer (`PRAGMA wal_checkpoint(PASSIVE)`: it never waits
 * for, nor blocks, the writer). A checkpoint's two fsyncs then cost the sync
 * nothing; the durability rules are SQLite's own (synchronous = NORMAL).
 *
 * Messages in: 'checkpoint' | 'stop'. Out: 'ready' once the database is open.
 * A checkpoint that fails (busy, an I/O error) is left to the next one, or to
 * the last connection's own when the run closes the file.
 */
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';

function serve(): void {
  const port = parentPort;
  if (!port) throw new Error('wal-thread.js runs as a worker thread');
  // The busy timeout comes from writer.ts (database.ts's), which this thread does not import: it would load zod.
  const { path, busyTimeoutMs } = workerData as { path: string; busyTimeoutMs: number };
  const db = new DatabaseSync(path, { timeout: busyTimeoutMs });
  db.exec('PRAGMA synchronous = NORMAL');
  port.postMessage('ready');
  port.on('message', (message: unknown) => {
    if (message === 'stop') {
      db.close();
      port.close();
      return;
    }
    try {
      db.exec('PRAGMA wal_checkpoint(PASSIVE)');
    } catch {
      // left to the next checkpoint
    }
  });
}

serve();
