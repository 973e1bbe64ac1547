/**
 * The report of one sync command (Airbyte `read`, the tap's sync,
 * `replicate`): what each stream did (status, records emitted or written,
 * tombstones, the watermark before and after, of the last STATE), what the
 * run cost in requests and rate-limit waits, and how it ended (status, exit
 * status, failure type and message, start and end). The command line
 * starts a RunRecorder when the command starts, the engine tells it what
 * happens as a RunObserver (records, checkpoints, stream ends, the run's
 * failure), `replicate` adds what its store wrote, and the command line
 * finishes it with the exit status. Every writer of a summary
 * (`--summary FILE`, Dagster Pipes) reads the same RunSummary. No config value
 * is ever copied in; the message is redacted of the secrets.
 */
import type { ConnectorError } from '../errors.js';
import { exitStatusFor } from '../runtime/exit-status.js';
import type { RunStatus, RunSummary, SchemaChangeSummary, StreamStatus, StreamSummary } from './run-summary-schema.js';
import type { AccountOutcome, RunObserver, RunRequestCounts, StreamEnd } from '../engine/run-observer.js';
import type { StreamState } from '../engine/state.js';

export type { RunSummary, StreamSummary } from './run-summary-schema.js';
/** How a stream ended, as the listeners of its end are told (Pipes reads it from here: it imports no engine module). */
export type { StreamEnd };

/** Which command ran: Airbyte's `read`, the tap's sync, `replicate`. */
export type RunCommand = 'read' | 'sync' | 'replicate';

interface StreamTrack {
  readonly name: string;
  ended: StreamEnd | undefined;
  records: number;
  tombstones: number;
  /** Records the face wrote, when it says (replicate): replaces `records`. */
  written: number | undefined;
  states: number;
  before: string | null;
  after: string | null;
  /** The changes of its table's columns (replicate), when told. */
  schemaChanges: SchemaChangeSummary[] | undefined;
}

/** Kubernetes' termination message holds 4 KiB: the summary must fit it. */
export const SUMMARY_MAX_BYTES = 4096;
const MESSAGE_MAX_CHARS = 1500;

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

export class RunRecorder implements RunObserver {
  readonly command: RunCommand;
  private readonly now: () => number;
  private readonly startedAt: number;
  private readonly streams = new Map<string, StreamTrack>();
  /** Every failure told, in order. */
  private readonly failures: ConnectorError[] = [];
  private signal: string | undefined;
  private counts: () => RunRequestCounts | undefined = () => undefined;
  private accounts: (() => AccountOutcome[]) | undefined;
  private redactText: (text: string) => string = (text) => text;
  private readonly endListeners: ((stream: StreamSummary, end: StreamEnd) => void)[] = [];
  private finished: RunSummary | undefined;
  private readonly version: string;

  /** @param options.version the connector's version (the command line gives it) */
  constructor(command: RunCommand, options: { now?: () => number; version?: string } = {}) {
    this.command = command;
    this.version = options.version ?? 'unknown';
    this.now = options.now ?? Date.now;
    this.startedAt = this.now();
  }

  /** Redact messages with this (the logger's, once the key is known). */
  setRedact(redact: (text: string) => string): void {
    this.redactText = redact;
  }

  /** With accounts in the config: where the summary's per-account entries are read from. */
  setAccounts(accounts: () => AccountOutcome[]): void {
    this.accounts = accounts;
  }

  /** Where the request counts are read from at the end (the session's client). */
  setRequestCounts(counts: () => RunRequestCounts): void {
    this.counts = counts;
  }

  /**
   * The streams the run means to sync, in order, with the state each starts
   * from (full_refresh streams: none). A stream planned again keeps its
   * first watermark-before once anything happened to it (a second pass of
   * replicate); before that, the later plan's state is the one it starts from
   * (streams named before their states are read). A plan without a state
   * never forgets a watermark already known (replicate's heal pass reads
   * from no state, yet started from the saved one).
   */
  plan(streams: readonly { readonly name: string; readonly state?: StreamState | undefined }[]): void {
    for (const { name, state } of streams) {
      const before = state?.sync_watermark ?? null;
      const known = this.streams.get(name);
      if (known !== undefined && (known.ended !== undefined || known.records !== 0 || known.states !== 0 || (state === undefined && known.before !== null))) continue;
      const t = this.track(name);
      t.before = before;
      t.after = before;
    }
  }

  private track(name: string): StreamTrack {
    let t = this.streams.get(name);
    if (!t) {
      t = { name, ended: undefined, records: 0, tombstones: 0, written: undefined, states: 0, before: null, after: null, schemaChanges: undefined };
      this.streams.set(name, t);
    }
    return t;
  }

  /** Records that went out for the stream; `tombstones` of them are tombstones. */
  records(name: string, records: number, tombstones = 0): void {
    const t = this.track(name);
    t.records += records;
    t.tombstones += tombstones;
  }

  /** What the face wrote for the stream in the end (replicate's rows and the watermark it committed), replacing what was counted on the way. */
  written(name: string, records: number, tombstones?: number, savedWatermark?: string | null): void {
    const t = this.track(name);
    t.written = records;
    if (tombstones !== undefined) t.tombstones = tombstones;
    // The watermark the face saved (null: none this run, the one it started from stands), not a STATE it was handed but lost.
    if (savedWatermark !== undefined) t.after = savedWatermark ?? t.before;
  }

  /** The changes of the stream table's columns the run made and left for the next run (replicate), replacing those told before. */
  schemaChanges(name: string, changes: readonly SchemaChangeSummary[]): void {
    this.track(name).schemaChanges = [...changes];
  }

  /** A checkpoint (STATE) of the stream: its watermark is the watermark after. */
  state(name: string, state: StreamState): void {
    const t = this.track(name);
    t.states += 1;
    t.after = state.sync_watermark ?? t.after;
  }

  /** The stream ended: read to the end, not offered by the service (skipped), failed on its own, or stopped by the run's failure. */
  streamEnded(name: string, end: StreamEnd, error?: ConnectorError): void {
    const t = this.track(name);
    // A stream read twice (replicate's second pass) ends as its last pass did.
    t.ended = end;
    if (error && end === 'incomplete') this.failures.push(error);
    const summary = this.streamSummary(t);
    for (const listener of this.endListeners) {
      try {
        listener(summary, end);
      } catch {
        // a listener's failure is its own
      }
    }
  }

  /** Called with each stream's summary and how it ended, as the stream ends (Dagster Pipes' materializations). */
  onStreamEnd(listener: (stream: StreamSummary, end: StreamEnd) => void): void {
    this.endListeners.push(listener);
  }

  /** A failure of the run (the summary tells the first one whose type the exit status is, else the first). */
  fail(error: ConnectorError): void {
    this.failures.push(error);
  }

  /** The command was stopped by a signal. */
  interrupted(signal: string): void {
    this.signal ??= signal;
  }

  /** The failure that explains `exitCode`: the first of the type that exit status stands for, else the first. */
  private causeOf(exitCode: number): ConnectorError | undefined {
    return this.failures.find((f) => exitStatusFor(f.failureType) === exitCode) ?? this.failures[0];
  }

  private streamSummary(t: StreamTrack): StreamSummary {
    const records = t.written ?? t.records;
    const status: StreamStatus =
      t.ended === 'complete' || t.ended === 'skipped'
        ? t.ended
        : t.ended === 'incomplete' || t.ended === 'partial' || records > 0 || t.states > 0
          ? 'incomplete'
          : 'skipped';
    return {
      name: t.name,
      status,
      records,
      tombstones: t.tombstones,
      sync_watermark_before: t.before,
      sync_watermark_after: t.after,
      ...(t.schemaChanges === undefined ? {} : { schema_changes: [...t.schemaChanges] }),
    };
  }

  /** The summary so far, as if the command ended now with `exitCode`. */
  snapshot(exitCode: number): RunSummary {
    const finishedAt = this.now();
    const counts = this.counts();
    const failure = this.causeOf(exitCode);
    const status: RunStatus = this.signal !== undefined ? 'interrupted' : exitCode === 0 ? 'succeeded' : 'failed';
    const message =
      this.signal !== undefined
        ? `Interrupted by ${this.signal}; every checkpoint written before it is safe to resume from.`
        : exitCode === 0
          ? null
          : failure
            ? truncate(this.redactText(failure.message), MESSAGE_MAX_CHARS)
            : null;
    return {
      summary_version: 1,
      command: this.command,
      status,
      exit_code: exitCode,
      failure_type: exitCode === 0 || this.signal !== undefined ? null : (failure?.failureType ?? null),
      message,
      started_at: new Date(this.startedAt).toISOString(),
      finished_at: new Date(finishedAt).toISOString(),
      duration_seconds: Math.max(0, finishedAt - this.startedAt) / 1000,
      connector_version: this.version,
      streams: [...this.streams.values()].map((t) => this.streamSummary(t)),
      requests: counts?.requests ?? 0,
      retries: counts?.retries ?? 0,
      rate_limit_waits: counts?.rateLimitWaits ?? 0,
      rate_limit_wait_seconds: Math.round(counts?.rateLimitWaitMs ?? 0) / 1000,
      // Each account's message holds the service's words, as the run's does: redacted alike.
      ...(this.accounts === undefined
        ? {}
        : { accounts: this.accounts().map((a) => (a.message === null ? a : { ...a, message: this.redactText(a.message) })) }),
    };
  }

  /** The final summary; the first call fixes it (a signal arriving later does not change it). */
  finish(exitCode: number): RunSummary {
    this.finished ??= this.snapshot(exitCode);
    return this.finished;
  }
}

/**
 * The summary as one line of JSON that fits SUMMARY_MAX_BYTES: its message
 * shortened if needed, then schema changes left out (the longest list's
 * last first), each stream saying how many it left out.
 */
export function summaryJson(summary: RunSummary): string {
  let text = JSON.stringify(summary);
  let message = summary.message;
  while (Buffer.byteLength(text) > SUMMARY_MAX_BYTES && message !== null && message.length > 40) {
    message = truncate(message, Math.floor(message.length / 2));
    text = JSON.stringify({ ...summary, message });
  }
  if (Buffer.byteLength(text) <= SUMMARY_MAX_BYTES) return text;
  const streams = summary.streams.map((s) => ({ ...s, ...(s.schema_changes === undefined ? {} : { schema_changes: [...s.schema_changes] }) }));
  for (;;) {
    let longest: StreamSummary | undefined;
    for (const s of streams) if ((s.schema_changes?.length ?? 0) > (longest?.schema_changes?.length ?? 0)) longest = s;
    if (longest === undefined || Buffer.byteLength(text) <= SUMMARY_MAX_BYTES) return text;
    longest.schema_changes?.pop();
    longest.schema_changes_omitted = (longest.schema_changes_omitted ?? 0) + 1;
    text = JSON.stringify({ ...summary, message, streams });
  }
}
