/**
 * Where a chain of symbolic links ends: the file a program writing through
 * the path (SQLite, DuckDB's files, a summary replaced by rename) must
 * treat as the file itself.
 */
import { readlinkSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Links followed before giving up on a chain (Linux's own limit, after which it says ELOOP). */
const MAX_LINKS = 40;

/**
 * The file `path`'s symbolic links end at (each one read relative to its
 * own directory), also when it does not exist yet; `path` itself when it is
 * no link. Throws an Error with code ELOOP for a loop of links.
 */
export function linkTarget(path: string): string {
  let current = path;
  for (let links = 0; links < MAX_LINKS; links++) {
    let next: string;
    try {
      next = readlinkSync(current);
    } catch {
      return current; // not a link (EINVAL), or nothing there yet
    }
    current = resolve(dirname(current), next);
  }
  throw Object.assign(new Error(`ELOOP: too many symbolic links from ${path}`), { code: 'ELOOP' });
}
