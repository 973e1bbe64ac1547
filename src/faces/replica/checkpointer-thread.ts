/**
 * The replica's checkpointer thread (started by writer.ts): its own
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
  if (!port) throw new Error('checkpointer-thread.js runs as a worker thread');
  const { path } = workerData as { path: string };
  // database.ts's BUSY_TIMEOUT_MS; not imported, as database.ts would load zod (through layout.ts) into this thread.
  const db = new DatabaseSync(path, { timeout: 5000 });
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
