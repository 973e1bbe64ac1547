/**
 * The replica database file: opening it (WAL), its bookkeeping tables, and
 * the SQL of a stream's table (its creation and its upsert).
 *
 * Bookkeeping tables:
 *   _replica_tables (stream, layout)   the layout each stream table was written with
 *   _replica_state  (stream, state, committed_at)  the engine's state, committed
 *                   in the same transaction as the rows it covers
 *   _replica_full_read (stream, id)  only while a full read that removes the rows
 *                   it does not return is under way: the ids it returned (table-writer.ts)
 */
import { closeSync, constants, existsSync, openSync, rmSync, statSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { ConfigError, ConnectorError, messageOf } from '../errors.js';
import { ABSENT_COLUMN, EXTRA_COLUMN, SQL_TYPES, SYNCED_AT_COLUMN, storeColumnNames, quoteIdent, keyColumns, parseLayout, type TableLayout } from './layout.js';
import { assertWritable, sideFilesGuard } from './writable.js';
import { linkTarget } from '../runtime/links.js';
import { FULL_DISK_ADVICE, SIZE_LIMIT_ADVICE, STORE_FILE_MODE, fileSizeLimit } from '../stores/store.js';
import { STATE_TABLE, TABLES_TABLE, joinSavedStates, splitJoinedStates } from '../stores/checkpoint.js';

/** How long a replica connection waits for another one's lock before it gives up. */
export const BUSY_TIMEOUT_MS = 5000;

/**
 * The writing connection's page cache (SQLite's default is 2 MB): the upper
 * levels of the primary-key indexes and the pages a group of checkpoints
 * touches. It is what the writer adds to the process's memory, whatever the
 * table's size (a larger cache saved little time in the bench).
 */
const WRITER_CACHE_KIB = 8 * 1024;
/**
 * WAL frames (4 KiB pages) after which a commit copies the WAL into the
 * database file (SQLite's default is 1000), when no WAL thread does
 * it (writer.ts). Each checkpoint costs two fsyncs whatever its size, and an
 * incremental sync dirties a page per changed row: fewer, larger ones. The
 * last one is made when the run closes the file.
 */
export const WRITER_AUTOCHECKPOINT_PAGES = 16_000;
/** After a checkpoint, a WAL file larger than this is truncated back to it. */
const JOURNAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/** SQLite's "database is locked": another connection holds a lock this one needs. */
const SQLITE_BUSY = 5;

/** SQLite's "database or disk is full": no room left where the file is (or the file reached a size limit). */
const SQLITE_FULL = 13;

/** SQLite's "disk I/O error" (SQLITE_IOERR), the primary code of every extended one (778, SQLITE_IOERR_WRITE: a write failed). */
const SQLITE_IOERR = 10;

/** The longest write SQLite makes: a WAL frame (a 24-byte header and a page) of the largest page. */
const LONGEST_WRITE_BYTES = 24 + 65_536;

/** SQLite's result code (extended) of `err`, or of the error a lost transaction keeps as its cause. */
function sqliteCodes(err: unknown): number[] {
  const code = (e: unknown): number | undefined => {
    const value = typeof e === 'object' && e !== null ? (e as { errcode?: unknown }).errcode : undefined;
    return typeof value === 'number' ? value : undefined;
  };
  return [code(err), err instanceof Error ? code(err.cause) : undefined].filter((c) => c !== undefined);
}

/**
 * A write SQLite could not make because a file of the replica reached the
 * file size limit of the process. Past the limit a write fails with EFBIG
 * (Node ignores SIGXFSZ, which would kill the process), which SQLite reports
 * as a plain "disk I/O error", or, for a write cut short at the limit, as
 * "database or disk is full"; neither says EFBIG. So a write error is told
 * as this one when the process has a limit and a file of the replica (the
 * database, its WAL or its journal) has grown to within one write of it.
 * Not transient: every run stops there until the limit is raised (78).
 * Undefined for any other error, and where the limit cannot be known.
 */
function sizeLimitError(path: string, err: unknown): ConnectorError | undefined {
  if (!sqliteCodes(err).some((code) => code === SQLITE_FULL || (code & 0xff) === SQLITE_IOERR)) return undefined;
  const limit = fileSizeLimit();
  if (limit === undefined) return undefined;
  let file: string;
  try {
    file = linkTarget(path);
  } catch {
    return undefined;
  }
  const size = (name: string): number => {
    try {
      return statSync(name).size;
    } catch {
      return 0;
    }
  };
  const reached = [file, `${file}-wal`, `${file}-journal`].find((name) => size(name) + LONGEST_WRITE_BYTES > limit);
  if (reached === undefined) return undefined;
  return new ConnectorError(
    'config_error',
    `Cannot write the replica database "${path}": "${reached}" reached the file size limit of this process (${limit} bytes: ulimit -f, RLIMIT_FSIZE). ` +
      SIZE_LIMIT_ADVICE,
    { cause: err },
  );
}

/**
 * A write SQLite refused for want of room: the run stops as on any failed
 * write, keeping what it committed, but with 75 (run again once there is
 * room) and words that say so, not 70 (a bug to report). Undefined for any
 * other error.
 */
function fullDiskError(path: string, err: unknown): ConnectorError | undefined {
  if (!sqliteCodes(err).includes(SQLITE_FULL)) return undefined;
  return new ConnectorError(
    'transient_error',
    `The disk holding the replica database "${path}" is full (or the file reached a size limit): database or disk is full. ` +
      FULL_DISK_ADVICE,
    { cause: err },
  );
}

/**
 * A write that waited BUSY_TIMEOUT_MS for another connection's write lock:
 * a program writing into the file (sqlite3 in a transaction, a CREATE
 * INDEX), not a bug. Transient: the next run continues from the last
 * commit. Undefined for any other error.
 */
function busyError(path: string, err: unknown): ConnectorError | undefined {
  if (typeof err !== 'object' || err === null || (err as { errcode?: unknown }).errcode !== SQLITE_BUSY) return undefined;
  return new ConnectorError(
    'transient_error',
    `Cannot write the replica database "${path}": another connection kept it busy for more than ${BUSY_TIMEOUT_MS / 1000} s (a program writing into it: sqlite3 in a transaction, a CREATE INDEX). ` +
      'Run replicate again once that is done: it continues from the last commit.',
    { cause: err },
  );
}

/**
 * The failure of a write into the replica at `path`: `err` is SQLite's error
 * (kept as the cause; a full disk and a file kept busy by another writer are
 * told as such, transient); `cause` says what failed, SQLite's message
 * unless given.
 */
export function writeError(path: string, err: unknown, cause = messageOf(err)): ConnectorError {
  return (
    sizeLimitError(path, err) ??
    fullDiskError(path, err) ??
    busyError(path, err) ??
    new ConnectorError('system_error', `Cannot write the replica database "${path}": ${cause}.`, { cause: err })
  );
}

/**
 * Create the database file, empty, with STORE_FILE_MODE (less under a
 * umask that takes more away) before SQLite opens it: SQLite creates `-wal`,
 * `-shm` and `-journal` with the database file's mode, where it would
 * otherwise create all of them 0644 (world-readable under the usual umask).
 * A file that exists keeps its mode. True when this call created the file.
 */
function createPrivately(path: string): boolean {
  if (path === '' || path === ':memory:' || path.startsWith('file:')) return false;
  try {
    closeSync(openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, STORE_FILE_MODE));
    return true;
  } catch {
    return false; // there already (its mode stays), or not creatable: SQLite's open says why
  }
}

/** Open (creating if needed) a replica database for writing. */
export function openForWrite(path: string): DatabaseSync {
  // SQLite opens the file a symbolic link names, and makes its side files beside that file.
  const file = assertWritable(path);
  const removeSideFiles = sideFilesGuard(file);
  const created = createPrivately(file);
  const removeCreated = (): void => {
    removeSideFiles();
    if (created) rmSync(file, { force: true });
  };
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path, { timeout: BUSY_TIMEOUT_MS });
  } catch (err) {
    removeCreated();
    throw new ConfigError(`Cannot open the replica database "${path}": ${messageOf(err)}.`, { field: 'db' });
  }
  try {
    db.exec('PRAGMA journal_mode = WAL');
    // WAL + NORMAL: a commit survives a killed process; after a power cut the
    // database is still consistent, at worst a few checkpoints back.
    db.exec('PRAGMA synchronous = NORMAL');
    db.exec(`PRAGMA journal_size_limit = ${JOURNAL_SIZE_LIMIT_BYTES}`);
    db.exec(`CREATE TABLE IF NOT EXISTS ${TABLES_TABLE} (stream TEXT PRIMARY KEY, layout TEXT NOT NULL)`);
    db.exec(
      `CREATE TABLE IF NOT EXISTS ${STATE_TABLE} (stream TEXT PRIMARY KEY, state TEXT NOT NULL, committed_at TEXT NOT NULL)`,
    );
  } catch (err) {
    db.close();
    removeCreated();
    // No room for the file's first page or its WAL: run again once there is room, as for a write later in the run; past
    // the file size limit of the process, raise it, as for a write later in the run.
    const full = sizeLimitError(path, err) ?? fullDiskError(path, err);
    if (full !== undefined) throw full;
    if ((err as { errcode?: unknown }).errcode === SQLITE_BUSY) {
      // A reader (a dashboard, sqlite3) in the middle of a read of the file at rest: turning WAL on waits for it, BUSY_TIMEOUT_MS at most.
      throw new ConnectorError(
        'transient_error',
        `"${path}" is busy: another process is reading it (a dashboard, sqlite3 in a transaction) and did not finish within ${BUSY_TIMEOUT_MS / 1000} s; nothing was changed. Run again later, once it is done (a reader keeps the file busy while it holds a transaction open).`,
        { cause: err },
      );
    }
    throw new ConfigError(`"${path}" cannot be used as a replica database: ${messageOf(err)}.`, { field: 'db' });
  }
  return db;
}

/** The state (JSON text) saved by each stream's last commit (checkpoint.ts: a replica of many accounts joins its accounts' rows). */
export function savedStates(db: DatabaseSync): Map<string, string> {
  if (!tableExists(db, STATE_TABLE)) return new Map();
  return joinSavedStates(db.prepare(`SELECT stream, state FROM ${STATE_TABLE} ORDER BY stream`).all().map((r) => [String(r.stream), String(r.state)]));
}

/**
 * A replica of many accounts written before each account's state was a row
 * of its own: each stream's one state row becomes its accounts' rows, each
 * committed when that row was, in one transaction.
 */
export function splitStates(db: DatabaseSync): void {
  const joined = splitJoinedStates(db.prepare(`SELECT stream, state FROM ${STATE_TABLE}`).all().map((r) => [String(r.stream), String(r.state)]));
  if (joined.length === 0) return;
  const put = db.prepare(`INSERT OR REPLACE INTO ${STATE_TABLE} (stream, state, committed_at) SELECT ?, ?, committed_at FROM ${STATE_TABLE} WHERE stream = ?`);
  const drop = db.prepare(`DELETE FROM ${STATE_TABLE} WHERE stream = ?`);
  db.exec('BEGIN IMMEDIATE');
  try {
    for (const { key, accounts } of joined) {
      for (const [part, state] of accounts) put.run(part, state, key);
      drop.run(key);
    }
    db.exec('COMMIT');
  } catch (err) {
    db.exec('ROLLBACK');
    throw err;
  }
}

/**
 * Settings of the connection that writes a sync's rows (WRITER_CACHE_KIB,
 * WRITER_AUTOCHECKPOINT_PAGES), and where its temporary files go: memory.
 * When each checkpoint is written inside a SAVEPOINT (table-writer.ts:
 * a file someone added triggers or constraints to), SQLite copies every page
 * the checkpoint changes that was already in the file (a changed row's page;
 * the primary-key index pages new rows land in) to the savepoint's journal
 * before changing it. That journal is a temporary file by default: a write
 * syscall per page, as many as the WAL gets. In memory it is a copy, and it
 * is emptied at the savepoint's release (at most the pages of one
 * checkpoint: one page of records).
 */
export function tuneForWriting(db: DatabaseSync): void {
  db.exec(`PRAGMA cache_size = -${WRITER_CACHE_KIB}`);
  db.exec(`PRAGMA wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}`);
  db.exec('PRAGMA temp_store = MEMORY');
}

/**
 * At the end of a write: copy the WAL into the database file and leave WAL
 * mode, which removes `-wal` and `-shm` now and keeps readers from creating
 * them later. Best effort: while another connection has the file open, SQLite
 * refuses the change (SQLITE_BUSY) and the file simply stays in WAL mode.
 */
export function settleIntoOneFile(db: DatabaseSync): void {
  try {
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    db.exec('PRAGMA journal_mode = DELETE');
  } catch {
    // another connection is reading: its close (or the next replicate) takes care of the WAL
  }
}

/** Open an existing replica database for reading only. */
export function openForRead(path: string): DatabaseSync {
  if (!existsSync(path)) throw new ConfigError(`No replica database at "${path}".`, { field: 'db' });
  try {
    return new DatabaseSync(path, { readOnly: true, timeout: BUSY_TIMEOUT_MS });
  } catch (err) {
    throw new ConfigError(`Cannot open the replica database "${path}": ${messageOf(err)}.`, { field: 'db' });
  }
}

/**
 * Read an existing replica file on a read-only connection, before anything
 * opens it for writing (which would already touch its header): what a run
 * refuses on (another account, other treatments) is found without a byte of
 * the file changing. Undefined when there is no file, or when it cannot be
 * read as a database (opening it for writing then says why).
 */
export function peekReadOnly<T>(path: string, read: (db: DatabaseSync) => T): T | undefined {
  if (path === '' || path === ':memory:' || !existsSync(path)) return undefined;
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path, { readOnly: true, timeout: BUSY_TIMEOUT_MS });
  } catch {
    return undefined;
  }
  try {
    return read(db);
  } catch {
    return undefined;
  } finally {
    db.close();
  }
}

export function tableExists(db: DatabaseSync, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?").get(name) !== undefined;
}

/** Whether a run wrote the file before (a stream table recorded), as opposed to a file just created. */
export function writtenBefore(db: DatabaseSync): boolean {
  return tableExists(db, TABLES_TABLE) && db.prepare(`SELECT 1 FROM ${TABLES_TABLE} LIMIT 1`).get() !== undefined;
}

/** CREATE TABLE for `layout`, under the name `name` (the layout's table by default). */
export function createTableSql(layout: TableLayout, name = layout.table): string {
  const keys = keyColumns(layout);
  const single = keys.length === 1;
  const columns = layout.columns.map(
    (c) => `${quoteIdent(c.field)} ${SQL_TYPES[c.kind]}${keys.includes(c.field) ? `${single ? ' PRIMARY KEY' : ''} NOT NULL` : ''}`,
  );
  columns.push(`${quoteIdent(EXTRA_COLUMN)} TEXT`, `${quoteIdent(ABSENT_COLUMN)} TEXT`, `${quoteIdent(SYNCED_AT_COLUMN)} TEXT NOT NULL`);
  if (!single) columns.push(`PRIMARY KEY (${keys.map(quoteIdent).join(', ')})`);
  return `CREATE TABLE ${quoteIdent(name)} (\n  ${columns.join(',\n  ')}\n)${layout.storage === 'without_rowid' ? ' WITHOUT ROWID' : ''}`;
}

/** The layouts stored in the database, by stream name. */
export function storedLayouts(db: DatabaseSync): Map<string, TableLayout> {
  const out = new Map<string, TableLayout>();
  for (const row of db.prepare(`SELECT stream, layout FROM ${TABLES_TABLE}`).all()) {
    const layout = parseLayout(String(row.layout));
    if (layout) out.set(String(row.stream), layout);
  }
  return out;
}

/** Record `layout` as the one its table is written with. */
export function saveLayout(db: DatabaseSync, layout: TableLayout): void {
  db.prepare(`INSERT OR REPLACE INTO ${TABLES_TABLE} (stream, layout) VALUES (?, ?)`).run(layout.stream, JSON.stringify(layout));
}

/** The index on the deletion log's object id that applying deletions needs (store.ts creates it). */
export function deletionIndexName(table: string): string {
  return `_replica_${table}_object`;
}

/** The upsert of one row: values in `storeColumnNames(layout)` order. */
export function insertSql(layout: TableLayout): string {
  const names = storeColumnNames(layout);
  const keys = keyColumns(layout);
  const updates = names.filter((n) => !keys.includes(n)).map((n) => `${quoteIdent(n)} = excluded.${quoteIdent(n)}`);
  return (
    `INSERT INTO ${quoteIdent(layout.table)} (${names.map(quoteIdent).join(', ')}) VALUES (${names.map(() => '?').join(', ')}) ` +
    `ON CONFLICT (${keys.map(quoteIdent).join(', ')}) DO UPDATE SET ${updates.join(', ')}`
  );
}
