/**
 * ACTIVATE_VERSION for FULL_TABLE streams: every RECORD carries the sync's
 * table version, an ACTIVATE_VERSION follows the complete read (before its
 * STATE), one precedes the first RECORD on the stream's first sync, none
 * after a read that fails; catalog metadata `activate-version: false` turns it off.
 */
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TAP_HELP } from '../../../src/cli/tap.js';
import { ApiError } from '../../../src/client/api-error.js';
import { parseConfig } from '../../../src/config/config.js';
import { runSync } from '../../../src/engine/sync.js';
import type { StreamState } from '../../../src/engine/state.js';
import { discoverCatalog } from '../../../src/protocols/singer/catalog.js';
import { planAll, planFromCatalog, type StreamPlan } from '../../../src/protocols/singer/selection.js';
import { SingerSink } from '../../../src/protocols/singer/sink.js';
import { LineWriter, StderrLogger } from '../../../src/runtime/output.js';
import { parseLines, protocolCheck } from '../../helpers/cli.js';
import { FakeApi } from '../../helpers/fake-api.js';

const VERSION = 1_790_000_000_000;
const stage = (i: number) => ({ id: `s${i}`, key: `k${i}`, name: `Stage ${i}`, pipeline_id: 'p1', position: i, outcome: null });
const contact = (i: number) => ({ id: `c${i}`, updated_at: '2026-01-01T00:00:00.000Z', name: `C ${i}` });

async function run(plans: StreamPlan[], api: FakeApi, states = new Map<string, StreamState>(), version: number | null = VERSION) {
  // null: each stream's version from its read (SingerSink's default)
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (b: Buffer) => chunks.push(b));
  const { config } = parseConfig({ api_key: 'dr_live_x', base_url: 'http://127.0.0.1:1', page_size: 2 });
  const sink = new SingerSink(new LineWriter(out), new StderrLogger('test'), plans, states, version ?? undefined);
  const result = await runSync({ config, client: api, sink, streams: plans, states });
  await sink.finish();
  const stdout = Buffer.concat(chunks).toString('utf8');
  return { result, stdout, lines: parseLines(stdout) };
}

/** A catalog of `streams` as discovered, each selected, with `edit` applied to its `[]` metadata. */
function catalog(streams: readonly string[], edit: Record<string, unknown> = {}): unknown {
  const discovered = discoverCatalog(false);
  return {
    streams: discovered.streams
      .filter((s) => streams.includes(s.tap_stream_id))
      .map((s) => ({ ...s, metadata: s.metadata.map((m) => (m.breadcrumb.length === 0 ? { ...m, metadata: { ...m.metadata, selected: true, ...edit } } : m)) })),
  };
}

beforeEach(() => {
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe('ACTIVATE_VERSION', () => {
  it('pipeline_stages, first sync: ACTIVATE_VERSION after SCHEMA, versioned RECORDs, ACTIVATE_VERSION before the completing STATE', async () => {
    const plans = planAll(false).filter((p) => p.stream.name === 'pipeline_stages');
    expect(plans[0]?.activateVersion).toBe(true);
    const { stdout, lines } = await run(plans, new FakeApi({ '/v1/pipeline_stages': [stage(1), stage(2), stage(3)] }));
    expect(lines.map((l) => l.type)).toEqual(['SCHEMA', 'ACTIVATE_VERSION', 'RECORD', 'RECORD', 'STATE', 'RECORD', 'ACTIVATE_VERSION', 'STATE']);
    expect(lines[1]).toEqual({ type: 'ACTIVATE_VERSION', stream: 'pipeline_stages', version: VERSION });
    for (const record of lines.filter((l) => l.type === 'RECORD')) expect(record.version).toBe(VERSION);
    expect(lines[6]).toEqual({ type: 'ACTIVATE_VERSION', stream: 'pipeline_stages', version: VERSION });
    expect(protocolCheck('singer', stdout).errors).toEqual([]);
  });

  it('a later sync (a bookmark in --state): no ACTIVATE_VERSION before the records, one after them', async () => {
    const plans = planAll(false).filter((p) => p.stream.name === 'pipeline_stages');
    const states = new Map<string, StreamState>([['pipeline_stages', { sync_watermark: '2026-02-01T00:00:00.000Z' }]]);
    const { lines } = await run(plans, new FakeApi({ '/v1/pipeline_stages': [stage(1)] }), states);
    expect(lines.map((l) => l.type)).toEqual(['SCHEMA', 'RECORD', 'ACTIVATE_VERSION', 'STATE']);
  });

  it('a read that fails activates nothing (the target keeps its rows)', async () => {
    const plans = planAll(false).filter((p) => p.stream.name === 'pipeline_stages');
    const states = new Map<string, StreamState>([['pipeline_stages', { sync_watermark: '2026-02-01T00:00:00.000Z' }]]);
    const api = new FakeApi({ '/v1/pipeline_stages': [stage(1), stage(2), stage(3)] });
    api.beforePage = (_path, query) => {
      if (query.cursor) throw new ApiError('retries_exhausted', 'transient_error', 'the service kept answering 500');
    };
    const { result, lines } = await run(plans, api, states);
    expect(result.failures).toHaveLength(1);
    expect(lines.filter((l) => l.type === 'ACTIVATE_VERSION')).toEqual([]);
  });

  it('a stream the catalog sets to FULL_TABLE is versioned too; INCREMENTAL streams are not', async () => {
    const full = planFromCatalog(catalog(['contacts'], { 'replication-method': 'FULL_TABLE' }), false, () => undefined);
    expect(full[0]).toMatchObject({ mode: 'full_refresh', activateVersion: true });
    const { lines } = await run(full, new FakeApi({ '/v1/contacts': [contact(1)] }));
    expect(lines.map((l) => l.type)).toEqual(['SCHEMA', 'ACTIVATE_VERSION', 'RECORD', 'ACTIVATE_VERSION', 'STATE']);
    expect(lines[2]?.version).toBe(VERSION);

    const incremental = planFromCatalog(catalog(['contacts']), false, () => undefined);
    expect(incremental[0]).toMatchObject({ mode: 'incremental', activateVersion: false });
    const plain = await run(incremental, new FakeApi({ '/v1/contacts': [contact(1)] }));
    expect(plain.lines.map((l) => l.type)).toEqual(['SCHEMA', 'RECORD', 'STATE']);
    expect(plain.lines[1]).not.toHaveProperty('version');
  });

  it('after a sync stopped in its read, the version is past that read\'s watermark (the bookmark\'s resume), the service\'s clock gone back since', async () => {
    const plans = planAll(false).filter((p) => p.stream.name === 'pipeline_stages');
    const stopped = '2026-03-01T10:00:00.000Z';
    const states = new Map<string, StreamState>([['pipeline_stages', { resume: { cursor: 'c2', sync_watermark: stopped } }]]);
    const { lines } = await run(plans, new FakeApi({ '/v1/pipeline_stages': [stage(1)] }, '2026-03-01T09:00:00.000Z'), states, null);
    expect(lines.find((l) => l.type === 'ACTIVATE_VERSION')?.version).toBe(Date.parse(stopped) + 1);
  });

  it('catalog metadata activate-version: false switches it off for that stream', async () => {
    const plans = planFromCatalog(catalog(['pipeline_stages'], { 'activate-version': false }), false, () => undefined);
    expect(plans[0]?.activateVersion).toBe(false);
    const { lines } = await run(plans, new FakeApi({ '/v1/pipeline_stages': [stage(1)] }));
    expect(lines.map((l) => l.type)).toEqual(['SCHEMA', 'RECORD', 'STATE']);
    expect(lines[1]).not.toHaveProperty('version');
  });

  it('a value that is not a boolean is refused with a warning and ACTIVATE_VERSION stays on', () => {
    const warnings: string[] = [];
    const plans = planFromCatalog(catalog(['pipeline_stages'], { 'activate-version': 'no' }), false, (m) => warnings.push(m));
    expect(plans[0]?.activateVersion).toBe(true);
    expect(warnings).toEqual([expect.stringContaining('activate-version must be true or false')]);
  });

  it('--help names it among the messages on stdout, and says how to switch it off', () => {
    // A user piping into a target that refuses unknown messages learns of it before the first FULL_TABLE sync.
    const help = TAP_HELP.replace(/\s+/g, ' ');
    expect(help).toContain('(SCHEMA, RECORD, STATE, and ACTIVATE_VERSION');
    expect(help).toContain('activate-version: false');
  });
});
