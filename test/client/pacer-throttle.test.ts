/**
 * A 429 is a limiter's answer, not always the minute window's: a burst or
 * simultaneous-request limiter answers "Retry-After 1, Remaining 0, Reset 1"
 * while the window's quota is far from spent. Such a 429 costs its
 * Retry-After, never the rest of the window, and is no sign of others on the key.
 */
import { describe, expect, it } from 'vitest';
import { pacer, type TestPacer } from '../helpers/pacer.js';

/** A pacer on its own clock, which moves 5 ms per request and by every sleep. */
type Rig = TestPacer & { readonly now: { t: number } };

function rig(): Rig {
  const now = { t: 0 };
  return { ...pacer(now), now };
}

const h = (limit: number, remaining: number, reset: number): Record<string, string> => ({
  'ratelimit-limit': String(limit),
  'ratelimit-remaining': String(remaining),
  'ratelimit-reset': String(reset),
});

/** Wait until the pacer allows a request, send it, and have it answered 5 ms later with `headers` (and `status`). */
async function request(r: Rig, headers: Record<string, string>, status = 200): Promise<number> {
  await r.p.ready('/v1/contacts');
  const sentAt = r.now.t;
  const seq = r.p.sent();
  r.now.t += 5;
  r.p.observe(headers, r.now.t, sentAt, seq, status);
  r.p.done();
  if (status === 429) r.p.block(r.now.t + 1000, 429); // Retry-After 1, as the client does
  return sentAt;
}

/** A burst limiter's 429: Retry-After 1, Remaining 0, Reset 1. */
const burst = (limit: number): Record<string, string> => h(limit, 0, 1);

describe('pacer: a 429 from a short limiter', () => {
  it('alone on a large quota: each 429 costs its Retry-After, not the rest of the minute', async () => {
    const r = rig();
    let remaining = 100_000;
    for (let i = 0; i < 60; i += 1) {
      // Every 20th request is refused by a burst limiter; the window's Remaining goes on falling by one per own request.
      if (i % 20 === 10) await request(r, burst(100_000), 429);
      else await request(r, h(100_000, --remaining, 60 - Math.floor(r.now.t / 1000)));
    }
    expect(r.waits.map((w) => w.cause)).toEqual(['retry_after', 'retry_after', 'retry_after']);
    expect(r.slept).toEqual([1000, 1000, 1000]); // each Retry-After, nothing else
    expect(r.p.view.othersPerOwn).toBe(0);
    expect(r.p.view.remaining).toBe(remaining);
  });

  it('the figures of a 429 do not replace the window\'s: Remaining and Reset stay those of the answered requests', async () => {
    const r = rig();
    await request(r, h(100_000, 99_950, 47));
    await request(r, burst(100_000), 429);
    expect(r.p.view.remaining).toBe(99_949); // the local count, not the 429's 0
    expect(r.p.view.resetAt).toBe(47_005);
    expect(r.p.view.limit).toBe(100_000);
  });

  it('a 503 with the same figures: its Retry-After alone, the window\'s figures kept', async () => {
    const r = rig();
    await request(r, h(100_000, 99_950, 47));
    await r.p.ready('/v1/contacts');
    const sentAt = r.now.t;
    const seq = r.p.sent();
    r.now.t += 5;
    r.p.observe(burst(100_000), r.now.t, sentAt, seq, 503);
    r.p.done();
    r.p.block(r.now.t + 1000, 503);
    await request(r, h(100_000, 99_948, 46));
    await request(r, h(100_000, 99_947, 46));
    expect(r.waits.map((w) => w.cause)).toEqual(['retry_after']);
    expect(r.slept).toEqual([1000]);
    expect(r.p.view.othersPerOwn).toBe(0);
  });

  it('in a later window: no spread after a 429 whose Reset ends before the window can', async () => {
    const r = rig();
    // A first window of 100 requests a minute, spent, then a second one.
    for (let remaining = 99; remaining >= 0; remaining -= 1) await request(r, h(100, remaining, 60));
    await r.p.ready('/v1/contacts');
    const start = r.now.t;
    await request(r, h(100, 99, 60));
    await request(r, burst(100), 429); // Reset 1, while the window said 60 s a moment ago
    await r.p.ready('/v1/contacts');
    r.slept.length = 0;
    const sent = [await request(r, h(100, 98, 60)), await request(r, h(100, 97, 60)), await request(r, h(100, 96, 60))];
    // Alone after its first window: back to back, no spread (one request per 0.3 x 60 s / 100 = 180 ms).
    expect(sent.map((t) => t - start)).toEqual([1010, 1015, 1020]);
    expect(r.slept).toEqual([]);
  });

  it('a 429 whose Remaining 0 the next answer of the same window contradicts: no spread', async () => {
    const r = rig();
    for (let remaining = 7; remaining >= 0; remaining -= 1) await request(r, h(8, remaining, 2));
    await r.p.ready('/v1/contacts'); // the first window ends by 2005
    await request(r, h(8, 7, 2)); // a second window, ending by 4010
    await request(r, h(8, 0, 1), 429); // answered at 2015: Remaining 0 and Reset 1 fit that window ...
    await r.p.ready('/v1/contacts'); // ... its Retry-After, until 3015
    r.slept.length = 0;
    const sent = [await request(r, h(8, 5, 1)), await request(r, h(8, 4, 1)), await request(r, h(8, 3, 1))];
    // ... but the next answer, in the same window, has 5 left: a short limiter. Back to back, no spread (75 ms steps).
    expect(sent).toEqual([3015, 3020, 3025]);
    expect(r.slept).toEqual([]);
  });

  it('a 429 with Remaining left is another limiter (simultaneous requests): no spread', async () => {
    const r = rig();
    for (let remaining = 7; remaining >= 0; remaining -= 1) await request(r, h(8, remaining, 2));
    await r.p.ready('/v1/contacts');
    await request(r, h(8, 7, 2));
    await request(r, h(8, 6, 2), 429);
    await r.p.ready('/v1/contacts');
    r.slept.length = 0;
    const start = r.now.t;
    const sent = [await request(r, h(8, 6, 1)), await request(r, h(8, 5, 1))];
    expect(sent.map((t) => t - start)).toEqual([0, 5]);
    expect(r.slept).toEqual([]);
  });
});

describe('pacer: a 429 of the window (others spent the quota)', () => {
  it('the next answer opens a new window as the 429 said: the window after is spread, as before', async () => {
    const r = rig();
    for (let remaining = 7; remaining >= 0; remaining -= 1) await request(r, h(8, remaining, 2));
    await r.p.ready('/v1/contacts'); // the first window ends by 2005
    await request(r, h(8, 7, 2)); // a second window, ending by 4010
    r.now.t = 3500;
    await request(r, h(8, 0, 1), 429); // others took the rest; Retry-After 1 (until 4505)
    await r.p.ready('/v1/contacts');
    const start = r.now.t;
    // A new window: the 429 was the window's own, a sign of others. One request of the key per 75 ms.
    const sent = [await request(r, h(8, 7, 2)), await request(r, h(8, 6, 2)), await request(r, h(8, 5, 2))];
    expect(sent.map((t) => t - start)).toEqual([0, 75, 150]);
    expect(r.waits.map((w) => w.cause)).toEqual(['quota', 'retry_after']);
  });

  it('Remaining falls faster than its own sends over several answers: the wait for the window stays', async () => {
    const r = rig();
    await request(r, h(8, 7, 2));
    await request(r, h(8, 4, 2));
    await request(r, h(8, 1, 2));
    await r.p.ready('/v1/contacts');
    expect(r.waits.map((w) => [w.cause, w.until])).toEqual([['shared', 2005]]);
  });
});
