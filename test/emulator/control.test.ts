/** The control interface over HTTP, request counters, and the dump as the truth of a full read. */
import { afterEach, describe, expect, it } from 'vitest';
import type { Dump, Emulator } from '../../packages/emulator/src/index.js';
import { control, expectProblem, get, readAll, records, setup, sleep } from './helpers.js';

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

const LISTS = ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages'] as const;

async function fullRead(base: string, key: string): Promise<Dump> {
  const out: Record<string, unknown[]> = {};
  for (const list of LISTS) {
    const rows = records(await readAll(base, `/v1/${list}`, key, { limit: 37 }));
    out[list] = rows.sort((a, b) => ((a.id as string) < (b.id as string) ? -1 : (a.id as string) > (b.id as string) ? 1 : 0));
  }
  return out as unknown as Dump;
}

describe('control token', () => {
  it('is required on every control route (401 problem+json)', async () => {
    const s = await setup();
    emu = s.emu;
    for (const [method, path] of [['GET', '/accounts'], ['POST', '/accounts'], ['GET', '/stats'], ['POST', '/clock/advance'], ['GET', '/nope']] as const) {
      expectProblem(await control(s.emu, method, path, method === 'POST' ? {} : undefined, null), 401, /control token/);
      expectProblem(await control(s.emu, method, path, method === 'POST' ? {} : undefined, 'wrong'), 401);
    }
    // API keys are not control tokens, and the control token is not an API key.
    expectProblem(await control(s.emu, 'GET', '/accounts', undefined, s.key), 401);
    expectProblem(await get(s.emu.url, '/v1/me', { key: s.emu.controlToken }), 401);
    expect((await control(s.emu, 'GET', '/accounts')).status).toBe(200);
  });
});

describe('control over HTTP', () => {
  it('creates accounts and keys, seeds, mutates, moves the clock, sets faults and limits, reads stats and dumps', async () => {
    const s = await setup({ controlToken: 'ctl-secret' });
    emu = s.emu;
    expect(s.emu.controlToken).toBe('ctl-secret');
    const created = await control(s.emu, 'POST', '/accounts', { name: 'Initech', limits: { perMinute: 50 } });
    expect(created.status).toBe(201);
    const acc = created.body as { id: string; name: string; effectiveLimits: { perMinute: number } };
    expect(acc).toMatchObject({ name: 'Initech', dataApi: true, planAccess: true, effectiveLimits: { perMinute: 50 } });
    const keyRes = await control(s.emu, 'POST', `/accounts/${acc.id}/keys`, { scopes: ['data:read'] });
    const key = keyRes.body as { id: string; key: string };
    expect(key.key).toMatch(/^drk_live_[A-Za-z0-9]+$/);
    expect(((await control(s.emu, 'GET', `/accounts/${acc.id}/keys`)).body as unknown[]).length).toBe(1);

    const seeded = await control(s.emu, 'POST', `/accounts/${acc.id}/seed`, { contacts: 40, testFraction: 0.1 });
    expect(seeded.body).toMatchObject({ contacts: 40 });
    const mutation = await control(s.emu, 'POST', `/accounts/${acc.id}/mutations`, { op: 'create_contacts', count: 2 });
    expect((mutation.body as { ids: string[] }).ids).toHaveLength(2);
    expectProblem(await control(s.emu, 'POST', `/accounts/${acc.id}/mutations`, { op: 'explode' }), 400, /invalid mutation/);
    expectProblem(await control(s.emu, 'POST', `/accounts/${acc.id}/mutations`, { op: 'update_contacts', ids: ['nope'] }), 404, /no contact/);
    expectProblem(await control(s.emu, 'POST', '/accounts/nope/seed', { contacts: 1 }), 404, /no account/);
    expectProblem(await control(s.emu, 'POST', `/accounts/${acc.id}/seed`, { contacts: -1 }), 400);
    expectProblem(await control(s.emu, 'DELETE', `/accounts/${acc.id}/seed`), 405);

    const account = (await control(s.emu, 'GET', `/accounts/${acc.id}`)).body as { counts: { contacts: number; test_contacts: number } };
    expect(account.counts.contacts + account.counts.test_contacts).toBe(42);

    const patched = await control(s.emu, 'PATCH', `/accounts/${acc.id}`, { dataApi: false });
    expect(patched.body).toMatchObject({ dataApi: false });
    expectProblem(await get(s.emu.url, '/v1/contacts', { key: key.key }), 403);
    await control(s.emu, 'PATCH', `/accounts/${acc.id}`, { dataApi: true });

    const now = ((await control(s.emu, 'GET', '/clock')).body as { now: string }).now;
    const later = ((await control(s.emu, 'POST', '/clock/advance', { ms: 3_600_000 })).body as { now: string }).now;
    expect(Date.parse(later) - Date.parse(now)).toBeGreaterThanOrEqual(3_600_000);
    expectProblem(await control(s.emu, 'POST', '/clock/advance', { ms: -5 }), 400, /never goes back/);

    expect((await control(s.emu, 'PUT', '/faults', { faults: [{ kind: '503', every: 1, paths: ['/v1/deletions'] }] })).status).toBe(200);
    expect((await get(s.emu.url, '/v1/deletions', { key: key.key })).status).toBe(503);
    expect((await control(s.emu, 'POST', '/faults', { kind: 'slow', probability: 0, slowMs: 10 })).body).toMatchObject({ rules: [{ kind: '503' }, { kind: 'slow' }] });
    expect((await control(s.emu, 'GET', '/faults')).body).toMatchObject({ injected: { total: 1, byKind: { 503: 1 } } });
    expectProblem(await control(s.emu, 'PUT', '/faults', { faults: [{ kind: '503' }] }), 400, /exactly one/);
    expect((await control(s.emu, 'DELETE', '/faults')).body).toMatchObject({ rules: [] });
    expect((await get(s.emu.url, '/v1/deletions', { key: key.key })).status).toBe(200);

    expect((await control(s.emu, 'PUT', '/limits', { perDay: 5000 })).body).toMatchObject({ perDay: 5000, perMinute: 1000 });
    expect((await control(s.emu, 'GET', '/limits')).body).toMatchObject({ perDay: 5000 });
    await control(s.emu, 'PATCH', `/keys/${key.id}`, { limits: { perMinute: 7 } });
    expect((await get(s.emu.url, '/v1/me', { key: key.key })).body).toMatchObject({ limits: { per_minute: 7, per_day: 5000 } });
    expect((await control(s.emu, 'POST', `/keys/${key.id}/revoke`)).body).toMatchObject({ revoked: true });
    expectProblem(await get(s.emu.url, '/v1/me', { key: key.key }), 401);

    const stats = (await control(s.emu, 'GET', '/stats')).body as { total: number; byPath: Record<string, Record<string, number>> };
    expect(stats.total).toBeGreaterThan(0);
    expect(stats.byPath['/v1/deletions']).toEqual({ 200: 1, 503: 1 });
    const reset = (await control(s.emu, 'POST', '/stats/reset')).body as { total: number; faults: { total: number } };
    expect(reset.total).toBe(0);
    expect(reset.faults.total).toBe(0);

    const dump = await control(s.emu, 'GET', `/accounts/${acc.id}/dump`);
    expect(dump.body).toEqual(s.emu.control.dump(acc.id));
    expectProblem(await control(s.emu, 'GET', '/nowhere'), 404);
    expectProblem(await control(s.emu, 'POST', '/accounts', { name: 'x', color: 'red' }), 400, /invalid account/);
    const bad = await fetch(`${s.emu.controlUrl}/accounts`, { method: 'POST', headers: { authorization: 'Bearer ctl-secret' }, body: '{nope' });
    expect(bad.status).toBe(400);
  });
});

describe('dump', () => {
  it('equals what a full paged read returns, before and after every kind of change', async () => {
    const s = await setup({ contacts: 150 });
    emu = s.emu;
    const ctl = s.emu.control;
    expect(await fullRead(s.emu.url, s.key)).toEqual(ctl.dump(s.accountId));
    ctl.mutate(s.accountId, { op: 'update_contacts', count: 10 });
    ctl.mutate(s.accountId, { op: 'update_conversations', count: 10, close: true, outcome: true });
    ctl.mutate(s.accountId, { op: 'move_contacts', count: 10 });
    ctl.mutate(s.accountId, { op: 'create_contacts', count: 10 });
    ctl.mutate(s.accountId, { op: 'create_conversations', count: 5 });
    ctl.mutate(s.accountId, { op: 'delete_contacts', count: 5 });
    ctl.mutate(s.accountId, { op: 'delete_conversations', count: 5 });
    const dump = ctl.dump(s.accountId);
    expect(await fullRead(s.emu.url, s.key)).toEqual(dump);
    for (const list of LISTS) {
      const ids = dump[list].map((r) => r.id);
      expect(ids).toEqual([...ids].sort());
    }
    expect(dump.deletions.length).toBeGreaterThan(0);
  });
});

describe('request counters', () => {
  it('count per path and status, 429s, in-flight and faults', async () => {
    const s = await setup({ latencyMs: 150 });
    emu = s.emu;
    await Promise.all([1, 2, 3].map(() => get(s.emu.url, '/v1/contacts', { key: s.key })));
    await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 0 } });
    await get(s.emu.url, '/v1/missing', { key: s.key });
    await get(s.emu.url, '/v1/contacts/abc', { key: s.key });
    await get(s.emu.url, '/v1/contacts/def', { key: s.key });
    s.emu.control.setLatency(0);
    await sleep(1);
    const st = s.emu.control.stats();
    expect(st.total).toBe(7);
    expect(st.byPath['/v1/contacts']).toEqual({ 200: 3, 400: 1 });
    expect(st.byPath['/v1/contacts/{id}']).toEqual({ 404: 2 });
    expect(st.byPath['/v1/missing']).toEqual({ 404: 1 });
    expect(st.byStatus).toEqual({ 200: 3, 400: 1, 404: 3 });
    expect(st.maxInFlight).toBe(3);
    expect(st.throttled).toBe(0);
    expect(st.inFlight).toBe(0);
  });
});
