/**
 * Progress of a replicate run on stderr, drawn by the face-neutral display
 * (src/progress): on a terminal one status line in place (rows and rows/s per
 * stream, the rate-limit wait and its end, requests); otherwise a plain line
 * every SOURCE_DATA_READ_PROGRESS_MS milliseconds (default 10000; 0 = at
 * every change). Log lines and the final summary are printed in both cases.
 */
import type { LogLevel } from '../../engine/events.js';
import type { StderrLogger } from '../../process/output.js';
import { ProgressDisplay, type ProgressOutput } from '../../progress/display.js';
import type { ProgressSnapshot } from '../../progress/line.js';
import type { RequestCounts as SessionCounts } from '../../engine/session.js';
import type { StreamTally } from './sink.js';

const DEFAULT_PLAIN_MS = 10_000;

/** Requests made so far (the session's counts; retries are not shown). */
type RequestCounts = Pick<SessionCounts, 'requests' | 'rateLimitWaits'>;

export interface ProgressSource {
  readonly tallies: ReadonlyMap<string, StreamTally>;
  readonly requests: () => RequestCounts | undefined;
}

function plainInterval(): number {
  const raw = process.env.SOURCE_DATA_READ_PROGRESS_MS;
  if (raw === undefined || raw.trim() === '') return DEFAULT_PLAIN_MS;
  const n = Number(raw);
  return Number.isFinite(n) && n >= 0 ? n : DEFAULT_PLAIN_MS;
}

export function progressSnapshot(source: ProgressSource): ProgressSnapshot {
  const counts = source.requests();
  return {
    streams: [...source.tallies].map(([name, t]) => ({
      name,
      count: t.received,
      phase: t.status,
      ...(t.quotaReset === undefined ? {} : { waitUntil: t.quotaReset }),
    })),
    ...(counts ? { requests: counts.requests, rateLimitWaits: counts.rateLimitWaits } : {}),
  };
}

export class Progress {
  private readonly display: ProgressDisplay;

  constructor(logger: StderrLogger, source: ProgressSource, out: ProgressOutput = process.stderr) {
    this.display = new ProgressDisplay({
      snapshot: () => progressSnapshot(source),
      log: (level, message) => logger.log(level, message),
      redact: (text) => logger.redact(text),
      out,
      plainEveryMs: plainInterval(),
    });
  }

  start(): void {
    this.display.start();
  }

  changed(): void {
    this.display.changed();
  }

  log(level: LogLevel, message: string): void {
    this.display.log(level, message);
  }

  stop(): void {
    this.display.stop();
  }
}
