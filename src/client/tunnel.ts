/**
 * Requests through an HTTP(S) proxy, on undici's Pool:
 *
 * - an https:// API is reached through a tunnel: each pooled connection
 *   opens a socket to the proxy (TLS when the proxy is https://), sends
 *   `CONNECT host:port` (with Proxy-Authorization when the address carries
 *   credentials), and runs TLS to the API inside it;
 * - an http:// API (loopback only) is asked in absolute form
 *   (`GET http://host:port/v1/... HTTP/1.1`) on a pool of connections to the
 *   proxy, and a 407 answer is the proxy's, not the API's.
 *
 * The pool, the gate and the timeouts above stay as they are: one tunnel per
 * pooled connection, as many as max_concurrent_requests. Whatever fails at the
 * proxy is a ProxyError that names the proxy by host:port, never its
 * credentials. Loaded only when a proxy applies.
 */
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, type SecureContext, type TLSSocket } from 'node:tls';
import type { buildConnector, Dispatcher } from 'undici';
import { Pool } from './pool.js';
import type { ProxyEndpoint } from '../network/proxy-url.js';
import { ProxyError } from './proxy-error.js';
import { errorCode } from './retry.js';
import { poolOptions, type PoolSettings, type RequestDispatcher } from './pool-settings.js';

export interface ProxyRoute {
  readonly proxy: ProxyEndpoint;
  /** Trust for the API and an https:// proxy (ca_certificate); undefined: Node's defaults. */
  readonly secureContext: SecureContext | undefined;
  /** Deadline of one connection: reaching the proxy, its answer to CONNECT and the TLS handshake with the API. */
  readonly timeoutMs: number;
}

const MAX_HEAD = 16 * 1024;

const serverName = (host: string): string | undefined => (isIP(host) === 0 ? host : undefined);
const hostPort = (host: string, port: number): string => `${host.includes(':') ? `[${host}]` : host}:${port}`;
const named = (p: ProxyEndpoint): string => `the proxy ${p.display} (${p.source})`;

function isCertificateCode(code: string): boolean {
  return /^(CERT_|ERR_TLS_CERT|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED|SELF_SIGNED_CERT)/.test(code);
}

/** A failure while reaching the proxy itself, in plain words. */
function reachError(proxy: ProxyEndpoint, err: unknown): ProxyError {
  const code = errorCode(err) ?? 'ERROR';
  if (code === 'ECONNREFUSED') return new ProxyError('unreachable', proxy, `${named(proxy)} refused the connection (ECONNREFUSED)`, { code, cause: err });
  if (/^(ENOTFOUND|EAI_)/.test(code)) return new ProxyError('unreachable', proxy, `the host name of ${named(proxy)} could not be resolved (DNS ${code})`, { code, cause: err });
  if (isCertificateCode(code)) {
    return new ProxyError('tls', proxy, `the TLS certificate of ${named(proxy)} is not trusted (${code}); if a private certificate authority signed it, give that CA's certificate in ca_certificate`, { code, cause: err });
  }
  if (code.startsWith('ERR_SSL_') || code === 'EPROTO') {
    return new ProxyError('protocol', proxy, `${named(proxy)} did not answer in TLS (${code}); if it is a plain HTTP proxy, its address starts with http://`, { code, cause: err });
  }
  return new ProxyError('unreachable', proxy, `${named(proxy)} cannot be reached (${code})`, { code, cause: err });
}

/** Resolves once `event` fires on the socket; rejects on its first error or close. */
function ready(socket: Socket, event: 'connect' | 'secureConnect'): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (err?: Error): void => {
      socket.off(event, onReady).off('error', done).off('close', onClose);
      if (err === undefined) resolve();
      else reject(err);
    };
    const onReady = (): void => done();
    const onClose = (): void => done(Object.assign(new Error('the connection closed during the handshake'), { code: 'ECONNRESET' }));
    socket.once(event, onReady).once('error', done).once('close', onClose);
  });
}

/** The proxy's answer to CONNECT: status, reason, headers, and bytes that came after them. */
interface ConnectAnswer {
  readonly status: number;
  readonly reason: string;
  readonly headers: ReadonlyMap<string, string>;
  readonly rest: Buffer;
}

function readAnswer(socket: Socket, proxy: ProxyEndpoint): Promise<ConnectAnswer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (err: Error | undefined, answer?: ConnectAnswer): void => {
      socket.pause();
      socket.off('data', onData).off('error', onError).off('end', onEnd).off('close', onEnd);
      if (err !== undefined) reject(err);
      else resolve(answer as ConnectAnswer);
    };
    const onError = (err: Error): void => finish(reachError(proxy, err));
    const onEnd = (): void =>
      finish(new ProxyError('unreachable', proxy, `${named(proxy)} closed the connection without answering CONNECT`, { code: 'CLOSED' }));
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      size += chunk.length;
      const all = Buffer.concat(chunks);
      const end = all.indexOf('\r\n\r\n');
      if (end < 0) {
        if (size > MAX_HEAD) finish(new ProxyError('protocol', proxy, `${named(proxy)} answered CONNECT with more than ${MAX_HEAD} bytes of headers`, { code: 'HEAD' }));
        return;
      }
      const [statusLine = '', ...lines] = all.subarray(0, end).toString('latin1').split('\r\n');
      const match = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine);
      if (match === null) {
        finish(new ProxyError('protocol', proxy, `${named(proxy)} answered CONNECT with something that is not HTTP; check the proxy address and scheme (http:// or https://)`, { code: 'NOT_HTTP' }));
        return;
      }
      const headers = new Map<string, string>();
      for (const line of lines) {
        const colon = line.indexOf(':');
        if (colon > 0) {
          const name = line.slice(0, colon).trim().toLowerCase();
          const value = line.slice(colon + 1).trim();
          headers.set(name, headers.has(name) ? `${headers.get(name) ?? ''}, ${value}` : value);
        }
      }
      const reason = (match[2] ?? '').replace(/[^\x20-\x7e]/g, '').slice(0, 80);
      finish(undefined, { status: Number(match[1]), reason, headers, rest: all.subarray(end + 4) });
    };
    socket.on('data', onData).on('error', onError).on('end', onEnd).on('close', onEnd);
    socket.resume();
  });
}

/** The error for a CONNECT that was not answered with 2xx. */
function connectRefused(proxy: ProxyEndpoint, target: string, answer: ConnectAnswer): ProxyError {
  const status = answer.status;
  const http = `HTTP ${status}${answer.reason === '' ? '' : ` ${answer.reason}`}`;
  if (status === 407) return authError(proxy, answer.headers.get('proxy-authenticate'));
  if (status === 502 || status === 503 || status === 504) {
    return new ProxyError('unreachable', proxy, `${named(proxy)} could not reach ${target} (${http})`, { code: `HTTP_${status}`, status });
  }
  if (status === 403) {
    return new ProxyError(
      'refused',
      proxy,
      `${named(proxy)} refused to connect to ${target} (${http}): its rules do not allow this address; ask its administrators to allow it, ` +
        'or, if the API can be reached without the proxy, list its host in NO_PROXY',
      { code: `HTTP_${status}`, status },
    );
  }
  return new ProxyError('refused', proxy, `${named(proxy)} answered CONNECT ${target} with ${http}`, { code: `HTTP_${status}`, status });
}

/** A 407: credentials missing, refused, or of a scheme other than Basic. */
export function authError(proxy: ProxyEndpoint, challenge: string | undefined): ProxyError {
  const schemes = (challenge ?? '').split(',').map((s) => s.trim().split(/\s+/)[0] ?? '').filter((s) => /^[A-Za-z][\w-]*$/.test(s) && !s.includes('='));
  const basic = schemes.length === 0 || schemes.some((s) => s.toLowerCase() === 'basic');
  const what = proxy.authorization === undefined
    ? `requires a user name and password (HTTP 407 Proxy Authentication Required); give them in ${proxy.source} as http://user:password@${proxy.display}`
    : `did not accept the user name and password given in ${proxy.source} (HTTP 407 Proxy Authentication Required); check them (special characters percent-encoded, @ as %40)`;
  const scheme = basic ? '' : `. It asks for ${schemes.join(' or ')} authentication; only Basic is supported`;
  return new ProxyError('auth', proxy, `${named(proxy)} ${what}${scheme}`, { code: 'HTTP_407', status: 407 });
}

/** A connection to the proxy: TCP, or TLS for an https:// proxy. */
async function openToProxy(route: ProxyRoute, track: (socket: Socket) => void): Promise<Socket> {
  const { proxy } = route;
  let socket: Socket;
  if (proxy.protocol === 'https:') {
    const name = serverName(proxy.hostname);
    socket = tlsConnect({
      host: proxy.hostname,
      port: proxy.port,
      ...(name === undefined ? {} : { servername: name }),
      ...(route.secureContext === undefined ? {} : { secureContext: route.secureContext }),
      ALPNProtocols: ['http/1.1'],
    });
  } else {
    socket = netConnect({ host: proxy.hostname, port: proxy.port });
  }
  track(socket);
  socket.setNoDelay(true).setKeepAlive(true, 60_000);
  try {
    await ready(socket, proxy.protocol === 'https:' ? 'secureConnect' : 'connect');
  } catch (err) {
    throw reachError(proxy, err);
  }
  return socket;
}

/** Run `steps` under the route's deadline; every socket it opened is destroyed when it fails or runs late. */
async function withDeadline<T>(route: ProxyRoute, what: string, steps: (track: (socket: Socket) => void) => Promise<T>): Promise<T> {
  const sockets: Socket[] = [];
  let expired = false;
  const track = (socket: Socket): void => {
    sockets.push(socket);
    if (expired) socket.destroy();
  };
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      expired = true;
      reject(new ProxyError('timeout', route.proxy, `${what} through ${named(route.proxy)} took longer than ${route.timeoutMs} ms (request_timeout_seconds)`, { code: 'TIMEOUT' }));
    }, route.timeoutMs);
  });
  try {
    return await Promise.race([steps(track), deadline]);
  } catch (err) {
    for (const socket of sockets) socket.destroy();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** undici's connect function for a pool to the API whose connections are CONNECT tunnels. */
export function tunnelConnector(route: ProxyRoute): buildConnector.connector {
  return (options, callback) => {
    const port = options.port === '' || options.port === undefined ? (options.protocol === 'https:' ? 443 : 80) : Number(options.port);
    const target = hostPort(options.hostname, port);
    withDeadline(route, `opening a tunnel to ${target}`, async (track) => {
      const socket = await openToProxy(route, track);
      const auth = route.proxy.authorization === undefined ? '' : `Proxy-Authorization: ${route.proxy.authorization}\r\n`;
      socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${auth}Proxy-Connection: keep-alive\r\n\r\n`);
      const answer = await readAnswer(socket, route.proxy);
      if (answer.status < 200 || answer.status > 299) throw connectRefused(route.proxy, target, answer);
      if (options.protocol !== 'https:') {
        if (answer.rest.length > 0) socket.unshift(answer.rest);
        return socket;
      }
      if (answer.rest.length > 0) {
        throw new ProxyError('protocol', route.proxy, `${named(route.proxy)} sent data of its own after opening the tunnel to ${target}`, { code: 'EXTRA_DATA' });
      }
      const name = options.servername ?? serverName(options.hostname);
      const secure: TLSSocket = tlsConnect({
        socket,
        ...(name === undefined ? {} : { servername: name }),
        ...(route.secureContext === undefined ? {} : { secureContext: route.secureContext }),
        ALPNProtocols: ['http/1.1'],
      });
      track(secure);
      // A failure here is the API's (its certificate, its TLS): the original error, classified as the API's.
      await ready(secure, 'secureConnect');
      return secure;
    }).then(
      (socket) => callback(null, socket),
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null),
    );
  };
}

/** undici's connect function for a pool to the proxy itself (absolute-form requests). */
function proxyConnector(route: ProxyRoute): buildConnector.connector {
  return (_options, callback) => {
    withDeadline(route, 'connecting', (track) => openToProxy(route, track)).then(
      (socket) => callback(null, socket),
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null),
    );
  };
}

/** A pool to the API whose connections are tunnels through the proxy. */
export function tunnelPool(origin: string, route: ProxyRoute, settings: PoolSettings): RequestDispatcher {
  return new Pool(origin, { ...poolOptions(settings), connect: tunnelConnector(route) });
}

/** Requests to an http:// API in absolute form, on a pool of connections to the proxy. */
export class ForwardProxy implements RequestDispatcher {
  readonly #pool: InstanceType<typeof Pool>;
  readonly #target: URL;
  readonly #route: ProxyRoute;

  constructor(origin: string, route: ProxyRoute, settings: PoolSettings) {
    this.#target = new URL(origin);
    this.#route = route;
    this.#pool = new Pool(route.proxy.origin, { ...poolOptions(settings), connect: proxyConnector(route) });
  }

  async request(options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = { ...(options.headers as Record<string, string> | undefined), host: this.#target.host };
    if (this.#route.proxy.authorization !== undefined) headers['proxy-authorization'] = this.#route.proxy.authorization;
    const response = await this.#pool.request({ ...options, origin: this.#route.proxy.origin, path: `${this.#target.origin}${options.path}`, headers });
    if (response.statusCode === 407) {
      const challenge = response.headers['proxy-authenticate'];
      await response.body.dump();
      throw authError(this.#route.proxy, Array.isArray(challenge) ? challenge.join(', ') : challenge);
    }
    return response;
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}
