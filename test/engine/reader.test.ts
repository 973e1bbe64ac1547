import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/client/api-error.js';
import { ConnectorError } from '../../src/errors.js';
import { parseExactJson } from '../../src/exact-json.js';
import { readStream } from '../../src/engine/reader.js';
import type { StreamState } from '../../src/engine/state.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import type { ListQuery, RawPage } from '../../src/client/types.js';
import { FakeApi, makeRecords, type Rec } from '../helpers/fake-api.js';
import { EMPTY_PAGES_LIMIT } from '../../src/engine/paginator.js';
import { RecordingSink } from '../helpers/recording-sink.js';
import type { SyncSink } from '../../src/engine/sync-sink.js';

const contacts = findStream('contacts') as StreamDefinition;
const pipelineStages = findStream('pipeline_stages') as StreamDefinition;
const W1 = '2026-03-01T10:00:00.000Z';
const W0 = '2026-02-01T10:00:00.000Z';

/** The contacts list of `records`; `intercept` may replace or fail the page of a call (from 1). */
function contactsApi(options: { records: Rec[]; watermark: string; intercept?: (call: number, query: ListQuery) => RawPage | undefined }): FakeApi {
  const api = new FakeApi({ [contacts.path]: options.records }, options.watermark);
  const intercept = options.intercept;
  if (intercept) api.beforePage = (_path, query, call) => intercept(call, query);
  return api;
}

async function read(api: FakeApi, state: StreamState = {}, startDate?: string, stream = contacts) {
  const sink = new RecordingSink();
  const outcome = await readStream(stream, { client: api, sink, pageSize: 200, startDate, state });
  return { sink, outcome };
}

describe('readStream', () => {
  it('reads a 3-page stream with 3 requests, checkpointing by resume cursor and saving the watermark only at the end', async () => {
    const api = contactsApi({ records: makeRecords(450), watermark: W1 });
    const { sink, outcome } = await read(api, {}, '2025-01-01');
    expect(api.calls.map((c) => c.query)).toEqual([
      { updated_since: '2025-01-01', limit: 200 },
      { cursor: 'c200', limit: 200 },
      { cursor: 'c400', limit: 200 },
    ]);
    expect(sink.recordsOf('contacts')).toHaveLength(450);
    expect(sink.statesOf('contacts')).toEqual([
      { resume: { cursor: 'c200', sync_watermark: W1 } },
      { resume: { cursor: 'c400', sync_watermark: W1 } },
      { sync_watermark: W1 },
    ]);
    expect(outcome).toEqual({ kind: 'complete', state: { sync_watermark: W1 } });
  });

  it("asks for the next page before the sink gets this one, however many steps the client takes to send it", async () => {
    const api = contactsApi({ records: makeRecords(450), watermark: W1 });
    const sent: string[] = [];
    const list = api.list.bind(api);
    // A client that, like the real one, passes a gate, the pacer and a pool before its request leaves.
    api.list = async (path, query) => {
      for (let step = 0; step < 25; step++) await null;
      sent.push(query.cursor ?? 'first');
      return list(path, query);
    };
    const sink = new RecordingSink();
    const seen: string[][] = [];
    const records = sink.records.bind(sink);
    sink.records = (s, page) => {
      seen.push([...sent]);
      records(s, page);
    };
    await readStream(contacts, { client: api, sink, pageSize: 200, startDate: undefined, state: {} });
    expect(seen).toEqual([['first', 'c200'], ['first', 'c200', 'c400'], ['first', 'c200', 'c400']]);
  });

  it('sends the saved watermark as updated_since and ignores start_date when a state exists', async () => {
    const api = contactsApi({ records: makeRecords(3), watermark: W1 });
    await read(api, { sync_watermark: W0 }, '2020-01-01');
    expect(api.calls[0]?.query).toEqual({ updated_since: W0, limit: 200 });
  });

  it('reads the full history when there is neither state nor start_date (no updated_since sent)', async () => {
    const api = contactsApi({ records: makeRecords(1), watermark: W1 });
    await read(api);
    expect(api.calls[0]?.query).toEqual({ updated_since: undefined, limit: 200 });
  });

  it('keeps the complete watermark in mid-read checkpoints', async () => {
    const api = contactsApi({ records: makeRecords(250), watermark: W1 });
    const { sink } = await read(api, { sync_watermark: W0 });
    expect(sink.statesOf('contacts')).toEqual([
      { sync_watermark: W0, resume: { cursor: 'c200', sync_watermark: W1 } },
      { sync_watermark: W1 },
    ]);
  });

  it('continues from a resume cursor and ends with the watermark of the resumed read', async () => {
    const api = contactsApi({ records: makeRecords(450), watermark: W1 });
    const { sink } = await read(api, { sync_watermark: W0, resume: { cursor: 'c200', sync_watermark: W1 } });
    expect(api.calls[0]?.query).toEqual({ cursor: 'c200', limit: 200 });
    expect(sink.recordsOf('contacts')).toHaveLength(250);
    expect(sink.statesOf('contacts').at(-1)).toEqual({ sync_watermark: W1 });
  });

  it('restarts from the last complete watermark when the service rejects the resume cursor', async () => {
    const api = contactsApi({ records: makeRecords(10), watermark: W1 });
    const { sink } = await read(api, { sync_watermark: W0, resume: { cursor: 'stale-cursor', sync_watermark: W1 } });
    expect(api.calls.map((c) => c.query)).toEqual([
      { cursor: 'stale-cursor', limit: 200 },
      { updated_since: W0, limit: 200 },
    ]);
    expect(sink.recordsOf('contacts')).toHaveLength(10);
    expect(sink.logs('WARN').join('\n')).toMatch(/rejected the saved resume cursor.*restarting the read from the last complete watermark/);
    expect(sink.statesOf('contacts').at(-1)).toEqual({ sync_watermark: W1 });
  });

  it('continues from a resume cursor whose saved watermark is the same instant written in another form', async () => {
    const api = contactsApi({ records: makeRecords(450), watermark: W1 });
    const { sink } = await read(api, { sync_watermark: W0, resume: { cursor: 'c200', sync_watermark: '2026-03-01T12:00:00+02:00' } });
    expect(api.calls.map((c) => c.query)).toEqual([{ cursor: 'c200', limit: 200 }, { cursor: 'c400', limit: 200 }]);
    expect(sink.recordsOf('contacts')).toHaveLength(250);
    expect(sink.logs('WARN')).toEqual([]);
    expect(sink.statesOf('contacts').at(-1)).toEqual({ sync_watermark: W1 });
  });

  it('restarts from the last complete watermark when the resumed read reports another watermark than the state saved', async () => {
    const api = contactsApi({ records: makeRecords(10), watermark: W1 });
    const edited = '2026-02-20T10:00:00.000Z';
    const { sink, outcome } = await read(api, { sync_watermark: W0, resume: { cursor: 'c200', sync_watermark: edited } });
    expect(api.calls.map((c) => c.query)).toEqual([
      { cursor: 'c200', limit: 200 },
      { updated_since: W0, limit: 200 },
    ]);
    expect(sink.recordsOf('contacts')).toHaveLength(10);
    expect(sink.logs('WARN').join('\n')).toContain(
      `contacts: the saved resume cursor is not the read its state names (the state saved it with sync_watermark ${edited}, the service's read reports ${W1}); restarting the read from the last complete watermark ${W0}.`,
    );
    expect(outcome).toEqual({ kind: 'complete', state: { sync_watermark: W1 } });
  });

  it('a complete read with an earlier watermark (a clock gone back, a state edited by hand) is followed by a full read in the same sync, whose watermark is saved', async () => {
    const api = contactsApi({ records: makeRecords(3), watermark: W0 });
    const restarted: string[] = [];
    const sink: RecordingSink & SyncSink = Object.assign(new RecordingSink(), {
      rereadInFull: (s: StreamDefinition) => void restarted.push(`${s.name} after ${sink.events.length} events`),
    });
    const seen: [string, boolean][] = [];
    const outcome = await readStream(contacts, {
      client: api, sink, pageSize: 200, startDate: '2020-01-01T00:00:00.000Z', state: { sync_watermark: W1 },
      onWatermark: (watermark, resumed) => void seen.push([watermark, resumed]),
    });
    // From the saved watermark, then in full from start_date.
    expect(api.calls.map((c) => c.query)).toEqual([
      { updated_since: W1, limit: 200 },
      { updated_since: '2020-01-01T00:00:00.000Z', limit: 200 },
    ]);
    expect(sink.recordsOf('contacts')).toHaveLength(6);
    // The earlier watermark is not saved by the read from the saved one; the full read's is.
    expect(sink.statesOf('contacts')).toEqual([{ sync_watermark: W0 }]);
    expect(outcome).toEqual({ kind: 'complete', state: { sync_watermark: W0 } });
    expect(sink.logs('WARN')).toEqual([
      `contacts: the service reported sync_watermark ${W0}, earlier than the saved ${W1}: ` +
        "its clock went back (a failover or a clock correction), or the state was edited or copied by hand with a watermark ahead of the service's. " +
        'Records stamped in between may lie behind both, so the stream is read again in full in this sync (from start_date 2020-01-01T00:00:00.000Z); ' +
        'records may repeat, none are missed.',
    ]);
    // The sink hears of the new read (a replica's full-read marks) after the WARN; the stream runs once, its watermark is told once.
    expect(restarted).toEqual(['contacts after 3 events']);
    expect(sink.events.filter((e) => e.kind === 'running')).toHaveLength(1);
    expect(seen).toEqual([[W0, false]]);
    // Without start_date the full read takes the whole history.
    const whole = contactsApi({ records: makeRecords(1), watermark: W0 });
    const again = await read(whole, { sync_watermark: W1 });
    expect(whole.calls.map((c) => c.query)).toEqual([{ updated_since: W1, limit: 200 }, { updated_since: undefined, limit: 200 }]);
    expect(again.sink.logs('WARN')[0]).toContain('read again in full in this sync (its whole history)');
    // A later or equal one says nothing, and reads once.
    const later = contactsApi({ records: makeRecords(1), watermark: W1 });
    const same = await read(later, { sync_watermark: W1 });
    expect(same.sink.logs('WARN')).toEqual([]);
    expect(later.calls).toHaveLength(1);
  });

  it('the full read after an earlier watermark checkpoints with its resume cursor alone: a run stopped in it resumes it, or starts it over, never from a watermark', async () => {
    const api = contactsApi({ records: makeRecords(450), watermark: W0 });
    const { sink, outcome } = await read(api, { sync_watermark: W1 });
    expect(sink.statesOf('contacts')).toEqual([
      { sync_watermark: W1, resume: { cursor: 'c200', sync_watermark: W0 } },
      { sync_watermark: W1, resume: { cursor: 'c400', sync_watermark: W0 } },
      { resume: { cursor: 'c200', sync_watermark: W0 } },
      { resume: { cursor: 'c400', sync_watermark: W0 } },
      { sync_watermark: W0 },
    ]);
    expect(sink.recordsOf('contacts')).toHaveLength(900);
    expect(outcome).toEqual({ kind: 'complete', state: { sync_watermark: W0 } });
    expect(sink.logs('WARN')).toHaveLength(1);
  });

  it('a resumed read that ends earlier than the saved complete watermark is followed by a full read too, with its catch-up read', async () => {
    const api = contactsApi({ records: makeRecords(450), watermark: W0 });
    const { sink } = await read(api, { sync_watermark: W1, resume: { cursor: 'c200', sync_watermark: W0 } });
    expect(api.calls.map((c) => c.query)).toEqual([
      { cursor: 'c200', limit: 200 },
      { cursor: 'c400', limit: 200 },
      { updated_since: undefined, limit: 200 },
      { cursor: 'c200', limit: 200 },
      { cursor: 'c400', limit: 200 },
      // The full read paged: it reads again from its watermark what moved past its end meanwhile (nothing here).
      { updated_since: W0, limit: 200 },
      { cursor: 'c200', limit: 200 },
      { cursor: 'c400', limit: 200 },
    ]);
    expect(sink.statesOf('contacts').at(-1)).toEqual({ sync_watermark: W0 });
    expect(sink.logs('WARN').join('\n')).toContain(`earlier than the saved ${W1}`);
  });

  it('a catch-up read of that full read whose watermark is earlier still saves it with a WARN, and starts no second full read', async () => {
    const api = contactsApi({ records: makeRecords(450), watermark: W0 });
    const earlier = '2026-01-15T10:00:00.000Z';
    api.beforePage = (_path, query) => void (query.updated_since === W0 ? (api.watermark = earlier) : undefined);
    const { sink, outcome } = await read(api, { sync_watermark: W1 });
    expect(api.calls.map((c) => c.query.cursor ?? c.query.updated_since ?? 'start')).toEqual([W1, 'c200', 'c400', 'start', 'c200', 'c400', W0, 'c200', 'c400']);
    expect(outcome).toEqual({ kind: 'complete', state: { sync_watermark: earlier } });
    expect(sink.logs('WARN')).toHaveLength(2);
    expect(sink.logs('WARN')[1]).toBe(
      `contacts: the service reported sync_watermark ${earlier}, earlier than ${W0} it read from after the stream's full read: ` +
        'its clock went back again. That watermark is saved; the stream is not read in full a second time in this sync.',
    );
  });

  it('sends no updated_since to a stream without a time filter (pipeline_stages), start_date or not', async () => {
    const api = new FakeApi({ [pipelineStages.path]: makeRecords(3) }, W1);
    await read(api, {}, '2025-01-01', pipelineStages);
    expect(api.calls[0]?.query).toEqual({ updated_since: undefined, limit: 200 });
  });

  it.each([
    ['a watermark that changes within a read', 2, { data: [{ id: 'x' }], has_more: false, next_cursor: null, sync_watermark: '2026-03-01T10:00:05.000Z' }, /changed sync_watermark within one read/],
    ['has_more true with a null cursor', 1, { data: [{ id: 'x' }], has_more: true, next_cursor: null, sync_watermark: W1 }, /has_more: true without a next_cursor/],
    ['has_more false with a next_cursor', 1, { data: [{ id: 'x' }], has_more: false, next_cursor: 'c200', sync_watermark: W1 }, /has_more: false with a next_cursor/],
    ['a cursor that repeats', 2, { data: [{ id: 'x' }], has_more: true, next_cursor: 'c200', sync_watermark: W1 }, /already returned in this read/],
    ['a record without id', 1, { data: [{ name: 'no id' }], has_more: false, next_cursor: null, sync_watermark: W1 }, /without "id" at data\[0\]/],
    ['a record whose id is a number', 1, { data: [{ id: 'x' }, { id: 12345 }], has_more: false, next_cursor: null, sync_watermark: W1 }, /a record whose "id" is a number, not a string, at data\[1\]/],
    ['a record whose id is a number past 2^53', 1, { data: [parseExactJson('{"id":9007199254740993}')], has_more: false, next_cursor: null, sync_watermark: W1 }, /a record whose "id" is a number, not a string, at data\[0\]/],
    ['a record whose id is null', 1, { data: [{ id: null }], has_more: false, next_cursor: null, sync_watermark: W1 }, /a record whose "id" is null, not a string, at data\[0\]/],
    ['a record whose id is empty', 1, { data: [{ id: '' }], has_more: false, next_cursor: null, sync_watermark: W1 }, /a record whose "id" is an empty string at data\[0\]/],
  ])('stops with a system_error on %s, without a state past unread data', async (_name, call, page, message) => {
    const api = contactsApi({ records: makeRecords(450), watermark: W1, intercept: (n) => (n === call ? page : undefined) });
    const sink = new RecordingSink();
    const error = await readStream(contacts, { client: api, sink, pageSize: 200, startDate: undefined, state: { sync_watermark: W0 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectorError);
    expect((error as ConnectorError).failureType).toBe('system_error');
    expect((error as ConnectorError).message).toMatch(message);
    for (const state of sink.statesOf('contacts')) expect(state.sync_watermark).toBe(W0);
  });

  describe('a service that hands out new cursors but makes no progress', () => {
    /** A read whose every page is `serve(call)`; a read still going after `cap` pages is stopped (an endless loop). */
    async function stalled(serve: (call: number) => RawPage, cap = 50) {
      const api = contactsApi({ records: makeRecords(5), watermark: W1, intercept: (n) => {
        if (n > cap) throw new Error(`still reading after ${cap} pages: an endless loop`);
        return serve(n);
      } });
      const sink = new RecordingSink();
      const error = await readStream(contacts, { client: api, sink, pageSize: 3, startDate: undefined, state: { sync_watermark: W0 } }).catch((e: unknown) => e);
      return { error, sink, calls: api.calls.length };
    }
    const full = (data: Rec[], call: number): RawPage => ({ data, has_more: true, next_cursor: `fresh-${call}`, sync_watermark: W1 });

    it.each([
      ['the same page every time', (call: number) => full(makeRecords(3), call), 3],
      ['pages that cycle A, B, A, B', (call: number) => full(call % 2 === 1 ? makeRecords(3) : makeRecords(6).slice(3), call), 4],
    ])('%s: a system_error naming the loop, no state past unread data', async (_name, serve, stopsAt) => {
      const { error, sink, calls } = await stalled(serve);
      expect(error).toBeInstanceOf(ConnectorError);
      expect((error as ConnectorError).failureType).toBe('system_error');
      expect((error as ConnectorError).message).toMatch(/returned the records of an earlier page of this read again, under a new next_cursor, twice in a row \(a loop\)/);
      expect(calls).toBeLessThanOrEqual(stopsAt + 1); // the next page is asked for while one is checked
      for (const state of sink.statesOf('contacts')) expect(state.sync_watermark).toBe(W0);
    });

    it(`empty pages with has_more true: a system_error after ${EMPTY_PAGES_LIMIT} in a row`, async () => {
      const { error, calls } = await stalled((call) => full([], call), EMPTY_PAGES_LIMIT + 10);
      expect((error as ConnectorError).failureType).toBe('system_error');
      expect((error as ConnectorError).message).toMatch(new RegExp(`answered ${EMPTY_PAGES_LIMIT} pages in a row without records and with has_more: true`));
      expect(calls).toBeLessThanOrEqual(EMPTY_PAGES_LIMIT + 1);
    });

    it('not a loop: a record that changed during the read comes back (its updated_at moved), one page repeats once, empty pages between records', async () => {
      const a = makeRecords(3);
      const pages: Rec[][] = [a, [], [], makeRecords(6).slice(3), a, [{ ...a[0], updated_at: '2026-02-01T00:00:00.000Z' }], a, makeRecords(9).slice(6)];
      const { error, sink } = await stalled((call) => ({ ...full(pages[call - 1] ?? [], call), ...(call === pages.length ? { has_more: false, next_cursor: null } : {}) }));
      expect(error).toEqual({ kind: 'complete', state: { sync_watermark: W1 } });
      expect(sink.recordsOf('contacts')).toHaveLength(16);
    });
  });

  it('skips an optional stream the service does not offer (404) with a warning', async () => {
    const api = new FakeApi({}, W1); // no list at /v1/pipeline_stages: 404
    const { sink, outcome } = await read(api, {}, undefined, pipelineStages);
    expect(outcome).toEqual({ kind: 'skipped' });
    expect(sink.logs('WARN')[0]).toMatch(/does not offer \/v1\/pipeline_stages \(404\); stream skipped/);
  });

  it('loses no record when a read dies after page k of n and resumes from the last emitted state', async () => {
    const records = makeRecords(1000); // 5 pages of 200
    const all = new Set(records.map((r) => r.id));
    for (let k = 1; k <= 5; k++) {
      const failing = contactsApi({
        records,
        watermark: W1,
        intercept: (n) => {
          if (n === k + 1) throw new ApiError('retries_exhausted', 'transient_error', 'connection reset');
          return undefined;
        },
      });
      const first = new RecordingSink();
      await readStream(contacts, { client: failing, sink: first, pageSize: 200, startDate: undefined, state: {} }).catch(() => undefined);
      const lastState = first.statesOf('contacts').at(-1) ?? {};
      const resumed = await read(contactsApi({ records, watermark: W1 }), lastState);
      const seen = new Set([...first.recordsOf('contacts'), ...resumed.sink.recordsOf('contacts')].map((r) => r.id));
      expect(seen, `killed after page ${k}`).toEqual(all);
      expect(resumed.outcome).toEqual({ kind: 'complete', state: { sync_watermark: W1 } });
    }
  });
});
