/** RateLimit-* pacing, Retry-After, shared waits and wait_too_long. */
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { pacer } from '../helpers/pacer.js';
import { ApiError } from '../../src/client/api-error.js';
import { BASE, JSON_HEADERS, PROBLEM_HEADERS, T0, expectNoKey, failure, harness, page, problem, resetNock, type FakeClock, countRequests } from './helpers.js';

beforeAll(() => nock.disableNetConnect());
afterEach(() => resetNock());
afterAll(() => nock.enableNetConnect());

function limits(remaining: number, reset: number, limit = 60): Record<string, string> {
  return { ...JSON_HEADERS, 'ratelimit-limit': String(limit), 'ratelimit-remaining': String(remaining), 'ratelimit-reset': String(reset) };
}

/** Serve `replies` in order on /v1/contacts, recording the fake time of each request. */
function serve(clock: () => FakeClock, replies: Array<[number, unknown, Record<string, string>]>): number[] {
  const times: number[] = [];
  let i = 0;
  nock(BASE)
    .get('/v1/contacts')
    .query(true)
    .times(replies.length)
    .reply(() => {
      times.push(clock().t);
      const r = replies[i++];
      if (r === undefined) throw new Error('no more replies');
      return [r[0], r[1] as string, r[2]];
    });
  return times;
}

describe('pacing on RateLimit-*', () => {
  it('Remaining 0: no request goes out before Reset; the wait is announced as rate_limited first', async () => {
    const h = harness();
    const times = serve(() => h.clock, [
      [200, page(), limits(0, 30)],
      [200, page(), limits(59, 60)],
    ]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(times).toEqual([T0, T0 + 30_000]);
    expect(h.waits).toEqual([{ reason: 'rate_limited', waitMs: 30_000, until: T0 + 30_000, path: '/v1/contacts' }]);
    expect(h.client.stats).toMatchObject({ requests: 2, retries: 0, rateLimitWaits: 1, throttled: 0, waitedMs: 30_000, rateLimitWaitedMs: 30_000 });
  });

  it('counts its own sends down from Remaining and waits when the local view reaches 0', async () => {
    const h = harness();
    const times = serve(() => h.clock, [
      [200, page(), limits(2, 40, 3)], // alone on the key: 3 less its own request
      [200, page(), { ...JSON_HEADERS }], // no headers: the local count goes on
      [200, page(), { ...JSON_HEADERS }],
      [200, page(), limits(59, 60)],
    ]);
    for (let i = 0; i < 4; i += 1) await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    // In its first window the client cannot know whether others start to spend the key too: it spreads its
    // requests over the window's first 0.3 (one per 0.3 x 40 s / 3 = 4 s), without announcing a wait.
    expect(times).toEqual([T0, T0 + 4000, T0 + 8000, T0 + 40_000]);
    expect(h.client.stats.rateLimitWaits).toBe(1);
  });

  it('others spend the key too: the wait for the window is announced as rate_limited and logged as theirs', async () => {
    const h = harness();
    const times = serve(() => h.clock, [
      [200, page(), limits(7, 2, 8)],
      [200, page(), limits(4, 2, 8)], // two requests of another process in between
      [200, page(), limits(1, 2, 8)], // two more
      [200, page(), limits(7, 2, 8)],
    ]);
    for (let i = 0; i < 4; i += 1) await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    // First window, spread over 2 s at least (here the whole window): one request of the key per 2 s / 8 = 250 ms; this client takes one step in three. Then
    // Remaining 1 with two others expected first: after its next step (T0 + 1.75 s) it leaves that slot and waits for
    // the window (T0 + 2 s).
    expect(times).toEqual([T0, T0 + 250, T0 + 1000, T0 + 2000]);
    expect(h.waits).toEqual([{ reason: 'rate_limited', waitMs: 250, until: T0 + 2000, path: '/v1/contacts' }]);
    expect(h.logs.filter((l) => l.level === 'INFO').map((l) => l.message)).toEqual([
      "Pausing requests for 250 ms, until 2025-03-01T12:00:02.000Z: what is left of this minute's request quota is expected to go to other users of the same API key (RateLimit-Remaining falls faster than this connector spends it).",
    ]);
    expect(h.client.stats).toMatchObject({ requests: 4, throttled: 0, rateLimitWaits: 1 });
  });

  it('a shared wait: every concurrent caller waits for the same Reset, announced once', async () => {
    const h = harness({ maxConcurrent: 3 });
    const times = serve(() => h.clock, [
      [200, page(), limits(0, 20)],
      [200, page(), limits(9, 60)],
      [200, page(), limits(8, 60)],
      [200, page(), limits(7, 60)],
    ]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await Promise.all([1, 2, 3].map(() => h.client.list('/v1/contacts', { limit: 1 })));
    await h.client.close();
    expect(times.slice(1).every((t) => t >= T0 + 20_000)).toBe(true);
    expect(h.waits).toHaveLength(1);
    expect(h.client.stats).toMatchObject({ rateLimitWaits: 1, waitedMs: 20_000, rateLimitWaitedMs: 20_000 });
  });

  it('a wait longer than maxWaitSeconds is not made: wait_too_long with resetAt, nothing sent', async () => {
    const h = harness({ maxWaitSeconds: 900 });
    const times = serve(() => h.clock, [[200, page(), limits(0, 4 * 3600)]]);
    await h.client.list('/v1/contacts', { limit: 1 });
    const err = await failure(() => h.client.list('/v1/contacts', { limit: 1 }));
    await h.client.close();
    expect(times).toHaveLength(1);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'wait_too_long', failureType: 'transient_error', resetAt: T0 + 4 * 3600_000 });
    expect(err.message).toContain('daily request quota is used up; it resets at 2025-03-01T16:00:00.000Z');
    expect(err.message).toContain('the next sync resumes from the saved state');
    expect(h.clock.sleeps).toEqual([]);
    expectNoKey(err);
  });
});

describe('the wall clock stepping back (an NTP step, a clock fix)', () => {
  it('neither stretches the pacing of the next request past maxWaitSeconds nor stops the sync', async () => {
    // The client's own clock (no `now` given): the wall clock goes back an hour between two requests.
    const wall = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(wall);
    const h = harness({ maxWaitSeconds: 900 }, false);
    try {
      let answered = 0;
      nock(BASE)
        .get('/v1/contacts')
        .query(true)
        .times(2)
        .reply(() => {
          answered += 1;
          return [200, page(), limits(answered === 1 ? 0 : 599, 1, 600)];
        });
      // The first answer spends the minute's quota: the next request waits for its Reset, a second.
      await h.client.list('/v1/contacts', { limit: 1 });
      clock.mockReturnValue(wall - 3_600_000);
      expect((await h.client.list('/v1/contacts', { limit: 1 })).data).toHaveLength(1);
      expect(answered).toBe(2);
    } finally {
      clock.mockRestore();
      await h.client.close();
    }
  });
});

describe('429 and 503', () => {
  it('429 Retry-After is honoured (as rate_limited) and counted as throttled', async () => {
    const h = harness();
    const times = serve(() => h.clock, [
      [429, problem(429, 'Too Many Requests', 'Per-minute limit reached.', 'rq-429'), { ...PROBLEM_HEADERS, 'retry-after': '7' }],
      [200, page([{ id: 'after' }]), JSON_HEADERS],
    ]);
    const result = await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(result.data).toEqual([{ id: 'after' }]);
    expect(times).toEqual([T0, T0 + 7000]);
    expect(h.waits).toEqual([{ reason: 'rate_limited', waitMs: 7000, until: T0 + 7000, path: '/v1/contacts' }]);
    expect(h.client.stats).toMatchObject({ requests: 2, retries: 1, throttled: 1, rateLimitWaits: 1, waitedMs: 7000 });
    expect(h.logs.find((l) => l.level === 'WARN')?.message).toMatch(/HTTP 429 \(Too Many Requests: Per-minute limit reached\.; request_id rq-429\); waiting 7 s/);
  });

  it("a Retry-After date is read on the service's clock (its Date header): a machine 20 minutes behind still waits 7 s", async () => {
    const h = harness();
    // The service's clock runs 20 minutes ahead of this machine's (FakeClock's T0).
    const serviceNow = T0 + 20 * 60_000;
    const httpDate = (ms: number): string => new Date(ms).toUTCString();
    const times = serve(() => h.clock, [
      [429, problem(429, 'Too Many Requests', 'Per-minute limit reached.'), { ...PROBLEM_HEADERS, date: httpDate(serviceNow), 'retry-after': httpDate(serviceNow + 7000) }],
      [200, page([{ id: 'after' }]), JSON_HEADERS],
    ]);
    const result = await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(result.data).toEqual([{ id: 'after' }]);
    expect(times).toEqual([T0, T0 + 7000]);
  });

  it.each(['5.', '+5', ' 5 '])('Retry-After %j is 5 s (a number written loosely), not an HTTP date long past', async (retryAfter) => {
    const h = harness();
    const times = serve(() => h.clock, [
      [429, problem(429, 'Too Many Requests', 'x'), { ...PROBLEM_HEADERS, 'retry-after': retryAfter, 'ratelimit-limit': '60', 'ratelimit-remaining': '40', 'ratelimit-reset': '50' }],
      [200, page(), JSON_HEADERS],
    ]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(times).toEqual([T0, T0 + 5000]);
    expect(h.waits.map((w) => w.reason)).toEqual(['rate_limited']);
  });

  it.each(['-5', '5 s', 'soon', 'Sat, 01 Mar 2025', '2025-03-01T12:00:07Z'])(
    'Retry-After %j, neither delay-seconds nor an HTTP-date: read as no Retry-After (RateLimit-Reset), never as a date long past',
    async (retryAfter) => {
      const h = harness();
      const times = serve(() => h.clock, [
        [429, problem(429, 'Too Many Requests', 'x'), { ...PROBLEM_HEADERS, 'retry-after': retryAfter, 'ratelimit-remaining': '0', 'ratelimit-reset': '9' }],
        [200, page(), JSON_HEADERS],
      ]);
      await h.client.list('/v1/contacts', { limit: 1 });
      await h.client.close();
      expect(times).toEqual([T0, T0 + 9000]);
    },
  );

  it("a Date header that is no HTTP-date does not move a Retry-After date: it is measured from this machine's clock", async () => {
    const h = harness();
    const times = serve(() => h.clock, [
      [429, problem(429, 'Too Many Requests', 'x'), { ...PROBLEM_HEADERS, date: '5', 'retry-after': new Date(T0 + 7000).toUTCString() }],
      [200, page(), JSON_HEADERS],
    ]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(times).toEqual([T0, T0 + 7000]);
  });

  it('503 Retry-After is honoured', async () => {
    const h = harness();
    const times = serve(() => h.clock, [
      [503, problem(503, 'Service Unavailable', 'Maintenance.'), { ...PROBLEM_HEADERS, 'retry-after': '12' }],
      [200, page(), JSON_HEADERS],
    ]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(times).toEqual([T0, T0 + 12_000]);
    expect(h.client.stats).toMatchObject({ throttled: 0, rateLimitWaits: 1 });
  });

  it('429 without Retry-After falls back to RateLimit-Reset', async () => {
    const h = harness();
    const times = serve(() => h.clock, [
      [429, problem(429, 'Too Many Requests', 'x'), { ...PROBLEM_HEADERS, 'ratelimit-remaining': '0', 'ratelimit-reset': '9' }],
      [200, page(), JSON_HEADERS],
    ]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(times).toEqual([T0, T0 + 9000]);
  });

  it('429 with neither header falls back to backoff', async () => {
    const h = harness();
    const times = serve(() => h.clock, [
      [429, problem(429, 'Too Many Requests', 'x'), PROBLEM_HEADERS],
      [200, page(), JSON_HEADERS],
    ]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(times).toEqual([T0, T0 + 10]);
    expect(h.waits.map((w) => w.reason)).toEqual(['backoff']);
  });

  it.each([
    ['429', 429, '0'],
    ['503', 503, '0'],
    ['429 with a date already past', 429, new Date(T0 - 5000).toUTCString()],
  ] as const)('%s, Retry-After 0: retried after growing backoffs, not at once (the retries would be spent in no time)', async (_name, status, retryAfter) => {
    // A simultaneous-request limiter may say "again now" while the requests that fill it run on for seconds.
    const h = harness();
    const refusal: [number, unknown, Record<string, string>] = [
      status,
      problem(status, 'Too Many Requests', 'Too many simultaneous requests.'),
      { ...PROBLEM_HEADERS, 'retry-after': retryAfter, 'ratelimit-limit': '60', 'ratelimit-remaining': '40', 'ratelimit-reset': '50' },
    ];
    const times = serve(() => h.clock, [refusal, refusal, refusal, [200, page(), JSON_HEADERS]]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    // retryBaseMs 5, retryMaxMs 50, random 0.5: 10, 18, 28 ms (not the minute's RateLimit-Reset either).
    expect(times).toEqual([T0, T0 + 10, T0 + 28, T0 + 56]);
    expect(h.waits.map((w) => w.reason)).toEqual(['backoff', 'backoff', 'backoff']);
  });

  it.each([
    ['429', 429],
    ['503', 503],
  ] as const)('%s without Retry-After, RateLimit-Reset 0: retried after growing backoffs, not at once', async (_name, status) => {
    // "The minute restarts now" is no wait either: taken at its word, every retry would go at once.
    const h = harness();
    const refusal: [number, unknown, Record<string, string>] = [
      status,
      problem(status, 'Too Many Requests', 'x'),
      { ...PROBLEM_HEADERS, 'ratelimit-limit': '60', 'ratelimit-remaining': '0', 'ratelimit-reset': '0' },
    ];
    const times = serve(() => h.clock, [refusal, refusal, refusal, [200, page(), JSON_HEADERS]]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(times).toEqual([T0, T0 + 10, T0 + 28, T0 + 56]);
    expect(h.waits.map((w) => w.reason)).toEqual(['backoff', 'backoff', 'backoff']);
  });

  it('a Retry-After makes the other callers wait too (one shared, announced wait)', async () => {
    let t = T0;
    let wake: () => void = () => undefined;
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
    });
    const sleeps: number[] = [];
    const h = harness({
      maxConcurrent: 2,
      now: () => t,
      sleep: async (ms) => {
        sleeps.push(ms);
        await woken;
        t = Math.max(t, T0 + 5000);
      },
    });
    const log: Array<[string, number]> = [];
    nock(BASE)
      .get('/v1/contacts')
      .query(true)
      .reply(() => {
        log.push(['contacts', t]);
        return [429, problem(429, 'Too Many Requests', 'x'), { ...PROBLEM_HEADERS, 'retry-after': '5' }];
      })
      .get('/v1/contacts')
      .query(true)
      .reply(() => {
        log.push(['contacts', t]);
        return [200, page(), JSON_HEADERS];
      })
      .get('/v1/deletions')
      .query(true)
      .reply(() => {
        log.push(['deletions', t]);
        return [200, page(), JSON_HEADERS];
      });
    const contacts = h.client.list('/v1/contacts', { limit: 1 });
    while (sleeps.length === 0) await new Promise((r) => setTimeout(r, 5));
    const deletions = h.client.list('/v1/deletions', { limit: 1 });
    await new Promise((r) => setTimeout(r, 60));
    expect(log).toEqual([['contacts', T0]]); // deletions is held back by the contacts' Retry-After
    wake();
    await Promise.all([contacts, deletions]);
    await h.client.close();
    expect(log.slice(1).every(([, at]) => at === T0 + 5000)).toBe(true);
    expect(log.map(([p]) => p).sort()).toEqual(['contacts', 'contacts', 'deletions']);
    expect(sleeps).toEqual([5000]); // one shared sleep
    // Every path held back is told (each stream reports RATE_LIMITED), once.
    expect(h.waits).toEqual([
      { reason: 'rate_limited', waitMs: 5000, until: T0 + 5000, path: '/v1/contacts' },
      { reason: 'rate_limited', waitMs: 5000, until: T0 + 5000, path: '/v1/deletions' },
    ]);
  });

  it('Retry-After longer than maxWaitSeconds: wait_too_long at once, with resetAt and the service words', async () => {
    const h = harness({ maxWaitSeconds: 900 });
    const times = serve(() => h.clock, [
      [429, problem(429, 'Too Many Requests', 'Daily limit reached.', 'rq-day'), { ...PROBLEM_HEADERS, 'retry-after': '36000' }],
    ]);
    const err = await failure(() => h.client.list('/v1/contacts', { limit: 1 }));
    await h.client.close();
    expect(times).toHaveLength(1);
    expect(err).toMatchObject({ code: 'wait_too_long', failureType: 'transient_error', resetAt: T0 + 36_000_000, status: 429 });
    expect(err.message).toContain('daily request quota is used up; it resets at 2025-03-01T22:00:00.000Z');
    expect(err.message).toContain('next sync resumes from the saved state');
    expect(err.message).toContain('Daily limit reached.');
    expect(err.message).toContain('rq-day');
    expect(h.clock.sleeps).toEqual([]);
    expect(h.client.stats).toMatchObject({ throttled: 1, waitedMs: 0 });
  });

  it('429 with a Retry-After beyond any date: wait_too_long that says so, not a crash on the date', async () => {
    const h = harness({ maxWaitSeconds: 900 });
    serve(() => h.clock, [[429, problem(429, 'Too Many Requests', 'x'), { ...PROBLEM_HEADERS, 'retry-after': '99999999999999999999' }]]);
    const err = await failure(() => h.client.list('/v1/contacts', { limit: 1 }));
    const again = await failure(() => h.client.list('/v1/contacts', { limit: 1 }));
    await h.client.close();
    for (const e of [err, again]) {
      expect(e).toBeInstanceOf(ApiError);
      expect(e).toMatchObject({ code: 'wait_too_long', failureType: 'transient_error', status: 429 });
      expect(e.message).toContain('it resets at a time past any date');
      expect(e.message).toContain('longer than max_wait_seconds (900 s) allows');
    }
  });


  it('after a too-long Retry-After, other callers stop at once without sending', async () => {
    const h = harness();
    const sent = countRequests('/v1/contacts', 5, () => [503, problem(503, 'Service Unavailable', 'Long maintenance.'), { ...PROBLEM_HEADERS, 'retry-after': '7200' }]);
    const first = await failure(() => h.client.list('/v1/contacts', { limit: 1 }));
    const second = await failure(() => h.client.list('/v1/contacts', { limit: 1 }));
    await h.client.close();
    expect(sent.count).toBe(1);
    expect(first).toMatchObject({ code: 'wait_too_long', status: 503, resetAt: T0 + 7_200_000 });
    expect(first.message).toContain('unavailable (HTTP 503)');
    expect(second).toMatchObject({ code: 'wait_too_long', status: 503, resetAt: T0 + 7_200_000 });
    expect(second.message).toContain('unavailable (HTTP 503)');
  });

  it('429 on the last allowed attempt: retries_exhausted, no pointless wait', async () => {
    const h = harness({ maxRetries: 1 });
    serve(() => h.clock, [
      [429, problem(429, 'Too Many Requests', 'x'), { ...PROBLEM_HEADERS, 'retry-after': '3' }],
      [429, problem(429, 'Too Many Requests', 'y', 'rq-last'), { ...PROBLEM_HEADERS, 'retry-after': '3' }],
    ]);
    const err = await failure(() => h.client.list('/v1/contacts', { limit: 1 }));
    await h.client.close();
    expect(err).toMatchObject({ code: 'retries_exhausted', failureType: 'transient_error', status: 429 });
    expect(err.message).toContain('rq-last');
    expect(h.clock.sleeps).toEqual([3000]);
    expect(h.client.stats).toMatchObject({ requests: 2, throttled: 2 });
  });

  it('really sleeps: Retry-After 1 with the real clock', async () => {
    const h = harness({}, false);
    const stamps: number[] = [];
    nock(BASE)
      .get('/v1/contacts')
      .query(true)
      .reply(() => {
        stamps.push(Date.now());
        return [429, problem(429, 'Too Many Requests', 'x'), { ...PROBLEM_HEADERS, 'retry-after': '1' }];
      })
      .get('/v1/contacts')
      .query(true)
      .reply(() => {
        stamps.push(Date.now());
        return [200, page(), JSON_HEADERS];
      });
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(stamps).toHaveLength(2);
    expect((stamps[1] ?? 0) - (stamps[0] ?? 0)).toBeGreaterThanOrEqual(990);
    // With the real clock the wait told is Retry-After less the few ms since the answer came (the fake-clock tests check 1000 exactly).
    const told = h.waits[0];
    expect(told?.reason).toBe('rate_limited');
    expect(told?.waitMs).toBeGreaterThan(0);
    expect(1000 - (told?.waitMs ?? 0)).toBeGreaterThanOrEqual(0);
  });

  it('close() cancels a pending wait', async () => {
    const h = harness({}, false);
    nock(BASE).get('/v1/contacts').query(true).reply(429, problem(429, 'Too Many Requests', 'x'), { ...PROBLEM_HEADERS, 'retry-after': '60' });
    const pending = h.client.list('/v1/contacts', { limit: 1 });
    let settled = false;
    void pending.then(
      () => (settled = true),
      () => (settled = true),
    );
    // Wait for the 429 and the 60 s wait it starts (told through onWait), then close.
    while (h.waits.length === 0) await new Promise((r) => setImmediate(r));
    await h.client.close();
    // No clock bound: settled within a turn of the event loop means the 60 s wait was cancelled, not run out.
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(true);
    const err = await failure(() => pending);
    expect(err.message).toMatch(/closed/);
  });
});

describe('RateLimit-Reset as an epoch time', () => {
  const httpDate = (ms: number): string => new Date(ms).toUTCString();
  const epoch = (ms: number): string => String(Math.floor(ms / 1000));

  it("Remaining 0 with a Reset in epoch seconds: waits until that instant on the service's clock (its Date), not for decades", async () => {
    const h = harness();
    // The service's clock runs 20 minutes ahead of this machine's; its minute restarts 30 s after it answered.
    const serviceNow = T0 + 20 * 60_000;
    const times = serve(() => h.clock, [
      [200, page(), { ...limits(0, 0), date: httpDate(serviceNow), 'ratelimit-reset': epoch(serviceNow + 30_000) }],
      [200, page(), limits(59, 60)],
    ]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(times).toEqual([T0, T0 + 30_000]);
    expect(h.waits).toEqual([{ reason: 'rate_limited', waitMs: 30_000, until: T0 + 30_000, path: '/v1/contacts' }]);
  });

  it("without a Date header, an epoch Reset is measured from this machine's clock", async () => {
    const h = harness();
    const times = serve(() => h.clock, [
      [200, page(), { ...limits(0, 0), 'ratelimit-reset': epoch(T0 + 12_000) }],
      [200, page(), limits(59, 60)],
    ]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(times).toEqual([T0, T0 + 12_000]);
  });

  it('429 without Retry-After, an epoch Reset: retried at that instant', async () => {
    const h = harness();
    const times = serve(() => h.clock, [
      [429, problem(429, 'Too Many Requests', 'x'), { ...PROBLEM_HEADERS, date: httpDate(T0), 'ratelimit-remaining': '0', 'ratelimit-reset': epoch(T0 + 9000) }],
      [200, page(), JSON_HEADERS],
    ]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(times).toEqual([T0, T0 + 9000]);
  });

  it.each([
    ['beyond any date', '99999999999999999999'],
    ['a year of seconds', String(365 * 86_400)],
    ['an epoch time a week ahead', epoch(T0 + 7 * 86_400_000)],
    ['an epoch time a week past', epoch(T0 - 7 * 86_400_000)],
  ])('a Reset that is neither a wait of at most a day nor an instant within a day (%s) counts as none: no wait of hours', async (_name, reset) => {
    // Remaining 0 with that Reset: the next request goes (the service says when to come back, with a 429's Retry-After).
    const quota = harness({ maxWaitSeconds: 86_400 });
    const quotaTimes = serve(() => quota.clock, [
      [200, page(), { ...limits(0, 0), date: httpDate(T0), 'ratelimit-reset': reset }],
      [200, page(), limits(59, 60)],
    ]);
    await quota.client.list('/v1/contacts', { limit: 1 });
    await quota.client.list('/v1/contacts', { limit: 1 });
    await quota.client.close();
    expect(quotaTimes[1]! - T0).toBeLessThan(60_000);
    expect(quota.waits.filter((w) => w.reason === 'rate_limited')).toEqual([]);

    // A 429 with that Reset and no Retry-After: a growing backoff, as with neither header.
    const refused = harness({ maxWaitSeconds: 86_400 });
    const refusedTimes = serve(() => refused.clock, [
      [429, problem(429, 'Too Many Requests', 'x'), { ...PROBLEM_HEADERS, date: httpDate(T0), 'ratelimit-remaining': '0', 'ratelimit-reset': reset }],
      [200, page(), JSON_HEADERS],
    ]);
    await refused.client.list('/v1/contacts', { limit: 1 });
    await refused.client.close();
    expect(refusedTimes).toEqual([T0, T0 + 10]);
    expect(refused.waits.map((w) => w.reason)).toEqual(['backoff']);
  });

  it('a Reset of up to a day is still seconds to wait (a gateway counting the day), not an epoch time', async () => {
    const h = harness({ maxWaitSeconds: 86_400 });
    const times = serve(() => h.clock, [
      [200, page(), { ...limits(0, 86_400), date: httpDate(T0) }],
      [200, page(), limits(59, 60)],
    ]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(times).toEqual([T0, T0 + 86_400_000]);
  });
});

describe('decimal header values', () => {
  it('a decimal Reset or Retry-After: a wait of whole ms, rounded up, never ending before the service said', async () => {
    // RateLimit-Reset 1.2345 s with Remaining 0: the window ends 1234.5 ms on, so no request before 1235.
    const quota = harness();
    const quotaTimes = serve(() => quota.clock, [
      [200, page(), { ...limits(0, 0), 'ratelimit-reset': '1.2345' }],
      [200, page(), limits(59, 60)],
    ]);
    await quota.client.list('/v1/contacts', { limit: 1 });
    await quota.client.list('/v1/contacts', { limit: 1 });
    await quota.client.close();
    expect(quotaTimes).toEqual([T0, T0 + 1235]);
    expect(quota.waits).toEqual([{ reason: 'rate_limited', waitMs: 1235, until: T0 + 1235, path: '/v1/contacts' }]);

    // Retry-After 1.1 is 1100 ms exactly (no float error rounds it to 1101); 2.0004 is 2001, not 2000.
    for (const [retryAfter, ms] of [['1.1', 1100], ['2.0004', 2001], ['1.5', 1500]] as const) {
      const h = harness();
      const times = serve(() => h.clock, [
        [429, problem(429, 'Too Many Requests', 'x'), { ...PROBLEM_HEADERS, 'retry-after': retryAfter }],
        [200, page(), JSON_HEADERS],
      ]);
      await h.client.list('/v1/contacts', { limit: 1 });
      await h.client.close();
      expect(times).toEqual([T0, T0 + ms]);
      expect(h.waits).toEqual([{ reason: 'rate_limited', waitMs: ms, until: T0 + ms, path: '/v1/contacts' }]);
    }

    // A 429 without Retry-After waits for its RateLimit-Reset, rounded up the same way.
    const fallback = harness();
    const fallbackTimes = serve(() => fallback.clock, [
      [429, problem(429, 'Too Many Requests', 'x'), { ...PROBLEM_HEADERS, 'ratelimit-remaining': '0', 'ratelimit-reset': '0.0001' }],
      [200, page(), JSON_HEADERS],
    ]);
    await fallback.client.list('/v1/contacts', { limit: 1 });
    await fallback.client.close();
    expect(fallbackTimes).toEqual([T0, T0 + 1]);
  });
});

describe('RateLimit-Remaining above RateLimit-Limit (a gateway that counts another window)', () => {
  it('is no sign of other users of the key: the sync neither stops nor waits past the minute', async () => {
    const h = harness({ maxWaitSeconds: 900 });
    const times = serve(() => h.clock, [
      [200, page(), { ...JSON_HEADERS, 'ratelimit-limit': '60', 'ratelimit-remaining': '100000', 'ratelimit-reset': '60' }],
      [200, page(), limits(58, 59)],
      [200, page(), limits(57, 58)],
    ]);
    for (let i = 0; i < 3; i++) await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(times).toHaveLength(3);
    expect(h.clock.sleeps.reduce((a, b) => a + b, 0)).toBeLessThan(60_000);
  });
});

describe("RateLimit-* on the service's description (GET /v1/openapi.json, not one of the key's operations)", () => {
  it("are not the key's window: a fresh minute there does not make the key's earlier requests count as others spending it", async () => {
    // The emulator answers the description outside the key's quota, with a minute of its own (1000 left, Reset 60);
    // the key's own minute began 30 s ago, and 40 of its requests were spent by runs that have ended.
    const h = harness();
    nock(BASE).get('/v1/openapi.json').reply(200, {}, limits(1000, 60, 1000));
    const times = serve(() => h.clock, [
      [200, page(), limits(959, 30, 1000)],
      [200, page(), limits(958, 30, 1000)],
      [200, page(), limits(957, 30, 1000)],
    ]);
    await h.client.description();
    for (let i = 0; i < 3; i++) await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    // Alone on the key in its first window, the client spreads its requests (one per 0.3 x 30 s / 1000 = 9 ms), a
    // little more at first for the 40 requests of the minute before its own; taken as others between its
    // description and its first list, they made it wait (1 + 40) x 18 ms = 738 ms before its second request.
    expect(times[1]! - times[0]!).toBeLessThan(30);
    expect(times[2]! - times[1]!).toBeLessThan(30);
    expect(h.waits).toEqual([]);
  });
});

describe('RateLimit-* on an error answer other than 429 and 503 (the API promises them on 200, 429 and 503 only)', () => {
  it("are not the key's window: a 404 with a fresh minute does not make the key's earlier requests count as others", async () => {
    // A service without /v1/pipeline_stages answers 404 from its router, outside the key's quota, with a minute of
    // its own (1000 left, Reset 60), as the emulator answers a path it does not serve; the key's own minute began
    // 30 s ago, and 40 of its requests were spent by runs that have ended.
    const h = harness();
    nock(BASE)
      .get('/v1/pipeline_stages')
      .query(true)
      .reply(404, problem(404, 'Not found', 'no such path: /v1/pipeline_stages'), { ...limits(1000, 60, 1000), ...PROBLEM_HEADERS });
    const times = serve(() => h.clock, [
      [200, page(), limits(959, 30, 1000)],
      [200, page(), limits(958, 30, 1000)],
      [200, page(), limits(957, 30, 1000)],
    ]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await expect(h.client.list('/v1/pipeline_stages', { limit: 1 })).rejects.toThrow(/404/);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    // Taken as the key's, the 404's figures opened a window of their own, and the fall from them to the next answer
    // counted the 40 requests of the minute before the run as others spending the key: each request then waited
    // for (1 + others per own) spread steps.
    expect(times[1]! - times[0]!).toBeLessThan(30);
    expect(times[2]! - times[1]!).toBeLessThan(30);
    expect(h.waits).toEqual([]);
  });
});

describe('the spread of requests over the window (pacer.ts) and max_wait_seconds', () => {
  it('is never a reason to stop: a pause of its own longer than max_wait_seconds is cut to it', async () => {
    // 10 requests a minute: in its first window the client spreads them, one every 1.8 s (18 s / 10).
    const h = harness({ maxWaitSeconds: 1 });
    const times = serve(() => h.clock, [
      [200, page(), limits(9, 60, 10)],
      [200, page(), limits(8, 59, 10)],
    ]);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(times).toEqual([T0, T0 + 1000]);
  });
});

describe('Pacer (unit)', () => {
  it('takes the requests still in flight off the reported Remaining', () => {
    const now = { t: 0 };
    const { p } = pacer(now);
    p.sent();
    p.sent();
    p.sent(); // three in flight
    p.observe({ 'ratelimit-remaining': '5', 'ratelimit-reset': '10', 'ratelimit-limit': '60' }, 0);
    expect(p.view.remaining).toBe(3); // the other two are not counted yet by the service
  });

  it('assumes a fresh window after Reset passes', async () => {
    const now = { t: 0 };
    const { p, slept } = pacer(now);
    p.sent();
    p.observe({ 'ratelimit-remaining': '0', 'ratelimit-reset': '10', 'ratelimit-limit': '60' }, 0);
    p.done();
    await p.ready('/x');
    expect(slept).toEqual([10_000]);
    expect(p.view.remaining).toBe(60);
  });

  it('ignores malformed headers', () => {
    const now = { t: 0 };
    const { p } = pacer(now);
    p.observe({ 'ratelimit-remaining': 'lots', 'ratelimit-reset': '-1' }, 0);
    expect(p.view.remaining).toBeUndefined();
    expect(p.view.resetAt).toBeUndefined();
  });
});
