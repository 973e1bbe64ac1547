/** Requests in flight never exceed maxConcurrent, across callers and retries; the gate is FIFO. */
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Gate } from '../../src/client/gate.js';
import { BASE, JSON_HEADERS, PROBLEM_HEADERS, harness, page, problem, resetNock } from './helpers.js';

beforeAll(() => nock.disableNetConnect());
afterEach(() => resetNock());
afterAll(() => nock.enableNetConnect());

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('concurrency', () => {
  for (const max of [1, 3]) {
    it(`never more than ${max} in flight across 12 callers, retries included`, async () => {
      let inFlight = 0;
      let peak = 0;
      let served = 0;
      nock(BASE)
        .get(/\/v1\/(contacts|conversations)/)
        .times(100)
        .reply(async () => {
          inFlight += 1;
          peak = Math.max(peak, inFlight);
          served += 1;
          await pause(15);
          inFlight -= 1;
          // every third answer is a fault, so retries run alongside first attempts
          if (served % 3 === 0) return [500, problem(500, 'Internal Server Error', 'x'), PROBLEM_HEADERS];
          return [200, page(), JSON_HEADERS];
        });
      const h = harness({ maxConcurrent: max, maxRetries: 8 }, false);
      const paths = Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? '/v1/contacts' : '/v1/conversations'));
      const pages = await Promise.all(paths.map((p) => h.client.list(p, { limit: 1 })));
      await h.client.close();
      expect(pages).toHaveLength(12);
      expect(peak).toBe(max);
      expect(h.client.stats.retries).toBeGreaterThan(0);
      expect(h.client.stats.requests).toBe(served);
    });
  }
});

describe('Gate', () => {
  it('serves waiters in arrival order and never exceeds its size', async () => {
    const gate = new Gate(2);
    const order: number[] = [];
    let active = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const release = await gate.acquire();
        order.push(i);
        active += 1;
        peak = Math.max(peak, active);
        await pause(2);
        active -= 1;
        release();
        release(); // a second release is harmless
      }),
    );
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(peak).toBe(2);
    expect(gate.active).toBe(0);
    expect(gate.waiting).toBe(0);
  });

  it('rejects a size under 1', () => {
    expect(() => new Gate(0)).toThrow(RangeError);
  });
});
