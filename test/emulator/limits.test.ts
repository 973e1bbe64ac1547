/** Per-key request limits and the RateLimit-* headers. */
import { afterEach, describe, expect, it } from 'vitest';
import type { Emulator } from '../../packages/emulator/src/index.js';
import { RateLimiter, resolveLimits } from '../../packages/emulator/src/limits.js';
import { pacer } from '../helpers/pacer.js';
import { expectProblem, get, setup, sleep, type Got } from './helpers.js';

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

function rate(got: Got): { limit: number; remaining: number; reset: number } {
  for (const h of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) expect(got.headers[h], h).toMatch(/^\d+$/);
  return { limit: Number(got.headers['ratelimit-limit']), remaining: Number(got.headers['ratelimit-remaining']), reset: Number(got.headers['ratelimit-reset']) };
}

describe('RateLimit headers', () => {
  it('are on every response: success, every error, with and without a key', async () => {
    const s = await setup({ contacts: 5 });
    emu = s.emu;
    const off = s.emu.control.createAccount({ dataApi: false });
    const offKey = s.emu.control.createKey(off.id).key;
    const responses = [
      await get(s.emu.url, '/v1/contacts', { key: s.key }),
      await get(s.emu.url, '/v1/me', { key: s.key }),
      await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 0 } }),
      await get(s.emu.url, '/v1/contacts/nope', { key: s.key }),
      await get(s.emu.url, '/v1/nope', { key: s.key }),
      await get(s.emu.url, '/v1/contacts'),
      await get(s.emu.url, '/v1/contacts', { key: offKey }),
      await get(s.emu.url, '/v1/openapi.json'),
      await get(s.emu.url, '/elsewhere'),
    ];
    for (const r of responses) {
      const h = rate(r);
      expect(h.limit).toBe(1000);
      expect(h.reset).toBeGreaterThanOrEqual(1);
      expect(h.reset).toBeLessThanOrEqual(60);
    }
    // Requests of a key count down its remaining quota.
    const a = rate(await get(s.emu.url, '/v1/me', { key: s.key }));
    const b = rate(await get(s.emu.url, '/v1/me', { key: s.key }));
    expect(b.remaining).toBe(a.remaining - 1);
  });
});

describe('per-minute window', () => {
  it('refuses with 429 and Retry-After once the window is used up, then serves again', async () => {
    // A frozen clock: the window ends when the test advances it, not when a busy machine gets slow.
    const s = await setup({ limits: { perMinute: 3, windowMs: 1200 }, frozenClock: true });
    emu = s.emu;
    const seen = [];
    for (let i = 0; i < 3; i++) {
      const got = await get(s.emu.url, '/v1/contacts', { key: s.key });
      expect(got.status).toBe(200);
      seen.push(rate(got));
    }
    expect(seen.map((h) => h.remaining)).toEqual([2, 1, 0]);
    expect(seen.every((h) => h.limit === 3 && h.reset >= 1 && h.reset <= 2)).toBe(true);
    const refused = await get(s.emu.url, '/v1/contacts', { key: s.key });
    const p = expectProblem(refused, 429, /per-minute/);
    expect(p.title).toBe('Too many requests');
    expect(refused.headers['retry-after']).toMatch(/^[12]$/);
    expect(rate(refused).remaining).toBe(0);
    // A refused request does not use quota, and another key has its own window.
    const other = s.emu.control.createKey(s.accountId);
    expect((await get(s.emu.url, '/v1/contacts', { key: other.key })).status).toBe(200);
    s.emu.control.advanceClock(1300);
    const again = await get(s.emu.url, '/v1/contacts', { key: s.key });
    expect(again.status).toBe(200);
    expect(rate(again).remaining).toBe(2);
    expect(s.emu.control.stats().throttled).toBe(1);
  });

  it('RateLimit-Reset is at least 1 while time remains, even for short windows', async () => {
    const s = await setup({ limits: { perMinute: 100, windowMs: 150 } });
    emu = s.emu;
    for (let i = 0; i < 3; i++) {
      expect(rate(await get(s.emu.url, '/v1/me', { key: s.key })).reset).toBe(1);
      await sleep(60);
    }
  });
});

describe('per-day window', () => {
  it('429 with a day-long Retry-After; RateLimit-* stay the minute\'s (the API\'s); the clock ends the window', async () => {
    const s = await setup({ limits: { perDay: 2 }, frozenClock: true });
    emu = s.emu;
    expect((await get(s.emu.url, '/v1/me', { key: s.key })).body).toMatchObject({ limits: { per_day: 2 } });
    expect((await get(s.emu.url, '/v1/contacts', { key: s.key })).status).toBe(200);
    const refused = await get(s.emu.url, '/v1/contacts', { key: s.key });
    expectProblem(refused, 429, /daily/);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(86_000);
    // The minute's figures: 1000 a minute, 2 spent, the minute not over.
    expect(rate(refused)).toEqual({ limit: 1000, remaining: 998, reset: 60 });
    s.emu.control.advanceClock(86_400_000);
    expect((await get(s.emu.url, '/v1/contacts', { key: s.key })).status).toBe(200);
  });

  it('a day quota below the minute\'s does not lower RateLimit-Remaining (a client would take the gap for other users)', async () => {
    const s = await setup({ limits: { perMinute: 1000, perDay: 5 }, frozenClock: true });
    emu = s.emu;
    const seen = [];
    for (let i = 0; i < 5; i++) {
      const got = await get(s.emu.url, '/v1/contacts', { key: s.key });
      expect(got.status).toBe(200);
      seen.push(rate(got));
    }
    expect(seen.map((h) => h.remaining)).toEqual([999, 998, 997, 996, 995]);
    expect(seen.every((h) => h.limit === 1000 && h.reset === 60)).toBe(true);
    expectProblem(await get(s.emu.url, '/v1/contacts', { key: s.key }), 429, /daily/);
  });

  it('the connector\'s pacer, alone on a key whose day quota is below the minute\'s, waits for nothing', async () => {
    // The emulator's limiter and the connector's pacer on one clock: a Remaining below the minute's
    // quota less this client's own requests reads as other users of the key (a wait up to the minute's end).
    const now = { t: Date.UTC(2026, 0, 5) };
    const t = pacer(now);
    const limiter = new RateLimiter();
    const limits = resolveLimits({ perMinute: 1000, perDay: 10 });
    for (let i = 0; i < 10; i++) {
      await t.p.ready('/v1/contacts');
      const sentAt = now.t;
      const seq = t.p.sent();
      now.t += 20;
      const a = limiter.admit('key', limits, now.t);
      limiter.release('key');
      expect(a.ok).toBe(true);
      const headers = { 'ratelimit-limit': String(a.headers.limit), 'ratelimit-remaining': String(a.headers.remaining), 'ratelimit-reset': String(a.headers.reset) };
      t.p.observe(headers, now.t, sentAt, seq);
      t.p.done();
    }
    expect(t.waits).toEqual([]);
    expect(t.p.view.othersPerOwn).toBe(0);
  });
});

describe('simultaneous requests', () => {
  it('refuses requests beyond the concurrency limit with 429', async () => {
    const s = await setup({ limits: { concurrency: 2 }, latencyMs: 300 });
    emu = s.emu;
    const results = await Promise.all(Array.from({ length: 5 }, () => get(s.emu.url, '/v1/contacts', { key: s.key })));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 429);
    expect(ok).toHaveLength(2);
    expect(refused).toHaveLength(3);
    for (const r of refused) {
      expectProblem(r, 429, /simultaneous/);
      expect(r.headers['retry-after']).toBe('1');
    }
    const stats = s.emu.control.stats();
    expect(stats.maxInFlight).toBe(2);
    expect(Object.values(stats.maxInFlightByKey)).toEqual([2]);
    expect(stats.throttled).toBe(3);
    expect(stats.inFlight).toBe(0);
    // Once they finish, the slots are free again.
    expect((await get(s.emu.url, '/v1/contacts', { key: s.key })).status).toBe(200);
  });

  it('limits can be set per account and per key at run time', async () => {
    const s = await setup();
    emu = s.emu;
    s.emu.control.updateAccount(s.accountId, { limits: { perMinute: 10 } });
    expect(rate(await get(s.emu.url, '/v1/me', { key: s.key })).limit).toBe(10);
    const k = s.emu.control.createKey(s.accountId);
    s.emu.control.updateKey(k.id, { limits: { perMinute: 4 } });
    expect(rate(await get(s.emu.url, '/v1/me', { key: k.key })).limit).toBe(4);
    s.emu.control.setDefaultLimits({ perDay: 9 });
    expect((await get(s.emu.url, '/v1/me', { key: s.key })).body).toMatchObject({ limits: { per_minute: 10, per_day: 9 } });
  });
});
