/**
 * What every dispatcher of the client shares, direct or through a proxy
 * (route.ts, tunnel.ts): the request interface the client needs, and the
 * options of each undici pool (HTTP/1.1, no pipelining, one connection per
 * request in flight, the request timeout on connect, headers and body).
 */
import type { Dispatcher, Pool as UndiciPool } from 'undici';

/** What the client needs of a dispatcher. */
export interface RequestDispatcher {
  request(options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData>;
  close(): Promise<void>;
}

export interface PoolSettings {
  /** max_concurrent_requests: one connection per request in flight. */
  readonly connections: number;
  readonly keepAliveTimeout: number;
  /** request_timeout_seconds, in ms: connecting, headers, body. */
  readonly timeoutMs: number;
}

/** The options of every pool the client uses: HTTP/1.1, no pipelining, one connection per request in flight. */
export function poolOptions(settings: PoolSettings): UndiciPool.Options {
  return {
    connections: settings.connections,
    pipelining: 1,
    allowH2: false,
    keepAliveTimeout: settings.keepAliveTimeout,
    connectTimeout: settings.timeoutMs,
    headersTimeout: settings.timeoutMs,
    bodyTimeout: settings.timeoutMs,
  };
}
