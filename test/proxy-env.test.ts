/**
 * The proxy environment as curl reads it (which variable applies, NO_PROXY
 * rules), proxy addresses (defaults, credentials, what is refused), and the
 * forms of the credentials that are hidden from output.
 */
import { describe, expect, it } from 'vitest';
import { noProxyMatch, proxyFromEnv, proxySecrets } from '../src/network/proxy-env.js';
import { parseProxyUrl, proxyUrlSecrets, ProxySettingError } from '../src/network/proxy-url.js';

const HTTPS = new URL('https://api.example.com');
const HTTP = new URL('http://127.0.0.1:8642');

describe('which variable applies (curl: libcurl-env)', () => {
  const chosen = (target: URL, env: Record<string, string>): string | undefined => proxyFromEnv(target, env).proxy?.variable;

  it('an https:// API: https_proxy, else HTTPS_PROXY, else all_proxy, else ALL_PROXY', () => {
    expect(chosen(HTTPS, { https_proxy: 'a:1', HTTPS_PROXY: 'b:1', all_proxy: 'c:1', ALL_PROXY: 'd:1' })).toBe('https_proxy');
    expect(chosen(HTTPS, { HTTPS_PROXY: 'b:1', all_proxy: 'c:1', ALL_PROXY: 'd:1' })).toBe('HTTPS_PROXY');
    expect(chosen(HTTPS, { all_proxy: 'c:1', ALL_PROXY: 'd:1' })).toBe('all_proxy');
    expect(chosen(HTTPS, { ALL_PROXY: 'd:1' })).toBe('ALL_PROXY');
    expect(chosen(HTTPS, { http_proxy: 'x:1', HTTP_PROXY: 'y:1' })).toBeUndefined();
    expect(chosen(HTTPS, {})).toBeUndefined();
  });

  it('a lower-case variable that is set, even empty, hides its upper-case twin; empty means no proxy', () => {
    expect(chosen(HTTPS, { https_proxy: '', HTTPS_PROXY: 'b:1' })).toBeUndefined();
    expect(chosen(HTTPS, { HTTPS_PROXY: '   ' })).toBeUndefined();
  });

  it('an http:// API: http_proxy, else HTTP_PROXY (honoured, unlike curl), else all_proxy, else ALL_PROXY', () => {
    expect(chosen(HTTP, { http_proxy: 'a:1', HTTP_PROXY: 'b:1' })).toBe('http_proxy');
    expect(chosen(HTTP, { HTTP_PROXY: 'b:1', ALL_PROXY: 'd:1' })).toBe('HTTP_PROXY');
    expect(chosen(HTTP, { http_proxy: '', HTTP_PROXY: 'b:1' })).toBeUndefined();
    expect(chosen(HTTP, { ALL_PROXY: 'd:1' })).toBe('ALL_PROXY');
    expect(chosen(HTTP, { HTTPS_PROXY: 'b:1' })).toBeUndefined();
  });

  it('no_proxy, else NO_PROXY; the entry that matched is reported', () => {
    expect(proxyFromEnv(HTTPS, { HTTPS_PROXY: 'p:1', NO_PROXY: 'example.com' }).bypass).toEqual({ variable: 'NO_PROXY', entry: 'example.com' });
    expect(proxyFromEnv(HTTPS, { HTTPS_PROXY: 'p:1', no_proxy: 'other.org', NO_PROXY: 'example.com' }).proxy?.variable).toBe('HTTPS_PROXY');
    expect(proxyFromEnv(HTTPS, { HTTPS_PROXY: 'p:1', no_proxy: '', NO_PROXY: '*' }).proxy?.variable).toBe('HTTPS_PROXY');
    expect(proxyFromEnv(HTTP, { http_proxy: 'p:1', no_proxy: '127.0.0.1' }).proxy).toBeUndefined();
  });
});

describe('NO_PROXY entries (curl: CURLOPT_NOPROXY, plus ports)', () => {
  const cases: [host: string, port: number, list: string, matches: boolean][] = [
    // host names: the name itself and every name below it; case and a trailing dot do not matter
    ['example.com', 443, 'example.com', true],
    ['example.com', 443, '.example.com', true],
    ['api.example.com', 443, 'example.com', true],
    ['api.example.com', 443, '.example.com', true],
    ['api.example.com', 443, '*.example.com', true],
    ['API.Example.COM', 443, 'example.com.', true],
    ['example.com.', 443, 'EXAMPLE.com', true],
    ['badexample.com', 443, 'example.com', false],
    ['example.com', 443, 'api.example.com', false],
    ['example.com.org', 443, 'example.com', false],
    // lists: commas and blanks; empty entries skipped
    ['b.example', 443, 'a.example, b.example', true],
    ['b.example', 443, 'a.example b.example', true],
    ['b.example', 443, ',,a.example,,', false],
    ['anything.at.all', 443, '*', true],
    ['anything.at.all', 443, ' * ', true],
    // `*` alone only, as curl: inside a list it is no wildcard
    ['anything.at.all', 443, '*,example.com', false],
    // ports: an entry with a port matches that port only
    ['api.internal', 8443, 'api.internal:8443', true],
    ['api.internal', 443, 'api.internal:8443', false],
    ['x.api.internal', 8443, '.api.internal:8443', true],
    // IPv4: exact or CIDR; names are never resolved
    ['10.1.2.3', 443, '10.1.2.3', true],
    ['10.1.2.3', 443, '10.0.0.0/8', true],
    ['10.1.2.3', 443, '10.1.2.0/24', true],
    ['10.1.2.3', 443, '10.1.3.0/24', false],
    ['10.1.2.3', 443, '10.1.2.3/32', true],
    ['10.1.2.3', 443, '0.0.0.0/0', true],
    ['10.1.2.3', 443, '10.0.0.0/33', false],
    ['10.1.2.3', 443, '10.0.0.0/x', false],
    ['10.1.2.3', 443, '10.1.2.3:443', true],
    ['10.1.2.3', 443, '10.1.2.3:80', false],
    ['127.0.0.1', 443, 'localhost', false],
    ['localhost', 443, '127.0.0.1', false],
    ['10.1.2.3', 443, '1.2.3', false],
    // IPv6: with or without brackets, CIDR, an IPv4 tail
    ['[::1]', 443, '::1', true],
    ['[::1]', 443, '[::1]', true],
    ['[::1]', 8080, '[::1]:8080', true],
    ['[::1]', 443, '[::1]:8080', false],
    ['[fd12:3456::1]', 443, 'fd00::/8', true],
    ['[fe80::1]', 443, 'fd00::/8', false],
    ['[2001:db8::1]', 443, '2001:db8::/32', true],
    ['[::ffff:10.0.0.1]', 443, '::ffff:10.0.0.0/120', true],
    ['[::1]', 443, '127.0.0.1', false],
    ['127.0.0.1', 443, '::1', false],
  ];
  it.each(cases)('%s:%d against "%s" -> %s', (host, port, list, matches) => {
    expect(noProxyMatch(host, port, list) !== undefined).toBe(matches);
  });
});

describe('proxy addresses', () => {
  it('no scheme means http://; no port means 1080, or 443 for https:// (as curl); a written default port stays', () => {
    expect(parseProxyUrl('proxy.corp:3128', 'HTTPS_PROXY')).toMatchObject({ protocol: 'http:', hostname: 'proxy.corp', port: 3128, display: 'proxy.corp:3128', authorization: undefined });
    expect(parseProxyUrl('http://proxy.corp', 'x').port).toBe(1080);
    expect(parseProxyUrl('https://proxy.corp', 'x').port).toBe(443);
    expect(parseProxyUrl('http://proxy.corp:80', 'x').port).toBe(80);
    expect(parseProxyUrl('https://proxy.corp:443/', 'x')).toMatchObject({ port: 443, origin: 'https://proxy.corp:443' });
    expect(parseProxyUrl('http://[::1]:3128', 'x')).toMatchObject({ hostname: '::1', display: '[::1]:3128', origin: 'http://[::1]:3128' });
  });

  it('credentials are percent-decoded into a Basic token', () => {
    const p = parseProxyUrl('http://us%40er:p%3Ass%20w@proxy:3128', 'proxy_url');
    expect(p.authorization).toBe(`Basic ${Buffer.from('us@er:p:ss w').toString('base64')}`);
    expect(p.display).toBe('proxy:3128');
    expect(parseProxyUrl('http://user@proxy:3128', 'x').authorization).toBe(`Basic ${Buffer.from('user:').toString('base64')}`);
  });

  it('what cannot be used is refused in words that never quote the credentials', () => {
    const cases: [string, RegExp][] = [
      ['', /proxy_url is empty/],
      ['socks5://user:Sup3rSecret@proxy:1080', /proxy_url names a SOCKS proxy \(socks5:\/\/\), which this connector does not support/],
      ['socks5h://proxy:1080', /SOCKS/],
      ['ftp://user:Sup3rSecret@proxy:21', /must start with http:\/\/ or https:\/\/ \(got ftp:\/\/\)/],
      ['http://user:Sup3rSecret@', /not a valid proxy address|has no host name/],
      ['http://user:Sup3rSecret@proxy:99999', /not a valid proxy address|port out of range/],
      ['http://user:Sup3r%zzSecret@proxy:3128', /password in proxy_url has a malformed %-escape/],
    ];
    for (const [value, message] of cases) {
      let error: unknown;
      try {
        parseProxyUrl(value, 'proxy_url');
      } catch (err) {
        error = err;
      }
      expect(error, value).toBeInstanceOf(ProxySettingError);
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
    expect(proxySecrets('http://a:pw-from-config@p:1', { HTTPS_PROXY: 'http://b:pw-from-env@p:1', http_proxy: 'c:pw-lower@p:1', NO_PROXY: 'x:y@z' })).toEqual(
      expect.arrayContaining(['pw-from-config', 'pw-from-env', 'pw-lower']),
    );
    expect(proxySecrets(undefined, { NO_PROXY: 'x:notasecret@z' })).toEqual([]);
  });
});
