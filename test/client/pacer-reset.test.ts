/** RateLimit-Reset is whole seconds: the pacer keeps the tightest bound of the window it is in. */
import { describe, expect, it } from 'vitest';
import type { Pacer } from '../../src/client/pacer.js';
import { pacer } from '../helpers/pacer.js';

const h = (remaining: number, reset: number): Record<string, string> => ({
  'ratelimit-limit': '20',
  'ratelimit-remaining': String(remaining),
  'ratelimit-reset': String(reset),
});

/** One request sent at `sentAt` and answered at `now.t`. */
function exchange(p: Pacer, now: { t: number }, sentAt: number, headers: Record<string, string>): void {
  p.sent();
  p.observe(headers, now.t, sentAt);
  p.done();
}

describe('pacer: the end of a rate-limit window from whole-second Reset values', () => {
  it('waits for the earliest bound of the window, not the last response + Reset', async () => {
    const now = { t: 0 };
    const { p, slept } = pacer(now);
    exchange(p, now, 0, h(19, 2)); // answered at 0: the window ends within 2 s
    now.t = 900;
    exchange(p, now, 880, h(0, 2)); // also "2", but 0.9 s later: this bound is looser
    expect(p.view.resetAt).toBe(2000);
    await p.ready('/v1/contacts');
    expect(slept).toEqual([1100]);
  });

  it('takes a later response as a new window once the estimate has passed', () => {
    const now = { t: 0 };
    const { p } = pacer(now);
    exchange(p, now, 0, h(19, 2));
    now.t = 2100;
    exchange(p, now, 2090, h(19, 2));
    expect(p.view.resetAt).toBe(4100);
  });

  it('takes a rising Remaining as a new window', () => {
    const now = { t: 0 };
    const { p } = pacer(now);
    exchange(p, now, 0, h(5, 2));
    now.t = 1500;
    exchange(p, now, 1490, h(19, 2)); // Remaining went up: the service started a new window
    expect(p.view.resetAt).toBe(3500);
    expect(p.view.remaining).toBe(19);
  });

  it('ignores a late answer to a request sent before the current window was seen', () => {
    const now = { t: 0 };
    const { p } = pacer(now);
    exchange(p, now, 0, h(10, 1));
    p.sent(); // A, sent at 900 in the old window
    p.sent(); // B, sent at 1100
    now.t = 1200;
    p.observe(h(19, 2), now.t, 1100); // B: a new window (the estimate 1000 has passed)
    p.done();
    now.t = 1300;
    p.observe(h(0, 1), now.t, 900); // A, answered late: says nothing of the new window
    p.done();
    expect(p.view.resetAt).toBe(3200);
    expect(p.view.remaining).toBe(18); // 19 less A, still in flight when B was answered
  });
});
