/** Fault injection: every kind, schedules, paths, counters. */
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { Emulator, FaultRule } from '../../packages/emulator/src/index.js';
import { asPage, expectProblem, get, readAll, setup, type Setup } from './helpers.js';

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

async function withFault(rule: FaultRule, contacts = 30): Promise<Setup> {
  const s = await setup({ contacts });
  emu = s.emu;
  s.emu.control.setFaults([rule]);
  return s;
}

describe('faults', () => {
  it('are off by default', async () => {
    const s = await setup({ contacts: 30 });
    emu = s.emu;
    await readAll(s.emu.url, '/v1/contacts', s.key, { limit: 5 });
    expect(s.emu.control.stats().faults).toEqual({ total: 0, byKind: {} });
  });

  it('500: problem+json, then normal service (times)', async () => {
    const s = await withFault({ kind: '500', every: 1, times: 1 });
    const p = expectProblem(await get(s.emu.url, '/v1/contacts', { key: s.key }), 500);
    expect(p.title).toBe('Internal server error');
    expect((await get(s.emu.url, '/v1/contacts', { key: s.key })).status).toBe(200);
    expect(s.emu.control.faults().injected).toEqual({ total: 1, byKind: { 500: 1 } });
  });

  it('503 and 429 carry Retry-After and the RateLimit headers', async () => {
    const s = await withFault({ kind: '503', every: 2, retryAfterSeconds: 3 });
    expect((await get(s.emu.url, '/v1/contacts', { key: s.key })).status).toBe(200);
    const r = await get(s.emu.url, '/v1/contacts', { key: s.key });
    expect(expectProblem(r, 503).title).toBe('Service unavailable');
    expect(r.headers['retry-after']).toBe('3');
    expect(r.headers['ratelimit-limit']).toBe('1000');
    s.emu.control.setFaults([{ kind: '429', every: 1 }]);
    const t = await get(s.emu.url, '/v1/me', { key: s.key });
    expectProblem(t, 429, /injected/);
    expect(t.headers['retry-after']).toBe('1');
    expect(s.emu.control.stats().faults.byKind).toEqual({ 503: 1, 429: 1 });
  });

  it('a 429 can carry the RateLimit-Remaining and -Reset of a burst limiter while the key\'s quota is large', async () => {
    const s = await withFault({ kind: '429', every: 2, retryAfterSeconds: 1, rateLimitRemaining: 0, rateLimitReset: 1 });
    const ok = await get(s.emu.url, '/v1/contacts', { key: s.key });
    expect(ok.status).toBe(200);
    expect(ok.headers['ratelimit-remaining']).toBe('999');
    expect(ok.headers['ratelimit-reset']).toBe('60');
    const t = await get(s.emu.url, '/v1/contacts', { key: s.key });
    expectProblem(t, 429, /injected/);
    expect([t.headers['retry-after'], t.headers['ratelimit-limit'], t.headers['ratelimit-remaining'], t.headers['ratelimit-reset']]).toEqual(['1', '1000', '0', '1']);
    // Only the fault's response: the next one tells the key's own quota again.
    expect((await get(s.emu.url, '/v1/contacts', { key: s.key })).headers['ratelimit-remaining']).toBe('997');
    expect(() => s.emu.control.setFaults([{ kind: '429', every: 1, rateLimitReset: -1 }])).toThrow(/rateLimitReset/);
  });

  it('reset destroys the connection without a response', async () => {
    const s = await withFault({ kind: 'reset', every: 1, times: 1 });
    await expect(get(s.emu.url, '/v1/contacts', { key: s.key })).rejects.toThrow();
    expect((await get(s.emu.url, '/v1/contacts', { key: s.key })).status).toBe(200);
    expect(s.emu.control.stats().byPath['/v1/contacts']).toEqual({ reset: 1, 200: 1 });
  });

  it('slow delays the response by slowMs', async () => {
    const s = await withFault({ kind: 'slow', every: 1, slowMs: 400 });
    const t0 = Date.now();
    expect((await get(s.emu.url, '/v1/contacts', { key: s.key })).status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(390);
  });

  it('truncated sends the full Content-Length and half the body, then closes', async () => {
    const s = await withFault({ kind: 'truncated', every: 1, times: 1 });
    const res = await request(`${s.emu.url}/v1/contacts`, { headers: { authorization: `Bearer ${s.key}` } });
    expect(res.statusCode).toBe(200);
    const length = Number(res.headers['content-length']);
    expect(length).toBeGreaterThan(1000);
    let received = 0;
    await expect((async () => {
      for await (const chunk of res.body) received += (chunk as Buffer).length;
    })()).rejects.toThrow();
    expect(received).toBeLessThan(length);
    expect(s.emu.control.faults().injected.byKind.truncated).toBe(1);
  });

  it('not_json and html answer 200 with a body that is not the JSON promised', async () => {
    const s = await withFault({ kind: 'not_json', every: 1, times: 1 });
    const a = await get(s.emu.url, '/v1/contacts', { key: s.key });
    expect(a.status).toBe(200);
    expect(a.headers['content-type']).toBe('application/json');
    expect(() => JSON.parse(a.text)).toThrow();
    s.emu.control.setFaults([{ kind: 'html', every: 1, times: 1 }]);
    const b = await get(s.emu.url, '/v1/contacts', { key: s.key });
    expect(b.status).toBe(200);
    expect(b.headers['content-type']).toMatch(/^text\/html/);
    expect(b.text).toMatch(/<html>/);
  });

  it('null_cursor: has_more true with next_cursor null', async () => {
    const s = await withFault({ kind: 'null_cursor', every: 1 });
    const page = asPage(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 5 } }));
    expect(page).toMatchObject({ has_more: true, next_cursor: null });
  });

  it('watermark_shift: pages after the first carry another sync_watermark', async () => {
    const s = await withFault({ kind: 'watermark_shift', every: 1 });
    const p1 = asPage(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 5 } }));
    const p2 = asPage(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 5, cursor: p1.next_cursor as string } }));
    expect(p2.sync_watermark).not.toBe(p1.sync_watermark);
    expect(s.emu.control.faults().injected.total).toBe(1);
  });

  it('cursor_loop: next_cursor repeats the cursor just used', async () => {
    const s = await withFault({ kind: 'cursor_loop', every: 1 });
    const p1 = asPage(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 5 } }));
    const cursor = p1.next_cursor as string;
    const p2 = asPage(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 5, cursor } }));
    expect(p2.next_cursor).toBe(cursor);
    expect(p2.has_more).toBe(true);
  });

  it('missing_id: records without id, on lists and on a single contact', async () => {
    const s = await withFault({ kind: 'missing_id', every: 1 });
    const page = asPage(await get(s.emu.url, '/v1/conversations', { key: s.key, query: { limit: 5 } }));
    expect(page.data).toHaveLength(5);
    for (const r of page.data) {
      expect(r).not.toHaveProperty('id');
      expect(r).toHaveProperty('contact_id');
    }
    const id = s.emu.control.dump(s.accountId).contacts[0]?.id as string;
    const one = await get(s.emu.url, `/v1/contacts/${id}`, { key: s.key });
    expect(one.body).not.toHaveProperty('id');
  });

  it('unknown_object_type: a deletion with object_type "widget", only on /v1/deletions', async () => {
    const s = await withFault({ kind: 'unknown_object_type', every: 1 });
    const contacts = asPage(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 5 } }));
    expect(contacts.data.every((r) => r.object_type === undefined)).toBe(true);
    const page = asPage(await get(s.emu.url, '/v1/deletions', { key: s.key, query: { limit: 5 } }));
    expect(page.data.some((r) => r.object_type === 'widget')).toBe(true);
    const empty = asPage(await get(s.emu.url, '/v1/deletions', { key: s.key, query: { updated_since: '2999-01-01' } }));
    expect(empty.data).toHaveLength(1);
    expect(empty.data[0]).toMatchObject({ object_type: 'widget' });
    expect(s.emu.control.faults().injected).toEqual({ total: 2, byKind: { unknown_object_type: 2 } });
  });

  it('every N fires on the Nth eligible request; paths restrict where', async () => {
    const s = await withFault({ kind: '500', every: 3, paths: ['/v1/conversations'] });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      statuses.push((await get(s.emu.url, '/v1/contacts', { key: s.key })).status);
      statuses.push((await get(s.emu.url, '/v1/conversations', { key: s.key })).status);
    }
    expect(statuses.filter((_, i) => i % 2 === 0).every((st) => st === 200)).toBe(true);
    expect(statuses.filter((_, i) => i % 2 === 1)).toEqual([200, 200, 500, 200, 200, 500]);
    s.emu.control.setFaults([{ kind: '503', every: 1, paths: ['/v1/contacts/{id}'] }]);
    expect((await get(s.emu.url, '/v1/contacts', { key: s.key })).status).toBe(200);
    expect((await get(s.emu.url, '/v1/contacts/whatever', { key: s.key })).status).toBe(503);
    s.emu.control.setFaults([{ kind: '503', every: 1, paths: ['/v1/c*'] }]);
    expect((await get(s.emu.url, '/v1/conversations', { key: s.key })).status).toBe(503);
    expect((await get(s.emu.url, '/v1/deletions', { key: s.key })).status).toBe(200);
  });

  it('probability faults follow the seed: the same seed gives the same schedule', async () => {
    const schedule = async (): Promise<number[]> => {
      const s = await setup({ seed: 99 });
      try {
        s.emu.control.setFaults([{ kind: '500', probability: 0.3 }]);
        const out: number[] = [];
        for (let i = 0; i < 40; i++) out.push((await get(s.emu.url, '/v1/me', { key: s.key })).status);
        return out;
      } finally {
        await s.emu.close();
      }
    };
    const a = await schedule();
    const b = await schedule();
    expect(a).toEqual(b);
    const failures = a.filter((x) => x === 500).length;
    expect(failures).toBeGreaterThan(3);
    expect(failures).toBeLessThan(25);
  });

  it('invalid rules are refused', () => {
    return (async () => {
      const s = await setup();
      emu = s.emu;
      expect(() => s.emu.control.setFaults([{ kind: '500' }])).toThrow(/exactly one of probability and every/);
      expect(() => s.emu.control.setFaults([{ kind: '500', probability: 2 }])).toThrow();
      expect(() => s.emu.control.setFaults([{ kind: 'meteor' as '500', every: 1 }])).toThrow();
    })();
  });
});
