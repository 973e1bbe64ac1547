/** List parameters, look-back, order, watermark and the envelope. */
import { describe, expect, it } from 'vitest';
import { withEmulatorSetup } from '../helpers/suite.js';
import { asPage, expectProblem, get, readAll, records, type Setup } from './helpers.js';

const LIMIT_DETAIL = 'limit must be an integer from 1 to 200';
const LISTS = ['/v1/contacts', '/v1/conversations', '/v1/stage_events', '/v1/deletions'] as const;
const CURSOR_FIELD: Record<string, string> = {
  '/v1/contacts': 'updated_at', '/v1/conversations': 'updated_at', '/v1/stage_events': 'created_at', '/v1/deletions': 'deleted_at',
};

let s: Setup;
withEmulatorSetup({ contacts: 400 }, (setUp) => (s = setUp));

describe('limit', () => {
  it.each(['0', '201', 'abc', '1.5', '', '-1', '1e2', ' 5', '99999999'])('limit=%j is 400 with the documented detail', async (limit) => {
    expectProblem(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit } }), 400, LIMIT_DETAIL);
  });

  it('defaults to 100 and accepts 1..200', async () => {
    expect(asPage(await get(s.emu.url, '/v1/contacts', { key: s.key })).data).toHaveLength(100);
    expect(asPage(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 1 } })).data).toHaveLength(1);
    expect(asPage(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 200 } })).data).toHaveLength(200);
  });
});

describe('query parameters', () => {
  it('refuses unknown and repeated parameters', async () => {
    expectProblem(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { page: 2 } }), 400, /unknown query parameter 'page'/);
    expectProblem(await get(s.emu.url, '/v1/contacts?limit=5&limit=6', { key: s.key }), 400, /more than once/);
    expectProblem(await get(s.emu.url, '/v1/me', { key: s.key, query: { x: 1 } }), 400, /no query parameters/);
  });

  it('accepts created_since only on stage_events and deletions', async () => {
    expectProblem(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { created_since: '2024-01-01' } }), 400, /created_since/);
    expectProblem(await get(s.emu.url, '/v1/conversations', { key: s.key, query: { created_since: '2024-01-01' } }), 400, /created_since/);
    expectProblem(await get(s.emu.url, '/v1/pipeline_stages', { key: s.key, query: { updated_since: '2024-01-01' } }), 400, /updated_since/);
    for (const path of ['/v1/stage_events', '/v1/deletions']) {
      const since = new Date(Date.now() - 30 * 86_400_000).toISOString();
      const a = records(await readAll(s.emu.url, path, s.key, { created_since: since, limit: 200 }));
      const b = records(await readAll(s.emu.url, path, s.key, { updated_since: since, limit: 200 }));
      expect(a.map((r) => r.id)).toEqual(b.map((r) => r.id));
      expect(a.length).toBeGreaterThan(0);
      expectProblem(await get(s.emu.url, path, { key: s.key, query: { created_since: '2024-01-01', updated_since: '2024-02-01' } }), 400, /synonyms/);
    }
  });

  it.each([
    'yesterday', '2024-13-01', '2024-02-30', '2024-05-01T12:00Z', '2024-05-01T12:00:00', '1714567890', '2024-05-01T25:00:00Z',
    '2024-05-01 12:00:00Z', '', '2100-02-29', '2023-04-31T00:00:00Z', '0000-01-01', '2024-05-01T23:60:00Z',
  ])('updated_since=%j is 400', async (value) => {
    expectProblem(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { updated_since: value } }), 400, /updated_since must be/);
  });

  it('explains an unencoded + in the zone offset', async () => {
    expectProblem(await get(s.emu.url, '/v1/contacts?updated_since=2024-05-01T12:00:00+02:00', { key: s.key }), 400, /%2B/);
  });

  it.each(['2024-05-01T12:00:00Z', '2024-05-01T12:00:00.123456Z', '2024-05-01T12:00:00+02:00', '2024-05-01T12:00:00-03:30', '2024-05-01', '2024-02-29', '2000-02-29', '0001-01-01T00:00:00Z'])(
    'updated_since=%j is accepted', async (value) => {
      expect((await get(s.emu.url, '/v1/contacts', { key: s.key, query: { updated_since: value, limit: 1 } })).status).toBe(200);
    },
  );
});

describe('order, envelope and watermark', () => {
  it.each(LISTS)('%s: keyset order by (cursor field, id), no duplicates, same as the dump', async (path) => {
    const field = CURSOR_FIELD[path] as string;
    const pages = await readAll(s.emu.url, path, s.key, { limit: 7 });
    const all = records(pages);
    const keys = all.map((r) => [Date.parse(r[field] as string), r.id as string] as const);
    for (let i = 1; i < keys.length; i++) {
      const [t0, id0] = keys[i - 1] as readonly [number, string];
      const [t1, id1] = keys[i] as readonly [number, string];
      expect(t0 < t1 || (t0 === t1 && id0 < id1), `${path} #${i}`).toBe(true);
    }
    const watermark = pages[0]?.sync_watermark as string;
    for (const p of pages) expect(p.sync_watermark).toBe(watermark);
    for (const r of all) expect(Date.parse(r[field] as string)).toBeLessThanOrEqual(Date.parse(watermark));
    for (const p of pages.slice(0, -1)) {
      expect(p.has_more).toBe(true);
      expect(p.data).toHaveLength(7);
    }
    const dump = s.emu.control.dump(s.accountId);
    const name = path.slice(4) as keyof typeof dump;
    expect(new Set(all.map((r) => r.id)).size).toBe(all.length);
    expect([...all].sort((a, b) => ((a.id as string) < (b.id as string) ? -1 : 1))).toEqual(dump[name]);
  });

  it('an empty list still has all four envelope fields', async () => {
    const page = asPage(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { updated_since: '2999-01-01' } }));
    expect(page.data).toEqual([]);
    expect(page.has_more).toBe(false);
    expect(page.next_cursor).toBeNull();
    expect(page.sync_watermark).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('pipeline_stages is an envelope of stages with key, name, pipeline_id, position and outcome', async () => {
    const stages = records(await readAll(s.emu.url, '/v1/pipeline_stages', s.key, { limit: 5 }));
    expect(stages.length).toBe(12);
    for (const st of stages) {
      expect(Object.keys(st)).toEqual(['id', 'key', 'name', 'pipeline_id', 'position', 'outcome']);
      expect([null, 'won', 'lost']).toContain(st.outcome);
    }
    const pipelines = new Set(stages.map((st) => st.pipeline_id));
    expect(pipelines.size).toBe(2);
    for (const p of pipelines) {
      const own = stages.filter((st) => st.pipeline_id === p);
      expect(own.map((st) => st.position)).toEqual(own.map((_, i) => i));
      expect(own.filter((st) => st.outcome === 'won')).toHaveLength(1);
      expect(own.filter((st) => st.outcome === 'lost')).toHaveLength(1);
    }
  });
});

describe('single contact, unknown paths and methods', () => {
  it('GET /v1/contacts/{id} returns the record as the list does, unwrapped', async () => {
    const first = asPage(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 1 } })).data[0] as Record<string, unknown>;
    const one = await get(s.emu.url, `/v1/contacts/${first.id as string}`, { key: s.key });
    expect(one.status).toBe(200);
    expect(one.body).toEqual(first);
    expectProblem(await get(s.emu.url, '/v1/contacts/00000000-0000-4000-8000-000000000000', { key: s.key }), 404, /no contact/);
    expectProblem(await get(s.emu.url, `/v1/contacts/${first.id as string}`, { key: s.key, query: { limit: 1 } }), 400);
  });

  it('unknown paths are 404 problem+json, with or without a key', async () => {
    expectProblem(await get(s.emu.url, '/v1/widgets', { key: s.key }), 404, /no such path/);
    expectProblem(await get(s.emu.url, '/v1/contacts/', { key: s.key }), 404);
    expectProblem(await get(s.emu.url, '/v2/contacts'), 404);
    expectProblem(await get(s.emu.url, '/'), 404);
  });

  it('methods other than GET are 405 problem+json', async () => {
    const { request } = await import('undici');
    const res = await request(`${s.emu.url}/v1/contacts`, { method: 'POST', headers: { authorization: `Bearer ${s.key}` }, body: '{}' });
    const text = await res.body.text();
    expect(res.statusCode).toBe(405);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.headers.allow).toBe('GET');
    expect(JSON.parse(text)).toMatchObject({ type: 'about:blank', title: 'Method not allowed', status: 405 });
  });
});
