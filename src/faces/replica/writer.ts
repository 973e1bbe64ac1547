/**
 * How a replicate run writes its checkpoints: into the store's connection, a
 * group of them per transaction. A transaction is committed once it has been
 * open COMMIT_EVERY_MS (from a timer when no more checkpoints come), on
 * flush() and on close(); each checkpoint in it is whole (CheckpointWriter),
 * so a killed run loses at most the last COMMIT_EVERY_MS of reading, which
 * the next run reads again from the state committed. One commit per group
 * instead of one per page: the pages of the primary-key indexes a group
 * touches are written once, not once per page of records.
 *
 * Copying the WAL into the database file (a checkpoint, with its two fsyncs)
 * is the checkpointer thread's work (checkpointer-thread.ts): the sync goes on
 * reading and writing while the disk catches up. Should that thread not
 * start, the connection checkpoints by itself, as SQLite does by default.
 */
import { statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { ConnectorError } from '../../errors.js';
import { CheckpointWriter, type Checkpoint, type CommitResult } from './checkpoint-writer.js';
import { BUSY_TIMEOUT_MS, WRITER_AUTOCHECKPOINT_PAGES, tuneForWriting } from './database.js';
import type { TableLayout } from './layout.js';
import type { CheckpointTarget } from './sink.js';
import type { ReplicaStore } from './store.js';

/** How long a transaction stays open to take more checkpoints. */
export const COMMIT_EVERY_MS = 250;
/** WAL size past which the writer finishes the checkpointer's copy itself, so that the WAL starts over. */
const WAL_RESTART_BYTES = 128 * 1024 * 1024;
/** How long that waits for a reader of the WAL (someone's query) before trying again at a later commit. */
const RESTART_WAIT_MS = 500;

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export interface WriterOptions {
  /** The checkpointer thread's module; null: none (the connection checkpoints by itself). */
  readonly checkpointer?: URL | null;
  /** How long a group stays open (COMMIT_EVERY_MS). */
  readonly commitEveryMs?: number;
  /** WAL size past which the writer makes the WAL start over (WAL_RESTART_BYTES). */
  readonly walRestartBytes?: number;
}

export class ReplicaWriter implements CheckpointTarget {
  private readonly store: ReplicaStore;
  private readonly writer: CheckpointWriter;
  private timer: NodeJS.Timeout | undefined;
  /** A commit that failed: what it held is gone, and nothing more is written. */
  private lost: ConnectorError | undefined;
  private checkpointer: Worker | undefined;
  private checkpointerReady = false;
  /** The checkpointer thread's module, until it is started (at the first commit before the last: runs whose writes all fit one group start none). */
  private checkpointerUrl: URL | null;
  private readonly commitEveryMs: number;
  private readonly walRestartBytes: number;

  constructor(store: ReplicaStore, options: WriterOptions = {}) {
    this.store = store;
    this.commitEveryMs = options.commitEveryMs ?? COMMIT_EVERY_MS;
    this.walRestartBytes = options.walRestartBytes ?? WAL_RESTART_BYTES;
    tuneForWriting(store.db);
    this.writer = new CheckpointWriter(store.db, store.tables);
    this.checkpointerUrl = options.checkpointer === undefined ? new URL('./checkpointer-thread.js', import.meta.url) : options.checkpointer;
  }

  private error(cause: string): ConnectorError {
    return new ConnectorError('system_error', `Cannot write the replica database "${this.store.path}": ${cause}.`);
  }

  private startCheckpointer(url: URL): void {
    const thread = new Worker(url, { workerData: { path: this.store.path, busyTimeoutMs: BUSY_TIMEOUT_MS } });
    thread.unref();
    this.checkpointer = thread;
    thread.on('message', (message: unknown) => {
      if (message !== 'ready' || this.checkpointer !== thread) return;
      // From now on the thread checkpoints: commits only append to the WAL.
      this.store.db.exec('PRAGMA wal_autocheckpoint = 0');
      this.checkpointerReady = true;
    });
    const gone = (): void => {
      if (this.checkpointer !== thread) return;
      this.checkpointer = undefined;
      this.checkpointerReady = false;
      if (this.store.db.isOpen) this.store.db.exec(`PRAGMA wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}`);
    };
    thread.on('error', gone);
    thread.on('exit', gone);
  }

  layoutOf(stream: string): TableLayout {
    return this.store.layoutOf(stream);
  }

  /** Write one checkpoint into the open group; it is committed within commitEveryMs. */
  write(checkpoint: Checkpoint): CommitResult {
    if (this.lost) throw this.lost;
    let result: CommitResult;
    try {
      result = this.writer.write(checkpoint);
    } catch (err) {
      throw this.error(messageOf(err));
    }
    const openedAt = this.writer.transactionStartedAt;
    if (openedAt !== undefined) {
      const age = Date.now() - openedAt;
      if (age >= this.commitEveryMs) this.commit();
      else if (!this.timer) {
        this.timer = setTimeout(() => this.commitQuietly(), this.commitEveryMs - age);
        this.timer.unref();
      }
    }
    return result;
  }

  /** Commit the open group now. Throws when a commit failed (now or earlier). */
  flush(): void {
    this.commit();
    if (this.lost) throw this.lost;
  }

  /** `last`: the run's final commit (close, a stop signal), after which no thread is worth starting. */
  private commit(last = false): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.writer.transactionStartedAt === undefined) return;
    try {
      this.writer.commit();
    } catch (err) {
      this.lost ??= this.error(`a commit failed, so the checkpoints since the last commit are not saved (${messageOf(err)})`);
      throw this.lost;
    }
    if (this.checkpointerUrl && !last) {
      this.startCheckpointer(this.checkpointerUrl);
      this.checkpointerUrl = null;
    }
    if (!this.checkpointerReady) return;
    if (this.walBytes() > this.walRestartBytes) this.restartWal();
    else this.checkpointer?.postMessage('checkpoint');
  }

  private walBytes(): number {
    try {
      return statSync(`${this.store.path}-wal`).size;
    } catch {
      return 0;
    }
  }

  /**
   * The checkpointer copies while groups keep coming, so it is never quite
   * done when the next one starts, and SQLite only starts a WAL over once it
   * is all in the database file: left alone, the WAL would grow with the run.
   * Between two groups, the writer waits for the checkpointer's pass and
   * copies what is left (RESTART): the next group starts the WAL over.
   */
  private restartWal(): void {
    const db = this.store.db;
    try {
      db.exec(`PRAGMA busy_timeout = ${RESTART_WAIT_MS}`);
      db.exec('PRAGMA wal_checkpoint(RESTART)');
    } catch {
      // a reader holds the WAL: at a later commit
    } finally {
      db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  }

  /** The timer's commit: a failure is kept, and the next write or close reports it. */
  private commitQuietly(last = false): void {
    try {
      this.commit(last);
    } catch {
      // kept in this.lost
    }
  }

  /** Whether the checkpointer thread has taken the checkpoints over. */
  get checkpointing(): boolean {
    return this.checkpointerReady;
  }

  /** Commit, and stop the checkpointer thread (the store's last close copies what it left). Throws when a commit failed. */
  async close(): Promise<void> {
    try {
      this.commit(true);
    } finally {
      const thread = this.checkpointer;
      this.checkpointer = undefined;
      this.checkpointerReady = false;
      if (thread) {
        const exited = new Promise((resolve) => thread.once('exit', resolve));
        thread.ref(); // the process waits for the thread's last checkpoint, whatever else is left to do
        thread.postMessage('stop');
        await exited;
      }
    }
    if (this.lost) throw this.lost;
  }

  /** For a stop signal: commit what is held (whole checkpoints), end the thread at once. */
  stopNow(): void {
    this.commitQuietly(true);
    const thread = this.checkpointer;
    this.checkpointer = undefined;
    void thread?.terminate();
  }
}
