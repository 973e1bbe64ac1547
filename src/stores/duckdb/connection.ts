/**
 * Opening a DuckDB store's file: the driver (`@duckdb/node-api`, its binary
 * in an npm package of its own) loaded when first needed, and DuckDB's own
 * file lock as the one-writer rule. DuckDB lets one process at a time open
 * a file for writing and holds an OS lock on it while it does; the lock
 * goes with the process, however it ends (a killed run never blocks the
 * next). A second run meets that lock when it opens the file: it is refused
 * at once with a transient_error (exit 75) that names the holder's pid, as
 * the SQLite replica names its lock's holder. (The same lock keeps other
 * processes, dashboards included, from opening the file while a run
 * writes it: DuckDB's rule, not the connector's. Within the writing
 * process readers see each stream as of its last commit.)
 *
 * Extensions are never installed from the network: JSON and ICU (time
 * zones) are built into the package's binary.
 *
 * The file holds personal data, as the SQLite replica does: a new one is
 * made 0600, and what DuckDB writes beside it during a run follows it (the
 * WAL with the file's mode, the temporary folder 0700). DuckDB would make
 * them under the process's umask: 0644 and 0755, world-readable, under the
 * usual 022. A file that exists keeps its mode.
 */
import { chmodSync, closeSync, constants, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readSync, realpathSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { ConfigError, ConnectorError, messageOf, withoutQuotedValues } from '../../errors.js';
import { quoteIdent, quoteLiteral } from '../columns.js';
import { missingPackageError } from '../optional-package.js';
import type { DuckdbTarget } from '../target.js';
import { FULL_DISK_ADVICE, OPEN_FILES_ADVICE, SIZE_LIMIT_ADVICE, STORE_FILE_MODE, fileSizeLimit, openFilesLimit } from '../store.js';

export type DuckdbModule = typeof import('@duckdb/node-api');
export type DuckdbConnection = import('@duckdb/node-api').DuckDBConnection;
type DuckdbInstance = import('@duckdb/node-api').DuckDBInstance;

let driver: Promise<DuckdbModule> | undefined;

/** The WAL size past which DuckDB copies it into the file during a run (see openDuckdb). */
const WAL_COPY_THRESHOLD = '1GB';
/**
 * DuckDB's own memory in the connector's process (see openDuckdb): its
 * buffers, beyond which it writes what it holds to a temporary folder next
 * to the store's file (`FILE.tmp`, removed when the store closes).
 */
const DUCKDB_MEMORY_LIMIT_MB = 64;
const DUCKDB_MEMORY_LIMIT = `${DUCKDB_MEMORY_LIMIT_MB}MB`;

/**
 * The memory limit that leaves room, beside the buffers of DUCKDB_MEMORY_LIMIT, for long texts of `bytes` (UTF-8)
 * held together (writer.ts, makeRoom): DuckDB allocates a block of a string's whole size, beyond the limit's reach of
 * its temporary folder, and holds it more than once as it appends and inserts it (a 28 MB text was refused under
 * 64 MB: "could not allocate block"). A page may hold up to 64 MiB, and a field all of it.
 */
export function memoryLimitFor(bytes: number): string {
  return `${DUCKDB_MEMORY_LIMIT_MB + Math.ceil((3 * bytes) / 1_000_000)}MB`;
}

/** DuckDB's worker threads while the run reads: one, beside the connector's own thread, which reads and encodes (two for a large copy at close: store.ts). */
const DUCKDB_THREADS = '1';
/**
 * Rows per row group in the file: a quarter of DuckDB's default (122,880).
 * Copying the WAL into the file compresses a row group at a time, in memory
 * outside the buffers' limit: for contacts of about 1 KB a default row group
 * took some 120 MB more at the store's close, this one about 30 MB.
 */
const DUCKDB_ROW_GROUP_SIZE = 30_720;
/**
 * The store's file as the connection's default database (see openDuckdb):
 * a name no schema of the store is likely to have (DuckDB refuses a name
 * that is both a database and a schema: target.ts refuses it as --schema,
 * with DuckDB's own databases' names).
 */
const STORE_CATALOG = '_replica_file';

/** The connection to a store's file and what the run made beside it (its temporary folder), released together by closeDuckdb. */
export interface DuckdbFiles {
  readonly instance: DuckdbInstance;
  readonly connection: DuckdbConnection;
  /** Removes the temporary folder when this run made it (nothing when it was there before); once. */
  readonly dropTemp: () => void;
  /** The file's WAL (`FILE.wal`); undefined for DuckDB's ':memory:'. */
  readonly wal?: string;
}

/**
 * The temporary folder of a store whose lock this run holds, found there
 * before the run made one: a run of this store that died without its 'exit'
 * (SIGKILL, the OOM killer, a power cut) left it, with the rows DuckDB had
 * spilled into it (personal data, as large as that run's unsaved rows).
 * DuckDB removes only the files it spills itself, so nothing else ever would.
 * Its spill files (DuckDB's `duckdb_temp_` names) and the writer's files of
 * staged rows (STAGE_FILE_PREFIX) are removed, wherever the folder is. True
 * when the folder is to be removed with this run's own: a plain folder (not
 * a link, nor a mount point: the user's way of putting the spills on another
 * disk) that held those files and nothing else. Anything else in it is not
 * the run's, and is left as it is with the folder;
 * so is a folder that held nothing (the user may have made it).
 */
function clearLeftoverTemp(path: string): boolean {
  let names: string[];
  let plain: boolean;
  try {
    names = readdirSync(path);
    plain = lstatSync(path).isDirectory() && statSync(path).dev === statSync(dirname(path)).dev;
  } catch {
    return false; // not a folder, or not readable: DuckDB says why when it needs it
  }
  const spilled = names.filter((name) => name.startsWith('duckdb_temp_') || name.startsWith(STAGE_FILE_PREFIX));
  for (const name of spilled) rmSync(join(path, name), { force: true });
  return plain && spilled.length > 0 && spilled.length === names.length;
}

/** The store's temporary folder: DuckDB's spills, and the staged rows' files (writer.ts). */
export function tempFolderOf(target: DuckdbTarget): string {
  return `${target.path}.tmp`;
}

/** The prefix of the files of staged rows the writer puts in the temporary folder (writer.ts), each removed once its group is over. */
export const STAGE_FILE_PREFIX = 'replica_stage_';

/** The temporary folder `path`, made 0700 unless it is there; true when made here. */
export function makePrivateFolder(path: string): boolean {
  try {
    mkdirSync(path, { mode: 0o700 });
    return true;
  } catch {
    return false; // there already (its mode stays), or not makeable: DuckDB says why when it needs it
  }
}

/**
 * Once the file is attached (created, for a new one): a new file made
 * STORE_FILE_MODE before any row is written, and its WAL made now, empty,
 * with the file's mode (less where the umask takes more away), which DuckDB
 * then writes as it is. A WAL left by a killed run keeps its mode.
 * Returns the file's mode; undefined when there is no file.
 */
function privateFiles(path: string, isNew: boolean): number | undefined {
  if (!existsSync(path)) return undefined; // not a file (DuckDB's ':memory:')
  if (isNew) chmodSync(path, STORE_FILE_MODE);
  const mode = statSync(path).mode & 0o666;
  try {
    closeSync(openSync(`${path}.wal`, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode));
  } catch {
    // there already: DuckDB replays it, and its mode stays
  }
  return mode;
}

/**
 * The bits of group and others each open store's file lacks, by
 * connection, and the process's own umask while any is open. DuckDB deletes
 * its WAL at a checkpoint (its own, once the WAL passes checkpoint_threshold:
 * a large first sync) and makes it again at the next write, under the umask:
 * the rows after it would be world-readable under the usual 022. So while a
 * store is open the umask also takes away what its file's mode does not
 * give, and the WAL made again follows the file; the process's own umask
 * comes back when the last store closes.
 */
const narrowed = new Map<DuckdbConnection, number>();
let ownUmask: number | undefined;

function applyUmask(): void {
  if (narrowed.size === 0) {
    if (ownUmask !== undefined) process.umask(ownUmask);
    ownUmask = undefined;
    return;
  }
  let mask = 0;
  for (const bits of narrowed.values()) mask |= bits;
  const before = process.umask(0o077);
  ownUmask ??= before;
  process.umask(ownUmask | mask);
}

/** The umask narrowed for the file of `connection` (mode: the file's), until releaseUmask. */
function holdUmask(connection: DuckdbConnection, mode: number | undefined): void {
  // A worker thread may not change the process's umask (Node refuses): there, the file's and the first WAL's modes only.
  if (mode === undefined || !isMainThread) return;
  narrowed.set(connection, ~mode & 0o077);
  applyUmask();
}

function releaseUmask(connection: DuckdbConnection): void {
  if (narrowed.delete(connection)) applyUmask();
}

/**
 * The WAL made empty at open (privateFiles) and never written: a run that
 * wrote nothing (refused once it read the file: another account's, other
 * treatments) leaves the file as it found it, with nothing beside it. Removed
 * while this run still holds the file's lock, so no other run can be using
 * it; one DuckDB wrote to is not empty (and a CHECKPOINT has removed it),
 * and what is not a regular file (a link put there) is left alone.
 */
function dropUnusedWal(wal: string | undefined): void {
  if (wal === undefined) return;
  try {
    const stat = lstatSync(wal);
    if (stat.isFile() && stat.size === 0) unlinkSync(wal);
  } catch {
    // not there (DuckDB removed it at its checkpoint), or cannot go: DuckDB replays an empty WAL as nothing
  }
}

/** Close the connection and the instance (the file and its lock go with them), then the temporary folder this run made. */
export function closeDuckdb(files: DuckdbFiles): void {
  try {
    dropUnusedWal(files.wal);
    files.connection.closeSync();
    files.instance.closeSync();
  } finally {
    // Whatever closing said: the process's own umask back, the temporary folder gone.
    releaseUmask(files.connection);
    files.dropTemp();
  }
}

/**
 * The remover of the temporary folder `path` when this run made it: at the
 * store's close, or as the process exits with the store open (a stop signal
 * exits once the last lines are out, a lost lock at once). Left there, it
 * would keep rows DuckDB moved out of its buffers (personal data) until the
 * next run that holds the store's lock (clearLeftoverTemp).
 */
function tempRemover(path: string | undefined): () => void {
  if (path === undefined) return () => undefined;
  const drop = (): void => {
    process.off('exit', drop);
    try {
      rmSync(path, { recursive: true, force: true });
    } catch {
      // Best effort: what the run wrote is committed; a folder that cannot go (in use, its parent read-only) stays.
    }
  };
  process.on('exit', drop);
  return drop;
}

/** The driver, imported once; a missing one (or a binary that cannot load here) is a config_error naming it. */
export function loadDuckdbDriver(): Promise<DuckdbModule> {
  driver ??= import('@duckdb/node-api').catch((err: unknown) => {
    driver = undefined;
    throw missingPackageError(err, '@duckdb/node-api', 'DuckDB');
  });
  return driver;
}

/** Another process writes the file: run again later. */
class DuckdbFileLockedError extends ConnectorError {
  constructor(message: string) {
    super('transient_error', message);
    this.name = 'DuckdbFileLockedError';
  }
}

/**
 * A write the system refused because a file of the store (the DuckDB file,
 * its WAL, a staged CSV file) reached the file size limit of the process
 * (EFBIG, which DuckDB says as "File too large"; Node ignores SIGXFSZ): not a
 * bug (70) nor a full disk (75), but the environment's setting, which every
 * later run meets until it is raised: a config_error (78) naming the limit
 * where Linux tells it. Undefined for any other error.
 */
function sizeLimitError(err: unknown, target: DuckdbTarget): ConnectorError | undefined {
  if (!/\bEFBIG\b|File too large/i.test(messageOf(err))) return undefined;
  const limit = fileSizeLimit();
  const reached = limit === undefined ? 'the largest file this process or its file system allows' : `the file size limit of this process (${limit} bytes: ulimit -f, RLIMIT_FSIZE)`;
  return new ConnectorError('config_error', `Cannot write the DuckDB store "${target.path}": a file of it reached ${reached}: ${duckdbWords(err)}. ${SIZE_LIMIT_ADVICE}`, {
    cause: err,
  });
}

/** The open files limit, read when a store was opened (openDuckdb): once they are all taken, it cannot be read. */
let openFilesAtOpen: number | undefined;

/**
 * A file of the store (a staged CSV file, DuckDB's own) that could not be
 * opened because the process holds as many descriptors as its limit allows
 * (EMFILE: with many accounts read at once, their connections take most of
 * them): not a bug (70), but the environment's setting against the run's
 * concurrency, which later runs meet as well: a config_error (78) naming the
 * limit where Linux tells it, as sizeLimitError does. Undefined for any
 * other error.
 */
function openFilesError(err: unknown, target: DuckdbTarget): ConnectorError | undefined {
  if (!/\bEMFILE\b|Too many open files/i.test(messageOf(err))) return undefined;
  // Read while a descriptor was free (reading /proc/self/limits takes one).
  const limit = openFilesAtOpen ?? openFilesLimit();
  const reached = limit === undefined ? 'its limit of open files' : `its limit of ${limit} open files (ulimit -n, RLIMIT_NOFILE)`;
  return new ConnectorError('config_error', `Cannot write the DuckDB store "${target.path}": the process reached ${reached}: ${duckdbWords(err)}. ${OPEN_FILES_ADVICE}`, {
    cause: err,
  });
}

/**
 * A write the system refused for want of room: a file past the size limit
 * (sizeLimitError, 78), no descriptor left (openFilesError, 78), or a
 * full disk (ENOSPC: DuckDB says "No space left on device" for its file,
 * its WAL or its temporary folder), where the run
 * stops as on any failed write, keeping what it committed, but with 75 (run
 * again once there is room) and words that say so, as the SQLite replica and
 * PostgreSQL do, not 70 (a bug to report). Undefined for any other error.
 */
export function noRoomError(err: unknown, target: DuckdbTarget): ConnectorError | undefined {
  const limited = sizeLimitError(err, target) ?? openFilesError(err, target);
  if (limited !== undefined) return limited;
  if (!/No space left on device/i.test(messageOf(err))) return undefined;
  return new ConnectorError(
    'transient_error',
    `The disk holding the DuckDB store "${target.path}" is full: ${duckdbWords(err)}. ` +
      FULL_DISK_ADVICE,
    { cause: err },
  );
}

/** DuckDB's words that quote a value of a row (a cast or a constraint refused it; a CSV line it could not read). */
const QUOTES_A_VALUE = /\b(?:Conversion|Constraint|Out of Range) Error\b|Could not convert|can't be cast|Original Line|[Dd]uplicate key|Malformed JSON/;

/**
 * DuckDB's words for `err`, without the advice it appends after a blank line
 * (the dozen lines of "Possible solutions" of an out-of-memory error, about
 * settings the store makes itself): a store's failure is said once per
 * account and stream, and with many accounts those lines buried the run's
 * error. Words about a value it refused leave the value out
 * (withoutQuotedValues): `Could not convert string '...' to INT64` quoted an
 * e-mail or a phone a column retyped by hand, or an index, would not take.
 */
export function duckdbWords(err: unknown): string {
  const words = messageOf(err).split(/\r?\n[ \t]*\r?\n/)[0]?.trim() ?? '';
  return QUOTES_A_VALUE.test(words) ? withoutQuotedValues(words) : words;
}

/** What an error of opening the file means: the lock held elsewhere or a full disk (75), or a file that cannot be a store (78). */
function duckdbOpenError(err: unknown, target: DuckdbTarget): ConnectorError {
  const message = messageOf(err);
  const full = noRoomError(err, target);
  if (full !== undefined) return full;
  if (/Could not set lock on file/i.test(message)) {
    const pid = /PID (\d+)/.exec(message)?.[1];
    const program = /held in (.+?) \(PID/.exec(message)?.[1];
    const holder = pid === undefined ? 'another process' : `pid ${pid}${program ? `, ${program}` : ''}`;
    return new DuckdbFileLockedError(
      `Another process has the DuckDB file "${target.path}" open (${holder}): another replicate run, or a program reading or writing it (a dashboard, the duckdb shell: DuckDB lets no other process open a file one holds, readers included). ` +
        'Run again once it has finished (exit 75: a scheduler retries later); DuckDB frees its lock as soon as that process ends, even if it was killed.',
    );
  }
  return new ConfigError(`Cannot open the DuckDB file "${target.path}" as a store: ${duckdbWords(err)}`, { field: '--db', cause: err });
}

/** The first bytes of every SQLite database file. */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * A SQLite database (a replica written with `--db FILE`, renamed or named
 * `.duckdb`): DuckDB would try to read it through its sqlite extension,
 * which the connector never downloads, and say that the extension is
 * missing. Refused here, untouched, saying what the file is.
 */
function refuseSqliteFile(target: DuckdbTarget): void {
  const head = Buffer.alloc(SQLITE_HEADER.length);
  let read = 0;
  try {
    const fd = openSync(target.path, 'r');
    try {
      read = readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return; // not readable: opening it says why
  }
  if (read === head.length && head.equals(SQLITE_HEADER)) {
    throw new ConfigError(
      `"${target.path}" is a SQLite database, not a DuckDB file; nothing in it was changed. To replicate into it as SQLite, give --db a path that does not end in .duckdb (without duckdb:); for DuckDB, name a new file.`,
      { field: '--db' },
    );
  }
}

/**
 * Open the target's file for writing (created when missing) and a connection
 * to it. The file is attached to an instance of its own, and made the
 * connection's default database, because the row group size is an option of
 * ATTACH only; everything else sees the file as if opened directly (its
 * schemas, its lock: a second writer's ATTACH meets the same lock).
 */
export async function openDuckdb(target: DuckdbTarget): Promise<DuckdbFiles & { duckdb: DuckdbModule }> {
  const duckdb = await loadDuckdbDriver();
  openFilesAtOpen = openFilesLimit();
  const isNew = !existsSync(target.path);
  if (!isNew) refuseSqliteFile(target);
  const walThere = existsSync(`${target.path}.wal`);
  const temp = tempFolderOf(target);
  const madeTemp = makePrivateFolder(temp);
  let dropTemp = tempRemover(madeTemp ? temp : undefined);
  let instance: DuckdbInstance;
  try {
    // Until the WAL is copied into the file (below), committed rows live in DuckDB's buffers, which by
    // default may take most of the machine's memory: the run's memory would follow the rows written.
    // Past the limit DuckDB moves them to its temporary folder, and the run's memory stays flat.
    // One thread: a second one (DuckDB's default on two cores) competes with the connector's read for
    // the same cores. The copy of the WAL at close, once the read is over, takes two (store.ts).
    instance = await duckdb.DuckDBInstance.create(':memory:', {
      autoinstall_known_extensions: 'false',
      memory_limit: DUCKDB_MEMORY_LIMIT,
      threads: DUCKDB_THREADS,
      temp_directory: temp,
    });
  } catch (err) {
    dropTemp();
    throw duckdbOpenError(err, target);
  }
  let connection: DuckdbConnection | undefined;
  try {
    connection = await instance.connect();
    await connection.run(`ATTACH ${quoteLiteral(target.path)} AS ${quoteIdent(STORE_CATALOG)} (ROW_GROUP_SIZE ${DUCKDB_ROW_GROUP_SIZE})`);
    // The file's lock is this run's from here: a temporary folder there before is a dead run's (clearLeftoverTemp).
    if (!madeTemp && clearLeftoverTemp(temp)) dropTemp = tempRemover(temp);
    holdUmask(connection, privateFiles(target.path, isNew));
    await connection.run(`USE ${quoteIdent(STORE_CATALOG)}`);
    // DuckDB copies its WAL into the file past 16 MB by default, rewriting every row group a group of
    // updates touched: for updates spread over a large table, the whole table again at each copy.
    // The run's WAL is copied once, when the store closes (store.ts), or replayed by the next open.
    await connection.run(`SET checkpoint_threshold = '${WAL_COPY_THRESHOLD}'`);
    return { instance, connection, dropTemp, duckdb, ...(existsSync(target.path) ? { wal: `${target.path}.wal` } : {}) };
  } catch (err) {
    connection?.closeSync();
    instance.closeSync();
    if (connection !== undefined) releaseUmask(connection);
    dropTemp();
    const error = duckdbOpenError(err, target);
    if (isNew && !(error instanceof DuckdbFileLockedError)) dropUnfinishedFile(target.path, walThere);
    throw error;
  }
}

/**
 * A file this run created but could not open whole (no room left for its
 * first blocks, a file size limit): DuckDB refuses such a file ("not a valid
 * DuckDB database file") at every later open, so left there it would keep
 * every next run out, room or not. Removed (the file a symbolic link names,
 * the link kept), with the WAL beside it if this run made one: nothing was
 * committed into either. Not after a refusal for the lock: the file is then
 * another run's, made between our look and our open.
 */
function dropUnfinishedFile(path: string, walThere: boolean): void {
  for (const file of walThere ? [path] : [path, `${path}.wal`]) {
    try {
      const real = realpathSync(file);
      if (lstatSync(real).isFile()) unlinkSync(real);
    } catch {
      // not there, or cannot go: the next open says what it is
    }
  }
}
