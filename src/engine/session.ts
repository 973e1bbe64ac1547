/**
 * One sync session, the same for every face: tune the heap for a long read,
 * build the client from the config, check the account if the face wants to
 * before it prepares anything, run the engine (once or more) reporting to the
 * face's sink, turn the client's wait notices into that sink's stream events
 * (a wait on a path is that stream's rate limit), count the records that went
 * through, close. A face parses its own inputs (config file, catalog, state),
 * implements the SyncSink and says the summary in its own words; it never
 * sees the HTTP client.
 */
import type { Config } from '../config.js';
import { tuneHeapForStreaming } from '../heap.js';
import { findStreamByPath, type StreamDefinition } from '../streams.js';
import type { ConnectorError } from '../errors.js';
import type { DataReadApi } from '../client/types.js';
import type { CheckResult } from './connect.js';
import type { LoadedSchemas } from './service-schemas.js';
import type { Data, LogLevel, SyncSink } from './events.js';
import type { StreamState } from './state.js';
import type { SyncRequest, SyncResult } from './sync.js';

// The client and the engine are loaded by `open`, after the heap is tuned: the
// young generation must not grow on what loading them allocates (see heap.ts).
type Engine = { readonly connect: typeof import('./connect.js'); readonly sync: typeof import('./sync.js') };

/** What the run cost in requests, for progress lines and summaries. */
export interface RequestCounts {
  readonly requests: number;
  readonly retries: number;
  readonly rateLimitWaits: number;
}

export type SessionRequest = Omit<SyncRequest, 'config' | 'client' | 'sink'>;

/** Call a sink method from a client hook, which cannot wait: a failure (stdout closed) surfaces at the next awaited write. */
function fireAndForget(call: () => void | Promise<void>): void {
  try {
    const pending = call();
    if (pending instanceof Promise) pending.catch(() => undefined);
  } catch {
    // the same: the reader's next write reports it
  }
}

/** Every event passes to the face's sink; the records of each stream are counted on the way (into the session's counts). */
class CountingSink implements SyncSink {
  readonly counts: Map<string, number>;
  readonly sink: SyncSink;

  constructor(sink: SyncSink, counts: Map<string, number>) {
    this.sink = sink;
    this.counts = counts;
  }

  streamStarted(stream: StreamDefinition): void | Promise<void> {
    if (!this.counts.has(stream.name)) this.counts.set(stream.name, 0);
    return this.sink.streamStarted(stream);
  }

  streamRunning(stream: StreamDefinition, quotaReset?: number): void | Promise<void> {
    return this.sink.streamRunning(stream, quotaReset);
  }

  records(stream: StreamDefinition, records: readonly Data[], extractedAt: number): void | Promise<void> {
    this.counts.set(stream.name, (this.counts.get(stream.name) ?? 0) + records.length);
    return this.sink.records(stream, records, extractedAt);
  }

  state(stream: StreamDefinition, state: StreamState): void | Promise<void> {
    return this.sink.state(stream, state);
  }

  streamComplete(stream: StreamDefinition): void | Promise<void> {
    return this.sink.streamComplete(stream);
  }

  streamIncomplete(stream: StreamDefinition, error: ConnectorError): void | Promise<void> {
    return this.sink.streamIncomplete(stream, error);
  }

  streamStopped(stream: StreamDefinition): void | Promise<void> {
    return this.sink.streamStopped(stream);
  }

  runFailed(error: ConnectorError, stopped: readonly StreamDefinition[]): void | Promise<void> {
    return this.sink.runFailed(error, stopped);
  }

  log(level: LogLevel, message: string): void | Promise<void> {
    return this.sink.log(level, message);
  }
}

/** Where the client's notes (a retry and why) go while no sync runs (the account check). */
export type SessionLog = (level: LogLevel, message: string) => void | Promise<void>;

export class SyncSession {
  private readonly config: Config;
  private readonly engine: Engine;
  private readonly client: DataReadApi;
  private readonly counts = new Map<string, number>();
  /** The sink of the sync that runs now. */
  private running: CountingSink | undefined;

  private constructor(config: Config, log: SessionLog, engine: Engine) {
    this.config = config;
    this.engine = engine;
    this.client = engine.connect.clientFromConfig(config, {
      onWait: (notice) => {
        const stream = findStreamByPath(notice.path);
        const sink = this.running;
        if (sink && stream && notice.reason === 'rate_limited') fireAndForget(() => sink.streamRunning(stream, notice.until));
      },
      onLog: (level, message) => fireAndForget(() => (this.running ? this.running.log(level, message) : log(level, message))),
    });
  }

  /** A session for a validated config; the client's notes outside a sync go to `log`. Close it when done. */
  static async open(config: Config, log: SessionLog): Promise<SyncSession> {
    tuneHeapForStreaming();
    const [connect, sync] = await Promise.all([import('./connect.js'), import('./sync.js')]);
    return new SyncSession(config, log, { connect, sync });
  }

  /** Records per stream so far, over every sync of the session (streams started, in order). */
  get records(): ReadonlyMap<string, number> {
    return this.counts;
  }

  get stats(): RequestCounts {
    const { requests, retries, rateLimitWaits } = this.client.stats;
    return { requests, retries, rateLimitWaits };
  }

  /** GET /v1/me with this session's client (its full retry and rate-limit patience), before a face prepares its output. */
  verifyAccount(): Promise<CheckResult> {
    return this.engine.connect.verifyAccount(this.client, this.config);
  }

  /**
   * The stream schemas to declare, with this session's client: pinned (no
   * request) or merged with the service's description. A service that cannot
   * be reached is then known to the sync that follows (one series of retries).
   */
  async streamSchemas(streams?: readonly StreamDefinition[]): Promise<LoadedSchemas> {
    // Loaded here: Airbyte's read never asks (its catalog carries the schemas).
    const { schemasWith } = await import('./connect.js');
    return schemasWith(this.client, this.config, streams);
  }

  /** One sync of the given streams from the given states, reporting to `sink`. */
  async run(request: SessionRequest, sink: SyncSink): Promise<SyncResult> {
    const counting = new CountingSink(sink, this.counts);
    this.running = counting;
    try {
      return await this.engine.sync.runSync({ ...request, config: this.config, client: this.client, sink: counting });
    } finally {
      this.running = undefined;
    }
  }

  /** "records: contacts 10, deletions 2; requests: 3, retries: 0, rate-limit waits: 0" */
  summary(): string {
    const counts = [...this.records].map(([name, n]) => `${name} ${n}`).join(', ');
    const { requests, retries, rateLimitWaits } = this.stats;
    return `records: ${counts}; requests: ${requests}, retries: ${retries}, rate-limit waits: ${rateLimitWaits}`;
  }

  close(): Promise<void> {
    return this.client.close();
  }
}
