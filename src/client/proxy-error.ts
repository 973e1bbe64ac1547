/**
 * What undici's ProxyAgent does not say: how a request failed at the proxy,
 * in plain words that name the proxy by host:port and the setting it came
 * from, never its credentials. ProxyPool, the pool to the proxy that
 * ProxyAgent opens its CONNECT tunnels with (its `clientFactory`), reads the
 * proxy's answer (a 407 and its challenge, 403, 502) and its failures, which
 * ProxyAgent would reduce to "Proxy response (407) !== 200".
 */
import { Pool, type Dispatcher } from 'undici';
import type { ProxyEndpoint } from '../network/proxy-url.js';
import { errorCode } from './retry.js';
import { duration } from './redact.js';

// Not `import ... from 'node:http'`: an ES import of node:http reads all of its exports, whose lazy WebSocket and
// friends load Node's own copy of undici, about 20 ms of every start for a table of reason phrases.
const { STATUS_CODES } = process.getBuiltinModule('node:http');

/**
 * How a request failed at the proxy: unreachable (down, or it cannot reach
 * the API: 502/503/504) and timeout (no tunnel within request_timeout_seconds)
 * are retried; auth (407), refused (403, other answers), tls (its certificate
 * is not trusted) and protocol (not HTTP, or not TLS) are not.
 */
export type ProxyFailure = 'unreachable' | 'timeout' | 'auth' | 'refused' | 'tls' | 'protocol';

export class ProxyError extends Error {
  readonly failure: ProxyFailure;
  /** ERR_PROXY_ECONNREFUSED, ERR_PROXY_HTTP_407, ...: never UND_ERR_SOCKET (undici would retry that connection forever). */
  readonly code: string;

  constructor(failure: ProxyFailure, message: string, code: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'ProxyError';
    this.failure = failure;
    this.code = `ERR_PROXY_${code}`;
  }

  get retryable(): boolean {
    return this.failure === 'unreachable' || this.failure === 'timeout';
  }
}

const named = (p: ProxyEndpoint): string => `the proxy ${p.display} (${p.source})`;

/** A failure while reaching the proxy or waiting for its answer to CONNECT. */
function reachError(proxy: ProxyEndpoint, err: unknown, timeoutMs: number): ProxyError {
  const code = errorCode(err) ?? 'ERROR';
  const p = named(proxy);
  const as = (failure: ProxyFailure, message: string): ProxyError => new ProxyError(failure, message, code, err);
  if (code === 'ECONNREFUSED') return as('unreachable', `${p} refused the connection (ECONNREFUSED)`);
  if (/^(ENOTFOUND|EAI_)/.test(code)) return as('unreachable', `the host name of ${p} could not be resolved (DNS ${code})`);
  if (/^UND_ERR_(CONNECT|HEADERS)_TIMEOUT$/.test(code)) return as('timeout', `${p} opened no tunnel within ${duration(timeoutMs)} (request_timeout_seconds)`);
  if (/^(CERT_|ERR_TLS_CERT|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED|SELF_SIGNED_CERT)/.test(code)) {
    return as('tls', `the TLS certificate of ${p} is not trusted (${code}); if a private certificate authority signed it, give that CA's certificate in ca_certificate`);
  }
  if (/^(ERR_SSL_|EPROTO$)/.test(code)) return as('protocol', `${p} did not answer in TLS (${code}); if it is a plain HTTP proxy, its address starts with http://`);
  if (code.startsWith('HPE_')) return as('protocol', `${p} answered CONNECT with something that is not HTTP (${code}); check the proxy's address and scheme`);
  if (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET') return as('unreachable', `${p} closed the connection without answering CONNECT (${code})`);
  return as('unreachable', `${p} cannot be reached (${code})`);
}

/** A 407: credentials missing, refused, or of a scheme other than Basic (its challenge, when known). */
function authError(proxy: ProxyEndpoint, challenge?: string | readonly string[]): ProxyError {
  const schemes = [challenge ?? []].flat().join(',').split(',').map((s) => s.trim().split(/\s+/)[0] ?? '').filter((s) => /^[A-Za-z][\w-]*$/.test(s));
  const what = proxy.token === undefined
    ? `requires a user name and password (HTTP 407 Proxy Authentication Required); give them in ${proxy.source} as http://user:password@${proxy.display}`
    : `did not accept the user name and password given in ${proxy.source} (HTTP 407 Proxy Authentication Required); check them (special characters percent-encoded, @ as %40)`;
  const basic = schemes.length === 0 || schemes.some((s) => s.toLowerCase() === 'basic');
  return new ProxyError('auth', `${named(proxy)} ${what}${basic ? '' : `. It asks for ${schemes.join(' or ')} authentication; only Basic is supported`}`, 'HTTP_407');
}

/** A CONNECT answered with anything but 200. */
function refusal(proxy: ProxyEndpoint, target: string, { statusCode: status, headers }: Dispatcher.ConnectData): ProxyError {
  if (status === 407) return authError(proxy, headers['proxy-authenticate']);
  const http = `HTTP ${status}${STATUS_CODES[status] === undefined ? '' : ` ${STATUS_CODES[status]}`}`;
  const p = named(proxy);
  if (status === 502 || status === 503 || status === 504) return new ProxyError('unreachable', `${p} could not reach ${target} (${http})`, `HTTP_${status}`);
  if (status !== 403) return new ProxyError('refused', `${p} answered CONNECT ${target} with ${http}`, `HTTP_${status}`);
  const advice = 'its rules do not allow this address; ask its administrators to allow it, or, if the API can be reached without the proxy, list its host in NO_PROXY';
  return new ProxyError('refused', `${p} refused to connect to ${target} (${http}): ${advice}`, 'HTTP_403');
}

type ConnectOptions = Omit<Dispatcher.ConnectOptions, 'origin'>;

/** The pool to the proxy that ProxyAgent opens tunnels with; waits for an answer to CONNECT at most timeoutMs. */
export class ProxyPool extends Pool {
  readonly #proxy: ProxyEndpoint;
  readonly #timeoutMs: number;

  constructor(proxy: ProxyEndpoint, options: Pool.Options, timeoutMs: number) {
    super(proxy.uri, { ...options, headersTimeout: timeoutMs });
    this.#proxy = proxy;
    this.#timeoutMs = timeoutMs;
  }

  override connect(options: ConnectOptions): Promise<Dispatcher.ConnectData>;
  override connect(options: ConnectOptions, callback: (err: Error | null, data: Dispatcher.ConnectData) => void): void;
  override connect(options: ConnectOptions, callback?: (err: Error | null, data: Dispatcher.ConnectData) => void): Promise<Dispatcher.ConnectData> | void {
    const tunnel = this.#tunnel(options);
    if (callback === undefined) return tunnel;
    tunnel.then((data) => callback(null, data), (err: Error) => callback(err, { opaque: null } as Dispatcher.ConnectData));
  }

  async #tunnel(options: ConnectOptions): Promise<Dispatcher.ConnectData> {
    const answer = await super.connect(options).catch((err: unknown) => {
      throw reachError(this.#proxy, err, this.#timeoutMs);
    });
    if (answer.statusCode === 200) return answer;
    answer.socket.on('error', () => undefined).destroy();
    throw refusal(this.#proxy, options.path, answer);
  }
}

/** The 407 of an absolute-form request (an http:// API): undici's ProxyAgent throws an InvalidArgumentError that says "(407)". */
export function proxyAuthFailure(err: unknown, proxy: ProxyEndpoint | undefined): ProxyError | undefined {
  const is407 = errorCode(err) === 'UND_ERR_INVALID_ARG' && /\b407\b/.test(String((err as Error).message));
  return proxy !== undefined && is407 ? authError(proxy) : undefined;
}
