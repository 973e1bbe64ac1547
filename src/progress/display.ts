/**
 * Progress for people on stderr, for any face. On a terminal: one status
 * line (progress/line.ts) redrawn in place at most every REDRAW_MS, and once
 * a second while nothing happens so that a rate-limit countdown moves; a log
 * line clears it, is printed, and the status line comes back under it.
 * Otherwise (a pipe, a log file): a plain log line every `plainEveryMs`
 * (0: at every change) and nothing drawn in place.
 *
 * Rates are measured here from the counts over the last RATE_WINDOW_MS.
 */
import { progressLine, type ProgressSnapshot } from './line.js';

const REDRAW_MS = 200;
const TICK_MS = 1000;
const RATE_WINDOW_MS = 5000;

/** Where the line is drawn: process.stderr, or in tests anything with the same three members. */
export interface ProgressOutput {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

export interface ProgressOptions {
  /** The figures, without rates (the display measures them). */
  readonly snapshot: () => ProgressSnapshot;
  /** Print one log line (it goes to the same output). */
  readonly log: (level: string, message: string) => void;
  readonly out?: ProgressOutput;
  /** Applied to every line drawn (secrets out). */
  readonly redact?: (text: string) => string;
  /** Not on a terminal: milliseconds between plain progress lines (0 = at every change). */
  readonly plainEveryMs?: number;
  readonly now?: () => number;
}

/** Per-stream rates from counts sampled over time. */
class RateMeter {
  private readonly samples = new Map<string, { at: number; count: number }[]>();

  rate(name: string, count: number, now: number): number | undefined {
    let list = this.samples.get(name);
    if (!list) this.samples.set(name, (list = []));
    if (list.at(-1)?.count !== count || list.length === 1) list.push({ at: now, count });
    while (list.length > 2 && now - (list[1]?.at ?? now) >= RATE_WINDOW_MS) list.shift();
    const first = list[0];
    if (!first || now - first.at < 500) return undefined;
    return ((count - first.count) * 1000) / (now - first.at);
  }
}

export class ProgressDisplay {
  private readonly options: ProgressOptions;
  private readonly out: ProgressOutput;
  private readonly tty: boolean;
  private readonly interval: number;
  private readonly now: () => number;
  private readonly meter = new RateMeter();
  private lastDraw = 0;
  private drawn = false;
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(options: ProgressOptions) {
    this.options = options;
    this.out = options.out ?? process.stderr;
    this.tty = this.out.isTTY === true;
    this.interval = this.tty ? REDRAW_MS : (options.plainEveryMs ?? 10_000);
    this.now = options.now ?? Date.now;
  }

  start(): void {
    this.running = true;
    this.lastDraw = this.now(); // the first plain line comes after one interval, not at once
    this.sample(this.lastDraw);
    if (this.tty) {
      this.timer = setInterval(() => this.draw(), TICK_MS);
      this.timer.unref();
    }
  }

  /** Something changed: redraw if the last drawing is old enough. */
  changed(): void {
    if (!this.running) return;
    const now = this.now();
    this.sample(now);
    if (now - this.lastDraw < this.interval) return;
    this.lastDraw = now;
    this.draw();
  }

  /** The figures now, with the rates measured. */
  private sample(now: number): ProgressSnapshot {
    const base = this.options.snapshot();
    return { ...base, streams: base.streams.map((s) => ({ ...s, rate: s.rate ?? this.meter.rate(s.name, s.count, now) })) };
  }

  /** The line as it would be drawn now, for a terminal `columns` wide. */
  line(columns = this.out.columns): string {
    const now = this.now();
    const text = progressLine(this.sample(now), columns, now);
    return this.options.redact ? this.options.redact(text) : text;
  }

  private draw(): void {
    if (!this.running) return;
    if (this.tty) {
      // The width is read at each drawing: the terminal may have been resized.
      this.out.write(`\r\x1b[K${this.line()}`);
      this.drawn = true;
    } else {
      this.options.log('INFO', this.line(Number.POSITIVE_INFINITY));
    }
  }

  private clear(): void {
    if (this.tty && this.drawn) {
      this.out.write('\r\x1b[K');
      this.drawn = false;
    }
  }

  /** Print a log line; on a terminal the status line is cleared first and drawn again under it. */
  log(level: string, message: string): void {
    this.clear();
    this.options.log(level, message);
    if (this.tty) this.draw();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.clear();
    this.running = false;
  }
}
