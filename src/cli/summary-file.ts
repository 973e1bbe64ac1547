/**
 * `--summary FILE`: the run's summary (report/run-report.ts) written when the
 * command ends, whatever the outcome. Written atomically where the file
 * system allows: a temporary file in the same directory, flushed, then
 * renamed over FILE, so a reader sees the old summary or the new one, never
 * half of one. Where it does not, the file is written in place with one
 * write of the whole text (under 4 KiB): when FILE is not a regular file
 * (a pipe, /dev/stdout), when it is a mount point of its own (Kubernetes
 * bind-mounts /dev/termination-log: a rename onto it fails with EBUSY), or
 * when the directory takes no temporary file (read-only, no permission).
 * Through a symbolic link, the file the link names is written; the link
 * stays. A named pipe no process reads is not waited for: the summary is
 * said not written. This process's stdout or stderr (/dev/stderr, the file `2>` names) is
 * written through its open descriptor, after what is already there.
 * Synchronous, so that it also runs on the way out of a signal handler.
 */
import { accessSync, closeSync, constants, fstatSync, fsyncSync, openSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { isatty } from 'node:tty';
import { linkTarget } from '../runtime/links.js';

type SummaryWriteMode = 'rename' | 'in-place';

const STDOUT_NAMES = new Set(['/dev/stdout', '/dev/fd/1', '/proc/self/fd/1']);

/**
 * Whether FILE names where this process's stdout goes: one of stdout's own
 * names, or, stdout not being a terminal (which is stderr too), the same file.
 */
export function namesStdout(path: string): boolean {
  return STDOUT_NAMES.has(resolve(path)) || (!isatty(1) && isDescriptor(path, 1));
}

/**
 * Whether FILE is what file descriptor `fd` of this process is open on (the same device and inode: 1 for /dev/stdout,
 * /proc/self/fd/1 or the file stdout is redirected to), /dev/null aside.
 */
function isDescriptor(path: string, fd: number): boolean {
  try {
    const target = statSync(path);
    const open = fstatSync(fd);
    return open.dev === target.dev && open.ino === target.ino && realpathSync(path) !== '/dev/null';
  } catch {
    return false;
  }
}

/**
 * Where a path leads, links followed: the file's real path, or, for a file
 * not made yet (a new replica), its folder's real path and its name.
 */
function realTarget(path: string): string {
  const target = linkTarget(resolve(path));
  try {
    return join(realpathSync(dirname(target)), basename(target));
  } catch {
    return target;
  }
}

/**
 * Whether paths `a` and `b` name one file: the same path, the same place
 * once links are followed (also for a file not made yet), or the same device
 * and inode (hard links).
 */
export function sameFile(a: string, b: string): boolean {
  if (resolve(a) === resolve(b)) return true;
  try {
    if (realTarget(a) === realTarget(b)) return true;
  } catch {
    // a loop of links: not a file either names
  }
  try {
    const x = statSync(a);
    const y = statSync(b);
    return x.dev === y.dev && x.ino === y.ino;
  } catch {
    return false;
  }
}

/**
 * Why FILE may not be replaced by the summary: an existing regular file that
 * is read-only (no write permission for anyone, or none for the user the
 * connector runs as), which the user keeps; the rename would replace it, as
 * the directory's permission allows. Undefined when it may be written.
 */
export function readOnlySummary(path: string): string | undefined {
  let target;
  try {
    target = statSync(path);
  } catch {
    return undefined; // not there yet (or not reachable: the end says why it cannot be written)
  }
  if (!target.isFile()) return undefined;
  // This process's stdout or stderr (a log `2>>` appends to): written through its open descriptor, added to, never replaced.
  if ([1, 2].some((fd) => isDescriptor(path, fd))) return undefined;
  let writable = (target.mode & 0o222) !== 0;
  try {
    if (writable) accessSync(path, constants.W_OK);
  } catch (err) {
    // Only its permissions make the file read-only: on a read-only file system (EROFS) nothing can replace it, and the
    // end says the summary cannot be written, as for any summary that cannot be.
    writable = (err as NodeJS.ErrnoException).code !== 'EACCES';
  }
  if (writable) return undefined;
  const mode = (target.mode & 0o7777).toString(8).padStart(4, '0');
  const user = process.getuid?.();
  const owner = user === undefined || user === target.uid ? '' : `, owned by uid ${target.uid}; the connector runs as uid ${user}`;
  return `--summary "${path}" is a read-only file (mode ${mode}${owner}), which the run's summary would replace. Make it writable or give --summary another file.`;
}

/** How FILE is written: renamed into place, or written in place (not a regular file, or a mount point of its own). */
export function summaryWriteMode(path: string): SummaryWriteMode {
  let target;
  try {
    target = statSync(path);
  } catch {
    return 'rename'; // not there yet: the rename creates it
  }
  if (!target.isFile()) return 'in-place';
  try {
    if (statSync(dirname(path)).dev !== target.dev) return 'in-place';
  } catch {
    return 'in-place';
  }
  return 'rename';
}

/**
 * Open FILE to write it in place. A named pipe is opened without waiting for
 * a reader: opened plainly, it would wait forever for one that may never come
 * (and on a signal's way out, with the event loop blocked, a second signal
 * could not end it). No process reading it is ENXIO, said as such.
 */
function openInPlace(path: string): number {
  let fifo = false;
  try {
    fifo = statSync(path).isFIFO();
  } catch {
    // not there: created below
  }
  if (!fifo) return openSync(path, 'w');
  const probe = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
  try {
    // A reader is there: opened again to write as to any file (blocking writes, a summary of many accounts being larger than the pipe's buffer).
    return openSync(path, 'w');
  } finally {
    closeSync(probe);
  }
}

function writeInPlace(path: string, text: string): void {
  const fd = openInPlace(path);
  try {
    writeFileSync(fd, text);
    try {
      fsyncSync(fd);
    } catch {
      // a pipe or a device cannot be flushed to disk: written is enough
    }
  } finally {
    closeSync(fd);
  }
}

/** Try the temporary file and the rename; false when this file system does not allow it (then nothing is left behind). */
function writeByRename(path: string, text: string): boolean {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  let fd: number;
  try {
    fd = openSync(temp, 'w', 0o644); // a leftover of a killed run with the same pid (PID 1 in a container) is overwritten
  } catch {
    return false; // the directory takes no new file (read-only, no permission)
  }
  try {
    try {
      writeFileSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
    return true;
  } catch (err) {
    rmSync(temp, { force: true });
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EBUSY' || code === 'EXDEV' || code === 'EPERM' || code === 'EACCES') return false; // a mount point, another file system
    throw err;
  }
}

/**
 * Write `text` (one JSON object, with a final newline added) to `path`.
 * Throws only when the file cannot be written at all (its cause named).
 */
export function writeSummaryFile(path: string, text: string): SummaryWriteMode {
  const content = `${text}\n`;
  // stdout itself (replicate --summary /dev/stdout): written to fd 1, which also works where stdout is a socket that cannot be opened by name.
  // stderr itself (--summary /dev/stderr with `2> run.log`): opening it by name with 'w' would empty the log of the run's own lines; fd 2 adds to it.
  const fd = [1, 2].find((n) => isDescriptor(path, n));
  if (fd !== undefined) {
    writeFileSync(fd, content);
    return 'in-place';
  }
  if (summaryWriteMode(path) === 'rename') {
    // Through a symbolic link (a fixed path onto a shared volume): the file it names is replaced, the link stays a link.
    const file = linkTarget(path);
    if (summaryWriteMode(file) === 'rename' && writeByRename(file, content)) return 'rename';
  }
  writeInPlace(path, content);
  return 'in-place';
}
