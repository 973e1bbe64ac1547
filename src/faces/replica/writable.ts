/**
 * A replica path that cannot be written is refused before SQLite touches it.
 * SQLite opens a read-only file read-only without a word, and in WAL mode it
 * creates `-wal` and `-shm` files beside the database: a run would fail at its
 * first write and leave them behind. So: the file (if it exists) and its
 * directory must be writable, and if opening fails anyway, the side files
 * this attempt created are removed.
 */
import { accessSync, constants, existsSync, rmSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { ConfigError } from '../../errors.js';

const SIDE_FILES = ['-wal', '-shm', '-journal'];

function code(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? 'EACCES';
}

/** Throws ConfigError when `path` (a file path, not `:memory:`) cannot be written as a replica. */
export function assertWritable(path: string): void {
  if (path === '' || path === ':memory:') return;
  const dir = dirname(resolve(path));
  if (existsSync(path)) {
    try {
      accessSync(path, constants.W_OK);
    } catch (err) {
      throw new ConfigError(
        `Cannot write the replica database "${path}": the file is read-only (${code(err)}). ` +
          `replicate writes into it: make it writable (chmod u+w "${path}") or give --db another file.`,
        { field: 'db' },
      );
    }
  }
  if (!existsSync(dir)) return; // SQLite says "unable to open" for a missing directory
  try {
    accessSync(dir, constants.W_OK);
  } catch (err) {
    const base = basename(path);
    throw new ConfigError(
      `Cannot write the replica database "${path}": its directory "${dir}" is read-only (${code(err)}), and SQLite needs to create ` +
        `"${base}-wal" and "${base}-shm" beside the database. Give --db a file in a writable directory.`,
      { field: 'db' },
    );
  }
}

/** The side files of `path` that do not exist now: remove them with the returned function should opening fail. */
export function sideFilesGuard(path: string): () => void {
  if (path === '' || path === ':memory:') return () => undefined;
  const absent = SIDE_FILES.map((suffix) => `${path}${suffix}`).filter((file) => !existsSync(file));
  return () => {
    for (const file of absent) rmSync(file, { force: true });
  };
}
