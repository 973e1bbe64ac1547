/**
 * Progress of a replicate run on stderr. On a terminal: one status line,
 * redrawn in place. Otherwise (a pipe, a log file): a plain line every
 * SOURCE_DATA_READ_PROGRESS_MS milliseconds (default 10000; 0 = at every
 * change). Log lines and the final summary are printed in both cases.
 */
import type { LogLevel } from '../../engine/events.js';
import type { RequestCounts } from '../../engine/session.js';
import type { StderrLogger } from '../../output.js';
import type { StreamTally } from './sink.js';

const TTY_REDRAW_MS = 200;
const DEFAULT_PLAIN_MS = 10_000;

export interface ProgressSource {
  readonly tallies: ReadonlyMap<string, StreamTally>;
  readonly stats: () => RequestCounts | undefined;
}

function plainInterval(): number {
  const raw = process.env.SOURCE_DATA_READ_PROGRESS_MS;
  if (raw === undefined || raw.trim() === '') return DEFAULT_PLAIN_MS;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : DEFAULT_PLAIN_MS;
}

export function progressLine(source: ProgressSource, now = Date.now()): string {
  const streams: string[] = [];
  const waits: string[] = [];
  for (const [name, t] of source.tallies) {
    const mark = t.status === 'complete' ? ' done' : t.status === 'failed' ? ' FAILED' : '';
    streams.push(`${name} ${t.received}${mark}`);
    if (t.status === 'rate_limited' && t.quotaReset !== undefined && t.quotaReset > now) {
      waits.push(`${name} ${Math.ceil((t.quotaReset - now) / 1000)}s`);
    }
  }
  const stats = source.stats();
  const requests = stats ? ` | ${stats.requests} requests, ${stats.rateLimitWaits} rate-limit waits` : '';
  const waiting = waits.length > 0 ? ` | waiting for the rate limit: ${waits.join(', ')}` : '';
  return `${streams.join(', ')}${requests}${waiting}`;
}

export class Progress {
  private readonly logger: StderrLogger;
  private readonly source: ProgressSource;
  private readonly tty: boolean;
  private readonly interval: number;
  private lastDraw = 0;
  private drawn = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(logger: StderrLogger, source: ProgressSource, tty = process.stderr.isTTY === true) {
    this.logger = logger;
    this.source = source;
    this.tty = tty;
    this.interval = tty ? TTY_REDRAW_MS : plainInterval();
  }

  start(): void {
    this.lastDraw = Date.now(); // the first plain line comes after one interval, not at once
    // On a terminal, keep a rate-limit countdown moving even when nothing else happens.
    if (this.tty) {
      this.timer = setInterval(() => this.draw(), 1000);
      this.timer.unref();
    }
  }

  changed(): void {
    const now = Date.now();
    if (now - this.lastDraw < this.interval) return;
    this.lastDraw = now;
    this.draw();
  }

  private draw(): void {
    const line = this.logger.redact(progressLine(this.source));
    if (this.tty) {
      const width = process.stderr.columns ?? 120;
      process.stderr.write(`\r\x1b[K${line.length > width - 1 ? `${line.slice(0, width - 2)}…` : line}`);
      this.drawn = true;
    } else {
      this.logger.log('INFO', line);
    }
  }

  private clear(): void {
    if (this.tty && this.drawn) {
      process.stderr.write('\r\x1b[K');
      this.drawn = false;
    }
  }

  log(level: LogLevel, message: string): void {
    this.clear();
    this.logger.log(level, message);
    if (this.tty) this.draw();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.clear();
  }
}
