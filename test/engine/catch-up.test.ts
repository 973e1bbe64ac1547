/**
 * A full read of a stream with a cursor, while records change: a record on a
 * page still to come that changes moves after the read's watermark, and the
 * read never returns it. The sync reads again from the watermark what changed
 * after it (reader.ts, catchUp), so the copy a full refresh or a first read
 * makes lacks nothing.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.js';
import { readStream } from '../../src/engine/reader.js';
import { runSync } from '../../src/engine/sync.js';
import type { StreamState } from '../../src/engine/state.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import type { ListQuery, RawPage } from '../../src/client/types.js';
import { FakeApi, contact, iso } from '../helpers/fake-api.js';
import { RecordingSink } from '../helpers/recording-sink.js';

const contacts = findStream('contacts') as StreamDefinition;
const LOOK_BACK_MINUTES = 5;

/** A contact as a fake list holds it: its id and its updated_at in minutes. */
type Entry = [id: string, minute: number];

/**
 * One page of a fake contacts list: the first `limit` of `keys` in `order`, and
 * when more remain, a cursor whose shape `cursorOf` gives from the page's last entry.
 */
function pageOf(keys: Entry[], limit: number, watermark: number, order: (a: Entry, b: Entry) => number, cursorOf: (last: Entry) => unknown[]): RawPage {
  const page = keys.sort(order).slice(0, limit);
  const more = keys.length > page.length;
  const last = page[page.length - 1];
  return {
    data: page.map(([id, t]) => contact(id, t)),
    has_more: more,
    next_cursor: more && last ? JSON.stringify(cursorOf(last)) : null,
    sync_watermark: iso(watermark),
  };
}

/**
 * The contacts list as the service serves it: ordered by (updated_at, id),
 * up to the read's watermark (the service's now when the read began), from
 * updated_since less the look-back; the cursor carries the read's watermark
 * and the last key served. `onRequest` runs before each page (its number from 1).
 */
class KeysetContacts extends FakeApi {
  readonly minutes = new Map<string, number>();
  now = 30;
  onRequest: (request: number) => void = () => undefined;
  #requests = 0;

  constructor(count: number) {
    super();
    for (let i = 0; i < count; i++) this.minutes.set(`c${String(i).padStart(2, '0')}`, i);
  }

  /** Change a record now: its updated_at becomes the service's now, which moves on. */
  change(id: string): void {
    this.now += 1;
    this.minutes.set(id, this.now);
  }

  override async list(path: string, query: ListQuery): Promise<RawPage> {
    this.calls.push({ path, query: { ...query } });
    this.onRequest(++this.#requests);
    let watermark = this.now;
    let since = query.updated_since === undefined ? -Infinity : (Date.parse(query.updated_since) - Date.parse(iso(0))) / 60_000 - LOOK_BACK_MINUTES;
    let after: [number, string] | undefined;
    if (query.cursor !== undefined) {
      const [w, s, t, id] = JSON.parse(query.cursor) as [number, number | null, number, string];
      [watermark, since, after] = [w, s ?? -Infinity, [t, id]];
    }
    const keys = [...this.minutes].filter(([id, t]) => t >= since && t <= watermark && (after === undefined || t > after[0] || (t === after[0] && id > after[1])));
    return pageOf(keys, query.limit, watermark, ([a, x], [b, y]) => x - y || (a < b ? -1 : 1), ([id, t]) => [watermark, Number.isFinite(since) ? since : null, t, id]);
  }
}

/**
 * The contacts list of a service that orders it by id (the API does not
 * document the order), from updated_since less the look-back, up to the read's
 * watermark; its clock moves on by `tick` minutes at every request (a long read).
 */
class ByIdContacts extends FakeApi {
  readonly minutes = new Map<string, number>();
  now: number;
  readonly #tick: number;
  onRequest: (request: number) => void = () => undefined;
  #requests = 0;

  constructor(count: number, start: number, tick: number) {
    super();
    for (let i = 0; i < count; i++) this.minutes.set(`c${String(i).padStart(2, '0')}`, i);
    this.now = start - tick;
    this.#tick = tick;
  }

  override async list(path: string, query: ListQuery): Promise<RawPage> {
    this.calls.push({ path, query: { ...query } });
    this.now += this.#tick;
    this.onRequest(++this.#requests);
    let watermark = this.now;
    let since = query.updated_since === undefined ? -Infinity : (Date.parse(query.updated_since) - Date.parse(iso(0))) / 60_000 - LOOK_BACK_MINUTES;
    let after = '';
    if (query.cursor !== undefined) [watermark, since, after] = JSON.parse(query.cursor) as [number, number, string];
    const keys = [...this.minutes].filter(([id, t]) => t >= since && t <= watermark && id > after);
    return pageOf(keys, query.limit, watermark, ([a], [b]) => (a < b ? -1 : 1), ([id]) => [watermark, Number.isFinite(since) ? since : -1e9, id]);
  }
}

/** The last version passed on of each record, by id. */
function copyOf(sink: RecordingSink): Map<string, unknown> {
  return new Map(sink.recordsOf('contacts').map((r) => [r.id as string, r.updated_at]));
}

const serviceNow = (api: KeysetContacts | ByIdContacts): Map<string, string> => new Map([...api.minutes].map(([id, t]) => [id, iso(t)]));

describe('a full read while records move past its end', () => {
  it('reads again from its watermark what changed after it: the copy holds every record', async () => {
    const api = new KeysetContacts(10);
    // While the second page is asked for, c08 (due on the last page) changes: it moves after the read's watermark.
    api.onRequest = (n) => (n === 2 ? api.change('c08') : undefined);
    const sink = new RecordingSink();
    const outcome = await readStream(contacts, { client: api, sink, pageSize: 3, startDate: undefined, state: {}, catchUp: true });

    expect(copyOf(sink)).toEqual(serviceNow(api));
    // The catch-up read passes on only what changed after the full read's watermark: no record repeats.
    expect(sink.recordsOf('contacts')).toHaveLength(10);
    expect(api.calls.map((c) => c.query.updated_since ?? (c.query.cursor === undefined ? 'start' : 'cursor'))).toEqual(['start', 'cursor', 'cursor', iso(30)]);
    // One state ends the read: the catch-up read's watermark.
    expect(sink.statesOf('contacts').filter((s) => s.resume === undefined)).toEqual([{ sync_watermark: iso(31) }]);
    expect(outcome).toEqual({ kind: 'complete', state: { sync_watermark: iso(31) } });
  });

  it('goes on while a catch-up read, too, takes more than one page, and at most 3 times', async () => {
    const api = new KeysetContacts(10);
    // At every request the record changed longest ago changes: each read sees records change, and pages more than once.
    api.onRequest = () => api.change([...api.minutes].sort(([, x], [, y]) => x - y)[0]?.[0] as string);
    const sink = new RecordingSink();
    await readStream(contacts, { client: api, sink, pageSize: 2, startDate: undefined, state: {}, catchUp: true });
    const reads = api.calls.filter((c) => c.query.cursor === undefined);
    expect(reads).toHaveLength(4);
    // What moved during the last read is the next sync's (its watermark is the state): everything else was passed on.
    const last = Date.parse(String(sink.statesOf('contacts').at(-1)?.sync_watermark));
    const behind = [...serviceNow(api)].filter(([, at]) => Date.parse(at) <= last);
    for (const [id, at] of behind) expect(copyOf(sink).get(id), id).toBe(at);
  });

  it('a catch-up read that passes nothing ends the read, however many pages the look-back fills (a first read right after a bulk load)', async () => {
    const api = new KeysetContacts(10);
    // Every record changed within the service's look-back of the read's watermark: a read from it serves six of them again.
    for (const id of api.minutes.keys()) api.minutes.set(id, 21 + Number(id.slice(1)));
    const sink = new RecordingSink();
    await readStream(contacts, { client: api, sink, pageSize: 2, startDate: undefined, state: {}, catchUp: true });
    expect(api.calls.filter((c) => c.query.cursor === undefined)).toHaveLength(2);
    expect(sink.recordsOf('contacts')).toHaveLength(10);
    expect(copyOf(sink)).toEqual(serviceNow(api));
  });

  it('passes on a change its look-back brings that the full read passed by (stamped before the watermark, made after): not lost', async () => {
    // A service that orders by id, its clock 3 minutes on at every request: the full read's watermark is 30.
    const api = new ByIdContacts(10, 30, 3);
    // While the second page is asked for, c00 (served on the first) changes in a transaction that began at minute 29:
    // stamped before the watermark, as the service's look-back of 5 minutes allows. The full read has passed it.
    api.onRequest = (n) => (n === 2 ? api.minutes.set('c00', 29) : undefined);
    const sink = new RecordingSink();
    const first = await readStream(contacts, { client: api, sink, pageSize: 3, startDate: undefined, state: {}, catchUp: true });
    expect(first.kind).toBe('complete');
    // The next sync, from the state the first one saved, as every later sync reads.
    api.onRequest = () => undefined;
    await readStream(contacts, { client: api, sink, pageSize: 3, startDate: undefined, state: first.kind === 'complete' ? first.state : {}, catchUp: false });
    expect(copyOf(sink).get('c00')).toBe(iso(29));
    expect(copyOf(sink)).toEqual(serviceNow(api));
  });

  it('past 20,000 records in the look-back of a watermark, a catch-up read passes on every record of it (it cannot tell which it brought), once', async () => {
    const api = new FakeApi();
    const records = Array.from({ length: 20_001 }, (_, i) => ({ id: `r${String(i).padStart(5, '0')}`, updated_at: api.watermark }));
    api.set('/v1/contacts', records);
    const sink = new RecordingSink();
    await readStream(contacts, { client: api, sink, pageSize: 200, startDate: undefined, state: {}, catchUp: true });
    // The full read, then one catch-up read (this service serves the same records): each record passed on twice. None of
    // the catch-up read's is stamped after the watermark, so none shows a change made during the full read: no third read.
    expect(sink.recordsOf('contacts')).toHaveLength(records.length * 2);
    expect(api.calls.filter((c) => c.query.cursor === undefined)).toHaveLength(2);
  });

  it('past 20,000 records in the look-back, a change stamped after the watermark still calls for another catch-up read', async () => {
    const api = new FakeApi();
    const records = Array.from({ length: 20_001 }, (_, i) => ({ id: `r${String(i).padStart(5, '0')}`, updated_at: api.watermark }));
    api.set('/v1/contacts', records);
    const later = '2026-03-01T00:01:00.000Z';
    let changed = false;
    // While the full read paged (seen when the catch-up read starts), r00000 changed: stamped after the full read's watermark.
    api.beforePage = (_path, query) => {
      if (changed || query.updated_since === undefined) return undefined;
      changed = true;
      records[0] = { id: 'r00000', updated_at: later };
      api.watermark = later;
      return undefined;
    };
    const sink = new RecordingSink();
    await readStream(contacts, { client: api, sink, pageSize: 200, startDate: undefined, state: {}, catchUp: true });
    // The full read, the catch-up read that brought the change, and one more that brings none stamped after its watermark.
    expect(api.calls.filter((c) => c.query.cursor === undefined)).toHaveLength(3);
    expect(copyOf(sink).get('r00000')).toBe(later);
  });

  it('a full read of one page needs no catch-up: nothing moves out of a page served at once', async () => {
    const api = new KeysetContacts(3);
    const sink = new RecordingSink();
    await readStream(contacts, { client: api, sink, pageSize: 3, startDate: undefined, state: {}, catchUp: true });
    expect(api.calls).toHaveLength(1);
  });

  it('a read continued from a saved resume cursor reads again from its watermark, however little it read: what changed since a stopped sync began it moved past its end', async () => {
    // The stopped sync read c00-c08 (watermark minute 30); meanwhile c09, due on its last page, changed.
    const state = { resume: { cursor: JSON.stringify([30, null, 8, 'c08']), sync_watermark: iso(30) } };
    for (const catchUp of [true, false]) {
      const api = new KeysetContacts(10);
      api.change('c09');
      const sink = new RecordingSink();
      await readStream(contacts, { client: api, sink, pageSize: 3, startDate: undefined, state, catchUp });
      // Its last page is empty (c09 moved past the read's end); the catch-up read brings c09. Without catchUp (a read from a
      // saved watermark continued) the next sync brings it.
      expect(api.calls.map((c) => c.query.updated_since ?? 'cursor'), String(catchUp)).toEqual(catchUp ? ['cursor', iso(30)] : ['cursor']);
      expect(copyOf(sink).get('c09'), String(catchUp)).toBe(catchUp ? iso(31) : undefined);
    }
  });

  it('a catch-up read checkpoints as part of its full read, without a complete watermark: a sync stopped in it leaves a full read, which the next continues as one', async () => {
    const api = new KeysetContacts(10);
    // While the second page is asked for, c06-c09 (due on the pages to come) change: the catch-up read brings them, two a page.
    api.onRequest = (n) => (n === 2 ? ['c06', 'c07', 'c08', 'c09'].forEach((id) => api.change(id)) : undefined);
    const sink = new RecordingSink();
    await readStream(contacts, { client: api, sink, pageSize: 2, startDate: undefined, state: {}, catchUp: true });
    const catchUp = sink.statesOf('contacts').filter((s) => s.resume?.sync_watermark === iso(34));
    expect(catchUp).toEqual([{ resume: { cursor: expect.any(String), sync_watermark: iso(34) } }]);
    // The sync stopped after that checkpoint; meanwhile c09, due on the catch-up read's last page, changed. The next sync
    // continues the catch-up read, then reads again from its watermark: c09 is passed on, as it is.
    api.onRequest = () => undefined;
    api.change('c09');
    const { config } = parseConfig({ api_key: 'dr_live_x', base_url: 'http://127.0.0.1:1', page_size: 2 });
    const next = new RecordingSink();
    const from = api.calls.length;
    const result = await runSync({ config, client: api, sink: next, streams: [{ stream: contacts, mode: 'incremental' }], states: new Map([['contacts', catchUp[0] as StreamState]]) });
    expect(result.failures).toEqual([]);
    expect(api.calls.slice(from, from + 2).map((c) => c.query.updated_since ?? 'cursor')).toEqual(['cursor', iso(34)]);
    expect(copyOf(next).get('c09')).toBe(iso(35));
  });

  it('a catch-up read whose watermark is earlier than its full read\'s (the clock went back in between) keeps that one in its checkpoints: a sync stopped in it compares them', async () => {
    const api = new KeysetContacts(10);
    // At the catch-up read's first request the clock goes back to minute 25, and c00-c03 change: stamped 26-29, within the
    // look-back of the full read's watermark (30), changed after it passed them.
    api.onRequest = (n) => {
      if (n !== 6) return;
      api.now = 25;
      for (const id of ['c00', 'c01', 'c02', 'c03']) api.change(id);
    };
    const sink = new RecordingSink();
    await readStream(contacts, { client: api, sink, pageSize: 2, startDate: undefined, state: {}, catchUp: true });
    const state = sink.statesOf('contacts').find((s) => s.resume?.sync_watermark === iso(29));
    expect(state).toEqual({ sync_watermark: iso(30), resume: { cursor: expect.any(String), sync_watermark: iso(29) } });
    // A sync stopped after that checkpoint: the next one finds the catch-up read's watermark earlier, and reads in full.
    api.onRequest = () => undefined;
    const { config } = parseConfig({ api_key: 'dr_live_x', base_url: 'http://127.0.0.1:1', page_size: 2 });
    const next = new RecordingSink();
    await runSync({ config, client: api, sink: next, streams: [{ stream: contacts, mode: 'incremental' }], states: new Map([['contacts', state as StreamState]]) });
    expect(next.logs('WARN')[0]).toContain(`sync_watermark ${iso(29)}, earlier than the saved ${iso(30)}`);
  });

  it('a catch-up read whose watermark is earlier than the one it read from ends the catch-up reads: the full read follows, which returns a change made behind the read before', async () => {
    const api = new KeysetContacts(10);
    for (const [id, t] of [['c05', 21], ['c06', 22], ['c07', 23], ['c08', 26], ['c09', 27]] as const) api.minutes.set(id, t);
    api.onRequest = (n) => {
      // Before the fourth page the clock goes back to minute 18 and c00 changes: stamped 19, behind the page the
      // read is at (c05, minute 21), and more than the look-back before the watermark of any read after it.
      if (n === 4) {
        api.now = 18;
        api.change('c00');
      }
      // The clock moves on; at the catch-up read's first request c02-c04 change (25-27): it takes two pages, passes them on.
      if (n === 6) {
        api.now = 24;
        for (const id of ['c02', 'c03', 'c04']) api.change(id);
      }
    };
    const sink = new RecordingSink();
    const outcome = await readStream(contacts, { client: api, sink, pageSize: 2, startDate: undefined, state: {}, catchUp: true });
    expect(copyOf(sink)).toEqual(serviceNow(api));
    expect(sink.logs('WARN')[0]).toContain(`sync_watermark ${iso(27)}, earlier than the saved ${iso(30)}`);
    expect(outcome).toEqual({ kind: 'complete', state: { sync_watermark: iso(27) } });
  });

  it('runSync reads so a full_refresh stream and a first read; a read from a saved watermark not (the next sync brings the change)', async () => {
    const { config } = parseConfig({ api_key: 'dr_live_x', base_url: 'http://127.0.0.1:1', page_size: 3 });
    const cases = [
      { mode: 'full_refresh', state: {}, catchUp: true },
      { mode: 'incremental', state: {}, catchUp: true },
      { mode: 'incremental', state: { sync_watermark: iso(0) }, catchUp: false },
    ] as const;
    for (const { mode, state, catchUp } of cases) {
      const api = new KeysetContacts(10);
      api.onRequest = (n) => (n === 2 ? api.change('c08') : undefined);
      const sink = new RecordingSink();
      const result = await runSync({ config, client: api, sink, streams: [{ stream: contacts, mode }], states: new Map([['contacts', state]]) });
      expect(result.failures).toEqual([]);
      expect(api.calls.filter((c) => c.query.cursor === undefined), `${mode} ${JSON.stringify(state)}`).toHaveLength(catchUp ? 2 : 1);
      if (catchUp) expect(copyOf(sink)).toEqual(serviceNow(api));
      else expect(copyOf(sink).has('c08')).toBe(false);
    }
  });
});
