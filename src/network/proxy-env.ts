/**
 * The proxy variables, as undici's EnvHttpProxyAgent reads them: for an
 * https:// address `https_proxy`, else `HTTPS_PROXY`, else the proxy of
 * http:// addresses; for an http:// address `http_proxy`, else `HTTP_PROXY`;
 * hosts reached without a proxy in `no_proxy`, else `NO_PROXY`. A lower-case
 * variable that is set, even empty, hides its upper-case twin; an empty or
 * blank value means none. The client hands undici the values read here, so
 * that what it logs and what undici does agree; undici applies NO_PROXY.
 */
import { proxyUrlSecrets } from './proxy-url.js';

export type Env = Readonly<Record<string, string | undefined>>;

export interface EnvValue {
  /** The variable it was read from. */
  readonly variable: string;
  readonly value: string;
}

/** The lower-case variable if it is set (even empty), else the upper-case one; undefined when blank. */
function lookup(env: Env, lower: string, upper: string): EnvValue | undefined {
  const variable = env[lower] !== undefined ? lower : upper;
  const value = env[variable];
  return value === undefined || value.trim() === '' ? undefined : { variable, value };
}

/** The variable that names the proxy for an address of `protocol` (`https:` or `http:`), if any. */
export function envProxy(protocol: string, env: Env): EnvValue | undefined {
  const http = lookup(env, 'http_proxy', 'HTTP_PROXY');
  return protocol === 'https:' ? (lookup(env, 'https_proxy', 'HTTPS_PROXY') ?? http) : http;
}

/** NO_PROXY (or no_proxy), when it lists anything. */
export function envNoProxy(env: Env): EnvValue | undefined {
  return lookup(env, 'no_proxy', 'NO_PROXY');
}

/** ALL_PROXY (or all_proxy), which undici does not read, when it is set. */
export function envAllProxy(env: Env): EnvValue | undefined {
  return lookup(env, 'all_proxy', 'ALL_PROXY');
}

/** The proxy variables that may hold credentials (all of them, whatever the target, ALL_PROXY included). */
export const PROXY_VARIABLES = ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY', 'all_proxy', 'ALL_PROXY'] as const;

/** Every form of the credentials of proxy_url and of the proxy variables, to hide from output. */
export function proxySecrets(proxyUrl: unknown, env: Env): string[] {
  const out = new Set<string>(proxyUrlSecrets(proxyUrl));
  for (const name of PROXY_VARIABLES) for (const secret of proxyUrlSecrets(env[name])) out.add(secret);
  return [...out];
}
