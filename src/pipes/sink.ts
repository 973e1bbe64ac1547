/**
 * The face's sink with a Pipes session listening: every event passes through
 * unchanged (awaited as the face awaits it); the records of each stream are
 * counted and its last checkpoint kept, and a stream that completes is
 * reported as a materialization, once the face has taken its completion.
 * `deferred` keeps the reports for `reportCompleted` (a command that may read
 * a stream twice in one run: replicate finishing an interrupted read).
 */
import type { Data, LogLevel, SyncSink } from '../engine/events.js';
import type { StreamState } from '../engine/state.js';
import type { ConnectorError } from '../errors.js';
import type { StreamDefinition } from '../streams.js';
import type { PipesSession } from './session.js';

export class PipesSink implements SyncSink {
  private readonly inner: SyncSink;
  private readonly pipes: PipesSession;
  private readonly deferred: boolean;
  private readonly counts = new Map<string, number>();
  private readonly watermarks = new Map<string, string>();
  private readonly completed = new Set<string>();

  constructor(inner: SyncSink, pipes: PipesSession, options: { deferred?: boolean } = {}) {
    this.inner = inner;
    this.pipes = pipes;
    this.deferred = options.deferred ?? false;
  }

  /** Report every stream that completed (for a deferred sink, after the run's last sync). */
  reportCompleted(): void {
    for (const name of this.completed) this.report(name);
  }

  private report(name: string): void {
    this.pipes.materialized({ stream: name, records: this.counts.get(name) ?? 0, syncWatermark: this.watermarks.get(name) ?? null });
  }

  streamStarted(stream: StreamDefinition): void | Promise<void> {
    if (!this.counts.has(stream.name)) this.counts.set(stream.name, 0);
    return this.inner.streamStarted(stream);
  }

  streamRunning(stream: StreamDefinition, quotaReset?: number): void | Promise<void> {
    return this.inner.streamRunning(stream, quotaReset);
  }

  records(stream: StreamDefinition, records: readonly Data[], extractedAt: number): void | Promise<void> {
    this.counts.set(stream.name, (this.counts.get(stream.name) ?? 0) + records.length);
    return this.inner.records(stream, records, extractedAt);
  }

  state(stream: StreamDefinition, state: StreamState): void | Promise<void> {
    if (state.sync_watermark !== undefined) this.watermarks.set(stream.name, state.sync_watermark);
    return this.inner.state(stream, state);
  }

  async streamComplete(stream: StreamDefinition): Promise<void> {
    await this.inner.streamComplete(stream);
    this.completed.add(stream.name);
    if (!this.deferred) this.report(stream.name);
  }

  streamIncomplete(stream: StreamDefinition, error: ConnectorError): void | Promise<void> {
    return this.inner.streamIncomplete(stream, error);
  }

  streamStopped(stream: StreamDefinition): void | Promise<void> {
    return this.inner.streamStopped(stream);
  }

  runFailed(error: ConnectorError, stopped: readonly StreamDefinition[]): void | Promise<void> {
    return this.inner.runFailed(error, stopped);
  }

  log(level: LogLevel, message: string): void | Promise<void> {
    return this.inner.log(level, message);
  }
}
