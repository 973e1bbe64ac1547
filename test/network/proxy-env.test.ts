/**
 * The proxy environment (which variable names the proxy), NO_PROXY as
 * undici's EnvHttpProxyAgent applies it (the rules docs/networking.md gives:
 * an undici upgrade that changes them fails here), proxy addresses
 * (defaults, credentials, what is refused), and the forms of the credentials
 * that are hidden from output.
 */
import { EnvHttpProxyAgent, Pool, type buildConnector } from 'undici';
import { describe, expect, it } from 'vitest';
import { envAllProxy, envNoProxy, envProxy, proxySecrets } from '../../src/network/proxy-env.js';
import { ConfigError } from '../../src/errors.js';
import { parseProxyUrl, proxyUrlSecrets } from '../../src/network/proxy-url.js';

describe('which variable names the proxy (as undici reads them)', () => {
  const chosen = (protocol: string, env: Record<string, string>): string | undefined => envProxy(protocol, env)?.variable;

  it('an https:// API: https_proxy, else HTTPS_PROXY, else the http:// one (http_proxy, else HTTP_PROXY); ALL_PROXY is not read', () => {
    expect(chosen('https:', { https_proxy: 'a:1', HTTPS_PROXY: 'b:1', http_proxy: 'c:1' })).toBe('https_proxy');
    expect(chosen('https:', { HTTPS_PROXY: 'b:1', http_proxy: 'c:1' })).toBe('HTTPS_PROXY');
    expect(chosen('https:', { http_proxy: 'c:1', HTTP_PROXY: 'd:1' })).toBe('http_proxy');
    expect(chosen('https:', { HTTP_PROXY: 'd:1' })).toBe('HTTP_PROXY');
    expect(chosen('https:', { all_proxy: 'e:1', ALL_PROXY: 'f:1' })).toBeUndefined();
    expect(envAllProxy({ all_proxy: 'e:1', ALL_PROXY: 'f:1' })?.variable).toBe('all_proxy');
    expect(chosen('https:', {})).toBeUndefined();
  });

  it('an http:// API: http_proxy, else HTTP_PROXY, never HTTPS_PROXY', () => {
    expect(chosen('http:', { http_proxy: 'a:1', HTTP_PROXY: 'b:1' })).toBe('http_proxy');
    expect(chosen('http:', { HTTP_PROXY: 'b:1' })).toBe('HTTP_PROXY');
    expect(chosen('http:', { HTTPS_PROXY: 'b:1' })).toBeUndefined();
  });

  it('a lower-case variable that is set, even empty, hides its upper-case twin; empty or blank means none', () => {
    expect(chosen('https:', { https_proxy: '', HTTPS_PROXY: 'b:1' })).toBeUndefined();
    expect(chosen('https:', { https_proxy: '', HTTPS_PROXY: 'b:1', HTTP_PROXY: 'c:1' })).toBe('HTTP_PROXY');
    expect(chosen('https:', { HTTPS_PROXY: '   ' })).toBeUndefined();
    expect(chosen('http:', { http_proxy: '', HTTP_PROXY: 'b:1' })).toBeUndefined();
    expect(envNoProxy({ no_proxy: 'a.example', NO_PROXY: 'b.example' })).toEqual({ variable: 'no_proxy', value: 'a.example' });
    expect(envNoProxy({ no_proxy: '', NO_PROXY: 'b.example' })).toBeUndefined();
  });
});

describe('NO_PROXY entries, as undici applies them', () => {
  /** Whether undici's EnvHttpProxyAgent sends a request to an https:// `origin` through the proxy, with NO_PROXY `list` (no connection is made). */
  async function proxied(origin: string, list: string): Promise<boolean> {
    const refuse = (how: string): buildConnector.connector => (_options, callback) => callback(Object.assign(new Error(how), { code: how }), null);
    const agent = new EnvHttpProxyAgent({
      httpProxy: 'http://proxy.invalid:3128',
      httpsProxy: 'http://proxy.invalid:3128',
      noProxy: list,
      connect: refuse('DIRECT'),
      clientFactory: (uri: URL) => new Pool(uri, { connect: refuse('PROXY') }),
    });
    try {
      await agent.request({ origin, path: '/', method: 'GET' });
      throw new Error('a connection was made');
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code !== 'DIRECT' && code !== 'PROXY') throw err;
      return code === 'PROXY';
    } finally {
      await agent.destroy();
    }
  }

  const cases: [origin: string, list: string, proxied: boolean][] = [
    // host names: the name itself and every name below it; case and a trailing dot do not matter
    ['https://example.com', 'example.com', false],
    ['https://example.com', '.example.com', false],
    ['https://api.example.com', 'example.com', false],
    ['https://api.example.com', '.example.com', false],
    ['https://API.Example.COM', 'example.com.', false],
    ['https://badexample.com', 'example.com', true],
    ['https://example.com', 'api.example.com', true],
    // *.example.com: the names below it, not example.com itself
    ['https://api.example.com', '*.example.com', false],
    ['https://example.com', '*.example.com', true],
    // lists: commas and blanks; `*` anywhere exempts every host
    ['https://b.example', 'a.example, b.example', false],
    ['https://b.example', 'a.example b.example', false],
    ['https://anything.at.all', '*', false],
    ['https://anything.at.all', 'example.com,*', false],
    // ports: an entry with a port matches that port only (443 when the address has none)
    ['https://api.internal:8443', 'api.internal:8443', false],
    ['https://api.internal', 'api.internal:8443', true],
    ['https://api.internal', 'api.internal:443', false],
    // addresses: compared as text, never resolved, no CIDR ranges
    ['https://10.1.2.3', '10.1.2.3', false],
    ['https://10.1.2.3', '10.0.0.0/8', true],
    ['https://127.0.0.1', 'localhost', true],
    ['https://[::1]:8080', '[::1]:8080', false],
    ['https://[::1]', '::1', false],
  ];
  it.each(cases)('%s against "%s": through the proxy %s', async (origin, list, expected) => {
    expect(await proxied(origin, list)).toBe(expected);
  });
});

describe('proxy addresses', () => {
  it('no scheme means http://; no port means the scheme\'s (80, or 443 for https://), as undici connects', () => {
    expect(parseProxyUrl('proxy.corp:3128', 'HTTPS_PROXY')).toEqual({ uri: 'http://proxy.corp:3128', display: 'proxy.corp:3128', source: 'HTTPS_PROXY', token: undefined });
    expect(parseProxyUrl('http://proxy.corp', 'x').display).toBe('proxy.corp:80');
    expect(parseProxyUrl('https://proxy.corp', 'x').uri).toBe('https://proxy.corp:443');
    expect(parseProxyUrl('https://proxy.corp:443/', 'x').uri).toBe('https://proxy.corp:443');
    expect(parseProxyUrl('http://[::1]:3128', 'x')).toMatchObject({ uri: 'http://[::1]:3128', display: '[::1]:3128' });
  });

  it('credentials are percent-decoded into a Basic token, and kept out of the address undici is given', () => {
    const p = parseProxyUrl('http://us%40er:p%3Ass%20w@proxy:3128', 'proxy_url');
    expect(p.token).toBe(`Basic ${Buffer.from('us@er:p:ss w').toString('base64')}`);
    expect(p).toMatchObject({ uri: 'http://proxy:3128', display: 'proxy:3128' });
    expect(parseProxyUrl('http://user@proxy:3128', 'x').token).toBe(`Basic ${Buffer.from('user:').toString('base64')}`);
  });

  it('what cannot be used is refused in words that never quote the credentials', () => {
    const cases: [string, RegExp][] = [
      ['', /proxy_url is empty/],
      ['socks5://user:Sup3rSecret@proxy:1080', /proxy_url names a SOCKS proxy \(socks5:\/\/\), which this connector does not support/],
      ['socks5h://proxy:1080', /SOCKS/],
      ['ftp://user:Sup3rSecret@proxy:21', /must start with http:\/\/ or https:\/\/ \(got ftp:\/\/\)/],
      ['http://user:Sup3rSecret@', /not a valid proxy address|has no host name/],
      ['http://user:Sup3rSecret@proxy:99999', /not a valid proxy address/],
      ['http://user:Sup3r%zzSecret@proxy:3128', /password in proxy_url has a malformed %-escape/],
      // An @ left unencoded, then a #, ? or /: the URL's host would be read from inside the password (and logged).
      ['http://etl:Sup3r@Secret#w@proxy:3128', /proxy_url has an @ after its host.*percent-encode.*%23/],
      ['http://etl:Sup3r@Secret?w@proxy:3128', /proxy_url has an @ after its host/],
      ['http://etl:Sup3r@Secret/w@proxy:3128', /proxy_url has an @ after its host/],
    ];
    for (const [value, message] of cases) {
      let error: unknown;
      try {
        parseProxyUrl(value, 'proxy_url');
      } catch (err) {
        error = err;
      }
      expect(error, value).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).not.toContain('Sup3r');
    }
  });

  it('the forms of the credentials to hide: the pair and the password as written and decoded, and the Basic token', () => {
    const secrets = proxyUrlSecrets('http://etl:p%40ss-w0rd@proxy:3128');
    expect(secrets).toEqual(expect.arrayContaining(['etl:p%40ss-w0rd', 'etl:p@ss-w0rd', 'p%40ss-w0rd', 'p@ss-w0rd', Buffer.from('etl:p@ss-w0rd').toString('base64')]));
    expect(secrets).not.toContain('etl');
    expect(proxyUrlSecrets('http://proxy:3128')).toEqual([]);
    expect(proxyUrlSecrets(42)).toEqual([]);
    expect(proxySecrets('http://a:pw-from-config@p:1', { HTTPS_PROXY: 'http://b:pw-from-env@p:1', http_proxy: 'c:pw-lower@p:1', ALL_PROXY: 'http://d:pw-all@p:1', NO_PROXY: 'x:y@z' })).toEqual(
      expect.arrayContaining(['pw-from-config', 'pw-from-env', 'pw-lower', 'pw-all']),
    );
    expect(proxySecrets(undefined, { NO_PROXY: 'x:notasecret@z' })).toEqual([]);
  });
});
