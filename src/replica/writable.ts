/**
 * A replica path that cannot be written is refused before SQLite touches it.
 * SQLite opens a read-only file read-only without a word, and in WAL mode it
 * creates `-wal` and `-shm` files beside the database: a run would fail at its
 * first write and leave them behind. So: the file (if it exists) and its
 * directory must be writable, and if opening fails anyway, the side files
 * this attempt created are removed. A DuckDB file is refused alike: DuckDB
 * makes its WAL (`FILE.wal`) and the run's temporary folder (`FILE.tmp`)
 * beside it, and without them every stream's first commit would fail.
 *
 * SQLite follows a symbolic link: the database is the file the link names,
 * and `-wal` and `-shm` go beside that file, where the checks look. DuckDB
 * is given that file too (replicate resolves the link), so its files go
 * beside it as well.
 */
import { accessSync, constants, existsSync, lstatSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { linkTarget } from '../runtime/links.js';

const SIDE_FILES = ['-wal', '-shm', '-journal'];

function code(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? 'EACCES';
}

/** "uid 1000": the user this process runs as (in a container, the image's USER or --user). */
function runningUser(): string {
  const uid = process.getuid?.();
  return uid === undefined ? 'this process' : `uid ${uid}`;
}

/** "owned by uid 0, mode 755" of `path`, or '' when it cannot be seen. */
function ownership(path: string): string {
  try {
    const st = statSync(path);
    return `owned by uid ${st.uid}, mode ${(st.mode & 0o777).toString(8)}`;
  } catch {
    return '';
  }
}

/**
 * Why `path` cannot be written, and what to do: a read-only file system
 * (EROFS: a volume mounted read-only) is not the same as permissions that
 * keep this process's user out (EACCES: in a container, a volume owned by
 * another uid than the image's user).
 */
function notWritable(what: string, path: string, err: unknown): { reason: string; remedy: string } {
  const errno = code(err);
  if (errno === 'EROFS') return { reason: `${what} is on a read-only file system (EROFS)`, remedy: `mount it read-write` };
  const owner = ownership(path);
  const user = runningUser();
  return {
    reason: `${what}${owner === '' ? '' : ` (${owner})`} is not writable by the user the connector runs as, ${user} (${errno})`,
    remedy: `make it writable for ${user} (for a Docker volume: chown the host folder to that uid, or run the container with --user set to its owner)`,
  };
}

/** What a store makes beside its file, as the messages name it. */
export interface StoreFiles {
  /** "the replica database", "the DuckDB file" */
  readonly what: string;
  /** What the store needs to create beside the file `base` (its name): `SQLite needs to create "r.db-wal" and "r.db-shm" beside the database`. */
  readonly besideIt: (base: string) => string;
  /** The store's program and the files it makes beside the file `path`: ['SQLite', [`${path}-wal`, ...]]. */
  readonly sideFiles: (path: string) => readonly [string, readonly string[]];
}

/** The SQLite replica's files. */
const SQLITE_FILES: StoreFiles = {
  what: 'the replica database',
  besideIt: (base) => `SQLite needs to create "${base}-wal" and "${base}-shm" beside the database`,
  sideFiles: (path) => ['SQLite', SIDE_FILES.map((suffix) => `${path}${suffix}`)],
};

/** A DuckDB store's files (stores/duckdb/connection.ts: its WAL and the run's temporary folder). */
export const DUCKDB_FILES: StoreFiles = {
  what: 'the DuckDB file',
  besideIt: (base) => `DuckDB needs to create "${base}.wal" and the folder "${base}.tmp" beside the file`,
  sideFiles: (path) => ['DuckDB', [`${path}.wal`, `${path}.tmp`]],
};

/**
 * Throws ConfigError when the name of `file`, or of a file the store makes
 * beside it, is longer than its file system allows (NAME_MAX, 255 bytes on
 * most; PATH_MAX for the whole path): the store would fail when it first
 * makes that file, after creating the database (SQLite at once, DuckDB at
 * its first commit). Asked of the file system itself (lstat says
 * ENAMETOOLONG), nothing created.
 */
function tooLong(named: string, file: string, store: StoreFiles): void {
  const [program, beside] = store.sideFiles(file);
  for (const name of [file, ...beside]) {
    try {
      lstatSync(name);
    } catch (err) {
      if (code(err) !== 'ENAMETOOLONG') continue;
      const which = name === file ? 'its name is too long' : `"${basename(name)}", which ${program} makes beside it, is too long`;
      throw new ConfigError(`Cannot create ${store.what} ${named}: ${which} for the file system (ENAMETOOLONG). Give --db a shorter name.`, { field: 'db' });
    }
  }
}

/**
 * The file `path`'s symbolic links end at (runtime/links.ts); a loop of
 * links is a ConfigError naming `store`'s file.
 */
export function storeFileOf(path: string, store: StoreFiles = SQLITE_FILES): string {
  try {
    return linkTarget(path);
  } catch {
    throw new ConfigError(`Cannot open ${store.what} "${path}": its path goes through a loop of symbolic links. Give --db the file itself.`, { field: 'db' });
  }
}

/**
 * Throws ConfigError when the folder `path` goes in does not exist, naming it
 * (and the first of its parents that is missing, or the file standing where
 * a folder should be): SQLite would only say "unable to open database file".
 */
function missingFolder(path: string, store: StoreFiles, named: string): void {
  const folder = dirname(path);
  let missing = folder;
  for (let parent = dirname(missing); parent !== missing && !existsSync(parent); parent = dirname(parent)) missing = parent;
  let blocker: string | undefined;
  try {
    if (!statSync(folder).isDirectory()) blocker = folder;
  } catch (err) {
    if (code(err) === 'ENOTDIR') blocker = dirname(missing);
    else if (code(err) !== 'ENOENT') return; // not ours to explain: SQLite says what it is
  }
  if (blocker !== undefined) {
    throw new ConfigError(`Cannot create ${store.what} ${named}: "${blocker}" is a file, not a folder. Give --db a file in a folder.`, { field: 'db' });
  }
  if (existsSync(folder)) return;
  const which = missing === folder ? `its folder "${folder}" does not exist` : `its folder "${folder}" does not exist (nor does "${missing}")`;
  throw new ConfigError(`Cannot create ${store.what} ${named}: ${which}. Create it first (mkdir -p "${folder}"), or give --db a file in an existing folder.`, {
    field: 'db',
  });
}

/**
 * Throws ConfigError when `path` (a file path, not `:memory:`) cannot be
 * written as a replica (or as the store `store` says); else returns the
 * file the store writes: the one a symbolic link names, `path` itself when
 * it is no link (and for `:memory:`).
 */
export function assertWritable(path: string, store: StoreFiles = SQLITE_FILES): string {
  if (path === '' || path === ':memory:') return path;
  const file = storeFileOf(path, store);
  // The path as given, and the file a link names when that is another.
  const named = file === path ? `"${path}"` : `"${path}" (a symbolic link to "${file}")`;
  const dir = dirname(resolve(file));
  if (existsSync(file)) {
    if (statSync(file).isDirectory()) {
      throw new ConfigError(`Cannot open ${store.what} ${named}: it is a directory. Give --db the path of a file (created when missing), not a folder.`, { field: 'db' });
    }
    try {
      accessSync(file, constants.W_OK);
    } catch (err) {
      const { reason, remedy } = notWritable('the file', file, err);
      throw new ConfigError(`Cannot write ${store.what} ${named}: ${reason}. replicate writes into it: ${remedy}, or give --db another file.`, {
        field: 'db',
      });
    }
  }
  missingFolder(file, store, named);
  tooLong(named, file, store);
  try {
    accessSync(dir, constants.W_OK);
  } catch (err) {
    const base = basename(file);
    const { reason, remedy } = notWritable(`its directory "${dir}"`, dir, err);
    throw new ConfigError(
      `Cannot write ${store.what} ${named}: ${reason}, and ${store.besideIt(base)}. ${remedy[0]?.toUpperCase() ?? ''}${remedy.slice(1)}, or give --db a file in a writable directory.`,
      { field: 'db' },
    );
  }
  return file;
}

/** The side files of `path` that do not exist now: remove them with the returned function should opening fail. */
export function sideFilesGuard(path: string): () => void {
  if (path === '' || path === ':memory:') return () => undefined;
  const absent = SIDE_FILES.map((suffix) => `${path}${suffix}`).filter((file) => !existsSync(file));
  return () => {
    for (const file of absent) {
      try {
        rmSync(file, { force: true });
      } catch {
        // not removable (or not a name this file system takes): the error that brought us here is the one to tell
      }
    }
  };
}
