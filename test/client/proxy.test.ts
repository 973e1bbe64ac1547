/**
 * The client through a real forward proxy (test/helpers/forward-proxy.ts) to
 * the emulator over TLS with a throw-away CA, in process: CONNECT tunnels,
 * absolute-form requests, Basic credentials, and every way the proxy can
 * fail (407, 403, down, cannot reach the API), each in plain words that name
 * the proxy by host:port and never its credentials. Pacing and the
 * concurrency gate are checked with the emulator's own counters.
 */
import { createServer, type AddressInfo } from 'node:net';
import nock from 'nock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withProxyLab } from '../helpers/suite.js';
import { createClient, type CreateClientOptions } from '../../src/client/client.js';
import { ApiError } from '../../src/client/api-error.js';
import type { DataReadApi } from '../../src/client/types.js';
import { ConnectorError } from '../../src/errors.js';
import { startEmulator, type Emulator } from 'data-read-emulator';
import { type TestCa } from '../helpers/certificates.js';
import { closedPort, startForwardProxy, type ForwardProxy, type ProxyLogEntry } from '../helpers/forward-proxy.js';

const PASSWORD = 'pr0xy-S3cret!pw';
let ca: TestCa;
let tlsEmu: Emulator;
let plainEmu: Emulator;
let proxy: ForwardProxy;
let authProxy: ForwardProxy;
let tlsKey: string;
let plainKey: string;

withProxyLab({ seed: 'proxy-client', password: PASSWORD }, (lab) => ({ ca, tlsEmu, plainEmu, proxy, authProxy } = lab));
// Real sockets only. In a worker that ran a file using nock before this one (vitest's shared workers), nock's interception
// of net and tls stays on and changes what the CONNECT tunnels and TLS handshakes here meet: a tunnel's 502 or an untrusted
// certificate came back as other faults, with an error thrown in undici's socket handler, in 2 of 7 whole-suite runs.
let nockWasActive = false;
beforeAll(() => {
  nockWasActive = nock.isActive();
  if (nockWasActive) nock.restore();
});
afterAll(() => {
  if (nockWasActive) nock.activate();
});

beforeAll(() => {
  for (const [emu, set] of [[tlsEmu, (k: string) => (tlsKey = k)], [plainEmu, (k: string) => (plainKey = k)]] as const) {
    const account = emu.control.createAccount({ name: 'Proxied' });
    emu.control.seed(account.id, { contacts: 120 });
    set(emu.control.createKey(account.id).key);
  }
});

interface Made {
  readonly client: DataReadApi;
  readonly logs: string[];
}

function make(options: Partial<CreateClientOptions> & { env?: Record<string, string> }, tls = true): Made {
  const logs: string[] = [];
  const client = createClient({
    baseUrl: tls ? tlsEmu.url : plainEmu.url,
    apiKey: tls ? tlsKey : plainKey,
    userAgent: 'proxy-test',
    timeoutMs: 5000,
    maxRetries: 1,
    maxWaitSeconds: 30,
    maxConcurrent: 2,
    retryBaseMs: 10,
    retryMaxMs: 20,
    onLog: (level, message) => logs.push(`${level} ${message}`),
    ...(tls ? { caCertificate: ca.caCert } : {}),
    env: {},
    ...options,
  });
  return { client, logs };
}

async function anyFailure(run: () => Promise<unknown>): Promise<ConnectorError> {
  try {
    await run();
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectorError);
    return err as ConnectorError;
  }
  throw new Error('expected a failure');
}

async function failure(run: () => Promise<unknown>): Promise<ApiError> {
  const err = await anyFailure(run);
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

const since = (p: ForwardProxy): number => p.log.length;

/** `me` and a page of `limit` contacts through `client` (closed after), both the emulator's answers; what `p` was asked meanwhile. */
async function meAndPage(client: DataReadApi, p: ForwardProxy, limit: number): Promise<ProxyLogEntry[]> {
  const before = since(p);
  const me = await client.me();
  const page = await client.list('/v1/contacts', { limit });
  await client.close();
  expect(me.account_name).toBe('Proxied');
  expect(page.data).toHaveLength(limit);
  return p.log.slice(before);
}

describe('through a CONNECT tunnel', () => {
  it('HTTPS_PROXY: every request of an https:// API goes through the proxy, and the answers are the API\'s', async () => {
    const { client, logs } = make({ env: { HTTPS_PROXY: proxy.url } });
    const seen = await meAndPage(client, proxy, 50);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((e) => e.method === 'CONNECT' && e.target === `127.0.0.1:${tlsEmu.port}` && e.status === 200)).toBe(true);
    expect(logs.join('\n')).toContain(`through the proxy 127.0.0.1:${proxy.port} (HTTPS_PROXY) through a CONNECT tunnel`);
  });

  it('lower-case https_proxy wins over HTTPS_PROXY; proxy_url wins over both and over NO_PROXY', async () => {
    const down = `http://127.0.0.1:${await closedPort()}`;
    const before = since(proxy);
    const a = make({ env: { https_proxy: proxy.url, HTTPS_PROXY: down } });
    await a.client.me();
    await a.client.close();
    const b = make({ proxyUrl: proxy.url, env: { HTTPS_PROXY: down, NO_PROXY: '127.0.0.1' } });
    await b.client.me();
    await b.client.close();
    expect(proxy.log.length - before).toBe(2);
  });

  it('NO_PROXY exempts the host: no proxy is used (the one named is down)', async () => {
    const down = `http://127.0.0.1:${await closedPort()}`;
    for (const noProxy of ['127.0.0.1', `127.0.0.1:${tlsEmu.port}`, '*', 'example.com, 127.0.0.1', 'example.com *']) {
      const { client, logs } = make({ env: { HTTPS_PROXY: down, no_proxy: noProxy, NO_PROXY: 'example.com' } });
      await expect(client.me()).resolves.toMatchObject({ account_name: 'Proxied' });
      await client.close();
      expect(logs.join('\n')).toContain('(HTTPS_PROXY) through a CONNECT tunnel, unless no_proxy exempts 127.0.0.1');
    }
  });

  it('NO_PROXY entries that do not exempt the host: another port, a CIDR range (names and ranges are compared as text)', async () => {
    const down = `http://127.0.0.1:${await closedPort()}`;
    for (const noProxy of [`127.0.0.1:${tlsEmu.port + 1}`, '127.0.0.0/8', 'localhost']) {
      const { client } = make({ env: { HTTPS_PROXY: down, NO_PROXY: noProxy }, maxRetries: 0 });
      const err = await failure(() => client.me());
      await client.close();
      expect(err.message).toContain('refused the connection (ECONNREFUSED)');
    }
  });

  it('HTTP_PROXY serves an https:// API when HTTPS_PROXY is not set; ALL_PROXY is not read, and a WARN says so', async () => {
    const before = since(proxy);
    const a = make({ env: { HTTP_PROXY: proxy.url } });
    await a.client.me();
    await a.client.close();
    expect(proxy.log.length - before).toBe(1);
    expect(a.logs.join('\n')).toContain(`through the proxy 127.0.0.1:${proxy.port} (HTTP_PROXY) through a CONNECT tunnel`);
    const b = make({ env: { ALL_PROXY: proxy.url } });
    await b.client.me();
    await b.client.close();
    expect(proxy.log.length - before).toBe(1);
    expect(b.logs.join('\n')).toContain('WARN ALL_PROXY is not read');
  });

  it('Basic credentials from the proxy address are sent to the proxy, decoded; they never reach a message', async () => {
    const before = since(authProxy);
    const encoded = encodeURIComponent(PASSWORD);
    const { client, logs } = make({ proxyUrl: `http://etl:${encoded}@127.0.0.1:${authProxy.port}` });
    await client.me();
    await client.close();
    const seen = authProxy.log.slice(before);
    expect(seen.map((e) => e.status)).toEqual([200]);
    expect(seen[0]?.authorization).toBe(`Basic ${Buffer.from(`etl:${PASSWORD}`).toString('base64')}`);
    expect(logs.join('\n')).toContain('with the credentials it carries');
    expect(logs.join('\n')).not.toContain(PASSWORD);
    expect(logs.join('\n')).not.toContain(encoded);
  });

  it('407: a config_error that names the proxy by host:port, whether credentials are missing or wrong; not retried', async () => {
    for (const [userinfo, words] of [['', 'requires a user name and password'], ['etl:wrong-password-1@', 'did not accept the user name and password']] as const) {
      const before = since(authProxy);
      const { client } = make({ env: { HTTPS_PROXY: `http://${userinfo}127.0.0.1:${authProxy.port}` } });
      const err = await failure(() => client.me());
      await client.close();
      expect(err).toMatchObject({ code: 'proxy', failureType: 'config_error' });
      expect(err.message).toContain(`the proxy 127.0.0.1:${authProxy.port} (HTTPS_PROXY) ${words}`);
      expect(err.message).toContain('407');
      expect(err.message).not.toContain('wrong-password-1');
      expect(JSON.stringify({ m: err.message, i: err.internal, s: err.stack, c: String((err.cause as Error | undefined)?.stack) })).not.toContain('wrong-password-1');
      expect(authProxy.log.slice(before).map((e) => e.status)).toEqual([407]);
    }
  });

  it('403 from the proxy: a config_error that says its rules refuse the address', async () => {
    const strict = await startForwardProxy({ forbid: [`127.0.0.1:${tlsEmu.port}`] });
    try {
      const { client } = make({ env: { HTTPS_PROXY: strict.url } });
      const err = await failure(() => client.me());
      await client.close();
      expect(err).toMatchObject({ code: 'proxy', failureType: 'config_error' });
      expect(err.message).toMatch(/refused to connect to 127\.0\.0\.1:\d+ \(HTTP 403 Forbidden\).*NO_PROXY/);
    } finally {
      await strict.close();
    }
  });

  it('a proxy that is down: retried, then a transient error that names it', async () => {
    const port = await closedPort();
    const { client, logs } = make({ env: { HTTPS_PROXY: `http://127.0.0.1:${port}` }, maxRetries: 2 });
    const err = await failure(() => client.me());
    await client.close();
    expect(err).toMatchObject({ code: 'unreachable', failureType: 'transient_error' });
    expect(err.message).toContain(`the proxy 127.0.0.1:${port} (HTTPS_PROXY) refused the connection (ECONNREFUSED)`);
    expect(err.message).toContain('3 attempts');
    expect(err.message).toContain(`Check that the proxy 127.0.0.1:${port} runs`);
    expect(logs.filter((l) => l.startsWith('WARN') && l.includes('retry')).length).toBe(2);
  });

  it('a proxy that cannot reach the API (502): retried, then a transient error', async () => {
    const gone = await closedPort();
    const { client } = make({ baseUrl: `https://127.0.0.1:${gone}`, env: { HTTPS_PROXY: proxy.url } });
    const err = await failure(() => client.me());
    await client.close();
    expect(err).toMatchObject({ code: 'unreachable', failureType: 'transient_error' });
    expect(err.message).toContain(`could not reach 127.0.0.1:${gone} (HTTP 502 Bad Gateway)`);
  });

  it('a proxy that accepts the connection but never answers CONNECT: a timeout, retried, then a transient error', async () => {
    const silent = createServer((socket) => socket.on('error', () => undefined));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    try {
      const { client, logs } = make({ env: { HTTPS_PROXY: `http://127.0.0.1:${port}` }, timeoutMs: 300, maxRetries: 1 });
      const err = await failure(() => client.me());
      await client.close();
      expect(err).toMatchObject({ failureType: 'transient_error' });
      expect(err.message).toMatch(/within 300 ms|took longer than 300 ms/);
      expect(logs.filter((l) => l.includes('retry 1 of 1')).length).toBe(1);
    } finally {
      silent.close();
    }
  });

  it('an unusable proxy setting is a config_error at the first request, naming the variable', async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ HTTPS_PROXY: 'socks5://127.0.0.1:1080' }, /HTTPS_PROXY names a SOCKS proxy/],
      [{ https_proxy: 'ftp://proxy:21' }, /https_proxy must start with http:\/\/ or https:\/\//],
      [{ HTTP_PROXY: 'http://u:p%zz@proxy:3128' }, /password in HTTP_PROXY has a malformed %-escape/],
    ];
    for (const [env, message] of cases) {
      const { client } = make({ env });
      const err = await anyFailure(() => client.me());
      await client.close();
      expect(err).toMatchObject({ failureType: 'config_error' });
      expect(err.message).toMatch(message);
    }
  });

  it('the API\'s certificate from a private CA: a config_error that points to ca_certificate, then it works with it', async () => {
    const without = make({ env: { HTTPS_PROXY: proxy.url }, caCertificate: undefined });
    const err = await failure(() => without.client.me());
    await without.client.close();
    expect(err).toMatchObject({ failureType: 'config_error' });
    expect(err.message).toMatch(/TLS certificate of 127\.0\.0\.1:\d+ is not trusted/);
    expect(err.message).toContain('ca_certificate');
    const wrong = make({ env: { HTTPS_PROXY: proxy.url }, caCertificate: ca.otherCaCert });
    const err2 = await failure(() => wrong.client.me());
    await wrong.client.close();
    expect(err2.message).toContain('that ca_certificate holds the certificate authority');
    const right = make({ env: { HTTPS_PROXY: proxy.url } });
    await expect(right.client.me()).resolves.toMatchObject({ account_name: 'Proxied' });
    await right.client.close();
    // The same authority in OpenSSL's TRUSTED CERTIFICATE form (openssl x509 -addtrust): its DER, then trust settings.
    const der = Buffer.from(ca.caCert.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, ''), 'base64');
    const body = Buffer.concat([der, Buffer.from('300c300a06082b06010505070301', 'hex')]).toString('base64').replace(/.{64}/g, '$&\n');
    const trusted = make({ env: { HTTPS_PROXY: proxy.url }, caCertificate: `-----BEGIN TRUSTED CERTIFICATE-----\n${body}\n-----END TRUSTED CERTIFICATE-----\n` });
    await expect(trusted.client.me()).resolves.toMatchObject({ account_name: 'Proxied' });
    await trusted.client.close();
  });

  it('an https:// proxy: TLS to the proxy too, trusting ca_certificate for both', async () => {
    const tlsProxy = await startForwardProxy({ tls: ca.server, auth: { user: 'etl', password: PASSWORD } });
    try {
      const proxyUrl = `https://etl:${encodeURIComponent(PASSWORD)}@127.0.0.1:${tlsProxy.port}`;
      const ok = make({ proxyUrl });
      await expect(ok.client.me()).resolves.toMatchObject({ account_name: 'Proxied' });
      await ok.client.close();
      expect(tlsProxy.log.map((e) => e.status)).toEqual([200]);
      const untrusted = make({ proxyUrl, caCertificate: ca.otherCaCert });
      const err = await failure(() => untrusted.client.me());
      await untrusted.client.close();
      expect(err).toMatchObject({ code: 'proxy', failureType: 'config_error' });
      expect(err.message).toContain(`the TLS certificate of the proxy 127.0.0.1:${tlsProxy.port} (proxy_url) is not trusted`);
      expect(err.message).not.toContain(PASSWORD);
    } finally {
      await tlsProxy.close();
    }
  });
});

describe('absolute-form requests (an http:// API)', () => {
  it('http_proxy: GET http://host:port/v1/... to the proxy, with the API\'s Host and the credentials', async () => {
    const { client, logs } = make({ env: { http_proxy: `http://etl:${encodeURIComponent(PASSWORD)}@127.0.0.1:${authProxy.port}` } }, false);
    const seen = await meAndPage(client, authProxy, 10);
    expect(seen.map((e) => [e.method, e.target.replace(/\?.*$/, ''), e.status, e.host])).toEqual([
      ['GET', `${plainEmu.url}/v1/me`, 200, `127.0.0.1:${plainEmu.port}`],
      ['GET', `${plainEmu.url}/v1/contacts`, 200, `127.0.0.1:${plainEmu.port}`],
    ]);
    expect(logs.join('\n')).toContain('as absolute-form requests');
  });

  it('upper-case HTTP_PROXY is honoured for an http:// API (runners pass the upper-case names)', async () => {
    const before = since(proxy);
    const { client, logs } = make({ env: { HTTP_PROXY: proxy.url } }, false);
    await client.me();
    await client.close();
    expect(proxy.log.slice(before).map((e) => [e.method, e.target, e.status])).toEqual([['GET', `${plainEmu.url}/v1/me`, 200]]);
    expect(logs.join('\n')).toContain('(HTTP_PROXY) as absolute-form requests');
  });

  it('407 to an absolute-form request is the proxy\'s: a config_error naming it', async () => {
    const { client } = make({ env: { http_proxy: authProxy.url } }, false);
    const err = await failure(() => client.me());
    await client.close();
    expect(err).toMatchObject({ code: 'proxy', failureType: 'config_error' });
    expect(err.message).toContain(`the proxy 127.0.0.1:${authProxy.port} (http_proxy) requires a user name and password`);
  });
});

describe('pacing and the concurrency gate through a proxy: the same as without', () => {
  /** Read every contact page by page on `streams` parallel readers; the emulator's counters. */
  async function readAll(options: Partial<CreateClientOptions>, streams: number): Promise<{ requests: number; maxInFlight: number; throttled: number; pages: number }> {
    const emu = await startEmulator({ seed: 'gate', tls: ca.server, latencyMs: 40, limits: { perMinute: 20, windowMs: 1000, concurrency: 8 } });
    try {
      const account = emu.control.createAccount({ name: 'Gate' });
      emu.control.seed(account.id, { contacts: 300 });
      const key = emu.control.createKey(account.id).key;
      const client = createClient({
        baseUrl: emu.url, apiKey: key, userAgent: 'gate-test', timeoutMs: 5000, maxRetries: 0, maxWaitSeconds: 30, maxConcurrent: 3,
        caCertificate: ca.caCert, env: {}, ...options,
      });
      let pages = 0;
      const paths = ['/v1/contacts', '/v1/conversations', '/v1/stage_events', '/v1/deletions'].slice(0, streams);
      await Promise.all(paths.map(async (path) => {
        let cursor: string | undefined;
        for (;;) {
          const page = await client.list(path, { limit: 25, ...(cursor === undefined ? {} : { cursor }) });
          pages += 1;
          if (!page.has_more || page.next_cursor === null) break;
          cursor = page.next_cursor;
        }
      }));
      await client.close();
      const stats = emu.control.stats();
      return { requests: stats.total, maxInFlight: Math.max(...Object.values(stats.maxInFlightByKey)), throttled: stats.throttled, pages };
    } finally {
      await emu.close();
    }
  }

  it('same requests, no 429, never more than max_concurrent_requests in flight', async () => {
    const direct = await readAll({}, 4);
    const own = await startForwardProxy();
    try {
      const proxied = await readAll({ proxyUrl: own.url }, 4);
      expect(proxied).toEqual(direct);
      expect(proxied.requests).toBe(proxied.pages);
      expect(proxied.throttled).toBe(0);
      expect(proxied.maxInFlight).toBe(3);
      // One tunnel per pooled connection: at most max_concurrent_requests open at once.
      expect(own.tunnels).toBeGreaterThan(0);
      expect(own.maxOpenTunnels).toBeLessThanOrEqual(3);
    } finally {
      await own.close();
    }
  });
});
