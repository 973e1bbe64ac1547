/**
 * How the client reaches the API, on undici's own pieces, chosen once per
 * client:
 * - no proxy: a Pool to the API;
 * - `proxy_url`: a ProxyAgent (it wins over the environment, NO_PROXY included);
 * - else a proxy variable for the API's scheme (src/network/proxy-env.ts): an
 *   EnvHttpProxyAgent given the variables' values, which applies NO_PROXY.
 * Through a proxy an https:// API is reached by CONNECT tunnels (one per
 * pooled connection) and an http:// one (loopback) by absolute-form requests,
 * as undici does; the pool to the proxy is a ProxyPool (proxy-error.ts).
 * `ca_certificate` is trusted besides Node's default certificate authorities,
 * for the API and for an https:// proxy. request_timeout_seconds bounds every
 * wait of every connection here: connecting, a tunnel, headers, body.
 */
import { createSecureContext, getCACertificates } from 'node:tls';
import { EnvHttpProxyAgent, Pool, ProxyAgent, type Dispatcher } from 'undici';
import { CaCertificateError, parseCaCertificates } from '../network/ca-certificates.js';
import { ConfigError } from '../errors.js';
import { envAllProxy, envNoProxy, envProxy, type Env, type EnvValue } from '../network/proxy-env.js';
import { parseProxyUrl, type ProxyEndpoint } from '../network/proxy-url.js';
import { ProxyPool } from './proxy-error.js';

interface RouteOptions {
  /** The config's proxy_url: wins over the environment (NO_PROXY included). */
  readonly proxyUrl?: string | undefined;
  /** The config's ca_certificate: PEM text. */
  readonly caCertificate?: string | undefined;
  readonly env: Env;
}

interface RouteNote {
  readonly level: 'INFO' | 'WARN';
  readonly message: string;
}

export interface Route {
  readonly proxy: ProxyEndpoint | undefined;
  /** NO_PROXY, for a proxy named by a variable (EnvHttpProxyAgent applies it). */
  readonly noProxy: EnvValue | undefined;
  /** Certificates of ca_certificate (PEM blocks), when given. */
  readonly caCertificates: readonly string[] | undefined;
  /** What the log should say about the route (which proxy and why). */
  readonly notes: readonly RouteNote[];
}

/** Choose the route to an origin (`scheme://host:port`). Throws ConfigError naming the setting at fault. */
export function chooseRoute(origin: string, options: RouteOptions): Route {
  const target = new URL(origin);
  const notes: RouteNote[] = [];
  let caCertificates: string[] | undefined;
  if (options.caCertificate !== undefined && options.caCertificate.trim() !== '') {
    try {
      caCertificates = parseCaCertificates(options.caCertificate);
    } catch (err) {
      if (err instanceof CaCertificateError) throw new ConfigError(`${err.message}.`, { field: 'ca_certificate', runWide: true });
      throw err;
    }
    const n = caCertificates.length;
    notes.push({ level: 'INFO', message: `Trusting ${n} certificate${n === 1 ? '' : 's'} of ca_certificate besides the default certificate authorities.` });
  }
  const fromConfig = options.proxyUrl !== undefined && options.proxyUrl.trim() !== '';
  const variable = fromConfig ? undefined : envProxy(target.protocol, options.env);
  const noProxy = variable === undefined ? undefined : envNoProxy(options.env);
  const proxy = fromConfig ? parseProxyUrl(options.proxyUrl as string, 'proxy_url') : variable === undefined ? undefined : parseProxyUrl(variable.value, variable.variable);
  if (proxy !== undefined) {
    const how = target.protocol === 'https:' ? 'through a CONNECT tunnel' : 'as absolute-form requests';
    const auth = proxy.token === undefined ? '' : ', with the credentials it carries';
    const unless = noProxy === undefined ? '' : `, unless ${noProxy.variable} exempts ${target.hostname}`;
    notes.push({ level: 'INFO', message: `Requests to ${target.host} go through the proxy ${proxy.display} (${proxy.source}) ${how}${auth}${unless}.` });
  } else {
    const all = fromConfig ? undefined : envAllProxy(options.env);
    if (all !== undefined) notes.push({ level: 'WARN', message: `${all.variable} is not read: requests to ${target.host} go without a proxy; name the proxy in HTTPS_PROXY or proxy_url.` });
  }
  return { proxy, noProxy, caCertificates, notes };
}

interface DispatcherSettings {
  /** max_concurrent_requests: one connection per request in flight. */
  readonly connections: number;
  readonly keepAliveTimeout: number;
  /** request_timeout_seconds, in ms. */
  readonly timeoutMs: number;
}

/**
 * The dispatcher of a route. Every pool it makes, to the API or to the
 * proxy, speaks HTTP/1.1 without pipelining, one connection per request in
 * flight, each wait bounded by request_timeout_seconds.
 */
export function openDispatcher(route: Route, origin: string, settings: DispatcherSettings): Dispatcher {
  const options: Pool.Options = {
    connections: settings.connections,
    pipelining: 1,
    allowH2: false,
    keepAliveTimeout: settings.keepAliveTimeout,
    connectTimeout: settings.timeoutMs,
    headersTimeout: settings.timeoutMs,
    bodyTimeout: settings.timeoutMs,
  };
  // Built once per client: about 150 certificates to parse.
  const tls = route.caCertificates === undefined ? undefined : { secureContext: createSecureContext({ ca: [...getCACertificates('default'), ...route.caCertificates] }) };
  const { proxy } = route;
  if (proxy === undefined) return new Pool(origin, tls === undefined ? options : { ...options, connect: tls });
  const proxied = {
    ...options,
    // `connect` is the TLS of a direct connection (a host NO_PROXY exempts); requestTls and proxyTls those of the two legs of a tunnel.
    ...(tls === undefined ? {} : { connect: tls, requestTls: tls, proxyTls: tls }),
    ...(proxy.token === undefined ? {} : { token: proxy.token }),
    clientFactory: (_uri: URL, connect: object) => new ProxyPool(proxy, connect as Pool.Options, settings.timeoutMs),
  };
  if (proxy.source === 'proxy_url') return new ProxyAgent({ ...proxied, uri: proxy.uri });
  const https = new URL(origin).protocol === 'https:';
  return new EnvHttpProxyAgent({ ...proxied, httpProxy: https ? '' : proxy.uri, httpsProxy: https ? proxy.uri : '', noProxy: route.noProxy?.value ?? '' });
}

/** The words that tell a user what to do when the API's certificate is not trusted. */
export function trustHint(route: Route | undefined): string {
  if (route?.caCertificates !== undefined) {
    return "Check base_url (its host name), and that ca_certificate holds the certificate authority that signed the API's certificate.";
  }
  return "Check base_url (its host name); if a private certificate authority signed the API's certificate, give that CA's certificate (PEM) in ca_certificate.";
}

/** The words that tell a user where to look when the API cannot be reached. */
export function reachHint(route: Route | undefined): string {
  if (route?.proxy === undefined) return 'Check base_url and the network.';
  const exempt = route.noProxy === undefined ? '' : ` (unless ${route.noProxy.variable} exempts the API's host)`;
  return `Check that the proxy ${route.proxy.display} runs and that ${route.proxy.source} names it${exempt}, and the network.`;
}
