/** Reading the JSON files a user passes (config, catalog, state) with errors that say what is wrong. */
import { closeSync, constants, fstatSync, open, openSync, readFileSync, statSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { isatty } from 'node:tty';
import { Socket } from 'node:net';
import { ConfigError, messageOf } from '../errors.js';
import { onStop } from '../runtime/interrupt.js';

/**
 * How the read of a file that is a pipe waits: `signal`, the run's stop
 * (SIGTERM, SIGINT), ends the wait; `log` then says which file it waited for.
 */
export interface FileWait {
  readonly signal?: AbortSignal;
  readonly log?: (message: string) => void;
}

/**
 * The text of a file the user named; `what` names it for the user, e.g.
 * "config" or "state". A leading byte order mark (Windows' Notepad and
 * PowerShell 5 save UTF-8 with one) is not part of the text; one of UTF-16
 * (PowerShell 5's `>`) says the text is UTF-16, read as such.
 */
export async function readTextFile(path: string, what: string, wait: FileWait = {}): Promise<string> {
  try {
    const bytes = isPipe(path) ? await readPipe(path, what, wait) : streamedStdin(path) ? await readStdin(path, what, wait) : readFileSync(path);
    // UTF-16 with its byte order mark: what Windows PowerShell 5's `>` and Out-File write. Anything else is read as UTF-8.
    const encoding = bytes[0] === 0xff && bytes[1] === 0xfe ? 'utf-16le' : bytes[0] === 0xfe && bytes[1] === 0xff ? 'utf-16be' : 'utf-8';
    // The decoder drops the byte order mark (UTF-8's too: Notepad's).
    return new TextDecoder(encoding).decode(bytes);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = (code === undefined ? undefined : READ_FAILURES[code]) ?? String(code ?? err);
    throw new ConfigError(`Cannot read the ${what} file "${path}": ${reason}.`, { field: what });
  }
}

/** Whether `path` names a named pipe (false when it cannot be looked at: reading it says why). */
export function isPipe(path: string): boolean {
  try {
    return statSync(path).isFIFO();
  } catch {
    return false; // the read says why
  }
}

/** The names of this process's standard input. */
const STDIN_NAMES = new Set(['/dev/stdin', '/dev/fd/0', '/proc/self/fd/0']);

/**
 * Whether `path` names this process's standard input and that is a socket (the
 * stdin pipe of a process started by Node.js or libuv is a socket pair, which
 * no open by name can reach: ENXIO) or a terminal (read synchronously, a
 * terminal would keep the process deaf to Ctrl-C until Ctrl-D): those are read
 * through process.stdin. A pipe or a file there is read by name as any other.
 */
function streamedStdin(path: string): boolean {
  if (!STDIN_NAMES.has(resolvePath(path))) return false;
  try {
    return isatty(0) || fstatSync(0).isSocket();
  } catch {
    return false; // no standard input: the read says why
  }
}

/**
 * The bytes of standard input (a socket or a terminal, see streamedStdin), to
 * its end (a terminal's: Ctrl-D at the start of a line). A stop signal ends
 * the wait as it does a pipe's (readPipe): the promise then never settles.
 */
function readStdin(path: string, what: string, { signal, log }: FileWait): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    const chunks: Buffer[] = [];
    const onData = (chunk: Buffer | string): void => void chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
    const onEnd = (): void => finish(undefined, Buffer.concat(chunks));
    const onError = (err: unknown): void => finish(err);
    const settle = (): void => {
      untell();
      signal?.removeEventListener('abort', stop);
      stdin.off('data', onData).off('end', onEnd).off('error', onError);
      stdin.pause();
    };
    const finish = (err: unknown, bytes?: Buffer): void => {
      settle();
      if (err === undefined) resolve(bytes ?? Buffer.alloc(0));
      else reject(err);
    };
    const stop = (): void => settle();
    const untell = onStop(log === undefined ? undefined : signal, (stopSignal) =>
      log?.(`Interrupted by ${stopSignal} while waiting for the end of the ${what} file "${path}" (standard input): nothing was read from it.`),
    );
    if (signal?.aborted) return;
    if (stdin.readableEnded) return finish(undefined, Buffer.alloc(0)); // read to its end already (by another flag): empty, as a pipe is then
    signal?.addEventListener('abort', stop, { once: true });
    stdin.on('data', onData).once('end', onEnd).once('error', onError);
  });
}

/**
 * The bytes of a pipe: a named pipe (mkfifo: a secret handed over by an
 * orchestrator) or a shell's process substitution (`--config <(...)`).
 * Read without blocking the event loop, so that a stop signal is handled
 * while no process writes it (read synchronously, a named pipe without a
 * writer would hang the run, deaf to SIGTERM). The open waits for a writer
 * in Node's thread pool; on a stop, the pipe is opened once for writing and
 * closed, which ends that wait (a thread still blocked in open would keep
 * the process from exiting). The bytes then come through a socket of the
 * event loop, which a stop closes, however long the writer takes. Once the
 * run is stopped the promise never settles: its caller stalls where it is,
 * as a request does, while the stop ends the process.
 */
function readPipe(path: string, what: string, { signal, log }: FileWait): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let socket: Socket | undefined;
    let done = false;
    const settle = (): boolean => {
      if (done) return false;
      done = true;
      untell();
      signal?.removeEventListener('abort', stop);
      return true;
    };
    const finish = (err: unknown, bytes?: Buffer): void => {
      if (!settle()) return;
      if (err === undefined) resolve(bytes ?? Buffer.alloc(0));
      else reject(err);
    };
    const stop = (): void => {
      settle();
      if (socket === undefined) release(path);
      socket?.destroy();
    };
    const untell = onStop(log === undefined ? undefined : signal, (stopSignal) =>
      log?.(`Interrupted by ${stopSignal} while waiting for a process to write the ${what} file "${path}" (a pipe): nothing was read from it.`),
    );
    if (signal?.aborted) return;
    signal?.addEventListener('abort', stop, { once: true });
    open(path, 'r', (err, fd) => {
      if (err !== null) return finish(err);
      if (done) return closeSync(fd);
      const chunks: Buffer[] = [];
      socket = new Socket({ fd, readable: true, writable: false });
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('end', () => finish(undefined, Buffer.concat(chunks)));
      socket.on('error', (e) => finish(e));
    });
  });
}

/** Ends an open of the named pipe `path` that waits for a writer: opened for writing without waiting, and closed. */
function release(path: string): void {
  try {
    closeSync(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK));
  } catch {
    // no reader waits any more (ENXIO): nothing to end
  }
}

/** Why a file cannot be read or written, in words, by the system's error code; an unlisted code is given as it is. */
export const FILE_FAILURES: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a directory',
  ENOTDIR: 'a part of its path is a file, not a directory',
  ELOOP: 'its path goes through a loop of symbolic links',
  ENAMETOOLONG: 'its path is too long',
};
const READ_FAILURES: Readonly<Record<string, string>> = { ...FILE_FAILURES, ENOENT: 'no such file' };

/**
 * Why JSON.parse refused a user's file, without the excerpt of the text that
 * Node quotes for an unexpected token (`..."api_key": drk_live_S"...`): a
 * config file's text holds the API key, and a key not yet parsed cannot be
 * redacted. The position, where Node gives one, stays.
 */
export function jsonSyntaxError(err: unknown): string {
  const message = messageOf(err);
  return message.replace(/, (?:\.\.\.)?".*"(?:\.\.\.)? is not valid JSON$/s, '');
}

/** One level of the document `firstDuplicateKey` walks: an object (its keys so far) or an array; `at`, the member or item being read. */
interface Level {
  readonly keys: Set<string> | undefined;
  at: string | number;
}

/**
 * The first key that an object of `text` (valid JSON) gives twice, as a path
 * (`accounts[1].name`) with the line of its second occurrence; undefined when
 * none is. JSON.parse keeps the last one and drops the other in silence.
 */
export function firstDuplicateKey(text: string): { readonly path: string; readonly line: number } | undefined {
  const levels: Level[] = [];
  let expectKey = false;
  let line = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const top = levels.at(-1);
    if (c === '\n') line++;
    else if (c === '{' || c === '[') {
      levels.push({ keys: c === '{' ? new Set() : undefined, at: c === '{' ? '' : 0 });
      expectKey = c === '{';
    } else if (c === '}' || c === ']') {
      levels.pop();
      expectKey = false;
    } else if (c === ',' && top !== undefined) {
      if (top.keys !== undefined) expectKey = true;
      else top.at = (top.at as number) + 1;
    } else if (c === '"') {
      // A string never holds a raw line break or an unescaped quote in valid JSON.
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (expectKey && top?.keys !== undefined) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        const seen = top.keys.has(key);
        top.keys.add(key);
        top.at = key;
        expectKey = false;
        if (seen) {
          const path = levels.map((l, n) => (typeof l.at === 'number' ? `[${l.at}]` : n === 0 ? l.at : `.${l.at}`)).join('');
          return { path, line };
        }
      }
      i = end;
    }
  }
  return undefined;
}

/** `what` names the file for the user, e.g. "config" or "state"; `wait`: see readTextFile. */
export async function readJsonFile(path: string, what: string, wait: FileWait = {}): Promise<unknown> {
  const text = await readTextFile(path, what, wait);
  if (text.trim() === '') throw new ConfigError(`The ${what} file "${path}" is empty; it must hold a JSON document.`, { field: what });
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (err) {
    throw new ConfigError(`The ${what} file "${path}" is not valid JSON: ${jsonSyntaxError(err)}.`, { field: what });
  }
  refuseDuplicateKey(text, what, path);
  return value;
}

/**
 * Throws the ConfigError for a key given twice in one object of `text` (valid
 * JSON), if any: JSON.parse would keep the later value and drop the other
 * without a word. `line` is the file's line `text` starts on (JSON lines).
 */
export function refuseDuplicateKey(text: string, what: string, path: string, line = 1): void {
  const duplicate = firstDuplicateKey(text);
  if (duplicate === undefined) return;
  throw new ConfigError(
    `The ${what} file "${path}" gives "${duplicate.path}" twice (again on line ${duplicate.line + line - 1}); only one would be read. Keep the one you mean and remove the other.`,
    { field: what },
  );
}
