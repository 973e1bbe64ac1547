/**
 * How a replicate run writes its checkpoints: into the store's connection, a
 * group of them per transaction. A transaction is committed once it has been
 * open for the group's time (from a timer when no more checkpoints come), on
 * flush() and on close(); each checkpoint in it is whole (TableWriter),
 * so a killed run loses at most the last group of reading, which the next
 * run reads again from the state committed.
 *
 * How long a group stays open depends on what its rows did to the file:
 * - rows that share pages (new rows appended, their primary-key index pages)
 *   are grouped for COMMIT_EVERY_MS: one commit per group instead of one per
 *   page of records writes those shared pages once, not once per page;
 * - rows that each changed a page of their own (changed rows spread over a
 *   large table) gain nothing from a long group: it is committed after
 *   SHORT_GROUP_MS, so that the WAL thread copies the run's pages while it
 *   reads instead of after it. The first group is a short one; each commit
 *   decides the next from the WAL pages its group wrote per row.
 *
 * Copying the WAL into the database file (a checkpoint, with its two fsyncs)
 * is the WAL thread's work (wal-thread.ts): the sync goes on
 * reading and writing while the disk catches up. Should that thread not
 * start, the connection checkpoints by itself, as SQLite does by default.
 */
import { statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { ConnectorError, messageOf } from '../errors.js';
import { TableWriter, type Checkpoint } from './table-writer.js';
import type { CommitResult, Store, StoreCheckpoint } from './sink.js';
import type { SchemaChange } from '../stores/store.js';
import { remadeNote } from '../stores/notes.js';
import { lockLostError } from './lock.js';
import { BUSY_TIMEOUT_MS, WRITER_AUTOCHECKPOINT_PAGES, tuneForWriting, writeError } from './database.js';
import { tableCheckpoint, type ReplicaStore } from './store.js';
import type { StreamState } from '../engine/state.js';
import type { LogLevel } from '../engine/sync-sink.js';

/** How long a transaction stays open to take more checkpoints, when its rows share pages. */
const COMMIT_EVERY_MS = 250;
/** How long it stays open when they do not (the first group too). */
const SHORT_GROUP_MS = 10;
/** WAL pages written per row at or above which a group's rows are taken not to share pages. */
const OWN_PAGE_PER_ROW = 0.5;
/** WAL size from which a WAL thread is worth starting (smaller runs leave the copy to the file's close). */
const WAL_THREAD_AFTER_BYTES = 4 * 1024 * 1024;
/** Bytes of a WAL frame besides the page it holds. */
const WAL_FRAME_HEADER_BYTES = 24;
/** WAL size past which the writer finishes the WAL thread's copy itself, so that the WAL starts over. */
const WAL_RESTART_BYTES = 128 * 1024 * 1024;
/** How long that waits for a reader of the WAL (someone's query) before trying again at a later commit. */
const RESTART_WAIT_MS = 500;
/**
 * After a reader outlasted that wait (a dashboard holding a transaction
 * open keeps its snapshot, and the WAL, for as long as it likes), how long
 * the writer leaves the WAL to the WAL thread before trying again: trying
 * at every commit would stop the run RESTART_WAIT_MS each time.
 */
const RESTART_RETRY_MS = 10_000;

interface WriterOptions {
  /** The WAL thread's module; null: none (the connection checkpoints by itself). */
  readonly walThread?: URL | null;
  /** How long a group whose rows share pages stays open (COMMIT_EVERY_MS). */
  readonly commitEveryMs?: number;
  /** How long the first group, and one whose rows each wrote a page of their own, stays open (SHORT_GROUP_MS). */
  readonly shortGroupMs?: number;
  /** WAL size from which the WAL thread is started (WAL_THREAD_AFTER_BYTES). */
  readonly walThreadAfterBytes?: number;
  /** WAL size past which the writer makes the WAL start over (WAL_RESTART_BYTES). */
  readonly walRestartBytes?: number;
  /** The run's stop (process/interrupt.ts): once aborted, the writer stops (stopNow). */
  readonly signal?: AbortSignal | undefined;
}

/** What a checkpoint that came after a stop wrote: nothing (the process is ending; the next run reads it again). */
const DROPPED: CommitResult = { upserted: 0, skippedDeleted: 0, deletedRows: 0, unknownTypes: [], sweptRows: 0 };

export class ReplicaWriter {
  private readonly store: ReplicaStore;
  private readonly writer: TableWriter;
  private timer: NodeJS.Timeout | undefined;
  /** A commit that failed: what it held is gone, and nothing more is written. */
  private lost: ConnectorError | undefined;
  private walThread: Worker | undefined;
  private walThreadReady = false;
  /**
   * The WAL thread's module, until it is started: at a commit before
   * the last once the WAL holds walThreadAfterBytes (a small run leaves
   * the copy to the file's close).
   */
  private walThreadUrl: URL | null;
  private readonly walThreadAfterBytes: number;
  private readonly commitEveryMs: number;
  private readonly shortGroupMs: number;
  private readonly walRestartBytes: number;
  /** When a reader last kept the WAL from starting over (Date.now()); undefined: it was not kept. */
  private restartHeldAt: number | undefined;
  private readonly walFrameBytes: number;
  /** How long the open group stays open. */
  private groupMs: number;
  /** Rows written in the open group, and the WAL's size when it began (at the last commit, or when the writer was made). */
  private groupRows = 0;
  private walAtGroupStart: number;
  private startedThread = false;
  /** Told when the open group is committed: each checkpoint's result, in order (dropped with a lost group). */
  private onCommit: (() => void)[] = [];
  /** Stopped by a stop signal: later checkpoints are dropped, as stdout's lines are after a stop. */
  private stopped = false;
  private readonly signal: AbortSignal | undefined;
  private readonly onStop = (): void => this.stopNow();

  constructor(store: ReplicaStore, options: WriterOptions = {}) {
    this.store = store;
    this.commitEveryMs = options.commitEveryMs ?? COMMIT_EVERY_MS;
    this.shortGroupMs = options.shortGroupMs ?? SHORT_GROUP_MS;
    this.groupMs = this.shortGroupMs;
    this.walThreadAfterBytes = options.walThreadAfterBytes ?? WAL_THREAD_AFTER_BYTES;
    this.walRestartBytes = options.walRestartBytes ?? WAL_RESTART_BYTES;
    this.walFrameBytes = Number(store.db.prepare('PRAGMA page_size').get()?.page_size) + WAL_FRAME_HEADER_BYTES;
    this.walAtGroupStart = this.walBytes();
    tuneForWriting(store.db);
    this.writer = new TableWriter(store.db, store.tables, store.inFirstSave);
    this.walThreadUrl = options.walThread === undefined ? new URL('./wal-thread.js', import.meta.url) : options.walThread;
    this.signal = options.signal;
    this.signal?.addEventListener('abort', this.onStop, { once: true });
  }

  private startWalThread(url: URL): void {
    this.startedThread = true;
    // Node 22 says node:sqlite is experimental in each thread that loads it: the launcher drops that in the main
    // thread (bin/launch.cjs), this in the WAL thread, which uses no other experimental feature. These options
    // replace the ones the thread would take over from the process; V8's (the memory flags) are the process's anyway.
    const execArgv = ['--disable-warning=ExperimentalWarning'];
    const thread = new Worker(url, { execArgv, workerData: { path: this.store.path, busyTimeoutMs: BUSY_TIMEOUT_MS } });
    thread.unref();
    this.walThread = thread;
    thread.on('message', (message: unknown) => {
      if (message !== 'ready' || this.walThread !== thread) return;
      // From now on the thread checkpoints: commits only append to the WAL.
      this.store.db.exec('PRAGMA wal_autocheckpoint = 0');
      this.walThreadReady = true;
    });
    const gone = (): void => {
      if (this.walThread !== thread) return;
      this.walThread = undefined;
      this.walThreadReady = false;
      if (this.store.db.isOpen) this.store.db.exec(`PRAGMA wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}`);
    };
    thread.on('error', gone);
    thread.on('exit', gone);
  }

  /**
   * Write one checkpoint into the open group; it is committed within the
   * group's time (groupTimeMs), and `committed` told its result then.
   */
  write(checkpoint: Checkpoint, committed?: (result: CommitResult) => void): CommitResult {
    if (this.stopped) return DROPPED;
    if (this.lost) throw this.lost;
    let result: CommitResult;
    try {
      result = this.writer.write(checkpoint);
    } catch (err) {
      // The transaction went with it: the group's other checkpoints, of any stream, are not saved either.
      const gone = this.writer.lostTransaction;
      if (gone) {
        this.lost ??= writeError(this.store.path, gone);
        this.onCommit = [];
      }
      throw writeError(this.store.path, err);
    }
    if (committed) this.onCommit.push(() => committed(result));
    const openedAt = this.writer.transactionStartedAt;
    if (openedAt !== undefined) {
      this.groupRows += checkpoint.rows.length;
      const age = Date.now() - openedAt;
      if (age >= this.groupMs) this.commit();
      else if (!this.timer) {
        this.timer = setTimeout(() => this.commitQuietly(), this.groupMs - age);
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
    const told = this.onCommit;
    this.onCommit = [];
    let held: boolean;
    try {
      // Another run took the lock over between two groups: this group read before its commits, so it is dropped.
      held = this.store.confirmLock();
      if (held) this.store.confirmFile();
      if (held) this.writer.commit();
    } catch (err) {
      this.writer.rollback();
      this.lost ??= err instanceof ConnectorError ? err : writeError(this.store.path, err, `a commit failed, so the checkpoints since the last commit are not saved (${messageOf(err)})`);
      throw this.lost;
    }
    if (!held) {
      this.abandon();
      throw this.lost ?? lockLostError(this.store.path);
    }
    for (const tell of told) tell();
    const walBytes = this.walBytes();
    this.groupMs = this.nextGroupMs(walBytes);
    // The next group starts from here: nothing else writes on this connection between two groups.
    this.walAtGroupStart = walBytes;
    this.groupRows = 0;
    if (this.walThreadUrl && !last && walBytes >= this.walThreadAfterBytes) {
      this.startWalThread(this.walThreadUrl);
      this.walThreadUrl = null;
    }
    if (!this.walThreadReady) return;
    const retry = this.restartHeldAt === undefined || Date.now() - this.restartHeldAt >= RESTART_RETRY_MS;
    if (walBytes > this.walRestartBytes && retry) this.restartWal();
    else this.walThread?.postMessage('checkpoint');
  }

  /**
   * The next group's time, from the WAL pages the one just committed wrote per
   * row. A WAL that started over (or a checkpoint of the connection's own)
   * during the group says nothing: the time stays.
   */
  private nextGroupMs(walBytes: number): number {
    const pages = (walBytes - this.walAtGroupStart) / this.walFrameBytes;
    if (!(pages > 0 && this.groupRows > 0)) return this.groupMs;
    return pages / this.groupRows >= OWN_PAGE_PER_ROW ? this.shortGroupMs : this.commitEveryMs;
  }

  private walBytes(): number {
    try {
      return statSync(`${this.store.path}-wal`).size;
    } catch {
      return 0;
    }
  }

  /**
   * The WAL thread copies while groups keep coming, so it is never quite
   * done when the next one starts, and SQLite only starts a WAL over once it
   * is all in the database file: left alone, the WAL would grow with the run.
   * Between two groups, the writer waits for the WAL thread's pass and
   * copies what is left (RESTART): the next group starts the WAL over.
   */
  private restartWal(): void {
    const db = this.store.db;
    try {
      db.exec(`PRAGMA busy_timeout = ${RESTART_WAIT_MS}`);
      const row = db.prepare('PRAGMA wal_checkpoint(RESTART)').get();
      // busy: not done. checkpointed -1: the WAL thread's pass held the checkpoint, try at the next commit;
      // otherwise a reader is still on the WAL (its open transaction): leave it RESTART_RETRY_MS.
      const heldByReader = Number(row?.busy) !== 0 && Number(row?.checkpointed) >= 0;
      this.restartHeldAt = heldByReader ? Date.now() : undefined;
      if (heldByReader) this.walThread?.postMessage('checkpoint');
    } catch {
      // the file is busy this moment: at a later commit
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

  /** Whether the WAL thread has taken the checkpoints over. */
  get checkpointing(): boolean {
    return this.walThreadReady;
  }

  /** Whether a WAL thread was started (it may not be ready yet). */
  get walThreadStarted(): boolean {
    return this.startedThread;
  }

  /** How long the next group stays open (SHORT_GROUP_MS or COMMIT_EVERY_MS, as the last commit decided). */
  get groupTimeMs(): number {
    return this.groupMs;
  }

  /** Commit, and stop the WAL thread (the store's last close copies what it left). Throws when a commit failed. */
  async close(): Promise<void> {
    this.signal?.removeEventListener('abort', this.onStop);
    try {
      this.commit(true);
    } finally {
      const thread = this.walThread;
      this.walThread = undefined;
      this.walThreadReady = false;
      if (thread) {
        const exited = new Promise((resolve) => thread.once('exit', resolve));
        thread.ref(); // the process waits for the thread's last checkpoint, whatever else is left to do
        thread.postMessage('stop');
        await exited;
      }
    }
    if (this.lost) throw this.lost;
  }

  /**
   * For a lock another run took over: roll the open group back (never
   * committed over that run's newer ones), end the thread at once; every
   * later write throws the lock-lost error.
   */
  abandon(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.onCommit = [];
    this.writer.rollback();
    this.lost ??= lockLostError(this.store.path);
    const thread = this.walThread;
    this.walThread = undefined;
    this.walThreadReady = false;
    void thread?.terminate();
  }

  /** For a stop signal: commit what is held (whole checkpoints), end the thread at once; later checkpoints are dropped. */
  stopNow(): void {
    this.stopped = true;
    this.commitQuietly(true);
    const thread = this.walThread;
    this.walThread = undefined;
    void thread?.terminate();
  }
}

/**
 * The SQLite file as the replica's Store (sink.ts): checkpoints written by
 * the group writer (writer.ts) when the run has one, else one transaction
 * each; closed with the writer's last commit, the lock given back, the WAL
 * copied into the file.
 */
export class SqliteStore implements Store {
  readonly file: ReplicaStore;
  readonly writer: ReplicaWriter | undefined;

  constructor(file: ReplicaStore, writer?: ReplicaWriter) {
    this.file = file;
    this.writer = writer;
  }

  get notes(): Store['notes'] {
    const notes: { level: LogLevel; message: string }[] = [];
    if (this.file.lockTakeover) notes.push({ level: 'WARN', message: this.file.lockTakeover });
    if (this.file.accountNote) notes.push({ level: 'INFO', message: this.file.accountNote });
    for (const m of this.file.migrations) notes.push({ level: 'INFO', message: `${m.stream}: table migrated in place (${m.change}); no record changed.` });
    for (const stream of this.file.remade) notes.push(remadeNote(stream, 'its table was missing in the replica'));
    return notes;
  }

  /** The columns opening added or retyped (SQLite leaves nothing for the next run: a value that does not fit stays in `_extra`). */
  schemaChanges(): SchemaChange[] {
    return this.file.migrations.flatMap((m) => m.columns);
  }

  loadStates(): Promise<Map<string, StreamState>> {
    return Promise.resolve(this.file.loadStates());
  }

  fullReadMarked(stream: string, account: string | undefined): Promise<boolean> {
    return Promise.resolve(this.file.fullReadMarked(stream, account));
  }

  write(checkpoint: StoreCheckpoint, committed?: (result: CommitResult) => void): void {
    const rows = tableCheckpoint(this.file.specOf(checkpoint.stream), checkpoint);
    if (this.writer) this.writer.write(rows, committed);
    else this.file.write(rows, committed);
  }

  async flush(): Promise<void> {
    this.writer?.flush();
  }

  /** The lock given back within the last group's commit. */
  async finish(): Promise<Map<string, number>> {
    this.file.unlock();
    await this.writer?.close();
    return this.file.rowCounts();
  }

  async close(): Promise<void> {
    try {
      await this.writer?.close();
    } finally {
      this.file.close();
    }
  }
}
