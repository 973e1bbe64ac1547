/**
 * The Airbyte face of a sync: engine events become Airbyte messages on stdout.
 * With `echo` (stderr is a terminal), what the LOG messages and ERROR traces
 * say is also told to the person watching, on stderr.
 */
import { ConnectorError } from '../../errors.js';
import type { Data, LogLevel, SyncSink } from '../../engine/sync-sink.js';
import type { StreamState } from '../../engine/state.js';
import type { StreamDefinition } from '../../streams.js';
import { writeRecordLines, type LineWriter } from '../../runtime/output.js';
import * as msg from './protocol.js';

export class AirbyteSink implements SyncSink {
  private readonly out: LineWriter;
  private readonly redact: (text: string) => string;
  private readonly echo: ((level: LogLevel, message: string) => void) | undefined;
  /** Per stream, the UTF-8 of its RECORD lines' start, up to the record's data. */
  private readonly heads = new Map<string, Uint8Array>();
  /** Records per stream since that stream's previous STATE (sourceStats.recordCount). */
  private readonly sinceState = new Map<string, number>();
  /** Streams STARTED and not yet COMPLETE or INCOMPLETE, in start order. */
  private readonly open = new Set<string>();
  /** Per stream that said RUNNING: whether its last RUNNING was a plain one (no rate-limit reason). */
  private readonly running = new Map<string, 'plain' | 'rate_limited'>();

  constructor(out: LineWriter, redact: (text: string) => string, echo?: (level: LogLevel, message: string) => void) {
    this.out = out;
    this.redact = redact;
    this.echo = echo;
  }

  streamStarted(stream: StreamDefinition): Promise<void> {
    this.sinceState.set(stream.name, 0);
    this.open.add(stream.name);
    return this.out.write(msg.streamStatus(stream.name, 'STARTED'));
  }

  streamRunning(stream: StreamDefinition, quotaReset?: number): Promise<void> {
    // A plain RUNNING right after another (the stream's tombstones said it before its own read did) says nothing new.
    if (quotaReset === undefined && this.running.get(stream.name) === 'plain') return Promise.resolve();
    this.running.set(stream.name, quotaReset === undefined ? 'plain' : 'rate_limited');
    return this.out.write(msg.streamStatus(stream.name, 'RUNNING', quotaReset));
  }

  records(stream: StreamDefinition, records: readonly Data[], extractedAt: number): Promise<void> {
    let head = this.heads.get(stream.name);
    if (!head) this.heads.set(stream.name, (head = Buffer.from(msg.recordHead(stream.name), 'utf8')));
    this.sinceState.set(stream.name, (this.sinceState.get(stream.name) ?? 0) + records.length);
    const start = head;
    const write = (): Promise<void> => writeRecordLines((bytes) => this.out.write(bytes), records, start, Buffer.from(msg.recordTail(extractedAt), 'utf8'));
    // The protocol's order is STARTED, RUNNING, then records: tombstones may reach a stream before its own read has begun.
    return this.running.has(stream.name) ? write() : this.streamRunning(stream).then(write);
  }

  state(stream: StreamDefinition, state: StreamState): Promise<void> {
    return this.out.write(this.stateLine(stream, state));
  }

  /** A STATE line of the stream, counting the records since its previous one. */
  private stateLine(stream: StreamDefinition, state: StreamState): string {
    const count = this.sinceState.get(stream.name) ?? 0;
    this.sinceState.set(stream.name, 0);
    return msg.state(stream.name, state, count);
  }

  streamComplete(stream: StreamDefinition): Promise<void> {
    this.open.delete(stream.name);
    return this.out.write(msg.streamStatus(stream.name, 'COMPLETE'));
  }

  async streamIncomplete(stream: StreamDefinition, error: ConnectorError): Promise<void> {
    await this.streamStopped(stream);
    await this.error(error, stream.name);
  }

  streamStopped(stream: StreamDefinition): Promise<void> {
    this.open.delete(stream.name);
    return this.out.write(msg.streamStatus(stream.name, 'INCOMPLETE'));
  }

  /** One ERROR trace for the whole run, without a stream: every stream it stopped is INCOMPLETE above it. */
  runFailed(error: ConnectorError): Promise<void> {
    return this.error(error);
  }

  log(level: LogLevel, message: string): Promise<void> {
    this.echo?.(level, message);
    return this.out.write(msg.log(level, this.redact(message)));
  }

  outputClosed(): boolean {
    return this.out.closed() !== undefined;
  }

  /** An ERROR trace, redacted of secrets. */
  error(error: ConnectorError, stream?: string): Promise<void> {
    this.echo?.('ERROR', `${stream ? `${stream}: ` : ''}${error.message}`);
    this.failing(error, stream);
    return this.out.write(this.redact(msg.errorTrace(error, stream)));
  }

  /**
   * A failure the run ends with, known before its ERROR trace is written
   * (error() says it then): should the reader of stdout go away first, it is
   * still told on stderr with its exit status (run-end.ts), not lost with the trace.
   */
  failing(error: ConnectorError, stream?: string): void {
    this.out.tellsFailure(error, this.redact(`${stream ? `${stream}: ` : ''}${error.message}`));
  }

  /**
   * The last lines of a sync stopped by a signal: the `states` not written
   * yet (with accounts, checkpoints held back by the STATE cadence:
   * engine/accounts.ts), INCOMPLETE for every stream still open, then one
   * ERROR trace (transient: run again), which ends with `failed` (with
   * accounts, those that failed before the signal). Lines, not writes: the
   * caller puts them after whatever is already queued.
   */
  interrupted(signal: string, states: readonly (readonly [StreamDefinition, StreamState])[] = [], failed?: string): { lines: string; message: string } {
    const open = [...this.open];
    this.open.clear();
    const message =
      `The sync was interrupted (${signal}) before it finished` +
      (open.length > 0 ? `; streams not finished: ${open.join(', ')}` : '') +
      '. Every STATE written before this message is safe to resume from: the next sync continues there.' +
      (failed === undefined ? '' : ` ${failed}`);
    const lines =
      states.map(([stream, state]) => this.stateLine(stream, state)).join('') +
      open.map((name) => msg.streamStatus(name, 'INCOMPLETE')).join('') +
      this.redact(msg.errorTrace(new ConnectorError('transient_error', message)));
    return { lines, message };
  }
}
