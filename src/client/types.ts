/**
 * The API client's public shape. The client knows HTTP and the Data-Read API;
 * it knows nothing of Airbyte or Singer. The stream reader depends only on this.
 */
import type { Me } from '../schemas/resources.js';

export interface ClientOptions {
  /** Address before `/v1`, e.g. `https://api.example.com` (no trailing slash needed). */
  readonly baseUrl: string;
  readonly apiKey: string;
  /** e.g. `source-data-read/0.2.0 (+https://github.com/...)`. */
  readonly userAgent: string;
  /** Per-request timeout (headers and body), milliseconds. */
  readonly timeoutMs: number;
  /** Retries of one request on 429/5xx/network faults/timeouts/unparsable bodies. */
  readonly maxRetries: number;
  /** Longest single wait accepted (Retry-After or RateLimit-Reset), seconds. Longer: throw WaitTooLongError. */
  readonly maxWaitSeconds: number;
  /** Requests in flight never exceed this, across every caller of this client. */
  readonly maxConcurrent: number;
  /** First backoff of the growing, jittered waits (ms); default 1000. Tests shorten it. */
  readonly retryBaseMs?: number;
  /** Cap of one backoff wait (ms); default 60000. */
  readonly retryMaxMs?: number;
  /** The most of one answer's body the client reads, bytes, before and after decompression; default 64 MiB. Tests lower it. */
  readonly maxBodyBytes?: number;
  /** Told about every wait the client makes before a request (pacing, Retry-After, backoff). */
  readonly onWait?: (notice: WaitNotice) => void;
  /**
   * The sentence that ends the errors which stop the caller (retries
   * exhausted, service unreachable, a rate-limit wait too long): what happens
   * next. Default: the sync stops and the next one resumes from the saved
   * state. A connection check, which has no state, passes ''.
   */
  readonly stopNote?: string;
  /**
   * How the errors name the retry limit after their count of attempts: "9
   * attempts over 44 s (1 + max_retries 8)". Default `max_retries N`; a
   * command that retries fewer times than the config says (check, discover)
   * names its own limit and the config's.
   */
  readonly retryLimit?: string;
  /**
   * How the errors name the setting that holds the key, where they tell to
   * check it (a 401): default `api_key`. The client knows no more of the
   * config: a caller reading one entry of a list of keys names that entry's.
   */
  readonly keySetting?: string;
  /** Told what a user should see (a retry and why); never includes the key. */
  readonly onLog?: (level: 'INFO' | 'WARN', message: string) => void;
  /** An HTTP(S) proxy, `http://[user:password@]host:port`; wins over the environment. */
  readonly proxyUrl?: string | undefined;
  /** PEM certificates trusted besides the default certificate authorities, for the API and an https:// proxy. */
  readonly caCertificate?: string | undefined;
  /** Where HTTPS_PROXY, NO_PROXY, ... are read (default: process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Injection points for tests. */
  readonly random?: () => number;
  readonly now?: () => number;
  /** Injection point for tests: how the client sleeps (default: a timer, cancelled by close()). */
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * The run's stop (a SIGTERM/SIGINT): once aborted, the request in flight is
   * aborted, waits end, and every request pending or made later never
   * settles: the process is ending, and nothing after the stop is reported.
   */
  readonly signal?: AbortSignal | undefined;
}

export interface WaitNotice {
  /** rate_limited: pacing on RateLimit-* or a 429/503 Retry-After; backoff: retry after a fault. */
  readonly reason: 'rate_limited' | 'backoff';
  readonly waitMs: number;
  /** Epoch ms when the wait ends (Airbyte's quota_reset for rate limits). */
  readonly until: number;
  readonly path: string;
}

/** Only the query parameters the API documents. */
export interface ListQuery {
  readonly updated_since?: string;
  readonly cursor?: string;
  readonly limit: number;
}

export interface RawPage {
  /** Records as received (not yet checked for `id`). */
  readonly data: readonly unknown[];
  readonly next_cursor: string | null;
  readonly has_more: boolean;
  readonly sync_watermark: string;
}

export interface ClientStats {
  requests: number;
  retries: number;
  /** Waits caused by RateLimit-* pacing or Retry-After. */
  rateLimitWaits: number;
  /** Responses with status 429. */
  throttled: number;
  waitedMs: number;
  /** Of waitedMs, the rate-limit waits (RateLimit-* pacing, Retry-After). */
  rateLimitWaitedMs: number;
}

export interface DataReadApi {
  /** GET /v1/me. */
  me(): Promise<Me>;
  /**
   * GET /v1/openapi.json: the service's own description of its interface, as
   * parsed JSON (numbers kept exact), not checked: reading it is the caller's
   * business (src/schemas/service-description.ts).
   */
  description(): Promise<unknown>;
  /** GET a list page; envelope validated (all four fields, right types). */
  list(path: string, query: ListQuery): Promise<RawPage>;
  readonly stats: ClientStats;
  close(): Promise<void>;
}
