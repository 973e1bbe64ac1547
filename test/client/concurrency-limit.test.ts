/** A simultaneous-request limiter's 429 lowers the requests in flight for the key; the quota's 429s do not. */
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Gate } from '../../src/client/gate.js';
import { BASE, JSON_HEADERS, PROBLEM_HEADERS, harness, page, problem, resetNock } from './helpers.js';

beforeAll(() => nock.disableNetConnect());
afterEach(() => resetNock());
afterAll(() => nock.enableNetConnect());

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function limits(remaining: number, reset: number, limit = 600): Record<string, string> {
  return { 'ratelimit-limit': String(limit), 'ratelimit-remaining': String(remaining), 'ratelimit-reset': String(reset) };
}

/**
 * A service that admits `simultaneous` requests at once and refuses the others
 * with a 429 (Retry-After 1, the minute's figures far from spent), as a
 * simultaneous-request limiter does.
 */
function limiter(simultaneous: number): { refused: number; peak: number; admitted: number } {
  const seen = { refused: 0, peak: 0, admitted: 0 };
  let inFlight = 0;
  nock(BASE)
    .get('/v1/contacts')
    .query(true)
    .times(200)
    .reply(async () => {
      if (inFlight >= simultaneous) {
        seen.refused += 1;
        return [429, problem(429, 'Too Many Requests', 'too many simultaneous requests'), { ...PROBLEM_HEADERS, 'retry-after': '1', ...limits(500, 30) }];
      }
      inFlight += 1;
      seen.admitted += 1;
      seen.peak = Math.max(seen.peak, inFlight);
      await pause(20);
      inFlight -= 1;
      return [200, page(), { ...JSON_HEADERS, ...limits(500, 30) }];
    });
  return seen;
}

describe('a simultaneous-request limit below max_concurrent_requests', () => {
  it('lowers the requests in flight to what the service admits, says so once, and stops clashing', async () => {
    const seen = limiter(2);
    const h = harness({ maxConcurrent: 4, maxRetries: 8 }, true);
    const first = await Promise.all(Array.from({ length: 4 }, () => h.client.list('/v1/contacts', { limit: 1 })));
    const refusedInFirstWave = seen.refused;
    const rest = await Promise.all(Array.from({ length: 12 }, () => h.client.list('/v1/contacts', { limit: 1 })));
    await h.client.close();
    expect(first.length + rest.length).toBe(16);
    // The first wave of 4 meets the limit of 2: 2 refused, and no request clashes after.
    expect(refusedInFirstWave).toBe(2);
    expect(seen.refused).toBe(2);
    expect(h.client.stats.throttled).toBe(2);
    const lowered = h.logs.filter((l) => /simultaneous/.test(l.message) && /max_concurrent_requests/.test(l.message));
    // The refused requests went out third and fourth: the service admits fewer than 3, said once.
    expect(lowered.map((l) => l.level)).toEqual(['INFO']);
    expect(lowered[0]?.message).toMatch(/at most 2 requests in flight\b/);
    // Retry-After is still honoured: each 429 is waited out.
    expect(h.client.stats.rateLimitWaits).toBeGreaterThanOrEqual(1);
  });

  it('lets one more request in flight again after a minute without such a 429, and lowers again at the next clash', async () => {
    const seen = limiter(2);
    const h = harness({ maxConcurrent: 4, maxRetries: 8 }, true);
    await Promise.all(Array.from({ length: 4 }, () => h.client.list('/v1/contacts', { limit: 1 })));
    await Promise.all(Array.from({ length: 6 }, () => h.client.list('/v1/contacts', { limit: 1 })));
    expect(seen.refused).toBe(2); // lowered to 2 in the first wave, no clash in the second
    h.clock.t += 60_000; // a minute without a simultaneous-request 429
    await Promise.all(Array.from({ length: 6 }, () => h.client.list('/v1/contacts', { limit: 1 })));
    await h.client.close();
    const told = h.logs.filter((l) => /max_concurrent_requests/.test(l.message)).map((l) => `${l.level} ${l.message}`);
    expect(told).toEqual([
      expect.stringMatching(/^INFO .*at most 2 requests in flight until a minute passes without such a 429 \(max_concurrent_requests is 4; set it to 2 to start there\)/),
      'INFO No simultaneous-request 429 for a minute: sending at most 3 requests in flight again (max_concurrent_requests is 4).',
      expect.stringMatching(/^INFO .*sent with 3 in flight.*at most 2 requests in flight/),
    ]);
    // The third wave went out 3 at a time: the service's own limit of 2 cost one 429 to find again.
    expect(seen.refused).toBe(3);
  });

  it('never goes below one request in flight', async () => {
    const seen = limiter(1);
    const h = harness({ maxConcurrent: 3, maxRetries: 8 }, true);
    const pages = await Promise.all(Array.from({ length: 9 }, () => h.client.list('/v1/contacts', { limit: 1 })));
    await h.client.close();
    expect(pages).toHaveLength(9);
    expect(seen.refused).toBe(2);
    expect(seen.admitted).toBe(9);
    const lowered = h.logs.filter((l) => /max_concurrent_requests/.test(l.message));
    expect(lowered).toHaveLength(1);
    expect(lowered[0]?.message).toMatch(/at most 1 request in flight\b/);
  });

  it("the minute's quota (Remaining 0), the day's (a Retry-After past the minute's Reset) or a burst limiter's (a window of its own) lowers nothing", async () => {
    let n = 0;
    nock(BASE)
      .get('/v1/contacts')
      .query(true)
      .times(5)
      .reply(() => {
        n += 1;
        if (n === 1) return [200, page(), { ...JSON_HEADERS, ...limits(500, 30) }];
        if (n === 2) return [429, problem(429, 'Too Many Requests', 'minute'), { ...PROBLEM_HEADERS, 'retry-after': '5', ...limits(0, 5) }];
        if (n === 3) return [429, problem(429, 'Too Many Requests', 'day'), { ...PROBLEM_HEADERS, 'retry-after': '600', ...limits(400, 20) }];
        if (n === 4) return [429, problem(429, 'Too Many Requests', 'burst'), { ...PROBLEM_HEADERS, 'retry-after': '1', ...limits(0, 1, 10) }];
        return [200, page(), { ...JSON_HEADERS, ...limits(490, 20) }];
      });
    const h = harness({ maxConcurrent: 4, maxRetries: 8 }, true);
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.list('/v1/contacts', { limit: 1 });
    await h.client.close();
    expect(n).toBe(5);
    expect(h.logs.filter((l) => /max_concurrent_requests/.test(l.message))).toEqual([]);
  });
});

describe('Gate.raise', () => {
  it('lets a waiter in at once, and never goes above the size', async () => {
    const gate = new Gate(2);
    const held = await Promise.all([gate.acquire(), gate.acquire()]);
    expect(gate.lower(1)).toBe(true);
    held[0]?.();
    let third = false;
    const next = gate.acquire().then((r) => {
      third = true;
      return r;
    });
    await pause(1);
    expect(third).toBe(false); // one held: at the lowered limit
    expect(gate.raise()).toBe(true);
    const r = await next;
    expect(third).toBe(true);
    expect(gate.active).toBe(2);
    expect(gate.raise()).toBe(false);
    expect(gate.limit).toBe(2);
    r();
    held[1]?.();
    expect(gate.active).toBe(0);
  });
});

describe('Gate.lower', () => {
  it('admits no more than the lowered figure, never raises it, and never goes below one', async () => {
    const gate = new Gate(4);
    const held = await Promise.all([gate.acquire(), gate.acquire(), gate.acquire()]);
    expect(gate.lower(2)).toBe(true);
    expect(gate.lower(3)).toBe(false);
    expect(gate.limit).toBe(2);
    let fourth = false;
    const next = gate.acquire().then((r) => {
      fourth = true;
      return r;
    });
    held[0]?.();
    await pause(1);
    expect(fourth).toBe(false); // 2 still held: at the lowered limit
    held[1]?.();
    const r = await next;
    expect(gate.active).toBe(2);
    expect(gate.lower(0)).toBe(true);
    expect(gate.limit).toBe(1);
    r();
    held[2]?.();
    expect(gate.active).toBe(0);
    expect(gate.size).toBe(4);
  });
});
