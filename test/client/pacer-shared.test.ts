/** Several processes on one key: the pacer takes a share of the quota instead of bursting into the others' 429s. */
import { describe, expect, it } from 'vitest';
import type { Pacer, PaceWait } from '../../src/client/pacer.js';
import { pacer } from '../helpers/pacer.js';

interface Rig {
  readonly p: Pacer;
  readonly now: { t: number };
  readonly announced: PaceWait[];
  readonly slept: number[];
}

function rig(): Rig {
  const now = { t: 0 };
  const { p, waits, slept } = pacer(now);
  return { p, now, announced: waits, slept };
}

/** 8 requests per 2 s window, as in the shared-key bench. */
const h = (remaining: number, reset = 2): Record<string, string> => ({
  'ratelimit-limit': '8',
  'ratelimit-remaining': String(remaining),
  'ratelimit-reset': String(reset),
});

/** Wait until the pacer allows a request, send it, and have it answered 5 ms later with `headers`. */
async function request(r: Rig, headers: Record<string, string>): Promise<number> {
  await r.p.ready('/v1/contacts');
  const sentAt = r.now.t;
  const seq = r.p.sent();
  r.now.t += 5;
  r.p.observe(headers, r.now.t, sentAt, seq);
  r.p.done();
  return sentAt;
}

describe('pacer: other users of the key', () => {
  it('its first answer shows requests of others before its own: in that first window it spreads wider at once', async () => {
    const alone = rig();
    await request(alone, h(7)); // 8 less its own: nobody else
    expect(await request(alone, h(6))).toBe(250); // one request per 2 s / 8
    const late = rig();
    await request(late, h(5)); // two requests of others came before its first, in the window's first second at most
    expect(late.p.view.othersPerOwn).toBeGreaterThan(0);
    expect(await request(late, h(4))).toBeGreaterThan(250);
  });

  it('Remaining falls faster than its own sends: it leaves the last slots to the others and waits for the window', async () => {
    const r = rig();
    await request(r, h(7)); // at 0; the window ends by 2005
    await request(r, h(4)); // two requests of others came in between
    await request(r, h(1)); // two more
    expect(r.p.view.othersPerOwn).toBe(2);
    // Remaining 1, and two requests of others are expected before the next one of this client arrives.
    await r.p.ready('/v1/contacts');
    expect(r.now.t).toBeGreaterThanOrEqual(2005);
    expect(r.announced.map((w) => [w.cause, w.until])).toEqual([['shared', 2005]]);
  });

  it('once a window has two of its own answers, its counts alone say how many others are about (one that left no longer counts)', async () => {
    const r = rig();
    await request(r, h(7));
    await request(r, h(4));
    await request(r, h(1)); // two others per own request in this window
    await r.p.ready('/v1/contacts'); // waits for the window (2005): the two others take the last slot
    expect(r.announced.map((w) => w.cause)).toEqual(['shared']);
    const windowEnd = r.now.t + 2000;
    await request(r, h(6)); // the next window: one of the others has finished
    await request(r, h(4));
    await request(r, h(2)); // one other per own request now
    expect(r.p.view.othersPerOwn).toBe(1);
    // Remaining 2 and one request of another expected before this one arrives: a slot is left for it, so it
    // sends after its step in the spread instead of leaving that slot unused until the window restarts.
    await r.p.ready('/v1/contacts');
    expect(r.now.t).toBeLessThan(windowEnd - 1000);
    expect(r.announced.map((w) => w.cause)).toEqual(['shared']);
  });

  it('with others about, spreads its requests over the window instead of spending the quota at its start', async () => {
    const r = rig();
    const sent = [await request(r, h(7)), await request(r, h(4)), await request(r, h(1))];
    // Its first window, spread over 2 s at least (all of this one): one request of the key every 250 ms (2 s / 8); this client takes one step in three once it counts two others per own request.
    expect(sent).toEqual([0, 250, 1000]);
    expect(r.announced).toEqual([]); // short pauses between requests are not rate-limit waits
  });

  it('a 429 it did not expect (others spent the quota): the next window is spread too', async () => {
    const r = rig();
    await request(r, h(7));
    r.now.t = 2100;
    await request(r, h(7)); // a second window: alone so far
    r.p.block(r.now.t + 1000, 429);
    await r.p.ready('/v1/contacts'); // Retry-After
    const start = r.now.t;
    const sent = [await request(r, h(7)), await request(r, h(6)), await request(r, h(5))];
    expect(sent.map((t) => t - start)).toEqual([0, 75, 150]);
  });

  it('alone on the key: after its first window it bursts up to Remaining 0, as before', async () => {
    const r = rig();
    for (let remaining = 7; remaining >= 0; remaining -= 1) await request(r, h(remaining));
    await r.p.ready('/v1/contacts'); // the first window ended at 2000
    r.slept.length = 0;
    const start = r.now.t;
    const sent: number[] = [];
    for (let remaining = 7; remaining >= 0; remaining -= 1) sent.push((await request(r, h(remaining))) - start);
    expect(r.p.view.othersPerOwn).toBe(0);
    expect(sent).toEqual([0, 5, 10, 15, 20, 25, 30, 35]); // back to back: no pause
    expect(r.slept).toEqual([]);
  });
});
