/** The API key never appears in any error, cause, stack, log or wait notice, whatever the path. */
import nock from 'nock';
import { Pool } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DataReadApi } from '../../src/client/types.js';
import { BASE, CANARY, JSON_HEADERS, PROBLEM_HEADERS, expectNoKey, failure, harness, page, problem, resetNock } from './helpers.js';

beforeAll(() => nock.disableNetConnect());
afterEach(() => resetNock());
afterAll(() => nock.enableNetConnect());

type Setup = (client: () => DataReadApi) => void;

const echo = `key ${CANARY} / Bearer ${CANARY}`;
const cases: Array<[string, Setup, Record<string, unknown>?]> = [
  ['401 echoing the key', () => nock(BASE).get('/v1/contacts').query(true).reply(401, problem(401, `Bad key ${CANARY}`, echo, CANARY), PROBLEM_HEADERS)],
  ['403 echoing the key', () => nock(BASE).get('/v1/contacts').query(true).reply(403, problem(403, 'Forbidden', echo), PROBLEM_HEADERS)],
  ['400 echoing the key', () => nock(BASE).get('/v1/contacts').query(true).reply(400, problem(400, 'Invalid request', echo), PROBLEM_HEADERS)],
  ['500 echoing the key, exhausted', () => nock(BASE).get('/v1/contacts').query(true).times(4).reply(500, problem(500, 'Oops', echo), PROBLEM_HEADERS)],
  ['429 too long, echoing the key', () => nock(BASE).get('/v1/contacts').query(true).reply(429, problem(429, 'Too Many Requests', echo), { ...PROBLEM_HEADERS, 'retry-after': '99999' })],
  ['problem with extra fields echoing the key', () =>
    nock(BASE).get('/v1/contacts').query(true).reply(403, { ...problem(403, 'Forbidden', 'x'), headers: { authorization: `Bearer ${CANARY}` }, message: echo }, PROBLEM_HEADERS)],
  ['HTML body echoing the key', () => nock(BASE).get('/v1/contacts').query(true).times(4).reply(200, `<html>${echo}</html>`, { 'content-type': 'text/html' })],
  ['envelope missing a field', () => nock(BASE).get('/v1/contacts').query(true).reply(200, { data: [], has_more: false, next_cursor: null }, JSON_HEADERS)],
  ['bad watermark echoing the key', () => nock(BASE).get('/v1/contacts').query(true).reply(200, { ...page(), sync_watermark: CANARY }, JSON_HEADERS)],
  ['network error whose message holds the key', () =>
    nock(BASE).get('/v1/contacts').query(true).times(4).replyWithError(Object.assign(new Error(`socket to ${CANARY} failed: Bearer ${CANARY}`), { code: 'ECONNRESET' }))],
  // nock answers an unmatched request with HTTP 501 whose JSON body prints the request headers, Authorization included.
  ['no interceptor matches (error text includes request headers)', () => nock(BASE).get('/v1/other').reply(200, page())],
  ['host not allowed (undici connect error)', () => undefined],
  ['timeout', () =>
    nock(BASE).get('/v1/contacts').query(true).times(4).reply(async () => {
      await new Promise((r) => setTimeout(r, 200));
      return [200, page(), JSON_HEADERS];
    }), { timeoutMs: 50 }],
];

describe('the API key never leaks', () => {
  for (const [name, setup, overrides] of cases) {
    it(name, async () => {
      const h = harness({ ...(overrides ?? {}) });
      setup(() => h.client);
      const err = await failure(() => h.client.list('/v1/contacts', { limit: 1 }));
      await h.client.close();
      expectNoKey(err, h.told());
      expect(h.told()).not.toContain(CANARY);
    });
  }

  it('nock really puts the key into its no-match answer (so the case above means something)', async () => {
    nock(BASE).get('/v1/other').reply(200, page());
    const pool = new Pool(BASE);
    const res = await pool.request({ path: '/v1/contacts', method: 'GET', headers: { authorization: `Bearer ${CANARY}` } });
    const text = await res.body.text();
    await pool.close();
    expect(res.statusCode).toBe(501);
    expect(text).toContain(CANARY);
  });
});
