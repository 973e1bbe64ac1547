/** Authentication, authorization and tenancy. */
import { describe, expect, it } from 'vitest';
import { withEmulatorSetup } from '../helpers/suite.js';
import { expectProblem, get, readAll, records, TITLES, type Setup } from './helpers.js';

let s: Setup;
withEmulatorSetup({ contacts: 40 }, (setUp) => (s = setUp));

describe('authentication (401)', () => {
  it('refuses a request without a key', async () => {
    const p = expectProblem(await get(s.emu.url, '/v1/contacts'), 401, /missing API key/);
    expect(p.title).toBe(TITLES[401]);
  });

  it('refuses a malformed, unknown or non-bearer key', async () => {
    expectProblem(await get(s.emu.url, '/v1/contacts', { key: 'not-a-key' }), 401, /invalid API key/);
    expectProblem(await get(s.emu.url, '/v1/contacts', { key: 'drk_live_doesnotexist' }), 401, 'invalid API key');
    expectProblem(await get(s.emu.url, '/v1/me', { authorization: `Basic ${s.key}` }), 401);
  });

  it('refuses a revoked key, on data endpoints and /v1/me', async () => {
    const k = s.emu.control.createKey(s.accountId);
    expect((await get(s.emu.url, '/v1/me', { key: k.key })).status).toBe(200);
    s.emu.control.revokeKey(k.id);
    expectProblem(await get(s.emu.url, '/v1/me', { key: k.key }), 401, /revoked/);
    expectProblem(await get(s.emu.url, '/v1/contacts', { key: k.key }), 401, /revoked/);
  });

  it('accepts a key given by the caller in the <prefix>_live_<secret> format', async () => {
    const k = s.emu.control.createKey(s.accountId, { key: 'acme_live_S3cretValue' });
    expect((await get(s.emu.url, '/v1/me', { key: k.key })).status).toBe(200);
    expect(() => s.emu.control.createKey(s.accountId, { key: 'acme-test-123' })).toThrow(/prefix/);
  });
});

describe('authorization (403)', () => {
  it('refuses every endpoint when the data API is off for the account', async () => {
    const off = s.emu.control.createAccount({ name: 'Off', dataApi: false });
    const { key } = s.emu.control.createKey(off.id);
    for (const path of ['/v1/contacts', '/v1/conversations', '/v1/stage_events', '/v1/deletions', '/v1/pipeline_stages', '/v1/me']) {
      const p = expectProblem(await get(s.emu.url, path, { key }), 403, /switched off/);
      expect(p.title).toBe(TITLES[403]);
    }
    s.emu.control.updateAccount(off.id, { dataApi: true });
    expect((await get(s.emu.url, '/v1/contacts', { key })).status).toBe(200);
  });

  it('refuses a plan without access', async () => {
    const basic = s.emu.control.createAccount({ name: 'Basic plan', planAccess: false });
    const { key } = s.emu.control.createKey(basic.id);
    expectProblem(await get(s.emu.url, '/v1/deletions', { key }), 403, /plan/);
  });

  it('a key without data:read gets 403 on data endpoints but /v1/me works and reports its scopes', async () => {
    const k = s.emu.control.createKey(s.accountId, { scopes: ['contacts:write'] });
    for (const path of ['/v1/contacts', '/v1/conversations', '/v1/stage_events', '/v1/deletions', '/v1/pipeline_stages']) {
      expectProblem(await get(s.emu.url, path, { key: k.key }), 403, /data:read/);
    }
    const me = await get(s.emu.url, '/v1/me', { key: k.key });
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ account_name: 'Acme', scopes: ['contacts:write'], limits: { per_minute: 1000, per_day: 100_000 } });
  });
});

describe('/v1/me', () => {
  it('reports the account, the scopes and the limits of the key', async () => {
    const k = s.emu.control.createKey(s.accountId, { limits: { perMinute: 77, perDay: 5000 } });
    const me = await get(s.emu.url, '/v1/me', { key: k.key });
    expect(me.headers['content-type']).toBe('application/json');
    expect(me.body).toEqual({ account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 77, per_day: 5000 } });
    expect(me.headers['ratelimit-limit']).toBe('77');
  });
});

describe('tenancy', () => {
  it('one account never sees the data of another', async () => {
    const other = s.emu.control.createAccount({ name: 'Globex' });
    const { key: otherKey } = s.emu.control.createKey(other.id);
    s.emu.control.seed(other.id, { contacts: 30 });
    const mine = records(await readAll(s.emu.url, '/v1/contacts', s.key, { limit: 200 }));
    const theirs = records(await readAll(s.emu.url, '/v1/contacts', otherKey, { limit: 200 }));
    expect(mine.length).toBeGreaterThan(0);
    expect(theirs.length).toBeGreaterThan(0);
    const mineIds = new Set(mine.map((r) => r.id));
    expect(theirs.some((r) => mineIds.has(r.id))).toBe(false);
    for (const path of ['/v1/conversations', '/v1/stage_events', '/v1/pipeline_stages']) {
      const a = new Set(records(await readAll(s.emu.url, path, s.key)).map((r) => r.id));
      const b = records(await readAll(s.emu.url, path, otherKey));
      expect(b.some((r) => a.has(r.id)), path).toBe(false);
    }
    // Looking up another account's contact by id is a 404, not a leak.
    const foreign = theirs[0]?.id as string;
    expectProblem(await get(s.emu.url, `/v1/contacts/${foreign}`, { key: s.key }), 404);
    expect((await get(s.emu.url, `/v1/contacts/${foreign}`, { key: otherKey })).status).toBe(200);
    expect((await get(s.emu.url, '/v1/me', { key: otherKey })).body).toMatchObject({ account_name: 'Globex' });
  });
});
