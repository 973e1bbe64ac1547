/**
 * How the client reaches the API, chosen once per client: directly or
 * through an HTTP(S) proxy (`proxy_url`, else the environment as curl reads
 * it, see src/network/proxy-env.ts), trusting Node's default certificate authorities
 * plus those of `ca_certificate`. Without a proxy and a ca_certificate the
 * dispatcher is undici's Pool exactly as before; the proxy machinery
 * (tunnel.ts) is imported only when a proxy applies, and the CA store is
 * read only when ca_certificate is given, so a plain `check` starts as fast.
 */
import type { SecureContext } from 'node:tls';
import { CaCertificateError, parseCaCertificates } from '../network/ca-certificates.js';
import { ConfigError } from '../errors.js';
import { proxyFromEnv, type Env } from '../network/proxy-env.js';
import { parseProxyUrl, ProxySettingError, type ProxyEndpoint } from '../network/proxy-url.js';
import { Pool } from './pool.js';
import { poolOptions, type PoolSettings, type RequestDispatcher } from './pool-settings.js';
import { trustingContext } from './tls.js';

export interface RouteOptions {
  /** The config's proxy_url: wins over the environment (NO_PROXY included). */
  readonly proxyUrl?: string | undefined;
  /** The config's ca_certificate: PEM text. */
  readonly caCertificate?: string | undefined;
  readonly env: Env;
}

export interface RouteNote {
  readonly level: 'INFO' | 'WARN';
  readonly message: string;
}

export interface Route {
  readonly proxy: ProxyEndpoint | undefined;
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
  }
  let proxy: ProxyEndpoint | undefined;
  try {
    if (options.proxyUrl !== undefined && options.proxyUrl.trim() !== '') {
      proxy = parseProxyUrl(options.proxyUrl, 'proxy_url');
    } else {
      const choice = proxyFromEnv(target, options.env);
      if (choice.proxy !== undefined) proxy = parseProxyUrl(choice.proxy.value, choice.proxy.variable);
      if (choice.bypass !== undefined) {
        notes.push({ level: 'INFO', message: `Not using a proxy for ${target.host}: ${choice.bypass.variable} lists "${choice.bypass.entry}".` });
      }
    }
  } catch (err) {
    if (err instanceof ProxySettingError) throw new ConfigError(`${err.message}.`, { runWide: true });
    throw err;
  }
  if (proxy !== undefined) {
    const how = target.protocol === 'https:' ? 'through a CONNECT tunnel' : 'as absolute-form requests';
    const auth = proxy.authorization === undefined ? '' : ', with the credentials it carries';
    notes.push({ level: 'INFO', message: `Requests to ${target.host} go through the proxy ${proxy.display} (${proxy.source}) ${how}${auth}.` });
  }
  if (caCertificates !== undefined) {
    notes.push({ level: 'INFO', message: `Trusting ${caCertificates.length} certificate${caCertificates.length === 1 ? '' : 's'} of ca_certificate besides the default certificate authorities.` });
  }
  return { proxy, caCertificates, notes };
}

/** undici's Pool to the API, directly (the usual case), with an optional TLS context for ca_certificate. */
function directPool(origin: string, settings: PoolSettings, secureContext: SecureContext | undefined): RequestDispatcher {
  return new Pool(origin, { ...poolOptions(settings), ...(secureContext === undefined ? {} : { connect: { secureContext } }) });
}

/**
 * The dispatcher of a route: at once when no proxy applies, or a promise of
 * one once the proxy machinery is loaded.
 */
export function openDispatcher(route: Route, origin: string, settings: PoolSettings): RequestDispatcher | Promise<RequestDispatcher> {
  const secureContext = route.caCertificates === undefined ? undefined : trustingContext(route.caCertificates);
  const proxy = route.proxy;
  if (proxy === undefined) return directPool(origin, settings, secureContext);
  return import('./tunnel.js').then(({ ForwardProxy, tunnelPool }) => {
    const proxyRoute = { proxy, secureContext, timeoutMs: settings.timeoutMs };
    return new URL(origin).protocol === 'https:' ? tunnelPool(origin, proxyRoute, settings) : new ForwardProxy(origin, proxyRoute, settings);
  });
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
  return `Check that the proxy ${route.proxy.display} runs and that ${route.proxy.source} names it, and the network.`;
}
