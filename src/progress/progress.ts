/**
 * The progress of a sync for people, on stderr, the same for every face: a
 * plain observer (counts and stream statuses in, by stream name; lines out)
 * that knows nothing of streams, protocols or HTTP.
 *
 * On a terminal (stderr is one, and stdout does not carry protocol lines to
 * it): one status line, redrawn in place at most every REDRAW_MS and once a
 * second while nothing happens so that a rate-limit countdown moves; a log
 * line clears it, is printed, and the status line comes back under it; a
 * rate-limit wait that is over is said once. Elsewhere (a pipe, a log file):
 * nothing, or, when `plainEveryMs` is given (replicate), a plain log line
 * every `plainEveryMs` (0: at every change).
 *
 * The line has the figures that matter first, fitted to the terminal's width:
 * a rate-limit wait and when it ends (the one thing that explains a line that
 * stops moving), failed streams, streams being read (count and rate, measured
 * here over the last RATE_WINDOW_MS), finished streams, requests. A part that
 * does not fit is shortened, then left out, never cut in the middle of a number.
 */

type StreamPhase = 'waiting' | 'running' | 'rate_limited' | 'complete' | 'failed';

interface StreamProgress {
  readonly name: string;
  /** Records so far. */
  readonly count: number;
  /** Per second, recently; undefined when not known yet. */
  readonly rate?: number | undefined;
  readonly phase: StreamPhase;
  /** When the stream's rate-limit wait ends (epoch ms), while it waits. */
  readonly waitUntil?: number | undefined;
}

export interface ProgressSnapshot {
  readonly streams: readonly StreamProgress[];
  /** Requests made so far, and rate-limit waits; undefined when not known. */
  readonly requests?: number;
  readonly rateLimitWaits?: number;
}

/** Where the line is drawn: process.stderr, or in tests anything with the same three members. */
export interface ProgressOutput {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number | undefined;
}

/** The logger the status line prints through (process/output.ts's StderrLogger). */
export interface ProgressLogger {
  log(level: string, message: string): void;
  /** Write one line now, whatever is drawn. */
  print(level: string, message: string): void;
  redact(text: string): string;
  /** Send `log` through this while the line is drawn (undefined: straight again). */
  routeThrough(through: ((level: string, message: string) => void) | undefined): void;
}

interface ProgressOptions {
  readonly logger: ProgressLogger;
  /** The run's requests and rate-limit waits so far, once known. */
  readonly requests?: () => { readonly requests: number; readonly rateLimitWaits: number } | undefined;
  /** Not on a terminal: a plain line every this many ms (0: at every change); undefined: nothing. */
  readonly plainEveryMs?: number | undefined;
  /** Whether stdout is a terminal too, carrying protocol lines (default: process.stdout's); then nothing is drawn. */
  readonly stdoutIsTerminal?: boolean;
  readonly out?: ProgressOutput;
  readonly now?: () => number;
}

/** The width used when the terminal reports none (or 0, as some do when detached). */
export const DEFAULT_WIDTH = 80;
const SEPARATOR = ' | ';
const REDRAW_MS = 200;
const TICK_MS = 1000;
const RATE_WINDOW_MS = 5000;
const DEFAULT_PLAIN_MS = 10_000;

/**
 * A count with its thousands grouped (1,234,567) by hand: toLocaleString
 * brings ICU's locale data into memory (5 to 10 MB of the executable's pages,
 * resident from the first progress line on), a jump in the peak memory of
 * any run long enough to print one.
 */
const int = (n: number): string => String(Math.round(n)).replace(/\B(?=(\d{3})+$)/g, ',');
const clock = (ms: number): string => `${new Date(ms).toISOString().slice(11, 19)}Z`;
/** A rate with few digits: 48,213 -> 48k, 1,520 -> 1.5k. */
const rate = (n: number): string => (n >= 10_000 ? `${(n / 1000).toFixed(0)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : n.toFixed(0));

/** replicate's plain lines: every SOURCE_DATA_READ_PROGRESS_MS milliseconds (default 10000; 0 = at every change). */
export function plainEveryMsFromEnv(): number {
  const raw = process.env.SOURCE_DATA_READ_PROGRESS_MS;
  const n = raw === undefined || raw.trim() === '' ? DEFAULT_PLAIN_MS : Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : DEFAULT_PLAIN_MS;
}

/** Whether a person watches stderr on a terminal while the protocol output goes elsewhere. */
export function watchedOnTerminal(out: ProgressOutput = process.stderr, stdoutIsTerminal = process.stdout.isTTY === true): boolean {
  return out.isTTY === true && !stdoutIsTerminal;
}

/**
 * The usable width of a terminal that reports `columns` (the last column is
 * left free: writing there wraps on some terminals). Infinity: no limit.
 */
export function usableWidth(columns: number | undefined): number {
  if (columns === Number.POSITIVE_INFINITY) return columns;
  const width = columns !== undefined && Number.isFinite(columns) && columns > 0 ? Math.floor(columns) : DEFAULT_WIDTH;
  return Math.max(1, width - 1);
}

/** Each part of the line, from the most important, as its forms from the longest to the shortest. */
function parts(snapshot: ProgressSnapshot, now: number): string[][] {
  const out: string[][] = [];
  const waits = snapshot.streams.filter((s) => s.phase === 'rate_limited' && s.waitUntil !== undefined && s.waitUntil > now);
  if (waits.length > 0) {
    const until = Math.max(...waits.map((s) => s.waitUntil ?? now));
    const seconds = Math.ceil((until - now) / 1000);
    const names = waits.map((s) => s.name).join(', ');
    out.push([`rate limit: ${names} waiting ${seconds} s, until ${clock(until)}`, `rate limit: waiting ${seconds} s, until ${clock(until)}`, `rate limit: ${seconds} s`]);
  }
  for (const s of snapshot.streams.filter((x) => x.phase === 'failed')) out.push([`${s.name} ${int(s.count)} FAILED`, `${s.name} FAILED`]);
  for (const s of snapshot.streams.filter((x) => x.phase === 'running' || x.phase === 'rate_limited' || x.phase === 'waiting')) {
    const count = `${s.name} ${int(s.count)}`;
    out.push(s.rate === undefined || s.phase !== 'running' ? [count] : [`${count} (${rate(s.rate)}/s)`, count]);
  }
  const done = snapshot.streams.filter((s) => s.phase === 'complete');
  if (done.length > 0) {
    out.push([`done: ${done.map((s) => `${s.name} ${int(s.count)}`).join(', ')}`, `${done.length} done (${int(done.reduce((n, s) => n + s.count, 0))})`]);
  }
  if (snapshot.requests !== undefined) {
    out.push([`${int(snapshot.requests)} requests, ${int(snapshot.rateLimitWaits ?? 0)} rate-limit waits`, `${int(snapshot.requests)} req`]);
  }
  return out;
}

/**
 * The line for a terminal `columns` wide (undefined or 0: DEFAULT_WIDTH;
 * Infinity: every part in its longest form). Never longer than the usable width.
 */
export function progressLine(snapshot: ProgressSnapshot, columns: number | undefined, now = Date.now()): string {
  const width = usableWidth(columns);
  const chosen: string[] = [];
  let used = 0;
  for (const forms of parts(snapshot, now)) {
    const room = width - used - (chosen.length > 0 ? SEPARATOR.length : 0);
    const form = forms.find((f) => f.length <= room);
    if (form === undefined) {
      // The most important part is shortened to fit; a later one that does not fit ends the line.
      if (chosen.length === 0) {
        const shortest = forms.at(-1) ?? '';
        chosen.push(shortest.length <= width ? shortest : `${shortest.slice(0, Math.max(0, width - 1))}…`);
      }
      break;
    }
    used += (chosen.length > 0 ? SEPARATOR.length : 0) + form.length;
    chosen.push(form);
  }
  return chosen.join(SEPARATOR);
}

interface Tally {
  count: number;
  phase: StreamPhase;
  waitUntil?: number | undefined;
  /** Counts sampled over the last RATE_WINDOW_MS, for the rate. */
  samples: { at: number; count: number }[];
}

/** The rate of a stream from its counts sampled over time; undefined until half a second is known. */
function measure(t: Tally, now: number): number | undefined {
  const list = t.samples;
  if (list.at(-1)?.count !== t.count || list.length === 1) list.push({ at: now, count: t.count });
  while (list.length > 2 && now - (list[1]?.at ?? now) >= RATE_WINDOW_MS) list.shift();
  const first = list[0];
  if (!first || now - first.at < 500) return undefined;
  return ((t.count - first.count) * 1000) / (now - first.at);
}

/** The status line; it watches a sync's counts (the record pipeline's CountObserver) by stream name. */
export class Progress {
  /** Whether anything is shown (a status line, or plain lines). */
  readonly active: boolean;
  private readonly options: ProgressOptions;
  private readonly out: ProgressOutput;
  private readonly tty: boolean;
  private readonly interval: number;
  private readonly now: () => number;
  private readonly tallies = new Map<string, Tally>();
  /** The rate-limit waits (by their end) already said to be over. */
  private readonly over = new Set<number>();
  private lastDraw = 0;
  private drawn = false;
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(options: ProgressOptions) {
    this.options = options;
    this.out = options.out ?? process.stderr;
    this.tty = watchedOnTerminal(this.out, options.stdoutIsTerminal);
    this.active = this.tty || options.plainEveryMs !== undefined;
    this.interval = this.tty ? REDRAW_MS : (options.plainEveryMs ?? 0);
    this.now = options.now ?? Date.now;
  }

  /** What watches a sync's counts for this display: itself, or nothing when it shows nothing. */
  observer(): this | undefined {
    return this.active ? this : undefined;
  }

  /** Show progress from now on: log lines go through the status line. */
  start(): void {
    if (!this.active || this.running) return;
    this.running = true;
    this.options.logger.routeThrough((level, message) => this.log(level, message));
    this.lastDraw = this.now(); // the first plain line comes after one interval, not at once
    this.snapshot(this.lastDraw);
    if (this.tty) {
      this.timer = setInterval(() => this.draw(), TICK_MS);
      this.timer.unref();
    }
  }

  /** Clear the status line; log lines go straight to stderr again. */
  stop(): void {
    if (!this.running) return;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.clear();
    this.running = false;
    this.options.logger.routeThrough(undefined);
  }

  started(stream: string): void {
    const t = this.tally(stream);
    if (!t) return;
    t.phase = 'waiting';
    t.waitUntil = undefined;
    this.changed();
  }

  counted(stream: string, records: number): void {
    const t = this.tally(stream);
    if (!t) return;
    t.count += records;
    // Records of a page received before the stream's next request began to wait (that request leaves while the
    // page is treated): the stream still waits, and the wait is said over once it has ended.
    if (!(t.phase === 'rate_limited' && t.waitUntil !== undefined && this.now() < t.waitUntil)) this.reading(t);
    this.changed();
  }

  waiting(stream: string, until: number | undefined): void {
    const t = this.tally(stream);
    if (!t) return;
    if (until === undefined) this.reading(t);
    else if (!finished(t)) {
      t.phase = 'rate_limited';
      t.waitUntil = until;
    }
    this.changed();
  }

  ended(stream: string, outcome: 'complete' | 'failed'): void {
    const t = this.tally(stream);
    if (!t) return;
    t.phase = outcome;
    this.changed();
  }

  /** The stream's figures; undefined when nothing is shown. */
  private tally(stream: string): Tally | undefined {
    if (!this.active) return undefined;
    let t = this.tallies.get(stream);
    if (!t) this.tallies.set(stream, (t = { count: 0, phase: 'waiting', samples: [] }));
    return t;
  }

  /** The stream reads again: a rate-limit wait it was in is over (said once per wait, whoever waited). */
  private reading(t: Tally): void {
    if (finished(t)) return;
    if (t.phase === 'rate_limited' && t.waitUntil !== undefined && !this.over.has(t.waitUntil)) {
      this.over.add(t.waitUntil);
      this.options.logger.log('INFO', `The rate-limit wait is over (it ended at ${clock(t.waitUntil)}); reading again.`);
    }
    t.phase = 'running';
    t.waitUntil = undefined;
  }

  /** Something changed: redraw if the last drawing is old enough. */
  private changed(): void {
    if (!this.running) return;
    const now = this.now();
    this.snapshot(now);
    if (now - this.lastDraw < this.interval) return;
    this.lastDraw = now;
    this.draw();
  }

  /** The figures now, with the rates measured. */
  private snapshot(now: number): ProgressSnapshot {
    const counts = this.options.requests?.();
    return {
      streams: [...this.tallies].map(([name, t]) => ({ name, count: t.count, phase: t.phase, waitUntil: t.waitUntil, rate: measure(t, now) })),
      ...(counts ? { requests: counts.requests, rateLimitWaits: counts.rateLimitWaits } : {}),
    };
  }

  private draw(): void {
    if (!this.running) return;
    const now = this.now();
    if (this.tty) {
      // The width is read at each drawing: the terminal may have been resized.
      this.out.write(`\r\x1b[K${this.options.logger.redact(progressLine(this.snapshot(now), this.out.columns, now))}`);
      this.drawn = true;
    } else {
      this.options.logger.print('INFO', progressLine(this.snapshot(now), Number.POSITIVE_INFINITY, now));
    }
  }

  private clear(): void {
    if (this.tty && this.drawn) {
      this.out.write('\r\x1b[K');
      this.drawn = false;
    }
  }

  /** Print a log line; on a terminal the status line is cleared first and drawn again under it. */
  private log(level: string, message: string): void {
    this.clear();
    this.options.logger.print(level, message);
    if (this.tty) this.draw();
  }
}

const finished = (t: Tally): boolean => t.phase === 'complete' || t.phase === 'failed';
