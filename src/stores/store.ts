/**
 * What `replicate` writes into, whatever the store: the SQLite file
 * (replica/writer.ts), a PostgreSQL schema (postgres/store.ts) or a
 * DuckDB file (duckdb/store.ts). The replica's emitter (replica/sink.ts)
 * hands a store one engine checkpoint of one stream at a time; the store
 * writes it whole or not at all, with the state that covers it.
 *
 * A store opened for a run is also given the run's facts to check and
 * record (`StoreFacts`): the account it belongs to and the personal-data
 * treatments it is built with. The store reads what it holds and asks the
 * facts under its writer lock, before anything in it changes; a refusal
 * leaves it as it was.
 */
import { readFileSync } from 'node:fs';
import type { Data, LogLevel } from '../engine/sync-sink.js';
import type { StreamState } from '../engine/state.js';

/** The mode a store's new file (the SQLite replica, a DuckDB file) is made with: it holds personal data, for its owner's eyes alone. */
export const STORE_FILE_MODE = 0o600;

/** What a run stopped by a full disk under a store's file (SQLite, DuckDB) says to do. */
export const FULL_DISK_ADVICE = 'What was committed before is kept. Free some space there, then run replicate again: it continues from the last commit.';

/** What a run stopped by the file size limit of the process (a store's file or its WAL reached it) says to do. */
export const SIZE_LIMIT_ADVICE =
  'What was committed before is kept. Raise the limit (ulimit -f unlimited; systemd: LimitFSIZE=infinity), then run replicate again: it continues from the last commit.';

/** What a run stopped by the open files limit of the process (EMFILE: its sockets and files took every descriptor) says to do. */
export const OPEN_FILES_ADVICE =
  'What was committed before is kept. Raise the limit (ulimit -n 4096; systemd: LimitNOFILE=4096) or lower max_concurrent_accounts and max_concurrent_requests (each request in flight holds a connection), then run replicate again: it continues from the last commit.';

/** The soft limit of `name` ("Max file size", "Max open files") as Linux tells it in /proc/self/limits; undefined when there is none, or where the system does not tell it. */
function processLimit(name: string): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(name));
    const soft = line?.slice(name.length).trim().split(/\s+/)[0];
    return soft !== undefined && /^\d+$/.test(soft) ? Number(soft) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The file size limit of this process in bytes (RLIMIT_FSIZE, the shell's
 * `ulimit -f`, systemd's LimitFSIZE), as Linux tells it in /proc/self/limits;
 * undefined when there is none, or where the system does not tell it.
 */
export function fileSizeLimit(): number | undefined {
  return processLimit('Max file size');
}

/** The open files limit of this process (RLIMIT_NOFILE, the shell's `ulimit -n`, systemd's LimitNOFILE), as fileSizeLimit reads it. */
export function openFilesLimit(): number | undefined {
  return processLimit('Max open files');
}

/** One engine checkpoint of one stream, as a store takes it. */
export interface StoreCheckpoint {
  readonly stream: string;
  /**
   * The entry whose records these are, in a replica of many accounts: a full
   * read (`fullRead`) replaces that account's rows alone. Undefined for a
   * replica of one account.
   */
  readonly account?: string | undefined;
  /** The records, as the pipeline gave them. */
  readonly records: readonly Data[];
  /** The stream's state, as JSON text: in a replica of many accounts, the state of `account` alone (STATE_TABLE). */
  readonly state: string;
  /** Part of a full read that removes the rows it does not return: its first checkpoint, its last (both for a one-page read). */
  readonly fullRead?: { readonly first: boolean; readonly last: boolean } | undefined;
}

/** What a committed checkpoint did. */
export interface CommitResult {
  /** Rows written. */
  readonly upserted: number;
  /** Upserts skipped because the object was deleted at or after the record's cursor. */
  readonly skippedDeleted: number;
  /** Rows deleted by deletion records. */
  readonly deletedRows: number;
  /** Deletion records whose object type names no replicated stream: [object type as JSON text, deletion id]. */
  readonly unknownTypes: readonly (readonly [string, string])[];
  /** Rows removed because the full read they belong to did not return them (its last checkpoint). */
  readonly sweptRows: number;
}

/**
 * Where the replica's checkpoints go: the SQLite file (SqliteStore), a
 * PostgreSQL schema or a DuckDB file. A store is opened by its own module
 * (its writer lock taken, a store of another account or other treatments
 * refused, each stream's table made or changed to the run's columns) and
 * says what opening did in `notes`.
 */
export interface Store {
  /** What opening did that the run says (a lock taken over, the account bound, tables migrated). */
  readonly notes: readonly { readonly level: LogLevel; readonly message: string }[];
  /** The state saved by each stream's last committed checkpoint. */
  loadStates(): Promise<Map<string, StreamState>>;
  /**
   * Take one checkpoint: written whole, or refused (thrown) with nothing of
   * it written. `committed` is told its result once it is committed: never
   * when its transaction is lost (a failed commit, a writer lock taken over).
   * A promise is awaited (backpressure).
   */
  write(checkpoint: StoreCheckpoint, committed?: (result: CommitResult) => void): void | Promise<void>;
  /**
   * Whether the store holds marks of a full read of `stream` (of `account`,
   * in a store of many accounts) that has not ended: committed by a run
   * stopped before its last checkpoint, which the next heal may continue.
   */
  fullReadMarked(stream: string, account: string | undefined): Promise<boolean>;
  /** Commit everything taken so far; rejects when a commit failed. */
  flush(): Promise<void>;
  /** The run is done: commit what is taken, give the lock back (with the last commit); the rows in each stream's table. */
  finish(): Promise<Map<string, number>>;
  /** Close (committing what is taken, if the store can still commit); again is nothing. */
  close(): Promise<void>;
  /** The changes of the tables' columns this run made, and those it leaves for the next run (after `finish`: all of them); none when absent. */
  schemaChanges?(): readonly SchemaChange[];
}

/**
 * One change of a table's columns, as the run summary lists it: a column
 * added, a column's type widened (or otherwise changed: a SQLite table
 * rewritten to a newer version's layout), or a change the run met but leaves for
 * the next run (a reader held the table; values that did not fit their
 * column, kept in `_extra` until then). Types are the store's SQL types.
 */
export interface SchemaChange {
  readonly stream: string;
  readonly column: string;
  readonly change: 'added' | 'widened' | 'retyped' | 'left_for_next_run';
  /** The column's type before (null: no column yet). */
  readonly from: string | null;
  /** Its type after (left for the next run: the type the next run gives it). */
  readonly to: string;
}


/** Something opening a store did that the run says. */
export interface StoreNote {
  readonly level: LogLevel;
  readonly message: string;
}

/**
 * The run's facts a store checks and records when it opens (the account,
 * the treatments), kept by the store as text under keys of its own.
 */
export interface StoreFacts {
  /**
   * `stored`: the facts the store holds (empty for a new store);
   * `written`: whether it held stream tables already. Throws (a
   * ConfigError) to refuse the store, before anything in it changed;
   * otherwise the facts to record (replacing those of the same key) and
   * what to say.
   */
  check(stored: ReadonlyMap<string, string>, written: boolean): { readonly record: ReadonlyMap<string, string>; readonly notes: readonly StoreNote[] };
}
