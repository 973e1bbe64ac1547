/**
 * The replica database as a run opens it: the writer lock, a table per stream
 * (created, or migrated in place to this version's layout), the index the
 * deletions need, the states saved by earlier runs, and row counts at the end.
 *
 * The rows of a sync are written on this connection by a TableWriter:
 * in groups of checkpoints by a ReplicaWriter during `replicate` (writer.ts),
 * or one checkpoint per transaction through `write` and `commit` (tests and
 * small scripts).
 */
import { statSync } from 'node:fs';
import type { DatabaseSync } from 'node:sqlite';
import type { Data } from '../engine/sync-sink.js';
import type { StreamState } from '../engine/state.js';
import { ConnectorError } from '../errors.js';
import { STREAMS, type StreamDefinition } from '../streams.js';
import { TableWriter, type Checkpoint, type TableSpec } from './table-writer.js';
import { FULL_READ_TABLE, STATE_TABLE, fullReadKey, tableSpecs } from '../stores/checkpoint.js';
import { parseSavedStates } from '../stores/notes.js';
import { deletionIndexName, openForWrite, savedStates, settleIntoOneFile, splitStates, storedLayouts, tableExists, writeError } from './database.js';
import type { StreamSchemas } from '../schemas/json-schema.js';
import { evolveLayout, quoteIdent, layoutFor, type TableLayout } from './layout.js';
import { acquireLock, holdsLock, lockSettings, releaseLock, renewLock, type LockSettings } from './lock.js';
import { ensureTable, type Migration } from './migrate.js';
import { recordToRow, type RowValues } from './rows.js';
import { recordTreatments, refuseOtherTreatments, type RunTreatments } from './treatments.js';
import { bindAccount, refuseOtherAccount, refuseOtherShape, type ReplicaAccount } from './account.js';
import type { CommitResult, StoreCheckpoint } from './sink.js';

/** How the tables' columns are chosen when a store opens. */
interface ColumnOptions {
  /** Each stream's record schema (merged with the service's description); default: the built-in schemas. */
  readonly schemas?: StreamSchemas | undefined;
  /**
   * Stored columns take the kinds these schemas give their fields (default):
   * they are the ones to follow. False (the schemas are the built-in ones
   * because of a pin or a description that could not be read): stored
   * columns keep their kinds. Columns are never dropped either way.
   */
  readonly retype?: boolean | undefined;
  /** A replica of many accounts (a config with `accounts`): each table keyed by (account, id). */
  readonly accountKey?: boolean | undefined;
}

/** Records of one page to rows of `layout`. */
export function toRows(layout: TableLayout, records: readonly Data[]): RowValues[] {
  return records.map((record) => recordToRow(layout, record));
}

/** A store checkpoint as the table writer takes it: rows of the stream's table, and the deletion log's records to apply. */
export function tableCheckpoint(spec: TableSpec, { records, ...checkpoint }: StoreCheckpoint): Checkpoint {
  return { ...checkpoint, rows: toRows(spec.layout, records), ...(spec.deletionLog ? { deletions: records } : {}) };
}

/** The device and inode of the file at `path`; undefined when there is none (or no file: an in-memory database). */
function fileIdentity(path: string): string | undefined {
  try {
    const stat = statSync(path);
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return undefined;
  }
}

export class ReplicaStore {
  readonly path: string;
  readonly db: DatabaseSync;
  readonly tables: readonly TableSpec[];
  /** What opening changed in tables written by an older version. */
  readonly migrations: readonly Migration[];
  /** Streams whose tables were missing when opening (dropped by hand), made again: each is read again from the start. */
  readonly remade: readonly string[];
  private writer: TableWriter | undefined;
  /** The device and inode of the file opened: what confirmFile compares the path with. */
  private readonly identity: string | undefined;
  private locked = false;
  /** Another run took the lock over: nothing more may be committed. */
  private lockLost = false;
  private renewal: NodeJS.Timeout | undefined;
  /** The writer lock's intervals and host name. */
  private readonly lockSettings: LockSettings;
  /** When the writer lock was taken over from a killed or stale run: the warning that names it. */
  readonly lockTakeover: string | undefined;
  /** When opening bound the file to its account for the first time, or to an account's new name: what to log. */
  readonly accountNote: string | undefined;
  /** Told once if another run takes the lock over while this one holds it (this process was stalled past the staleness limit). */
  onLockLost: (() => void) | undefined;
  /** What the first save writes in its transaction besides its checkpoints (the key fingerprint's upgrade), if anything. */
  readonly inFirstSave: (() => void) | undefined;

  /**
   * Open or create the database at `path` with a table per stream, its
   * columns from `schemas` (ColumnOptions), a table written with fewer
   * columns migrated in place. `lock`: take the writer lock (one replicate
   * run per file at a time), with the default settings (true) or these
   * (tests: shorter intervals, another host name). `account`: the account
   * the run reads; a file of another account is refused, one of none is
   * bound to it.
   */
  constructor(
    path: string,
    streams: readonly StreamDefinition[] = STREAMS,
    options: { lock?: boolean | Partial<LockSettings>; treatments?: RunTreatments; account?: ReplicaAccount } & ColumnOptions = {},
  ) {
    this.path = path;
    this.lockSettings = lockSettings(typeof options.lock === 'object' ? options.lock : {});
    // Before the file is opened for writing: one of another account, or built with other treatments, is refused untouched.
    refuseOtherShape(path, options.accountKey === true);
    if (options.account !== undefined) refuseOtherAccount(path, options.account);
    if (options.treatments !== undefined) refuseOtherTreatments(path, options.treatments);
    this.db = openForWrite(path);
    this.identity = fileIdentity(path);
    try {
      if (options.lock) {
        try {
          this.lockTakeover = acquireLock(this.db, path, this.lockSettings).takeover;
        } catch (err) {
          // Another run writes the file: leave its journal mode and WAL alone.
          this.db.close();
          throw err;
        }
        this.locked = true;
        this.startRenewal();
      }
      // Only under the lock: a run refused because another one writes the file changes nothing in it.
      this.accountNote = options.account === undefined ? undefined : bindAccount(this.db, path, options.account);
      if (options.treatments !== undefined) this.inFirstSave = recordTreatments(this.db, path, options.treatments);
      if (options.accountKey === true) splitStates(this.db);
      const stored = storedLayouts(this.db);
      // Each stream's columns from its schema, evolved from the layout its table was stored with.
      const retype = options.retype ?? true;
      this.tables = tableSpecs(streams, (s) => evolveLayout(layoutFor(s, options.schemas?.get(s.name), options.accountKey === true), stored.get(s.name), retype));
      const migrations: Migration[] = [];
      const remade: string[] = [];
      for (const { layout } of this.tables) {
        const before = stored.get(layout.stream);
        // A table dropped by hand: its saved state covers rows it no longer holds. Made again with that state forgotten
        // (in one transaction), the stream is read again from the start; going on from the state would leave them out.
        const lost = before !== undefined && !tableExists(this.db, before.table);
        const migration = ensureTable(this.db, layout, lost ? undefined : before, lost ? () => this.forgetStream(layout.stream) : undefined);
        if (migration) migrations.push(migration);
        if (lost) remade.push(layout.stream);
      }
      this.migrations = migrations;
      this.remade = remade;
      for (const { layout, deletionLog } of this.tables) {
        if (deletionLog) {
          const index = quoteIdent(deletionIndexName(layout.table));
          this.db.exec(`CREATE INDEX IF NOT EXISTS ${index} ON ${quoteIdent(layout.table)} (${quoteIdent(deletionLog.objectIdField)})`);
        }
      }
    } catch (err) {
      // Told before the close, which copies the WAL into the file and removes it: a WAL that reached the file size limit
      // is only seen while it is there.
      const failure = err instanceof ConnectorError ? err : writeError(path, err);
      this.close();
      throw failure;
    }
  }

  /** A stream's saved state and the marks of a full read under way (its own, or in a file of many accounts each account's). */
  private forgetStream(stream: string): void {
    for (const table of [STATE_TABLE, FULL_READ_TABLE]) {
      if (tableExists(this.db, table)) this.db.prepare(`DELETE FROM ${table} WHERE stream = ? OR substr(stream, 1, length(?) + 1) = ? || '/'`).run(stream, stream, stream);
    }
  }

  /** Streams whose tables were migrated when opening. */
  get migrated(): string[] {
    return this.migrations.map((m) => m.stream);
  }

  layoutOf(stream: string): TableLayout {
    return this.specOf(stream).layout;
  }

  /** The state saved by the last committed checkpoint of each stream. */
  loadStates(): Map<string, StreamState> {
    return parseSavedStates(`"${this.path}"`, savedStates(this.db));
  }

  /** Whether marks of a full read of `stream` (of `account`) not yet ended are in the file (FULL_READ_TABLE exists only while some are). */
  fullReadMarked(stream: string, account: string | undefined): boolean {
    if (this.db.prepare(`SELECT 1 AS x FROM sqlite_schema WHERE type = 'table' AND name = ?`).get(FULL_READ_TABLE) === undefined) return false;
    return this.db.prepare(`SELECT 1 AS x FROM ${FULL_READ_TABLE} WHERE stream = ? LIMIT 1`).get(fullReadKey(stream, account)) !== undefined;
  }

  /** Rows in each stream's table. */
  rowCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const { layout } of this.tables) {
      const row = this.db.prepare(`SELECT count(*) AS n FROM ${quoteIdent(layout.table)}`).get();
      counts.set(layout.stream, Number(row?.n ?? 0));
    }
    return counts;
  }

  /** Write one checkpoint on this connection, in its own transaction; `committed` is told its result once committed. */
  write(checkpoint: Checkpoint, committed?: (result: CommitResult) => void): CommitResult {
    this.writer ??= new TableWriter(this.db, this.tables, this.inFirstSave);
    let result: CommitResult;
    try {
      result = this.writer.write(checkpoint);
      this.writer.commit();
    } catch (err) {
      this.writer.rollback();
      throw writeError(this.path, err);
    }
    committed?.(result);
    return result;
  }

  /** The table of `stream`, as the writer needs it. */
  specOf(stream: string): TableSpec {
    const spec = this.tables.find((t) => t.layout.stream === stream);
    if (!spec) throw new Error(`the replica has no table for stream "${stream}"`);
    return spec;
  }

  /**
   * One checkpoint, in one transaction: upsert `records` into the stream's
   * table, apply deletion records, and save `state`.
   */
  commit(stream: StreamDefinition, records: readonly Data[], state: StreamState): CommitResult {
    return this.write(tableCheckpoint(this.specOf(stream.name), { stream: stream.name, records, state: JSON.stringify(state) }));
  }

  /**
   * Give the writer lock back now. Called while the last group of checkpoints
   * is open, the release is committed with it (no write of its own, which
   * would also truncate the WAL the WAL thread just emptied).
   */
  unlock(): void {
    this.stopRenewal();
    if (this.locked && this.db.isOpen) {
      let held = true;
      try {
        held = holdsLock(this.db, this.lockSettings.host);
      } catch {
        // the file is busy this moment: the release tries anyway
      }
      if (!held) {
        this.loseLock();
        return;
      }
      releaseLock(this.db, this.lockSettings.host);
    }
    this.locked = false;
  }

  /**
   * Whether the open group may be committed: asked by the writer in the
   * group's transaction just before its COMMIT. False once another run took
   * the lock over (onLockLost told, once): the group must be rolled back.
   * True for a store opened without the lock, or once it was given back.
   */
  confirmLock(): boolean {
    if (this.lockLost) return false;
    if (!this.locked || !this.db.isOpen) return true;
    if (holdsLock(this.db, this.lockSettings.host)) return true;
    this.loseLock();
    return false;
  }

  /**
   * Throw when the file at the path is no longer the one this run opened
   * (removed, or replaced by another file, during the run): SQLite goes on
   * writing the open one, which no reader and no later run will see, and
   * the run would end "up to date" with nothing at its path. Asked by the
   * writer before each group's commit.
   */
  confirmFile(): void {
    if (this.identity === undefined) return;
    const now = fileIdentity(this.path);
    if (now === this.identity) return;
    throw new ConnectorError(
      'transient_error',
      `The replica database "${this.path}" was ${now === undefined ? 'removed' : 'replaced by another file'} during the run: what the run wrote since then went with the file it opened, and it writes nothing more. ` +
        `Run replicate again: it continues from what the file at "${this.path}" holds${now === undefined ? ' (from the start: there is none)' : ''}.`,
    );
  }

  /** Another run holds the lock now: stop renewing, and tell onLockLost once. */
  private loseLock(): void {
    this.stopRenewal();
    this.locked = false;
    if (this.lockLost) return;
    this.lockLost = true;
    this.onLockLost?.();
  }

  /** The holder renews its lock on a timer, so that long waits (rate limits) renew it too. */
  private startRenewal(): void {
    const { renewMs, host } = this.lockSettings;
    this.renewal = setInterval(() => {
      if (!this.locked || !this.db.isOpen) return;
      let held: boolean;
      try {
        held = renewLock(this.db, Date.now(), host);
      } catch {
        return; // the file is busy this moment: the next tick renews it
      }
      if (!held) this.loseLock();
    }, renewMs);
    this.renewal.unref();
  }

  private stopRenewal(): void {
    if (this.renewal) clearInterval(this.renewal);
    this.renewal = undefined;
  }

  /**
   * Close cleanly: the writer lock given back, the WAL copied into the file and
   * the file left in rollback-journal mode, so that the replica at rest is one
   * file: a reader, even a read-only one (which cannot remove them), leaves no
   * `-wal` or `-shm` beside it. The next replicate turns WAL on again.
   */
  close(): void {
    if (!this.db.isOpen) return;
    this.unlock();
    settleIntoOneFile(this.db);
    this.db.close();
  }
}
