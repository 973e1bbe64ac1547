/** What goes on the wire: headers, documented parameters only, addresses; gzip bodies; /v1/me. */
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import nock from 'nock';
import { MockAgent } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { type ListQuery } from '../../src/client/types.js';
import { ConfigError, ContractError } from '../../src/errors.js';
import { BASE, CANARY, JSON_HEADERS, UA, WATERMARK, failure, harness, page, resetNock } from './helpers.js';

beforeAll(() => nock.disableNetConnect());
afterEach(() => resetNock());
afterAll(() => nock.enableNetConnect());

describe('requests on the wire', () => {
  it('sends the bearer key, user agent, JSON accept and gzip accept-encoding, through the real undici Pool', async () => {
    let seen: Headers | undefined;
    const scope = nock(BASE)
      .get('/v1/contacts')
      .query(true)
      .reply((req: Request) => {
        seen = req.headers;
        return [200, page(), JSON_HEADERS];
      });
    const { client } = harness();
    await client.list('/v1/contacts', { limit: 200 });
    expect(scope.isDone()).toBe(true);
    expect(seen?.get('authorization')).toBe(`Bearer ${CANARY}`);
    expect(seen?.get('user-agent')).toBe(UA);
    expect(seen?.get('accept')).toBe('application/json');
    expect(seen?.get('accept-encoding')).toBe('gzip');
    await client.close();
  });

  it('sends only the documented parameters that are set, in order', async () => {
    const urls: string[] = [];
    nock(BASE)
      .get(/\/v1\/.*/)
      .times(3)
      .reply((req: Request) => {
        urls.push(new URL(req.url).pathname + new URL(req.url).search);
        return [200, page(), JSON_HEADERS];
      });
    const { client } = harness();
    await client.list('/v1/contacts', { updated_since: '2025-01-01T00:00:00+02:00', cursor: 'c/ab+=', limit: 200 });
    await client.list('/v1/conversations', { limit: 50 });
    // Keys the API does not document never go out, even if a caller slips them in.
    const sneaky = { limit: 5, created_since: '2025-01-01', updated_since: undefined, page: 3 } as unknown as ListQuery;
    await client.list('/v1/stage_events', sneaky);
    expect(urls).toEqual([
      '/v1/contacts?updated_since=2025-01-01T00%3A00%3A00%2B02%3A00&cursor=c%2Fab%2B%3D&limit=200',
      '/v1/conversations?limit=50',
      '/v1/stage_events?limit=5',
    ]);
    await client.close();
  });

  it('tolerates a trailing slash and keeps a path prefix of base_url', async () => {
    const a = nock(BASE).get('/v1/deletions').query({ limit: '1' }).reply(200, page(), JSON_HEADERS);
    const b = nock(BASE).get('/api/v1/deletions').query({ limit: '1' }).reply(200, page(), JSON_HEADERS);
    const one = harness({ baseUrl: `${BASE}/` }).client;
    const two = harness({ baseUrl: `${BASE}/api//` }).client;
    await one.list('/v1/deletions', { limit: 1 });
    await two.list('/v1/deletions', { limit: 1 });
    expect(a.isDone() && b.isDone()).toBe(true);
    await Promise.all([one.close(), two.close()]);
  });

  describe('a body with bytes that are not UTF-8', () => {
    const bad = (name: Buffer): Buffer =>
      Buffer.concat([Buffer.from('{"data":[{"id":"c1","name":"Jo'), name, Buffer.from(`"}],"next_cursor":null,"has_more":false,"sync_watermark":"${WATERMARK}"}`)]);

    it.each(['identity', 'gzip', 'deflate', 'br'])('(%s): passed on with U+FFFD in their place, and a WARN naming the request, once per path', async (coding) => {
      const body = bad(Buffer.from([0xc3, 0x28, 0xff]));
      const encoded = coding === 'gzip' ? gzipSync(body) : coding === 'deflate' ? deflateSync(body) : coding === 'br' ? brotliCompressSync(body) : body;
      const headers = coding === 'identity' ? JSON_HEADERS : { ...JSON_HEADERS, 'content-encoding': coding };
      nock(BASE).get('/v1/contacts').query(true).times(2).reply(200, encoded, headers);
      const { client, logs } = harness();
      for (let i = 0; i < 2; i++) {
        const result = await client.list('/v1/contacts', { limit: 1 });
        expect(result.data).toEqual([{ id: 'c1', name: 'Jo\ufffd(\ufffd' }]);
      }
      await client.close();
      const warns = logs.filter((l) => l.level === 'WARN').map((l) => l.message);
      expect(warns).toHaveLength(1);
      expect(warns[0]).toMatch(/^GET \/v1\/contacts answered bytes that are not UTF-8: each was passed on as U\+FFFD/);
      expect(warns[0]).not.toContain('Jo');
    });

    it('a U+FFFD the service sent as such (valid UTF-8) is no fault', async () => {
      nock(BASE).get('/v1/contacts').query(true).reply(200, bad(Buffer.from('\ufffd', 'utf8')), JSON_HEADERS);
      const { client, logs } = harness();
      expect((await client.list('/v1/contacts', { limit: 1 })).data).toEqual([{ id: 'c1', name: 'Jo\ufffd' }]);
      await client.close();
      expect(logs).toEqual([]);
    });
  });

  it('decodes a gzip body', async () => {
    const records = Array.from({ length: 50 }, (_, i) => ({ id: `c${i}`, name: 'Ana Souza' }));
    nock(BASE)
      .get('/v1/contacts')
      .query(true)
      .reply(200, gzipSync(JSON.stringify(page(records, true, 'next-1'))), { ...JSON_HEADERS, 'content-encoding': 'gzip' });
    const { client } = harness();
    const result = await client.list('/v1/contacts', { limit: 50 });
    expect(result.data).toHaveLength(50);
    expect(result.data[49]).toEqual({ id: 'c49', name: 'Ana Souza' });
    expect(result).toMatchObject({ has_more: true, next_cursor: 'next-1', sync_watermark: WATERMARK });
    await client.close();
  });

  it('passes records through as received, the same objects JSON.parse made (no per-record copy)', async () => {
    nock(BASE)
      .get('/v1/contacts')
      .query(true)
      .reply(200, { ...page([{ id: 'x', extra: { nested: [1, 2] }, n: null }]), unknown_field: 1 }, JSON_HEADERS);
    const { client } = harness();
    const result = await client.list('/v1/contacts', { limit: 1 });
    expect(result.data).toEqual([{ id: 'x', extra: { nested: [1, 2] }, n: null }]);
    await client.close();
  });

  it('GET /v1/me returns the account, validated', async () => {
    nock(BASE)
      .get('/v1/me')
      .reply(200, { account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 60, per_day: 10000 } }, JSON_HEADERS);
    const { client } = harness();
    await expect(client.me()).resolves.toEqual({ account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 60, per_day: 10000 } });
    expect(client.stats.requests).toBe(1);
    await client.close();
  });

  it('GET /v1/openapi.json: the same request (key, headers) and retries as every request; the document as parsed, unchecked', async () => {
    let seen: Headers | undefined;
    let calls = 0;
    nock(BASE)
      .get('/v1/openapi.json')
      .times(2)
      .reply((req: Request) => {
        seen = req.headers;
        calls += 1;
        return calls === 1 ? [503, '', { 'retry-after': '0' }] : [200, '{"openapi": "3.1.0", "info": {"version": 9007199254740993}}', JSON_HEADERS];
      });
    const { client, logs } = harness();
    const doc = (await client.description()) as { openapi: string; info: { version: unknown } };
    expect(calls).toBe(2);
    expect(logs.map((l) => l.message)).toEqual([expect.stringMatching(/^GET \/v1\/openapi\.json: HTTP 503/)]);
    expect(seen?.get('authorization')).toBe(`Bearer ${CANARY}`);
    expect(seen?.get('accept')).toBe('application/json');
    expect(doc.openapi).toBe('3.1.0');
    expect(JSON.stringify(doc.info.version)).toBe('9007199254740993');
    await client.close();
  });

  it('GET /v1/me with a body of the wrong shape is a contract error naming the field', async () => {
    nock(BASE).get('/v1/me').reply(200, { account_name: 'Acme', limits: { per_minute: 60, per_day: 1 } }, JSON_HEADERS);
    const { client } = harness();
    const err = await failure(() => client.me());
    expect(err).toBeInstanceOf(ContractError);
    expect(err).toMatchObject({ name: 'ContractError', failureType: 'system_error' });
    expect(err.message).toContain('"scopes"');
    await client.close();
  });

  it('rejects a bad base_url or a key that cannot go in a header, without echoing the key', () => {
    const opts = { apiKey: CANARY, userAgent: UA, timeoutMs: 1000, maxRetries: 1, maxWaitSeconds: 1, maxConcurrent: 1 };
    expect(() => createClient({ ...opts, baseUrl: 'not a url' })).toThrow(ConfigError);
    expect(() => createClient({ ...opts, baseUrl: 'ftp://api.test' })).toThrow(/https/);
    let thrown: unknown;
    try {
      createClient({ ...opts, baseUrl: BASE, apiKey: `${CANARY}\n` });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect(String((thrown as Error).message)).not.toContain(CANARY);
  });

  it('uses an injected dispatcher (undici MockAgent) instead of its own pool, and leaves it open', async () => {
    const agent = new MockAgent();
    agent.disableNetConnect();
    agent
      .get(BASE)
      .intercept({ path: '/v1/contacts?limit=3', method: 'GET', headers: { authorization: `Bearer ${CANARY}` } })
      .reply(200, page([{ id: 'mock' }]), { headers: JSON_HEADERS });
    const { client } = harness({ dispatcher: agent });
    await expect(client.list('/v1/contacts', { limit: 3 })).resolves.toMatchObject({ data: [{ id: 'mock' }] });
    await client.close();
    agent.assertNoPendingInterceptors();
    await agent.close();
  });

  it('close() closes the pool: later calls fail', async () => {
    const { client } = harness();
    await client.close();
    await client.close(); // idempotent
    const err = await failure(() => client.list('/v1/contacts', { limit: 1 }));
    expect(err.message).toMatch(/closed/);
  });
});
