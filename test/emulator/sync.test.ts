/** Incremental reads on a virtual clock: look-back, dates, mid-read changes, watermarks. */
import { afterEach, describe, expect, it } from 'vitest';
import type { Emulator } from '../../packages/emulator/src/index.js';
import { asPage, get, readAll, records, setup } from './helpers.js';

const MIN = 60_000;
let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

describe('time filter', () => {
  it('reaches back 5 minutes and reads YYYY-MM-DD as midnight UTC', async () => {
    const s = await setup({ frozenClock: true, clockStart: '2025-03-10T23:50:00.000Z' });
    emu = s.emu;
    const ctl = s.emu.control;
    const a = ctl.mutate(s.accountId, { op: 'create_contacts', count: 1, withConversation: false }).ids[0];
    ctl.advanceClock(6 * MIN); // 23:56
    const b = ctl.mutate(s.accountId, { op: 'create_contacts', count: 1, withConversation: false }).ids[0];
    ctl.advanceClock(14 * MIN); // 00:10 next day
    const c = ctl.mutate(s.accountId, { op: 'create_contacts', count: 1, withConversation: false }).ids[0];
    const ids = async (since: string): Promise<unknown[]> =>
      records(await readAll(s.emu.url, '/v1/contacts', s.key, { updated_since: since })).map((r) => r.id);

    expect(await ids('2025-03-11')).toEqual([b, c]); // from 23:55:00 on
    expect(await ids('2025-03-11T00:05:00.000Z')).toEqual([c]); // from 00:00:00
    expect(await ids('2025-03-10T23:55:00Z')).toEqual([a, b, c]); // 23:50:00 is exactly 5 minutes back: included
    expect(await ids('2025-03-10T23:55:00.001Z')).toEqual([b, c]);
    expect(await ids('2025-03-11T00:00:00+01:00')).toEqual([a, b, c]); // 23:00Z
    expect(await ids('2025-03-11T00:15:01Z')).toEqual([]);
    const created = ctl.dump(s.accountId).contacts.find((r) => r.id === a);
    expect(created?.updated_at).toBe('2025-03-10T23:50:00.000Z');
  });

  it('the watermark is the virtual now of the first page, and the next read starts from it', async () => {
    const s = await setup({ frozenClock: true, clockStart: '2025-01-01T00:00:00.000Z', contacts: 50 });
    emu = s.emu;
    const first = await readAll(s.emu.url, '/v1/contacts', s.key, { limit: 20 });
    expect(first[0]?.sync_watermark).toBe('2025-01-01T00:00:00.000Z');
    s.emu.control.advanceClock(60 * MIN);
    const changed = s.emu.control.mutate(s.accountId, { op: 'update_contacts', count: 3 });
    expect(changed.from).toBe('2025-01-01T01:00:00.000Z');
    expect(changed.to).toBe('2025-01-01T01:00:00.002Z');
    const next = records(await readAll(s.emu.url, '/v1/contacts', s.key, { updated_since: first[0]?.sync_watermark as string }));
    expect(next.map((r) => r.id).sort()).toEqual([...changed.ids].sort());
  });
});

describe('a read in progress', () => {
  it('keeps its watermark; records changed after it drop out and show up in the next read', async () => {
    const s = await setup({ contacts: 120 });
    emu = s.emu;
    const ctl = s.emu.control;
    const all = ctl.dump(s.accountId).contacts;
    let served: Record<string, unknown>[] = [];
    let changed: string[] = [];
    let created: string[] = [];
    const pages = await readAll(s.emu.url, '/v1/contacts', s.key, { limit: 10 }, (page, n) => {
      if (n !== 1) return;
      served = page.data;
      const servedIds = new Set(served.map((r) => r.id));
      // One contact already served and two not yet served change; one contact is new.
      const notYet = all.filter((r) => !servedIds.has(r.id)).slice(-2).map((r) => r.id);
      changed = [served[3]?.id as string, ...notYet];
      ctl.mutate(s.accountId, { op: 'update_contacts', ids: changed });
      created = ctl.mutate(s.accountId, { op: 'create_contacts', count: 1 }).ids;
    });
    const watermark = pages[0]?.sync_watermark as string;
    const got = records(pages);
    for (const p of pages) expect(p.sync_watermark).toBe(watermark);
    for (const r of got) expect(Date.parse(r.updated_at as string)).toBeLessThanOrEqual(Date.parse(watermark));
    const gotIds = new Set(got.map((r) => r.id));
    expect(gotIds.has(changed[1])).toBe(false);
    expect(gotIds.has(changed[2])).toBe(false);
    expect(gotIds.has(created[0])).toBe(false);
    expect(got).toHaveLength(all.length - 2);

    const next = records(await readAll(s.emu.url, '/v1/contacts', s.key, { updated_since: watermark }));
    const nextIds = new Set(next.map((r) => r.id));
    for (const id of [...changed, ...created]) expect(nextIds.has(id), id).toBe(true);
    for (const r of next) expect(Date.parse(r.updated_at as string)).toBeGreaterThan(Date.parse(watermark));
  });

  it('consecutive mutations get strictly increasing timestamps, and the clock never goes back', async () => {
    const s = await setup({ contacts: 20 });
    emu = s.emu;
    const ctl = s.emu.control;
    const before = Date.parse(ctl.now());
    const r1 = ctl.mutate(s.accountId, { op: 'update_contacts', count: 5 });
    const dump = ctl.dump(s.accountId);
    const r2 = ctl.mutate(s.accountId, { op: 'update_conversations', count: 5 });
    const stamps = r1.ids.map((id) => dump.contacts.find((c) => c.id === id)?.updated_at as string).map(Date.parse);
    for (let i = 1; i < stamps.length; i++) expect(stamps[i]).toBeGreaterThan(stamps[i - 1] as number);
    expect(Date.parse(r2.from as string)).toBeGreaterThan(Date.parse(r1.to as string));
    expect(stamps[0]).toBeGreaterThanOrEqual(before);
    expect(() => ctl.advanceClock(-1)).toThrow(/never goes back/);
    const t = Date.parse(ctl.now());
    expect(Date.parse(ctl.advanceClock(3_600_000))).toBeGreaterThanOrEqual(t + 3_600_000);
    const page = asPage(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 1 } }));
    expect(Date.parse(page.sync_watermark)).toBeGreaterThanOrEqual(t + 3_600_000);
  });
});

describe('a clock that goes back, and numbers served as written', () => {
  it('rewindClock: watermarks and change stamps follow the earlier time until advanceClock puts it right', async () => {
    const s = await setup({ frozenClock: true, clockStart: '2025-01-01T12:00:00.000Z', contacts: 5 });
    emu = s.emu;
    const ctl = s.emu.control;
    const first = await readAll(s.emu.url, '/v1/contacts', s.key, {});
    expect(first[0]?.sync_watermark).toBe('2025-01-01T12:00:00.000Z');
    expect(ctl.rewindClock(120 * MIN)).toBe('2025-01-01T10:00:00.000Z');
    const changed = ctl.mutate(s.accountId, { op: 'create_contacts', count: 2, withConversation: false });
    expect(changed.from).toBe('2025-01-01T10:00:00.000Z');
    expect(changed.to).toBe('2025-01-01T10:00:00.001Z');
    const during = await readAll(s.emu.url, '/v1/contacts', s.key, { updated_since: '2025-01-01T12:00:00.000Z' });
    expect(during[0]?.sync_watermark).toBe('2025-01-01T10:00:00.001Z');
    expect(records(during)).toEqual([]);
    ctl.advanceClock(121 * MIN);
    const after = records(await readAll(s.emu.url, '/v1/contacts', s.key, { updated_since: during[0]?.sync_watermark as string }));
    expect(after.map((r) => r.id).sort()).toEqual([...changed.ids].sort());
    // Over HTTP too.
    const res = await fetch(`${s.emu.controlUrl}/clock/rewind`, { method: 'POST', headers: { authorization: `Bearer ${s.emu.controlToken}` }, body: '{"ms":60000}' });
    expect(await res.json()).toEqual({ now: '2025-01-01T12:00:00.001Z' }); // 10:00:00.001 + 121 min − 1 min
  });

  it('setJson serves numbers digit for digit (known and unknown fields); ±hhmm offsets work, year 0000 is 400', async () => {
    const s = await setup({ frozenClock: true, clockStart: '2025-01-01T12:00:00.000Z', contacts: 3 });
    emu = s.emu;
    const ctl = s.emu.control;
    const id = ctl.dump(s.accountId).contacts[0]?.id as string;
    ctl.mutate(s.accountId, { op: 'update_contacts', ids: [id], setJson: { qualification_score: '9007199254740993', x_price: '1.50', x_obj: '{"n":[1e3,-0]}' } });
    const page = await (await fetch(`${s.emu.url}/v1/contacts?updated_since=2025-01-01T12:00:00%2B0000`, { headers: { authorization: `Bearer ${s.key}` } })).text();
    expect(page).toContain('"qualification_score":9007199254740993');
    expect(page).toContain('"x_price":1.50,"x_obj":{"n":[1e3,-0]}');
    expect(ctl.dumpJson(s.accountId)).toContain('"qualification_score":9007199254740993');
    expect(JSON.stringify(ctl.dump(s.accountId).contacts.find((c) => c.id === id))).toContain('"qualification_score":9007199254740993');
    for (const since of ['0000-01-01T00:00:00Z', '2025-02-30T00:00:00Z', '2025-13-01']) {
      expect((await get(s.emu.url, '/v1/contacts', { key: s.key, query: { updated_since: since } })).status, since).toBe(400);
    }
    expect(() => ctl.mutate(s.accountId, { op: 'update_contacts', ids: [id], setJson: { x: '{nope' } })).toThrow(/setJson.x must be JSON text/);
  });
});
