/**
 * Failures of the key or of the service, not of one request: every caller of
 * the client shares them. An unreachable service gets one series of retries
 * for all callers (one back-off, one error, a total of attempts and time); a
 * refused key stops every caller at the first refusal, and later requests are
 * not sent at all. A failure of one request stays that request's.
 */
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectorError } from '../../src/errors.js';
import { BASE, JSON_HEADERS, PROBLEM_HEADERS, expectNoKey, harness, page, problem, resetNock } from './helpers.js';

beforeAll(() => nock.disableNetConnect());
afterEach(() => resetNock());
afterAll(() => nock.enableNetConnect());

const PATHS = ['/v1/contacts', '/v1/conversations', '/v1/stage_events', '/v1/deletions', '/v1/pipeline_stages'];
const refused = (): Error => Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' });

/** Every path fails `times` times with `error`, counting the attempts; then answers a page. */
function failing(error: () => Error, times: number): { count: number } {
  const counter = { count: 0 };
  nock(BASE)
    .persist()
    .get(/^\/v1\/.*/)
    .reply(function reply() {
      counter.count += 1;
      if (counter.count <= times) throw error();
      return [200, page(), JSON_HEADERS];
    });
  return counter;
}

/** Settle every promise; the errors (or undefined for a value) in order. */
async function outcomes(calls: Promise<unknown>[]): Promise<Array<ConnectorError | undefined>> {
  const settled = await Promise.allSettled(calls);
  return settled.map((s) => (s.status === 'rejected' ? (s.reason as ConnectorError) : undefined));
}

describe('a service that cannot be reached: one back-off for every caller', () => {
  it('five callers make one series of retries and fail with one error that gives the total', async () => {
    nock(BASE).persist().get(/^\/v1\/.*/).replyWithError(refused());
    const h = harness({ maxRetries: 3, maxConcurrent: 2 });
    const errors = await outcomes(PATHS.map((p) => h.client.list(p, { limit: 10 })));
    await h.client.close();

    const first = errors[0];
    expect(first).toBeDefined();
    // The same error for all: one report, not five.
    for (const e of errors) expect(e).toBe(first);
    expect(first).toMatchObject({ code: 'unreachable', failureType: 'transient_error', runWide: true });
    expect(first?.message).toMatch(
      /^Cannot reach the Data-Read API at http:\/\/api\.test: the connection was refused \(ECONNREFUSED\); 4 attempts over \d+ ms \(1 \+ max_retries 3\)\. Check base_url and the network\. The sync stops; the next sync resumes from the saved state\.$/,
    );
    // One caller retried (4 attempts: the count the error gives, 1 + max_retries), the other one in flight met the
    // fault once and waited; the three queued sent nothing.
    expect(h.client.stats.requests).toBe(5);
    expect(h.client.stats.retries).toBe(3);
    expect(h.clock.sleeps).toHaveLength(3);
    const warns = h.logs.filter((l) => l.level === 'WARN').map((l) => l.message);
    expect(warns).toHaveLength(3);
    for (const w of warns) expect(w).toMatch(/^Cannot reach the Data-Read API at http:\/\/api\.test: the connection was refused \(ECONNREFUSED\); retry \d of 3 in .+ \(every request waits for it\)\.$/);
    expectNoKey(first, h.told());
  });

  it('its waits are capped at 10 s: max_retries 8 waits 80 s at most, where a 5xx may wait up to a minute each time', async () => {
    nock(BASE).persist().get(/^\/v1\/.*/).replyWithError(refused());
    // The client's own back-off (1 s growing to 60 s), drawn at its longest.
    const h = harness({ maxRetries: 8, retryBaseMs: 1000, retryMaxMs: 60_000, random: () => 1 });
    await h.client.list('/v1/contacts', { limit: 10 }).catch(() => undefined);
    await h.client.close();
    expect(h.clock.sleeps).toEqual([3000, 9000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000]);
  });

  it('a later request fails at once with the same error, without being sent', async () => {
    const counter = failing(refused, 1000);
    const h = harness({ maxRetries: 1 });
    const error = await h.client.list('/v1/contacts', { limit: 10 }).catch((e: unknown) => e);
    const sent = counter.count;
    const later = await h.client.me().catch((e: unknown) => e);
    await h.client.close();
    expect(later).toBe(error);
    expect(counter.count).toBe(sent);
  });

  it('when the service answers again, every waiting caller goes on', async () => {
    const counter = failing(refused, 3);
    const h = harness({ maxRetries: 5, maxConcurrent: 2 });
    const pages = await Promise.all(PATHS.map((p) => h.client.list(p, { limit: 10 })));
    await h.client.close();
    expect(pages.map((p) => p.data.length)).toEqual([1, 1, 1, 1, 1]);
    // 3 refused attempts (the prober twice, the other caller in flight once), then one answer per path.
    expect(counter.count).toBe(3 + PATHS.length);
    expect(h.clock.sleeps).toHaveLength(2);
  });
});

describe('a refused key stops every caller at the first refusal', () => {
  for (const [status, code] of [
    [401, 'unauthorized'],
    [403, 'forbidden'],
  ] as const) {
    it(`HTTP ${status}: one config_error for all, the queued requests never sent`, async () => {
      let count = 0;
      nock(BASE)
        .persist()
        .get(/^\/v1\/.*/)
        .reply(() => {
          count += 1;
          return [status, problem(status, 'Refused', 'no'), PROBLEM_HEADERS];
        });
      const h = harness({ maxConcurrent: 1 });
      const errors = await outcomes(PATHS.map((p) => h.client.list(p, { limit: 10 })));
      await h.client.close();
      expect(count).toBe(1);
      for (const e of errors) expect(e).toBe(errors[0]);
      expect(errors[0]).toMatchObject({ code, failureType: 'config_error', runWide: true });
    });
  }

  it('TLS: the certificate belongs to the service, so it fails every caller too', async () => {
    nock(BASE)
      .persist()
      .get(/^\/v1\/.*/)
      .replyWithError(Object.assign(new Error('certificate has expired'), { code: 'CERT_HAS_EXPIRED' }));
    const h = harness({ maxConcurrent: 1 });
    const errors = await outcomes(PATHS.map((p) => h.client.list(p, { limit: 10 })));
    await h.client.close();
    expect(h.client.stats.requests).toBe(1);
    for (const e of errors) expect(e).toBe(errors[0]);
    expect(errors[0]).toMatchObject({ code: 'unreachable', failureType: 'config_error', runWide: true });
  });
});

describe('a failure of one request stays its own', () => {
  it('retries exhausted on one path, a 400 on another: the other callers are served; neither error is run-wide', async () => {
    nock(BASE).persist().get('/v1/contacts').query(true).reply(500, problem(500, 'Internal', 'x'), PROBLEM_HEADERS);
    nock(BASE).persist().get('/v1/deletions').query(true).reply(400, problem(400, 'Bad cursor', 'x'), PROBLEM_HEADERS);
    nock(BASE).persist().get(/^\/v1\/(conversations|stage_events|pipeline_stages)/).reply(200, page(), JSON_HEADERS);
    const h = harness({ maxRetries: 2 });
    const errors = await outcomes(PATHS.map((p) => h.client.list(p, { limit: 10 })));
    await h.client.close();
    expect(errors[0]).toMatchObject({ code: 'retries_exhausted', runWide: false });
    expect(errors[0]?.message).toMatch(/did not succeed in 3 attempts over \d+ ms \(1 \+ max_retries 2\)/);
    expect(errors[3]).toMatchObject({ code: 'bad_request', runWide: false });
    expect([errors[1], errors[2], errors[4]]).toEqual([undefined, undefined, undefined]);
  });

  it('HTTP 403 for /v1/pipeline_stages alone (a path the API shows no status of): the other lists are still sent and served', async () => {
    let refusedCount = 0;
    nock(BASE)
      .persist()
      .get('/v1/pipeline_stages')
      .query(true)
      .reply(() => {
        refusedCount += 1;
        return [403, problem(403, 'Forbidden', 'the plan has no access to pipeline stages'), PROBLEM_HEADERS];
      });
    nock(BASE).persist().get(/^\/v1\/(contacts|conversations|stage_events|deletions)/).reply(200, page(), JSON_HEADERS);
    const h = harness({ maxConcurrent: 1 });
    const stages = await h.client.list('/v1/pipeline_stages', { limit: 10 }).then(() => undefined, (err: unknown) => err as ConnectorError);
    expect(stages).toMatchObject({ code: 'forbidden', failureType: 'config_error', runWide: false });
    const errors = await outcomes(PATHS.filter((p) => p !== '/v1/pipeline_stages').map((p) => h.client.list(p, { limit: 10 })));
    await h.client.close();
    expect(errors).toEqual([undefined, undefined, undefined, undefined]);
    expect(refusedCount).toBe(1);
  });

  for (const status of [401, 403] as const) {
    it(`HTTP ${status} for the description alone: /v1/me and the lists are still sent and served`, async () => {
      nock(BASE).get('/v1/openapi.json').reply(status, problem(status, 'Refused', 'description needs another scope'), PROBLEM_HEADERS);
      nock(BASE).get('/v1/me').reply(200, { account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 100, per_day: 1000 } }, JSON_HEADERS);
      nock(BASE).get('/v1/contacts').query(true).reply(200, page(), JSON_HEADERS);
      const h = harness();
      const refused = await h.client.description().then(() => undefined, (err: unknown) => err as ConnectorError);
      expect(refused).toMatchObject({ failureType: 'config_error', runWide: false });
      await expect(h.client.me()).resolves.toMatchObject({ account_name: 'Acme' });
      await expect(h.client.list('/v1/contacts', { limit: 10 })).resolves.toMatchObject({ data: [{ id: 'c1' }] });
      await h.client.close();
      expect(h.client.stats.requests).toBe(3);
    });
  }
});
