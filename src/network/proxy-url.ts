/**
 * Proxy addresses: `[http|https]://[user:password@]host[:port]` (no scheme
 * means http://; no port means the scheme's, 80 or 443, as undici connects).
 * From one we take what undici's ProxyAgent needs (the address without its
 * credentials, and a Basic token for them), how messages name the proxy
 * (host:port and where the address came from, never the credentials), and
 * every form of the credentials that must be hidden from output. Shared by
 * the config (validation) and the client.
 */
import { ConfigError } from '../errors.js';

export interface ProxyEndpoint {
  /** `scheme://host:port`, without credentials: the proxy undici connects to. */
  readonly uri: string;
  /** `host:port` (`[v6]:port`): how messages name the proxy. */
  readonly display: string;
  /** Where the address came from: `proxy_url`, `https_proxy`, `HTTPS_PROXY`, ... */
  readonly source: string;
  /** `Basic <base64>` when the address carries credentials (ProxyAgent's `token`). */
  readonly token: string | undefined;
}

/** A proxy setting that cannot be used, for the whole run; the message never quotes the value (it may hold a password). */
const unusable = (message: string): ConfigError => new ConfigError(`${message}.`, { runWide: true });

const HAS_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

function decode(part: string, what: string, source: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw unusable(`the ${what} in ${source} has a malformed %-escape; percent-encode special characters (@ as %40, : as %3A)`);
  }
}

/** Parse a proxy address; `source` names the setting in messages. Throws ConfigError. */
export function parseProxyUrl(value: string, source: string): ProxyEndpoint {
  const text = value.trim();
  if (text === '') throw unusable(`${source} is empty; give the proxy as http://host:port`);
  let url: URL;
  try {
    url = new URL(HAS_SCHEME.test(text) ? text : `http://${text}`);
  } catch {
    throw unusable(`${source} is not a valid proxy address; expected http://[user:password@]host:port`);
  }
  if (/^socks/.test(url.protocol)) {
    throw unusable(`${source} names a SOCKS proxy (${url.protocol}//), which this connector does not support; give an HTTP proxy (http:// or https://)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw unusable(`${source} must start with http:// or https:// (got ${url.protocol}//)`);
  }
  if (url.hostname === '') throw unusable(`${source} has no host name; expected http://[user:password@]host:port`);
  // An @ past the host: credentials holding an unencoded @ and then a /, ? or #, which end the URL's authority there,
  // so that its host would be read from inside the password (and named in every message).
  if (`${url.pathname}${url.search}${url.hash}`.includes('@')) {
    throw unusable(
      `${source} has an @ after its host: a user name or password holding @, /, ? or # must percent-encode them (@ as %40, / as %2F, ? as %3F, # as %23); expected http://[user:password@]host:port`,
    );
  }
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  let token: string | undefined;
  if (url.username !== '' || url.password !== '') {
    const user = decode(url.username, 'user name', source);
    const password = decode(url.password, 'password', source);
    token = `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
  }
  const display = `${url.hostname}:${port}`;
  return { uri: `${url.protocol}//${display}`, display, source, token };
}

/** The authority (`userinfo@host:port`) of an address as written, before the URL parser normalises it. */
function authorityOf(text: string): string {
  const rest = text.replace(HAS_SCHEME, '');
  const end = rest.search(/[/?#]/);
  return end < 0 ? rest : rest.slice(0, end);
}

/**
 * Every form in which the credentials of a proxy address could show up in a
 * message: the user:password pair and the password as written and decoded,
 * and the Basic token. Never throws; [] for an address without credentials.
 */
export function proxyUrlSecrets(value: unknown): string[] {
  if (typeof value !== 'string') return [];
  const authority = authorityOf(value.trim());
  const at = authority.lastIndexOf('@');
  if (at < 0) return [];
  const userinfo = authority.slice(0, at);
  const colon = userinfo.indexOf(':');
  const user = colon < 0 ? userinfo : userinfo.slice(0, colon);
  const password = colon < 0 ? '' : userinfo.slice(colon + 1);
  const safeDecode = (s: string): string => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  const out = new Set<string>([userinfo, safeDecode(userinfo), `${safeDecode(user)}:${safeDecode(password)}`]);
  if (password !== '') {
    out.add(password);
    out.add(safeDecode(password));
  }
  out.add(Buffer.from(`${safeDecode(user)}:${safeDecode(password)}`, 'utf8').toString('base64'));
  return [...out].filter((s) => s !== '' && s !== ':');
}
