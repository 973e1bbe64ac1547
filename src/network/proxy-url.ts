/**
 * Proxy addresses, read as curl reads them: `[http|https]://[user:password@]host[:port]`
 * (no scheme means http://; no port means 1080, or 443 for https://). From
 * one we take what the client needs (host, port, Basic credentials), how
 * messages name the proxy (host:port and where the address came from, never
 * the credentials), and every form of the credentials that must be hidden
 * from output. Shared by the config (validation) and the client.
 */

export interface ProxyEndpoint {
  readonly protocol: 'http:' | 'https:';
  /** Host name or IP address to connect to (an IPv6 address without brackets). */
  readonly hostname: string;
  readonly port: number;
  /** `host:port` (`[v6]:port`): how messages name the proxy. */
  readonly display: string;
  /** Where the address came from: `proxy_url`, `https_proxy`, `HTTPS_PROXY`, ... */
  readonly source: string;
  /** `Basic <base64>` when the address carries credentials. */
  readonly authorization: string | undefined;
  /** `scheme://host:port`: the origin of a connection pool to the proxy. */
  readonly origin: string;
}

/** A proxy setting that cannot be used; the message never quotes the value (it may hold a password). */
export class ProxySettingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProxySettingError';
  }
}

const SOCKS = /^socks(4a?|5h?)?:$/;
const HAS_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/** The authority (`userinfo@host:port`) of an address as written, for what the URL parser normalises away. */
function authorityOf(text: string): string {
  const rest = text.replace(HAS_SCHEME, '');
  const end = rest.search(/[/?#]/);
  return end < 0 ? rest : rest.slice(0, end);
}

/** The port written in the address, if any (`http://p:80` keeps 80, which the URL parser drops as the default). */
function explicitPort(text: string): number | undefined {
  const authority = authorityOf(text);
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  const match = /:(\d+)$/.exec(hostPort);
  return match === null ? undefined : Number(match[1]);
}

function decode(part: string, what: string, source: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new ProxySettingError(`the ${what} in ${source} has a malformed %-escape; percent-encode special characters (@ as %40, : as %3A)`);
  }
}

/** Parse a proxy address; `source` names the setting in messages. Throws ProxySettingError. */
export function parseProxyUrl(value: string, source: string): ProxyEndpoint {
  const text = value.trim();
  if (text === '') throw new ProxySettingError(`${source} is empty; give the proxy as http://host:port`);
  const withScheme = HAS_SCHEME.test(text) ? text : `http://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new ProxySettingError(`${source} is not a valid proxy address; expected http://[user:password@]host:port`);
  }
  if (SOCKS.test(url.protocol)) {
    throw new ProxySettingError(`${source} names a SOCKS proxy (${url.protocol}//), which this connector does not support; give an HTTP proxy (http:// or https://)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ProxySettingError(`${source} must start with http:// or https:// (got ${url.protocol}//)`);
  }
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  if (hostname === '') throw new ProxySettingError(`${source} has no host name; expected http://[user:password@]host:port`);
  const port = explicitPort(withScheme) ?? (url.protocol === 'https:' ? 443 : 1080);
  if (!(port >= 1 && port <= 65_535)) throw new ProxySettingError(`${source} has a port out of range (1 to 65535)`);
  const host = hostname.includes(':') ? `[${hostname}]` : hostname;
  let authorization: string | undefined;
  if (url.username !== '' || url.password !== '') {
    const user = decode(url.username, 'user name', source);
    const password = decode(url.password, 'password', source);
    authorization = `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
  }
  return {
    protocol: url.protocol,
    hostname,
    port,
    display: `${host}:${port}`,
    source,
    authorization,
    origin: `${url.protocol}//${host}:${port}`,
  };
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
