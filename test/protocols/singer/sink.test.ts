import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { captureStderr } from '../../helpers/stderr.js';
import { ApiError } from '../../../src/client/api-error.js';
import { ContractError, toConnectorError } from '../../../src/errors.js';
import type { DataReadApi } from '../../../src/client/types.js';
import { parseConfig } from '../../../src/config/config.js';
import { runSync } from '../../../src/engine/sync.js';
import type { StreamState } from '../../../src/engine/state.js';
import { planAll, planFromCatalog, type StreamPlan } from '../../../src/protocols/singer/selection.js';
import { SingerSink } from '../../../src/protocols/singer/sink.js';
import { discoverCatalog } from '../../../src/protocols/singer/catalog.js';
import { LineWriter, StderrLogger } from '../../../src/runtime/output.js';
import { SINGER_DELETED_AT } from '../../../src/protocols/singer/protocol.js';
import { parseLines, protocolCheck } from '../../helpers/cli.js';
import { FakeApi } from '../../helpers/fake-api.js';

const W = '2026-03-01T10:00:00.000Z';
const W0 = '2026-02-01T10:00:00.000Z';

/** Serves fixed records per path; `failAt` makes a path fail (retries exhausted) at that offset. */
function pathsApi(data: Record<string, Record<string, unknown>[]>, failAt: Record<string, number> = {}): FakeApi {
  const api = new FakeApi({ '/v1/contacts': [], '/v1/conversations': [], '/v1/stage_events': [], '/v1/deletions': [], '/v1/pipeline_stages': [], ...data }, W);
  api.beforePage = (path, query) => {
    if (failAt[path] === (query.cursor ? Number(query.cursor.slice(1)) : 0)) {
      throw new ApiError('retries_exhausted', 'transient_error', `${path}: the service kept answering 500`);
    }
  };
  return api;
}

const contact = (i: number) => ({ id: `k${i}`, updated_at: '2026-01-01T00:00:00.000Z', email: `c${i}@example.com`, name: `C ${i}`, extra_field: i });
const deletion = (i: number) => ({ id: `d${i}`, object_type: 'contact', object_id: `k${i}`, deleted_at: '2026-02-01T00:00:00.000Z' });

async function run(plans: StreamPlan[], api: DataReadApi, options: { states?: Map<string, StreamState>; tombstones?: boolean; pageSize?: number } = {}) {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (b: Buffer) => chunks.push(b));
  const { config } = parseConfig({ api_key: 'dr_live_x', base_url: 'http://127.0.0.1:1', page_size: options.pageSize ?? 2, deletions_as_tombstones: options.tombstones ?? false });
  const states = options.states ?? new Map<string, StreamState>();
  const sink = new SingerSink(new LineWriter(stream), new StderrLogger('test'), plans, states);
  const byName = new Map(plans.map((p) => [p.stream.name, p]));
  const result = await runSync({
    config,
    client: api,
    sink,
    streams: plans,
    states,
    ...(options.tombstones
      ? { tombstones: { column: SINGER_DELETED_AT, properties: (s) => Object.keys(byName.get(s.name)?.schema.properties as object).filter((p) => p !== SINGER_DELETED_AT) } }
      : {}),
  });
  await sink.finish();
  const stdout = Buffer.concat(chunks).toString('utf8');
  return { result, stdout, lines: parseLines(stdout) };
}

const written = captureStderr();
afterEach(() => {
  vi.restoreAllMocks();
});

const stderrText = (): string => written.join('');

describe('SingerSink', () => {
  it('writes SCHEMA first, RECORDs with time_extracted, a STATE per checkpoint and ends with a STATE', async () => {
    const plans = planAll(false).filter((p) => p.stream.name === 'contacts');
    const { stdout, lines } = await run(plans, pathsApi({ '/v1/contacts': [contact(1), contact(2), contact(3)] }));
    expect(lines.map((l) => l.type)).toEqual(['SCHEMA', 'RECORD', 'RECORD', 'STATE', 'RECORD', 'STATE']);
    expect(lines[0]).toMatchObject({ stream: 'contacts', key_properties: ['id'], bookmark_properties: ['updated_at'] });
    expect(lines[1]).toEqual({ type: 'RECORD', stream: 'contacts', record: contact(1), time_extracted: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/) });
    expect(lines[3]).toEqual({ type: 'STATE', value: { bookmarks: { contacts: { resume: { cursor: 'c2', sync_watermark: W } } }, currently_syncing: 'contacts' } });
    expect(lines[5]).toEqual({ type: 'STATE', value: { bookmarks: { contacts: { sync_watermark: W } }, currently_syncing: null } });
    const check = protocolCheck('singer', stdout);
    expect(check.n_errors).toBe(0);
    expect(check.warnings).toEqual([]);
  });

  it('keeps the bookmarks of streams not synced and carries the saved watermark in mid-read checkpoints', async () => {
    const plans = planAll(false).filter((p) => p.stream.name === 'contacts');
    const states = new Map<string, StreamState>([['contacts', { sync_watermark: W0 }], ['deletions', { sync_watermark: W0 }]]);
    const api = pathsApi({ '/v1/contacts': [contact(1), contact(2), contact(3)] });
    const { lines } = await run(plans, api, { states });
    expect(api.calls[0]?.query.updated_since).toBe(W0);
    const values = lines.filter((l) => l.type === 'STATE').map((l) => l.value);
    expect(values).toEqual([
      { bookmarks: { contacts: { sync_watermark: W0, resume: { cursor: 'c2', sync_watermark: W } }, deletions: { sync_watermark: W0 } }, currently_syncing: 'contacts' },
      { bookmarks: { contacts: { sync_watermark: W }, deletions: { sync_watermark: W0 } }, currently_syncing: null },
    ]);
  });

  it('drops deselected fields from records, unknown fields stay', async () => {
    const catalog = discoverCatalog(false);
    for (const entry of catalog.streams) {
      for (const m of entry.metadata) m.metadata.selected = entry.stream === 'contacts' && (m.breadcrumb.length === 0 || m.breadcrumb[1] === 'email');
    }
    const plans = planFromCatalog(catalog, false, () => undefined);
    const { stdout, lines } = await run(plans, pathsApi({ '/v1/contacts': [contact(1)] }));
    expect(Object.keys((lines[0]?.schema as { properties: object }).properties)).toEqual(['id', 'updated_at', 'email']);
    expect(lines[1]?.record).toEqual({ id: 'k1', updated_at: '2026-01-01T00:00:00.000Z', email: 'c1@example.com', extra_field: 1 });
    expect(protocolCheck('singer', stdout).n_errors).toBe(0);
  });

  it('emits tombstones with _sdc_deleted_at into contacts, after the contacts SCHEMA', async () => {
    const plans = planAll(true).filter((p) => ['contacts', 'deletions'].includes(p.stream.name));
    const api = pathsApi({ '/v1/contacts': [contact(1)], '/v1/deletions': [deletion(7)] });
    const { stdout, lines } = await run(plans, api, { tombstones: true });
    const tombstone = lines.find((l) => l.type === 'RECORD' && l.stream === 'contacts' && (l.record as Record<string, unknown>).id === 'k7');
    expect(tombstone?.record).toMatchObject({ id: 'k7', updated_at: '2026-02-01T00:00:00.000Z', _sdc_deleted_at: '2026-02-01T00:00:00.000Z', email: null });
    const schema = lines.find((l) => l.type === 'SCHEMA' && l.stream === 'contacts');
    expect(Object.keys((schema?.schema as { properties: object }).properties)).toContain('_sdc_deleted_at');
    expect(lines.findIndex((l) => l === schema)).toBeLessThan(lines.findIndex((l) => l === tombstone));
    expect(protocolCheck('singer', stdout).n_errors).toBe(0);
  });

  it('on a failing stream logs CRITICAL, keeps the last checkpoint and names the stream in the final STATE', async () => {
    const plans = planAll(false).filter((p) => ['contacts', 'stage_events'].includes(p.stream.name));
    const api = pathsApi(
      { '/v1/contacts': [contact(1), contact(2), contact(3)], '/v1/stage_events': [{ id: 's1', contact_id: 'k1', created_at: W0 }] },
      { '/v1/contacts': 2 },
    );
    const { result, lines } = await run(plans, api);
    expect(result.failures.map((f) => f.stream.name)).toEqual(['contacts']);
    expect(lines.at(-1)).toEqual({
      type: 'STATE',
      value: { bookmarks: { contacts: { resume: { cursor: 'c2', sync_watermark: W } }, stage_events: { sync_watermark: W } }, currently_syncing: 'contacts' },
    });
    expect(stderrText()).toMatch(/CRITICAL test: contacts: \/v1\/contacts: the service kept answering 500/);
  });

  it('writes a large page of RECORDs in several writes of whole lines, in order', async () => {
    const writes: string[] = [];
    // Lines are written as text or as its UTF-8 bytes.
    const out = { write: (text: string | Uint8Array) => (writes.push(Buffer.from(text).toString('utf8')), Promise.resolve()) } as unknown as LineWriter;
    const plan = planAll(false).filter((p) => p.stream.name === 'contacts');
    const sink = new SingerSink(out, new StderrLogger('test'), plan, new Map());
    const stream = plan[0]?.stream;
    if (stream === undefined) throw new Error('no contacts plan');
    // 400 records of about 1 KB: about 400 KB of lines, one page.
    const page = Array.from({ length: 400 }, (_, i) => ({ ...contact(i), name: 'x'.repeat(1000) }));
    await sink.records(stream, page, Date.parse(W));
    expect(writes.length).toBeGreaterThan(4);
    for (const text of writes) {
      expect(text.endsWith('\n')).toBe(true);
      expect(text.length).toBeLessThan(80 * 1024);
    }
    expect(parseLines(writes.join('')).map((l) => (l.record as { id: string }).id)).toEqual(page.map((r) => r.id));
  });

  it('writes only the final STATE when nothing is selected', async () => {
    const stream = new PassThrough();
    const sink = new SingerSink(new LineWriter(stream), new StderrLogger('test'), [], new Map([['contacts', { sync_watermark: W }]]));
    await sink.finish();
    expect(parseLines(String(stream.read()))).toEqual([{ type: 'STATE', value: { bookmarks: { contacts: { sync_watermark: W } }, currently_syncing: null } }]);
  });
});

describe('a stream stopped by a fault the connector did not expect', () => {
  it("logs the fault's stack by its frames: never its message past what the CRITICAL line says (it may quote a record's value)", async () => {
    const plans = planAll(false);
    const contacts = plans[0]?.stream;
    if (contacts === undefined) throw new Error('no contacts plan');
    const sink = new SingerSink(new LineWriter(new PassThrough()), new StderrLogger('test'), plans, new Map());
    // V8's words for a property set on a string: the string is a record's value, as received.
    const fault = new TypeError("Cannot create property 'x' on string 'ana.souza@example.com'");
    await sink.streamStarted(contacts);
    await sink.streamIncomplete(contacts, toConnectorError(fault));
    expect(stderrText()).toContain('CRITICAL test: contacts: Unexpected error in the connector: TypeError: Cannot create property ... (the rest not shown: it may quote data)');
    expect(stderrText()).toMatch(/DEBUG test: contacts: the fault's stack: at /);
    expect(stderrText()).not.toContain('ana.souza');
  });
});

describe('a stream stopped by a network fault that says EPIPE', () => {
  it('is said while stdout is open: only a closed stdout is left to the run\'s end', async () => {
    const plans = planAll(false);
    const contacts = plans[0]?.stream;
    if (contacts === undefined) throw new Error('no contacts plan');
    const sink = new SingerSink(new LineWriter(new PassThrough()), new StderrLogger('test'), plans, new Map());
    // The API's connection, not stdout: retries exhausted on a broken pipe to the service.
    const cause = Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
    await sink.streamStarted(contacts);
    await sink.streamIncomplete(contacts, new ApiError('retries_exhausted', 'transient_error', 'GET /v1/contacts: network error (EPIPE); retries exhausted', { cause }));
    expect(stderrText()).toContain('CRITICAL test: contacts: GET /v1/contacts: network error (EPIPE); retries exhausted');
  });
});

describe("a stream's own failure, then the reader of stdout going away", () => {
  it("is kept for the run's end: told on stderr with its status, not lost as noise of the closed pipe", async () => {
    const plans = planAll(false);
    const contacts = plans[0]?.stream;
    if (contacts === undefined) throw new Error('no contacts plan');
    const stdout = new PassThrough();
    const out = new LineWriter(stdout);
    const sink = new SingerSink(out, new StderrLogger('test'), plans, new Map());
    await sink.streamStarted(contacts);
    const error = new ContractError('GET /v1/contacts answered a repeating cursor');
    await sink.streamIncomplete(contacts, error);
    // The target goes away once the failure is known: its CRITICAL line was said, and the run's end must say it again.
    stdout.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    expect(out.lostFailures()).toEqual([{ error, text: 'contacts: The Data-Read service broke its API contract: GET /v1/contacts answered a repeating cursor' }]);
    // A failure met once stdout is closed is its noise: not kept.
    await sink.streamIncomplete(contacts, new ContractError('later'));
    expect(out.lostFailures()).toHaveLength(1);
  });
});
