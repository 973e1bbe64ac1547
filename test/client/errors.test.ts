/** Status mapping, problem+json, envelope checks, bodies that are not JSON. */
import { gzipSync } from 'node:zlib';
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { statusRule } from '../../src/client/policy.js';
import { DEFAULT_MAX_BODY_BYTES } from '../../src/client/client.js';
import { ApiError } from '../../src/client/api-error.js';
import { ContractError } from '../../src/errors.js';
import { BASE, CANARY, JSON_HEADERS, PROBLEM_HEADERS, WATERMARK, expectNoKey, failure, failureThenClose, harness, page, problem, resetNock, countRequests } from './helpers.js';

beforeAll(() => nock.disableNetConnect());
afterEach(() => resetNock());
afterAll(() => nock.enableNetConnect());

async function errorFor(
  status: number,
  body: unknown,
  headers: Record<string, string> = PROBLEM_HEADERS,
  options: Parameters<typeof harness>[0] = {},
): Promise<{ err: ApiError; requests: number }> {
  const requests = countRequests('/v1/contacts', 10, () => [status, body as string, headers]);
  const { client } = harness(options);
  const err = await failure(() => client.list('/v1/contacts', { limit: 10 }));
  await client.close();
  expect(err).toBeInstanceOf(ApiError);
  expectNoKey(err);
  return { err: err as ApiError, requests: requests.count };
}

/** The error's message contains each of `parts`. */
function expectSays(err: Error, ...parts: string[]): void {
  for (const part of parts) expect(err.message).toContain(part);
}

describe('the client follows the failure policy table', () => {
  it.each([400, 401, 403, 404, 408, 410, 422, 429, 500, 502, 503, 504])('HTTP %i: retried or not, and the error, as the table says', async (status) => {
    const rule = statusRule(status);
    const { err, requests } = await errorFor(status, problem(status, 'Title', 'Detail.', `rq-${status}`));
    expect(requests).toBe(rule.retried ? 4 : 1); // maxRetries 3 => 4 attempts
    expect(err).toMatchObject({ code: rule.outcome.code, failureType: rule.outcome.failure, status });
  });
});

describe('error statuses (application/problem+json)', () => {
  it('401: config_error in plain words with title, detail and request_id; not retried', async () => {
    const { err } = await errorFor(401, problem(401, 'Unauthorized', 'The API key was revoked.', 'rq-401-abc'));
    expectSays(err, 'missing, invalid or revoked', 'api_key', 'Unauthorized: The API key was revoked.', 'request_id rq-401-abc');
    expect(err.problem).toMatchObject({ type: 'about:blank', title: 'Unauthorized', status: 401, request_id: 'rq-401-abc' });
  });

  it('401: names the setting that holds the key, api_key by default, or the one its caller gives (an entry of accounts)', async () => {
    const plain = (await errorFor(401, problem(401, 'Unauthorized', 'Revoked.', 'rq-1'))).err;
    expectSays(plain, 'Check api_key in the config (the whole key', 'put it in api_key.');
    resetNock();
    const setting = 'the api_key of the accounts entry "acme-mx"';
    const entry = (await errorFor(401, problem(401, 'Unauthorized', 'Revoked.', 'rq-2'), PROBLEM_HEADERS, { keySetting: setting })).err;
    expectSays(entry, `Check ${setting} in the config (the whole key`, `put it in ${setting}.`);
    expect(entry.message).not.toContain('Check api_key');
  });

  it('403: config_error naming the data API switch, the plan and the data:read scope', async () => {
    const { err } = await errorFor(403, problem(403, 'Forbidden', 'Data API disabled for this account.', 'rq-403'));
    expect(err.message).toMatch(/switched off/);
    expect(err.message).toMatch(/plan/);
    expectSays(err, 'data:read', 'Data API disabled for this account.', 'rq-403');
  });

  it('400: bad_request system_error (the reader catches it for resume cursors)', async () => {
    const { err } = await errorFor(400, problem(400, 'Invalid request', 'The cursor is not valid.', 'rq-400'));
    expectSays(err, 'GET /v1/contacts', 'Invalid request: The cursor is not valid.');
    expect(err.problem?.detail).toBe('The cursor is not valid.');
  });

  it('404: not_found, pointing at base_url', async () => {
    const { err } = await errorFor(404, problem(404, 'Not Found', 'No such route.', 'rq-404'));
    expect(err.message).toContain('base_url');
  });

  it('an undocumented status without a problem body: unexpected_status naming the status', async () => {
    const { err } = await errorFor(410, 'gone', { 'content-type': 'text/plain' });
    expect(err.message).toContain('HTTP 410, a status the API does not document');
  });

  it('a 401 without a problem body still gets the plain-word message', async () => {
    const { err } = await errorFor(401, 'nope', { 'content-type': 'text/plain' });
    expect(err.code).toBe('unauthorized');
    expect(err.problem).toBeUndefined();
    expect(err.message).not.toContain('The service said');
  });

  it('a gzip-encoded problem body is read', async () => {
    const body = gzipSync(JSON.stringify(problem(403, 'Forbidden', 'Plan without access.', 'rq-gz')));
    const { err } = await errorFor(403, body as unknown as string, { ...PROBLEM_HEADERS, 'content-encoding': 'gzip' });
    expect(err.message).toContain('Plan without access.');
  });

  it('500: retried with backoff, then retries_exhausted naming the last cause', async () => {
    const { err } = await errorFor(500, problem(500, 'Internal Server Error', 'Unexpected error.', 'rq-500'));
    expectSays(err, 'HTTP 500', 'Unexpected error.', 'rq-500', '4 attempts');
  });

});

describe('a body larger than the client reads', () => {
  const LIMIT = 64 * 1024;
  const big = JSON.stringify(page(Array.from({ length: 2000 }, (_, i) => ({ id: `c${i}`, note: 'x'.repeat(40) }))));

  it.each([
    ['as sent', big, JSON_HEADERS],
    ['gzip (a small answer that inflates past the limit)', gzipSync(big), { ...JSON_HEADERS, 'content-encoding': 'gzip' }],
  ])('%s: not asked again (the same page would be as large), a contract error that names the limit and what to do; the client stops reading it', async (_name, body, headers) => {
    expect(Buffer.byteLength(big)).toBeGreaterThan(LIMIT);
    const requests = countRequests('/v1/contacts', 10, () => [200, body as string, headers]);
    const { client } = harness({ maxBodyBytes: LIMIT });
    const err = await failure(() => client.list('/v1/contacts', { limit: 200 }));
    await client.close();
    expect(requests.count).toBe(1);
    expect(err).toMatchObject({ name: 'ContractError', failureType: 'system_error' });
    expect(err.message).toMatch(/^The Data-Read service broke its API contract: GET \/v1\/contacts answered HTTP 200 with a body larger than the 64 KiB the connector reads of one answer( once decompressed)?\. /);
    expectSays(err, 'It is not asked again: the same page would be as large.', 'Check base_url', 'lower page_size');
  });

  it.each([
    ['text/html (a website)', 'text/html; charset=utf-8', `<!doctype html><html><body>${'<p>x</p>'.repeat(20_000)}</body></html>`],
    ['application/octet-stream (a download)', 'application/octet-stream', 'x'.repeat(LIMIT * 2)],
  ])('of content-type %s: not the API, a config_error saying that base_url probably points elsewhere, not a broken contract', async (_name, type, body) => {
    expect(Buffer.byteLength(body)).toBeGreaterThan(LIMIT);
    const requests = countRequests('/v1/contacts', 10, () => [200, body, { 'content-type': type }]);
    const h = harness({ maxBodyBytes: LIMIT });
    const err = await failure(() => h.client.list('/v1/contacts', { limit: 200 }));
    // Every request would meet the same: a later one fails at once with the same error.
    const again = await failure(() => h.client.list('/v1/contacts', { limit: 200 }));
    await h.client.close();
    expect(requests.count).toBe(1);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'not_the_api', failureType: 'config_error', status: 200 });
    expect(again).toBe(err);
    expect(err.message).toBe(
      `The address in base_url (${BASE}) does not seem to be the Data-Read API: GET /v1/contacts answered HTTP 200 with a body larger than the 64 KiB ` +
        `the connector reads of one answer, of content-type ${type}, not the API's JSON. ` +
        'Check base_url: it must be the address before /v1, for example https://api.example.com.',
    );
    expectNoKey(err);
  });

  it('an error answer larger than that: its status decides, its body is left unread', async () => {
    const requests = countRequests('/v1/contacts', 10, () => [401, 'x'.repeat(LIMIT * 2), { 'content-type': 'text/html' }]);
    const { client } = harness({ maxBodyBytes: LIMIT });
    const err = await failure(() => client.list('/v1/contacts', { limit: 200 }));
    await client.close();
    expect(requests.count).toBe(1);
    expect(err).toMatchObject({ code: 'unauthorized', failureType: 'config_error' });
  });

  it('by default 64 MiB: far above a page of 200 records', () => {
    expect(DEFAULT_MAX_BODY_BYTES).toBe(64 * 1024 * 1024);
  });
});

describe('redirects: never followed (the API key would go with them)', () => {
  const elsewhere = 'https://new-api.example.test';

  it.each([301, 308])('HTTP %i to another host: one request, nothing sent there, a config_error naming the new address and the base_url to set', async (status) => {
    const there = nock(elsewhere).get(/.*/).times(5).reply(200, page(), JSON_HEADERS);
    const { err, requests } = await errorFor(status, '', { location: `${elsewhere}/v1/contacts?limit=10&cursor=secret-cursor` });
    expect(requests).toBe(1);
    expect(there.isDone()).toBe(false);
    expect(err).toMatchObject({ code: 'moved', failureType: 'config_error', status });
    expectSays(err, `HTTP ${status}`, `a permanent redirect to ${elsewhere}/v1/contacts,`, `set base_url to ${elsewhere}`);
    expect(err.message).not.toContain('secret-cursor');
  });

  it('a permanent redirect that does not keep the path: names where it points, asks to check base_url', async () => {
    const { err } = await errorFor(301, '', { location: '/login' });
    expect(err).toMatchObject({ code: 'moved', failureType: 'config_error' });
    expectSays(err, `a permanent redirect to ${BASE}/login,`, 'Check base_url');
  });

  it.each([302, 303, 307])('HTTP %i (a temporary redirect, to another host or to itself: no loop): one request, a config_error naming the status, where it points and the base_url to set', async (status) => {
    const there = nock(elsewhere).get(/.*/).times(5).reply(200, page(), JSON_HEADERS);
    const { err, requests } = await errorFor(status, '', { location: `https://user:pw-${CANARY}@new-api.example.test/v1/contacts?limit=10&cursor=secret-cursor` });
    expect(requests).toBe(1);
    expect(there.isDone()).toBe(false);
    expect(err).toMatchObject({ code: 'moved', failureType: 'config_error', status });
    expectSays(err, `HTTP ${status}, a temporary redirect to ${elsewhere}/v1/contacts, which the connector does not follow`, `set base_url to ${elsewhere}`);
    expect(err.message).not.toContain('secret-cursor');
    expect(err.message).not.toContain('pw-');
  });

  it.each([302, 307])('HTTP %i to itself: one request (no loop), the same config_error', async (status) => {
    const { err, requests } = await errorFor(status, '', { location: `${BASE}/v1/contacts?limit=10` });
    expect(requests).toBe(1);
    expect(err).toMatchObject({ code: 'moved', failureType: 'config_error' });
    expectSays(err, `a temporary redirect to ${BASE}/v1/contacts,`);
  });

  it('HTTP 304 (Not Modified, to requests that are never conditional) is not called a redirect: a status the API does not document', async () => {
    const { err, requests } = await errorFor(304, '', {});
    expect(requests).toBe(1);
    expect(err).toMatchObject({ code: 'unexpected_status', failureType: 'system_error', status: 304 });
    expect(err.message).toBe('The Data-Read API answered GET /v1/contacts with HTTP 304, a status the API does not document.');
  });

  it('the API key in a Location is not repeated', async () => {
    const { err } = await errorFor(301, '', { location: `${elsewhere}/v1/contacts?key=${CANARY}` });
    expect(err.message).toContain(elsewhere);
  });
});

describe('page envelope', () => {
  const full = page([{ id: 'a' }], true, 'cur-2');
  for (const field of ['data', 'next_cursor', 'has_more', 'sync_watermark']) {
    it(`a page without "${field}" is a contract error naming it, not retried`, async () => {
      const body: Record<string, unknown> = { ...full };
      delete body[field];
      const requests = countRequests('/v1/contacts', 5, () => [200, body, JSON_HEADERS]);
      const { client } = harness();
      const err = await failure(() => client.list('/v1/contacts', { limit: 1 }));
      await client.close();
      expect(requests.count).toBe(1);
      expect(err).toBeInstanceOf(ContractError);
      expect(err).toMatchObject({ name: 'ContractError', failureType: 'system_error' });
      expectSays(err, `"${field}"`, 'GET /v1/contacts');
    });
  }

  const wrong: Array<[string, unknown, RegExp]> = [
    ['data', { a: 1 }, /"data" is an object/],
    ['next_cursor', 5, /"next_cursor" is number/],
    ['has_more', 'yes', /"has_more" is "yes"/],
    ['sync_watermark', 'yesterday', /"sync_watermark" is "yesterday"/],
  ];
  for (const [field, value, pattern] of wrong) {
    it(`a page whose "${field}" has the wrong type is a contract error`, async () => {
      nock(BASE).get('/v1/contacts').query(true).reply(200, { ...full, [field]: value }, JSON_HEADERS);
      const { client } = harness();
      const err = await failure(() => client.list('/v1/contacts', { limit: 1 }));
      await client.close();
      expect(err).toMatchObject({ name: 'ContractError', failureType: 'system_error' });
      expect(err.message).toMatch(pattern);
    });
  }

  it('a 200 whose body is an error document (a gateway that answers 200): the contract error says what it said', async () => {
    nock(BASE).get('/v1/contacts').query(true).reply(200, problem(502, 'Bad Gateway', `Upstream timed out for ${CANARY}.`, 'gw-7'), PROBLEM_HEADERS);
    const { client } = harness();
    const err = await failure(() => client.list('/v1/contacts', { limit: 1 }));
    await client.close();
    expect(err).toMatchObject({ name: 'ContractError', failureType: 'system_error' });
    expectSays(err, 'a page without the envelope fields', 'The service said: "Bad Gateway: Upstream timed out for ***." (request_id gw-7).');
    expectNoKey(err);
  });

  it('a JSON array instead of the envelope is a contract error', async () => {
    nock(BASE).get('/v1/contacts').query(true).reply(200, '[{"id":"a"}]', JSON_HEADERS);
    const { client } = harness();
    const err = await failure(() => client.list('/v1/contacts', { limit: 1 }));
    await client.close();
    expect(err).toMatchObject({ name: 'ContractError' });
    expect(err.message).toMatch(/an array instead of the page envelope/);
  });

  it('accepts null next_cursor and a watermark with an offset', async () => {
    nock(BASE)
      .get('/v1/contacts')
      .query(true)
      .reply(200, { data: [], next_cursor: null, has_more: false, sync_watermark: '2025-03-01T11:59:00+00:00' }, JSON_HEADERS);
    const { client } = harness();
    await expect(client.list('/v1/contacts', { limit: 1 })).resolves.toEqual({
      data: [],
      next_cursor: null,
      has_more: false,
      sync_watermark: '2025-03-01T11:59:00+00:00',
    });
    await client.close();
  });
});

describe('2xx bodies that are not JSON', () => {
  it('a truncated body is retried like a 500, then the good page is returned', async () => {
    const good = JSON.stringify(page([{ id: 'a' }, { id: 'b' }]));
    nock(BASE).get('/v1/contacts').query(true).reply(200, good.slice(0, good.length - 7), JSON_HEADERS);
    nock(BASE).get('/v1/contacts').query(true).reply(200, good, JSON_HEADERS);
    const h = harness();
    const result = await h.client.list('/v1/contacts', { limit: 2 });
    await h.client.close();
    expect(result.data).toHaveLength(2);
    expect(result.sync_watermark).toBe(WATERMARK);
    expect(h.client.stats).toMatchObject({ requests: 2, retries: 1 });
    expect(h.waits).toEqual([expect.objectContaining({ reason: 'backoff', path: '/v1/contacts' })]);
    expect(h.logs.some((l) => l.level === 'WARN' && /not the JSON promised: the JSON body ends too early \(truncated\)/.test(l.message))).toBe(true);
  });

  it('a corrupt gzip body is retried', async () => {
    nock(BASE).get('/v1/contacts').query(true).reply(200, Buffer.from('this is not gzip'), { ...JSON_HEADERS, 'content-encoding': 'gzip' });
    nock(BASE).get('/v1/contacts').query(true).reply(200, page(), JSON_HEADERS);
    const h = harness();
    await expect(h.client.list('/v1/contacts', { limit: 1 })).resolves.toMatchObject({ has_more: false });
    await h.client.close();
    expect(h.client.stats.retries).toBe(1);
  });

  it('HTML every time: a contract error (system_error) after the retries, naming what came back', async () => {
    let requests = 0;
    const html = `<html><head><title>502 Bad Gateway</title></head>\n<body>\u0007upstream\tdown ${'x'.repeat(200)}</body></html>`;
    nock(BASE)
      .get('/v1/contacts')
      .query(true)
      .times(10)
      .reply(() => {
        requests += 1;
        return [200, html, { 'content-type': 'text/html; charset=utf-8' }];
      });
    const h = harness();
    const err = await failureThenClose(h, () => h.client.list('/v1/contacts', { limit: 1 }));
    expect(requests).toBe(4);
    expect(err).toMatchObject({ name: 'ContractError', failureType: 'system_error', status: 200 });
    expectSays(err, 'content-type text/html; charset=utf-8', 'beginning "<html><head><title>502 Bad Gateway</title></head> <body> upstream down');
    expect(err.message).not.toContain('\u0007');
    expect(err.message).not.toContain('x'.repeat(100)); // first 80 characters only
    expect(h.logs.filter((l) => l.level === 'WARN')).toHaveLength(3);
  });

  describe('on GET /v1/me, the first request of every run: a page of another type than JSON', () => {
    const ME = { account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 60, per_day: 10000 } };
    // A website's page (that quotes the key it was sent, as some echo the request).
    const site = `<!doctype html><html><head><title>Acme Inc.</title></head><body>Welcome ${CANARY}</body></html>`;

    it.each([
      ['text/html; charset=utf-8', site],
      ['text/plain', 'Hello.'],
      ['application/octet-stream', 'PK\u0003\u0004 a download'],
    ])('%s on every try: after the retries, not the API, a config_error naming base_url and what came back, for the whole run', async (type, body) => {
      const requests = countRequests('/v1/me', 10, () => [200, body, { 'content-type': type }]);
      const h = harness();
      const err = await failure(() => h.client.me());
      // Every request of the run would meet the same: a later one fails at once with the same error.
      const again = await failure(() => h.client.list('/v1/contacts', { limit: 1 }));
      await h.client.close();
      expect(requests.count).toBe(4); // retried as any body that is not JSON: a gateway's passing page must pass
      expect(err).toBeInstanceOf(ApiError);
      expect(err).toMatchObject({ code: 'not_the_api', failureType: 'config_error', status: 200 });
      expect(again).toBe(err);
      expect(err.message).toMatch(
        new RegExp(
          `^The address in base_url \\(${BASE.replace(/\./g, '\\.')}\\) does not seem to be the Data-Read API: GET /v1/me answered HTTP 200 with a body that is not the JSON promised: ` +
            `the body is not valid JSON; content-type ${type.replace(/[/.]/g, '\\$&')}, \\d+ bytes, beginning "`,
        ),
      );
      expectSays(err, '(4 attempts over', 'Check base_url: it must be the address before /v1, for example https://api.example.com.');
      expect(err.message).not.toContain('broke its API contract');
      expectNoKey(err);
      for (const log of h.logs) expect(log.message).not.toContain(CANARY);
    });

    it('a passing page (a gateway between deployments): the next try\'s account is taken', async () => {
      nock(BASE).get('/v1/me').reply(200, site, { 'content-type': 'text/html' });
      nock(BASE).get('/v1/me').reply(200, ME, JSON_HEADERS);
      const h = harness();
      await expect(h.client.me()).resolves.toEqual(ME);
      await h.client.close();
      expect(h.client.stats).toMatchObject({ requests: 2, retries: 1 });
    });

    it('not a page on every try (an error status first): the contract error it was', async () => {
      nock(BASE).get('/v1/me').reply(500, problem(500, 'Internal error', 'Oops.', 'rq-1'), PROBLEM_HEADERS);
      nock(BASE).get('/v1/me').times(3).reply(200, site, { 'content-type': 'text/html' });
      const h = harness();
      const err = await failureThenClose(h, () => h.client.me());
      expect(err).toMatchObject({ name: 'ContractError', failureType: 'system_error', status: 200 });
    });

    it.each([
      ['of a JSON type', JSON_HEADERS],
      ['without a content-type', {}],
    ])('a broken body %s: the contract error it was', async (_name, headers) => {
      nock(BASE).get('/v1/me').times(4).reply(200, '{"account_name": "Acme", "sco', headers);
      const h = harness();
      const err = await failureThenClose(h, () => h.client.me());
      expect(err).toMatchObject({ name: 'ContractError', failureType: 'system_error', status: 200 });
    });
  });

  it('a broken page is never quoted: its records are personal data (an e-mail first on the page)', async () => {
    const good = JSON.stringify({ data: [{ email: 'ana.souza@example.com', name: 'Ana Souza', id: 'c1' }], next_cursor: null, has_more: false, sync_watermark: WATERMARK });
    // Truncated every time, and once with a content-encoding that does not match (the body as sent).
    nock(BASE).get('/v1/contacts').query(true).times(3).reply(200, good.slice(0, good.length - 7), JSON_HEADERS);
    nock(BASE).get('/v1/contacts').query(true).reply(200, good.slice(0, good.length - 7), { ...JSON_HEADERS, 'content-encoding': 'gzip' });
    const h = harness();
    const err = await failureThenClose(h, () => h.client.list('/v1/contacts', { limit: 1 }));
    expect(err).toMatchObject({ name: 'ContractError', failureType: 'system_error' });
    const said = [err.message, ...h.logs.map((l) => l.message)].join('\n');
    expect(said).toMatch(/truncated/);
    for (const raw of ['ana.souza', 'Ana Souza']) expect(said).not.toContain(raw);
    expect(said).toMatch(/bytes of JSON/);
  });

  it('an empty 200 body is retried then a contract error', async () => {
    nock(BASE).get('/v1/contacts').query(true).times(4).reply(200, '', JSON_HEADERS);
    const h = harness();
    const err = await failureThenClose(h, () => h.client.list('/v1/contacts', { limit: 1 }));
    expect(err).toMatchObject({ name: 'ContractError' });
    expect(err.message).toMatch(/empty/);
  });
});
