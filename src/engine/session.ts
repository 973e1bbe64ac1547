/**
 * One sync session, the same for every face: build the client from the
 * config, ask whose account the key reads (one /v1/me) before the face
 * prepares anything, and check the saved states against it (account.ts),
 * run the engine (once or more) through the record pipeline (pipeline.ts:
 * the records counted, the account put in every state the face is given,
 * the run's observer (run-observer.ts) told what each stream did), turn the
 * client's wait notices into stream events (a wait on a path is that
 * stream's rate limit), close. A face parses its own inputs (config file,
 * catalog, state), implements the emitter (a SyncSink) and says the summary
 * in its own words; it never sees the HTTP client.
 */
import type { AccountConfig, Config } from '../config/config.js';
import { findStreamByPath, type StreamDefinition } from '../streams.js';
import { ConfigError, ConnectorError, toConnectorError } from '../errors.js';
import type { ClientStats, DataReadApi } from '../client/types.js';
import type { CheckResult } from './connect.js';
import { checkStateAccounts, runAccount, type AccountNote, type RunAccount } from './account.js';
import type { LoadedSchemas } from './service-schemas.js';
import type { LogLevel, SyncSink } from './sync-sink.js';
import { RecordPipeline, type CountObserver } from './pipeline.js';
import type { StreamState } from './state.js';
import type { SelectedStream, SyncRequest, SyncResult } from './sync.js';
import type { RunObserver, RunRequestCounts } from './run-observer.js';

// The client and the engine are loaded by `open`.
type Engine = { readonly connect: typeof import('./connect.js'); readonly sync: typeof import('./sync.js') };

/** What the run cost in requests, for progress lines and summaries. */
export type RequestCounts = Omit<RunRequestCounts, 'rateLimitWaitMs'>;

export type SessionRequest = Omit<SyncRequest, 'config' | 'client' | 'sink' | 'pipeline'>;

/** Call a sink method from a client hook, which cannot wait: a failure (stdout closed) surfaces at the next awaited write. */
function fireAndForget(call: () => void | Promise<void>): void {
  try {
    const pending = call();
    if (pending instanceof Promise) pending.catch(() => undefined);
  } catch {
    // the same: the reader's next write reports it
  }
}

interface SessionOptions {
  /** With accounts: a field `account` the service sends itself is moved to `service_account` first (pipeline.ts). */
  readonly moveServiceAccount?: boolean | undefined;
}

/** A client's requests as the run counts them (its --summary's request counts). */
export function requestCountsOf(stats: ClientStats): RunRequestCounts {
  const { requests, retries, rateLimitWaits, rateLimitWaitedMs } = stats;
  return { requests, retries, rateLimitWaits, rateLimitWaitMs: rateLimitWaitedMs };
}

/** A run's closing words: "records: contacts 10, deletions 2; requests: 3, retries: 0, rate-limit waits: 0", `more` ("accounts: 3; ") before the requests. */
export function summaryLine(records: ReadonlyMap<string, number>, { requests, retries, rateLimitWaits }: RequestCounts, more = ''): string {
  return `records: ${[...records].map(([name, n]) => `${name} ${n}`).join(', ')}; ${more}requests: ${requests}, retries: ${retries}, rate-limit waits: ${rateLimitWaits}`;
}

/** Two counts of requests added (a run's, over its accounts' clients). */
export function addRequestCounts(a: RunRequestCounts, b: RunRequestCounts): RunRequestCounts {
  return { requests: a.requests + b.requests, retries: a.retries + b.retries, rateLimitWaits: a.rateLimitWaits + b.rateLimitWaits, rateLimitWaitMs: a.rateLimitWaitMs + b.rateLimitWaitMs };
}

/** Where the client's notes (a retry and why) go while no sync runs (the account check). */
type SessionLog = (level: LogLevel, message: string) => void | Promise<void>;

export class SyncSession {
  private readonly config: Config;
  private readonly engine: Engine;
  private readonly client: DataReadApi;
  private readonly counts = new Map<string, number>();
  private readonly report: RunObserver | undefined;
  /** Whether every record's pipeline moves the service's `account` aside (SessionOptions). */
  private readonly moveServiceAccount: boolean | undefined;
  /** The pipeline of the sync that runs now. */
  private running: RecordPipeline | undefined;
  /** The account the key reads, once /v1/me said: every state a sync of this session writes names it. */
  #account: RunAccount | undefined;
  /** Why /v1/me failed, when accountFor met it: what the next sync stops on. */
  #accountFailure: ConnectorError | undefined;

  private constructor(config: Config, log: SessionLog, engine: Engine, report: RunObserver | undefined, signal: AbortSignal | undefined, options: SessionOptions) {
    this.config = config;
    this.moveServiceAccount = options.moveServiceAccount;
    this.engine = engine;
    this.report = report;
    this.client = engine.connect.clientFromConfig(config, {
      onWait: (notice) => {
        const stream = findStreamByPath(notice.path);
        const sink = this.running;
        if (sink && stream && notice.reason === 'rate_limited') fireAndForget(() => sink.streamRunning(stream, notice.until));
      },
      onLog: (level, message) => fireAndForget(() => (this.running ? this.running.log(level, message) : log(level, message))),
      signal,
    });
    report?.setRequestCounts(() => requestCountsOf(this.client.stats));
  }

  /**
   * A session for a validated config; the client's notes outside a sync go to
   * `log`. `report`: the command's run report, fed with every sync's streams,
   * records, checkpoints, failures and request counts. `signal`: the run's
   * stop (process/interrupt.ts): once aborted, the session's requests never
   * settle, so the sync stalls where it is and reports nothing more. Close it when done.
   */
  static async open(config: Config, log: SessionLog, report?: RunObserver, signal?: AbortSignal, options: SessionOptions = {}): Promise<SyncSession> {
    const [connect, sync] = await Promise.all([import('./connect.js'), import('./sync.js')]);
    return new SyncSession(config, log, { connect, sync }, report, signal, options);
  }

  /** Records per stream so far, over every sync of the session (streams started, in order). */
  get records(): ReadonlyMap<string, number> {
    return this.counts;
  }

  /** The client's counts, the time of its rate-limit waits included (ms). */
  get clientStats(): RunRequestCounts {
    return requestCountsOf(this.client.stats);
  }

  get stats(): RequestCounts {
    const { requests, retries, rateLimitWaits } = this.client.stats;
    return { requests, retries, rateLimitWaits };
  }

  /**
   * GET /v1/me with this session's client (its full retry and rate-limit
   * patience), before a face prepares its output. Once it answers, the
   * session knows the account, and every state its syncs write names it
   * (account.ts): one /v1/me a run. `known`: the answer of a /v1/me this
   * account's key already had this run (the probe of service-outage.ts),
   * taken as this one's: no second request.
   */
  async verifyAccount(known?: CheckResult): Promise<CheckResult> {
    const result = known ?? (await this.engine.connect.verifyAccount(this.client, this.config));
    const { api_key: key, hash_key: hashKey } = this.config;
    const secrets = [key, hashKey].filter((s): s is string => s !== undefined);
    if (result.ok && result.account !== undefined) this.#account = runAccount(result.account, this.config.base_url, secrets);
    return result;
  }

  /** Why /v1/me failed, once accountFor met it: the failure the next sync stops on, before it writes anything. */
  get failure(): ConnectorError | undefined {
    return this.#accountFailure;
  }

  /** The account the key reads, once verifyAccount said. */
  get account(): RunAccount | undefined {
    return this.#account;
  }

  /**
   * Before a sync of `streams` from saved `states` (read, the tap): the
   * account verified, then the states the sync reads from (those of the
   * streams read incrementally: a full refresh ignores its state) checked
   * against it. Throws the ConfigError that refuses a state of another
   * account, before anything is read; returns what to
   * log: the account connected to, and states taken as this account's
   * (written before states named theirs, or a rename that
   * account_renamed_from confirms). When /v1/me itself fails (the key
   * refused, the service unreachable), the failure is the run's: the next
   * `run` reads nothing and reports it as the engine reports a run-wide
   * failure (every stream stopped, the cause said once). `known`: as for
   * verifyAccount.
   */
  async accountFor(states: ReadonlyMap<string, StreamState>, streams: readonly SelectedStream[], known?: CheckResult): Promise<AccountNote[]> {
    const many = [...states].filter(([, state]) => state.accounts !== undefined);
    if (many.length > 0) {
      const [name, state] = many[0] as [string, StreamState];
      const entries = Object.keys(state.accounts ?? {});
      throw new ConfigError(
        `The state of stream "${name}" holds the states of many accounts (${entries.map((e) => `"${e}"`).join(', ') || 'none'}), written by a config with accounts, ` +
          'but this config reads one account (api_key): nothing was read. Use the config with accounts, or pass the state of one entry alone, ' +
          `{"sync_watermark": ...} as it stands under "accounts" (e.g. jq '.accounts["${entries[0] ?? 'name'}"]' on each stream's state).`,
        { field: `state.${name}` },
      );
    }
    const verified = await this.verifyAccount(known);
    const account = this.#account;
    if (!verified.ok || account === undefined) {
      this.#accountFailure = verified.error ?? new ConnectorError(verified.failureType ?? 'system_error', verified.message, { runWide: true });
      return [];
    }
    const incremental = new Set(streams.filter((s) => s.mode === 'incremental').map((s) => s.stream.name));
    const used = new Map([...states].filter(([name]) => incremental.has(name)));
    const entry = (this.config as Partial<AccountConfig>).entry;
    return [{ level: 'INFO', message: verified.message }, ...checkStateAccounts(used, account, this.config.account_renamed_from, entry)];
  }

  /**
   * The stream schemas to declare, with this session's client: pinned (no
   * request) or merged with the service's description. A service that cannot
   * be reached is then known to the sync that follows (one series of retries).
   */
  async streamSchemas(): Promise<LoadedSchemas> {
    // Loaded here: Airbyte's read never asks (its catalog carries the schemas).
    const { schemasWith } = await import('./connect.js');
    return schemasWith(this.client, this.config);
  }

  /**
   * The service's now, on its own clock: the sync_watermark of one small page
   * of `stream` read from `since` (one request, with the client's retries).
   */
  async serviceNow(stream: StreamDefinition, since: string | undefined): Promise<string> {
    return this.engine.sync.serviceNow(this.client, stream, since);
  }

  /**
   * One sync of the given streams from the given states: every record through
   * the pipeline (pipeline.ts) to the face's `emitter`; `observer` (the
   * progress line) watches the counts.
   */
  async run(request: SessionRequest, emitter: SyncSink, observer?: CountObserver): Promise<SyncResult> {
    const pipeline = new RecordPipeline(emitter, {
      config: this.config,
      streams: request.streams,
      account: this.#account,
      report: this.report,
      counts: this.counts,
      observer,
      moveServiceAccount: this.moveServiceAccount,
    });
    this.report?.plan(
      request.streams.map(({ stream, mode }) => ({ name: stream.name, state: mode === 'incremental' ? request.states.get(stream.name) : undefined })),
    );
    this.running = pipeline;
    try {
      return await this.engine.sync.runSync({ ...request, config: this.config, client: this.client, sink: emitter, pipeline, failed: this.#accountFailure });
    } catch (err) {
      this.report?.fail(toConnectorError(err));
      throw err;
    } finally {
      this.running = undefined;
    }
  }

  /** "records: contacts 10, deletions 2; requests: 3, retries: 0, rate-limit waits: 0" */
  summary(): string {
    return summaryLine(this.records, this.stats);
  }

  close(): Promise<void> {
    return this.client.close();
  }
}
