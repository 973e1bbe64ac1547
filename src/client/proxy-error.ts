/** ProxyError: a request failed at the proxy, not at the API; how, and whether another attempt may help. */
import type { ProxyEndpoint } from '../network/proxy-url.js';

/**
 * How a request failed at the proxy:
 * - unreachable: the proxy cannot be reached, or it cannot reach the API (502/503/504); retried;
 * - timeout: no tunnel within request_timeout_seconds; retried;
 * - auth: the proxy wants credentials or refused them (407);
 * - refused: the proxy will not connect to the API (403, 405, other answers);
 * - tls: the proxy's own certificate is not trusted;
 * - protocol: the proxy did not answer in HTTP.
 */
export type ProxyFailure = 'unreachable' | 'timeout' | 'auth' | 'refused' | 'tls' | 'protocol';

export class ProxyError extends Error {
  readonly failure: ProxyFailure;
  /** e.g. ECONNREFUSED, HTTP_407; never UND_ERR_SOCKET (undici would retry that connection forever). */
  readonly code: string;
  readonly status: number | undefined;
  readonly endpoint: ProxyEndpoint;

  /** `message`: plain words that name the proxy by host:port only. */
  constructor(failure: ProxyFailure, endpoint: ProxyEndpoint, message: string, extra: { code: string; status?: number; cause?: unknown }) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'ProxyError';
    this.failure = failure;
    this.endpoint = endpoint;
    this.code = `ERR_PROXY_${extra.code}`;
    this.status = extra.status;
  }

  /** Worth another attempt: the proxy may come back, or reach the API next time. */
  get retryable(): boolean {
    return this.failure === 'unreachable' || this.failure === 'timeout';
  }
}
