/**
 * Writing protocol lines to stdout with backpressure: a write waits for
 * 'drain' when the reader is slow, so nothing piles up in memory. Logs for
 * humans go to stderr and never carry a secret.
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { ConnectorError, Redactor } from '../errors.js';

/** Bytes per stdout write of record lines (a few more when a line would not fit otherwise). */
const WRITE_CHUNK = 64 * 1024;

const NO_BYTES = Buffer.alloc(0);

/**
 * Write one line per record, `head` + JSON.stringify(record) + `tail` (head
 * and tail as UTF-8, tail ending in \n), with `write`, in writes of about
 * WRITE_CHUNK bytes: few syscalls. Each part is encoded straight into the
 * write's buffer: no string is built per line nor per write, which under
 * the executables' small young generation (docs/performance.md) would make
 * the garbage collector run more often, and copy and keep the page's
 * records more often (at 1M records, ~15 % of `read`'s CPU time).
 */
export async function writeRecordLines(write: (bytes: Uint8Array) => Promise<void>, records: readonly unknown[], head: Uint8Array, tail: Uint8Array): Promise<void> {
  let buf = NO_BYTES;
  let at = 0;
  for (let i = 0; i < records.length; i++) {
    const json = JSON.stringify(records[i]);
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    const most = head.length + json.length * 3 + tail.length;
    if (at + most > buf.length) {
      if (at > 0) await write(buf.subarray(0, at));
      // A new buffer each time: the one written may still be queued (a pipe whose reader is slow).
      buf = Buffer.allocUnsafe(Math.max(WRITE_CHUNK, most));
      at = 0;
    }
    buf.set(head, at);
    at += head.length;
    at += buf.write(json, at, 'utf8');
    buf.set(tail, at);
    at += tail.length;
  }
  if (at > 0) await write(buf.subarray(0, at));
}

/** The promise of a write after `seal`: it never settles, so its writer stalls where it is. */
const NEVER: Promise<void> = new Promise(() => undefined);

export class LineWriter {
  private readonly out: Writable;
  private failure: Error | undefined;
  private drained: Promise<void> | undefined;
  private sealed = false;
  /** The run's own failures told on this output (Airbyte's ERROR traces), as they are to be said elsewhere. */
  private readonly told: { readonly error: ConnectorError; readonly text: string }[] = [];

  constructor(out: Writable) {
    this.out = out;
    // A closed pipe (the reader went away) must stop the run, not crash it.
    out.on('error', (err: Error) => {
      this.failure = err;
    });
  }

  /** Write text made of whole lines (each ending in \n), or such text's UTF-8 bytes. */
  async write(text: string | Uint8Array): Promise<void> {
    if (this.sealed) return NEVER;
    if (this.failure) throw this.failure;
    if (!this.out.write(text)) {
      // Every writer waiting on a full pipe shares one wait (no listener per caller).
      this.drained ??= this.waitForDrain().finally(() => {
        this.drained = undefined;
      });
      await this.drained;
      if (this.failure) throw this.failure;
    }
  }

  private async waitForDrain(): Promise<void> {
    const stop = new AbortController();
    try {
      await Promise.race([once(this.out, 'drain', { signal: stop.signal }), once(this.out, 'close', { signal: stop.signal })]);
    } finally {
      stop.abort();
    }
  }

  /**
   * Stop: `last` (whole lines) goes out after everything already queued, and
   * nothing after it: later writes write nothing and never settle. Resolves
   * once all of it has been handed to the OS. For a process about to end.
   */
  async seal(last?: string): Promise<void> {
    if (!this.sealed) {
      this.sealed = true;
      if (last !== undefined && last !== '' && !this.failure) this.out.write(last);
    }
    await this.flush();
  }

  /** Resolve once everything written so far has been handed to the OS (or failed: see `closed`). */
  async flush(): Promise<void> {
    if (this.failure) return;
    await new Promise<void>((resolve) =>
      this.out.write('', (err) => {
        if (err) this.failure ??= err;
        resolve();
      }),
    );
  }

  /** The error to end with when the reader of stdout went away, also after the command's last line; else undefined. */
  closed(): ConnectorError | undefined {
    return closedOutputError(this.failure);
  }

  /**
   * The run's own failure, about to be told on this output (`text`: what to
   * say of it elsewhere, redacted). Should the reader go away, the failure
   * and its exit status are still told (run-end.ts), not only that stdout
   * was closed. A failure that is the closed output itself is not kept.
   */
  tellsFailure(error: ConnectorError, text: string): void {
    if (closedOutputError(error) !== undefined || closedOutputError(error.cause) !== undefined) return;
    if (this.told.some((t) => t.error === error && t.text === text)) return;
    this.told.push({ error, text });
  }

  /** The failures told on this output when its reader went away (maybe before it took them); none while it is there. */
  lostFailures(): readonly { readonly error: ConnectorError; readonly text: string }[] {
    return this.failure === undefined ? [] : this.told;
  }
}

/** The streams whose 'error' is listened to, and whether each was lost: one listener per stream, however many loggers write to it. */
const watched = new WeakMap<Writable, { lost: boolean }>();

function watch(stream: Writable): { lost: boolean } {
  let health = watched.get(stream);
  if (health === undefined) {
    const state = { lost: false };
    stream.on('error', () => {
      state.lost = true;
    });
    watched.set(stream, (health = state));
  }
  return health;
}

/**
 * The characters a terminal takes as commands or that rewrite what it shows:
 * C0 controls but tab and line feed (ESC starts a sequence, CR goes back over
 * the line), DEL, C1 controls (U+009B is a CSI of its own), and the marks
 * that turn the direction of text.
 */
const TERMINAL_COMMANDS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** The breaks of a line: tab, line feed and Unicode's line and paragraph separators. */
const LINE_BREAKS = /[\t\n\u2028\u2029]/g;

/** A character as its \uXXXX escape. */
const escaped = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * A log line's text made inert for a terminal: the service's words (an
 * account name, a title, a value) go into messages, and stderr is often a
 * terminal; each such character is written as its \uXXXX escape.
 */
export function inert(text: string): string {
  return text.replace(TERMINAL_COMMANDS, escaped);
}

/** Whether each log line must stay one line (keepLogLinesWhole). */
let wholeLines = false;

/**
 * From now on every log line on stderr stays one line, written as inertLine
 * writes a value (line breaks and tabs as escapes): stderr also carries
 * Dagster Pipes' messages, a JSON object a line, and a line break in the
 * service's words (an account name) would start a line that Dagster's
 * reader takes for a message.
 */
export function keepLogLinesWhole(): void {
  wholeLines = true;
}

/** A value of the service's shown within a line (a record's id): inert, and its line breaks escaped too. */
export function inertLine(text: string): string {
  return inert(text).replace(LINE_BREAKS, escaped);
}

/**
 * A logger to stderr; every line is redacted of the given secrets. When the
 * reader of stderr goes away (EPIPE: a log collector that died), the lines
 * after that go nowhere and the command goes on: its data goes to stdout or
 * a store, and its outcome to its exit status and --summary, which the logs
 * only repeat. Without a listener, stderr's 'error' would end the process
 * with exit 1, no summary and stdout cut short.
 */
export class StderrLogger {
  private readonly secrets: string[] = [];
  /** The Redactor of `secrets`, made again once a secret is added. */
  private redactor: Redactor | undefined;
  private readonly prefix: string;
  private readonly err: Writable;
  private readonly health: { lost: boolean };
  /** While a status line is drawn on the terminal: the display, which clears it, prints the line and draws it again. */
  private through: ((level: string, message: string) => void) | undefined;

  constructor(prefix: string, err: Writable = process.stderr) {
    this.prefix = prefix;
    this.err = err;
    // A listener on the stream itself: it also covers the other writers of stderr (the progress line, Dagster Pipes' stderr channel).
    this.health = watch(err);
  }

  addSecret(secret: string): void {
    this.secrets.push(secret);
    this.redactor = undefined;
  }

  redact(text: string): string {
    this.redactor ??= new Redactor(this.secrets);
    return this.redactor.redact(text);
  }

  log(level: string, message: string): void {
    if (this.through) this.through(level, message);
    else this.print(level, message);
  }

  /** Write one line to stderr now (what `log` does, unless a status line is drawn). */
  print(level: string, message: string): void {
    if (this.health.lost || this.err.destroyed) return;
    const text = this.redact(message);
    this.err.write(`${new Date().toISOString()} ${level} ${this.prefix}: ${wholeLines ? inertLine(text) : inert(text)}\n`);
  }

  /** Send log lines through a status-line display while it is drawn (undefined: straight to stderr again). */
  routeThrough(through: ((level: string, message: string) => void) | undefined): void {
    this.through = through;
  }
}

/** Write failures of stdout that say the file it goes to has no room left (`read > out.jsonl` on a full disk, over quota, past the file size limit). */
const FULL_OUTPUT: Readonly<Record<string, string>> = {
  ENOSPC: 'no space is left on the device it goes to',
  EDQUOT: 'the disk quota of the device it goes to is used up',
  EFBIG: 'the file it goes to reached its size limit',
};

/**
 * A failure that says the reader of stdout went away (a closed pipe), or that
 * the file stdout goes to has no room left, as the transient_error to end
 * with (exit 75: run again later, from the last STATE it took), as the
 * replica's full disk is; undefined for any other error.
 */
export function closedOutputError(err: unknown): ConnectorError | undefined {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  const full = typeof code === 'string' ? FULL_OUTPUT[code] : undefined;
  if (full !== undefined) {
    return new ConnectorError('transient_error', `stdout could not be written (${code}: ${full}); stopped. Run it again once there is room (a sync resumes from the last whole STATE line written).`);
  }
  if (code !== 'EPIPE' && code !== 'ERR_STREAM_DESTROYED' && code !== 'ERR_STREAM_WRITE_AFTER_END') return undefined;
  return new ConnectorError('transient_error', `stdout was closed before the command ended (${code}: its reader went away); stopped. Run it again (a sync resumes from the last STATE its reader took).`);
}
