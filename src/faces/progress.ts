/**
 * Progress of a sync for a person at a terminal, for the Airbyte source and
 * the Singer tap (replicate counts rows in its own sink). When stderr is a
 * terminal and stdout is not (`read ... > out.jsonl`; protocol lines on the
 * same terminal would run through a status line): one status line there (src/progress: records and their rate per
 * stream, a rate-limit wait and when it ends, requests made), redrawn in
 * place, the face's log lines printed above it, and a line when a rate-limit
 * wait is over. The face's sink gets every event unchanged. In a pipe or a
 * file nothing is added: runners read stderr as a log, and the faces already
 * say everything there (the tap) or in LOG messages (Airbyte).
 */
import type { ConnectorError } from '../errors.js';
import { ForwardingSink, type Data, type LogLevel, type SyncSink } from '../engine/events.js';
import type { RequestCounts } from '../engine/session.js';
import type { StderrLogger } from '../process/output.js';
import { ProgressDisplay, type ProgressOutput } from '../progress/display.js';
import type { ProgressSnapshot, StreamPhase } from '../progress/line.js';
import type { StreamDefinition } from '../streams.js';

/** The session's counts the line shows. */
type RequestFigures = Pick<RequestCounts, 'requests' | 'rateLimitWaits'>;

export interface TerminalProgressOptions {
  readonly logger: StderrLogger;
  /** The run's request counts, once its session is open. */
  readonly requests: () => RequestFigures | undefined;
  /** Where to draw (default process.stderr); nothing is drawn unless it is a terminal. */
  readonly out?: ProgressOutput;
  /** Whether stdout is a terminal too (default: process.stdout's); then nothing is drawn. */
  readonly stdoutIsTerminal?: boolean;
  readonly now?: () => number;
}

export interface TerminalProgress {
  /** The face's sink, watched (the face's sink itself when stderr is not a terminal). */
  readonly sink: SyncSink;
  /** Whether a status line is drawn (stderr is a terminal). */
  readonly active: boolean;
  start(): void;
  stop(): void;
}

interface Tally {
  count: number;
  phase: StreamPhase;
  waitUntil?: number;
}

const clock = (ms: number): string => `${new Date(ms).toISOString().slice(11, 19)}Z`;

/** Every event passes to the face's sink; the figures of the status line are kept on the way. */
class WatchedSink extends ForwardingSink {
  readonly tallies = new Map<string, Tally>();
  private readonly changed: () => void;
  private readonly say: (level: LogLevel, message: string) => void;
  /** The rate-limit waits (by their end) already said to be over. */
  private readonly over = new Set<number>();

  constructor(inner: SyncSink, changed: () => void, say: (level: LogLevel, message: string) => void) {
    super(inner);
    this.changed = changed;
    this.say = say;
  }

  private tally(stream: StreamDefinition): Tally {
    let t = this.tallies.get(stream.name);
    if (!t) this.tallies.set(stream.name, (t = { count: 0, phase: 'waiting' }));
    return t;
  }

  private finished(t: Tally): boolean {
    return t.phase === 'complete' || t.phase === 'failed';
  }

  /** The stream reads again: a rate-limit wait it was in is over (said once per wait, whoever waited). */
  private reading(t: Tally): void {
    if (this.finished(t)) return;
    if (t.phase === 'rate_limited' && t.waitUntil !== undefined && !this.over.has(t.waitUntil)) {
      this.over.add(t.waitUntil);
      this.say('INFO', `The rate-limit wait is over (it ended at ${clock(t.waitUntil)}); reading again.`);
    }
    t.phase = 'running';
    delete t.waitUntil;
  }

  override streamStarted(stream: StreamDefinition): void | Promise<void> {
    this.tally(stream);
    this.changed();
    return this.inner.streamStarted(stream);
  }

  override streamRunning(stream: StreamDefinition, quotaReset?: number): void | Promise<void> {
    const t = this.tally(stream);
    if (quotaReset === undefined) this.reading(t);
    else if (!this.finished(t)) {
      t.phase = 'rate_limited';
      t.waitUntil = quotaReset;
    }
    this.changed();
    return this.inner.streamRunning(stream, quotaReset);
  }

  override records(stream: StreamDefinition, records: readonly Data[], extractedAt: number): void | Promise<void> {
    const t = this.tally(stream);
    t.count += records.length;
    this.reading(t);
    this.changed();
    return this.inner.records(stream, records, extractedAt);
  }

  override streamComplete(stream: StreamDefinition, skipped?: boolean): void | Promise<void> {
    this.tally(stream).phase = 'complete';
    this.changed();
    return this.inner.streamComplete(stream, skipped);
  }

  override streamIncomplete(stream: StreamDefinition, error: ConnectorError): void | Promise<void> {
    this.tally(stream).phase = 'failed';
    this.changed();
    return this.inner.streamIncomplete(stream, error);
  }

  override streamStopped(stream: StreamDefinition): void | Promise<void> {
    this.tally(stream).phase = 'failed';
    this.changed();
    return this.inner.streamStopped(stream);
  }
}

/** Whether a person watches stderr on a terminal while the protocol output goes elsewhere. */
export function watchedOnTerminal(out: ProgressOutput = process.stderr, stdoutIsTerminal = process.stdout.isTTY === true): boolean {
  return out.isTTY === true && !stdoutIsTerminal;
}

/** `sink`, watched for a status line on stderr when a person watches there; otherwise `sink` as it is. */
export function terminalProgress(sink: SyncSink, options: TerminalProgressOptions): TerminalProgress {
  const out = options.out ?? process.stderr;
  if (!watchedOnTerminal(out, options.stdoutIsTerminal)) return { sink, active: false, start: () => undefined, stop: () => undefined };
  const { logger } = options;
  let display: ProgressDisplay | undefined;
  const watched = new WatchedSink(
    sink,
    () => display?.changed(),
    (level, message) => logger.log(level, message),
  );
  const snapshot = (): ProgressSnapshot => {
    const counts = options.requests();
    return {
      streams: [...watched.tallies].map(([name, t]) => ({ name, count: t.count, phase: t.phase, ...(t.waitUntil === undefined ? {} : { waitUntil: t.waitUntil }) })),
      ...(counts ? { requests: counts.requests, rateLimitWaits: counts.rateLimitWaits } : {}),
    };
  };
  display = new ProgressDisplay({
    snapshot,
    // The display prints log lines itself (clear the status line, print, draw it again): straight to stderr.
    log: (level, message) => logger.print(level, message),
    redact: (text) => logger.redact(text),
    out,
    ...(options.now ? { now: options.now } : {}),
  });
  const shown = display;
  return {
    sink: watched,
    active: true,
    start: () => {
      logger.routeThrough((level, message) => shown.log(level, message));
      shown.start();
    },
    stop: () => {
      shown.stop();
      logger.routeThrough(undefined);
    },
  };
}
