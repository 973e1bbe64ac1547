/**
 * The proxy environment variables, read the way curl reads them (libcurl-env(3),
 * CURLOPT_NOPROXY(3)):
 *
 * - an https:// address uses `https_proxy`, else `HTTPS_PROXY`; an http://
 *   address uses `http_proxy`, else `HTTP_PROXY` (curl reads only the
 *   lower-case one, because in CGI programs the upper-case one can be set by a
 *   request header, "httpoxy"; a connector is no CGI program, and runners such
 *   as Airbyte pass the upper-case names, which Python's requests honours);
 *   either falls back to `all_proxy`, else `ALL_PROXY`. A lower-case variable
 *   that is set, even empty, hides its upper-case twin; an empty value means
 *   no proxy.
 * - `no_proxy`, else `NO_PROXY`: a comma-separated list. `*` alone bypasses
 *   the proxy for every host. A host name matches itself and every name
 *   below it (`example.com` and `.example.com` both match `example.com` and
 *   `api.example.com`, never `badexample.com`), without regard to case or a
 *   trailing dot. An IP address matches an address literal only, exactly or
 *   by CIDR range (`10.0.0.0/8`, `fd00::/8`, as curl since 7.86). Names are
 *   never resolved: `localhost` does not match 127.0.0.1.
 * - beyond curl: `*.example.com` is read as `.example.com`; an entry may carry a port (`api.internal:8443`,
 *   `[::1]:8080`) and then matches only that port (curl never matches such an
 *   entry; Python requests and Go do as here), and entries may be separated by
 *   blanks as well as commas.
 */
import { createRequire } from 'node:module';
import { proxyUrlSecrets } from './proxy-url.js';

/** node:net's isIP, loaded on first use: only a run with a proxy variable and NO_PROXY compares addresses. */
let netIsIp: ((input: string) => number) | undefined;
function isIP(input: string): number {
  netIsIp ??= (createRequire(import.meta.url)('node:net') as typeof import('node:net')).isIP;
  return netIsIp(input);
}

export type Env = Readonly<Record<string, string | undefined>>;

export interface EnvProxy {
  /** The variable that names the proxy. */
  readonly variable: string;
  readonly value: string;
}

export interface EnvChoice {
  /** The proxy to use, if any. */
  readonly proxy: EnvProxy | undefined;
  /** Set when a proxy variable applies but NO_PROXY exempts the host: the variable and the entry that matched. */
  readonly bypass: { readonly variable: string; readonly entry: string } | undefined;
}

/** The lower-case variable if it is set (even empty), else the upper-case one. */
function lookup(env: Env, lower: string, upper: string | undefined): EnvProxy | undefined {
  const low = env[lower];
  if (low !== undefined) return { variable: lower, value: low };
  if (upper === undefined) return undefined;
  const up = env[upper];
  return up === undefined ? undefined : { variable: upper, value: up };
}

/** Which proxy variable applies to a target address, honouring NO_PROXY. */
export function proxyFromEnv(target: URL, env: Env): EnvChoice {
  const https = target.protocol === 'https:';
  let proxy = https ? lookup(env, 'https_proxy', 'HTTPS_PROXY') : lookup(env, 'http_proxy', 'HTTP_PROXY');
  proxy ??= lookup(env, 'all_proxy', 'ALL_PROXY');
  if (proxy === undefined || proxy.value.trim() === '') return { proxy: undefined, bypass: undefined };
  const noProxy = lookup(env, 'no_proxy', 'NO_PROXY');
  if (noProxy !== undefined) {
    const entry = noProxyMatch(target.hostname, portOf(target), noProxy.value);
    if (entry !== undefined) return { proxy: undefined, bypass: { variable: noProxy.variable, entry } };
  }
  return { proxy, bypass: undefined };
}

function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** `10.1.2.3` or `fd00::1` as bits (a BigInt), for CIDR comparison; undefined when not an address. */
function addressBits(ip: string): { readonly family: 4 | 6; readonly bits: bigint } | undefined {
  const family = isIP(ip);
  if (family === 4) {
    const bits = ip.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
    return { family: 4, bits };
  }
  if (family !== 6) return undefined;
  let text = ip.toLowerCase();
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two hex groups.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4 !== null) {
    const b = addressBits(v4[1] as string);
    if (b === undefined) return undefined;
    text = `${text.slice(0, -(v4[1] as string).length)}${(b.bits >> 16n).toString(16)}:${(b.bits & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...new Array<string>(8 - left.length - right.length).fill('0'), ...right];
  if (groups.length !== 8) return undefined;
  return { family: 6, bits: groups.reduce((acc, g) => (acc << 16n) | BigInt(Number.parseInt(g, 16)), 0n) };
}

function ipMatches(host: string, pattern: string): boolean {
  const slash = pattern.indexOf('/');
  const address = addressBits(host);
  const network = addressBits(slash < 0 ? pattern : pattern.slice(0, slash));
  if (address === undefined || network === undefined || address.family !== network.family) return false;
  const width = address.family === 4 ? 32 : 128;
  const prefix = slash < 0 ? width : Number(pattern.slice(slash + 1));
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > width || (slash >= 0 && !/^\d+$/.test(pattern.slice(slash + 1)))) return false;
  const shift = BigInt(width - prefix);
  return address.bits >> shift === network.bits >> shift;
}

/** An entry split into host (or address/CIDR) and optional port. */
function splitEntry(entry: string): { readonly host: string; readonly port: number | undefined } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed !== null) return { host: bracketed[1] as string, port: bracketed[2] === undefined ? undefined : Number(bracketed[2]) };
  // One colon: host:port. More: an IPv6 address (or range) written without brackets, as curl wants them.
  const hostPort = /^([^:]+):(\d+)$/.exec(entry);
  if (hostPort !== null) return { host: hostPort[1] as string, port: Number(hostPort[2]) };
  return { host: entry, port: undefined };
}

/**
 * The NO_PROXY entry that exempts `hostname` (as URL.hostname gives it: an
 * IPv6 address in brackets) on `port`, or undefined when none does.
 */
export function noProxyMatch(hostname: string, port: number, noProxy: string): string | undefined {
  const list = noProxy.trim();
  if (list === '') return undefined;
  if (list === '*') return '*';
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
  const literal = isIP(host) !== 0;
  for (const raw of list.split(/[\s,]+/)) {
    if (raw === '') continue;
    const entry = splitEntry(raw);
    if (entry.port !== undefined && entry.port !== port) continue;
    if (literal) {
      if (ipMatches(host, entry.host)) return raw;
      continue;
    }
    const name = entry.host.toLowerCase().replace(/\.$/, '').replace(/^\*?\./, '');
    if (name === '') continue;
    if (host === name || host.endsWith(`.${name}`)) return raw;
  }
  return undefined;
}

/** The proxy variables that may hold credentials (all of them, whatever the target). */
export const PROXY_VARIABLES = ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY', 'all_proxy', 'ALL_PROXY'] as const;

/** Every form of the credentials of proxy_url and of the proxy variables, to hide from output. */
export function proxySecrets(proxyUrl: unknown, env: Env): string[] {
  const out = new Set<string>(proxyUrlSecrets(proxyUrl));
  for (const name of PROXY_VARIABLES) for (const secret of proxyUrlSecrets(env[name])) out.add(secret);
  return [...out];
}
