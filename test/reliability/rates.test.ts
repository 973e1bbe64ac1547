/** Rate limits: per minute (paced, runner told RATE_LIMITED), per day (stops, names the reset, resumes), simultaneous requests. */
import { describe, expect, it } from 'vitest';
import { expectNoLeaksAfterAll } from '../helpers/leaks.js';
import { runConcurrency, runPerDay, runPerMinute } from '../../reliability/rates.js';

expectNoLeaksAfterAll();

describe.concurrent('rate limits', () => {
  it('per minute: pacing keeps 429s at or near zero and tells the runner RATE_LIMITED', async () => {
    const r = await runPerMinute({ contacts: 60, pageSize: 20, perMinute: 5, windowMs: 1000, seed: 61 });
    expect(r.problems).toEqual([]);
    expect(r.throttled).toBeLessThanOrEqual(1);
    expect(r.rateLimitedStatuses).toBeGreaterThan(0);
    expect(r.lost).toBe(0);
  });

  it.each(['quota', 'retry_after'] as const)('per day (%s): stops instead of waiting the day, naming the reset, then resumes exactly', async (variant) => {
    const r = await runPerDay({ variant, contacts: 60, pageSize: 25, perDay: variant === 'quota' ? 10 : 5, maxWaitSeconds: 2, seed: 62 });
    expect(r.problems).toEqual([]);
    expect(r.message).toMatch(/daily request quota is used up; it resets at \d{4}-\d\d-\d\dT/);
    expect(r.lost).toBe(0);
  });

  it.each([
    [2, 2],
    [3, 2],
  ])('simultaneous requests: max_concurrent_requests %i, service limit %i: never exceeded, nothing lost', async (maxConcurrent, serviceLimit) => {
    const r = await runConcurrency({ contacts: 60, pageSize: 20, maxConcurrent, serviceLimit, latencyMs: 40, seed: 63 });
    expect(r.problems).toEqual([]);
    expect(r.maxInFlight).toBeLessThanOrEqual(Math.min(maxConcurrent, serviceLimit));
    expect(r.lost).toBe(0);
  });
});
