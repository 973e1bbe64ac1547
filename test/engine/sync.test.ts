/**
 * The sync runner and failures: a stream's own failure ends that stream (its
 * own report, the others go on); a run-wide failure (the key refused, the
 * service unreachable) stops every stream, each INCOMPLETE with its last
 * checkpoint intact, and is reported once.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/client/api-error.js';
import { parseConfig } from '../../src/config/config.js';
import { runSync, type SelectedStream } from '../../src/engine/sync.js';
import { STREAMS } from '../../src/streams.js';
import { FakeApi, contact, deletion, makeRecords } from '../helpers/fake-api.js';
import { RecordingSink } from '../helpers/recording-sink.js';

const ALL: SelectedStream[] = STREAMS.map((stream) => ({ stream, mode: stream.syncModes.includes('incremental') ? 'incremental' : 'full_refresh' }));

function api(): FakeApi {
  return new FakeApi({
    '/v1/contacts': Array.from({ length: 6 }, (_, i) => contact(`c${i}`, i)),
    '/v1/conversations': [],
    '/v1/stage_events': [],
    '/v1/deletions': [deletion('d1', 'contact', 'c1', 30)],
    '/v1/pipeline_stages': makeRecords(3),
  });
}

const refused = (): ApiError => new ApiError('unauthorized', 'config_error', 'The Data-Read API did not accept the API key (HTTP 401).', { status: 401, runWide: true });

async function sync(fake: FakeApi, tombstones = false): Promise<{ sink: RecordingSink; result: Awaited<ReturnType<typeof runSync>> }> {
  const { config } = parseConfig({ api_key: 'dr_live_x', base_url: 'http://127.0.0.1:1', page_size: 2, deletions_as_tombstones: tombstones });
  const sink = new RecordingSink();
  const result = await runSync({
    config,
    client: fake,
    sink,
    streams: ALL,
    states: new Map(),
    ...(tombstones ? { tombstones: { column: '_deleted_at', properties: () => ['id', 'updated_at'] } } : {}),
  });
  return { sink, result };
}

describe('a run-wide failure', () => {
  it('stops every stream, keeps the checkpoints written before it, and is reported once', async () => {
    const fake = api();
    // The key is revoked after contacts' first page: from then on every request is refused (as the client does).
    let revoked: ApiError | undefined;
    fake.beforePage = (path, query) => {
      if (revoked) throw revoked;
      if (path === '/v1/contacts' && query.cursor === 'c2') throw (revoked = refused());
    };
    const { sink, result } = await sync(fake);

    const runFailed = sink.events.filter((e) => e.kind === 'run-failed');
    expect(runFailed).toHaveLength(1);
    expect(runFailed[0]).toMatchObject({ error: revoked });
    expect(sink.events.filter((e) => e.kind === 'incomplete')).toEqual([]);
    const stopped = sink.events.filter((e) => e.kind === 'stopped').map((e) => (e.kind === 'stopped' ? e.stream : ''));
    const completed = sink.events.filter((e) => e.kind === 'complete').map((e) => (e.kind === 'complete' ? e.stream : ''));
    // Every stream ends once, either way; the report comes after the last of them.
    expect([...stopped, ...completed].sort()).toEqual(STREAMS.map((s) => s.name).sort());
    expect(stopped).toContain('contacts');
    expect(runFailed[0]).toMatchObject({ stopped });
    expect(sink.events.at(-1)?.kind).toBe('run-failed');
    // contacts' checkpoint after its first page stands (a resume cursor), nothing later.
    expect(sink.statesOf('contacts').at(-1)).toMatchObject({ resume: { cursor: 'c2' } });
    expect(result.runFailure).toBe(revoked);
    expect(result.failures.map((f) => f.stream.name).sort()).toEqual([...stopped].sort());
    for (const f of result.failures) expect(f.error).toBe(revoked);
  });

  it('read first for tombstones, the deletion log fails run-wide: no other stream sends a request', async () => {
    const fake = api();
    const error = refused();
    fake.beforePage = () => {
      throw error;
    };
    const { sink, result } = await sync(fake, true);
    expect(fake.calls.map((c) => c.path)).toEqual(['/v1/deletions']);
    expect(sink.events.filter((e) => e.kind === 'stopped')).toHaveLength(STREAMS.length);
    expect(sink.events.filter((e) => e.kind === 'run-failed')).toHaveLength(1);
    expect(result.runFailure).toBe(error);
  });

  it("a stream's own failure keeps its own report; a run-wide one after it is reported once", async () => {
    const fake = new FakeApi({ '/v1/contacts': [], '/v1/stage_events': [], '/v1/deletions': [], '/v1/pipeline_stages': [] });
    const own = new ApiError('bad_request', 'system_error', 'HTTP 400 on conversations', { status: 400 });
    const wide = refused();
    fake.beforePage = (path) => {
      if (path === '/v1/conversations') throw own;
      if (path !== '/v1/contacts') throw wide;
    };
    const { sink, result } = await sync(fake);
    const incomplete = sink.events.filter((e) => e.kind === 'incomplete');
    expect(incomplete).toEqual([{ kind: 'incomplete', stream: 'conversations', error: own }]);
    expect(sink.events.filter((e) => e.kind === 'run-failed')).toEqual([{ kind: 'run-failed', error: wide, stopped: ['stage_events', 'deletions', 'pipeline_stages'] }]);
    expect(sink.events.some((e) => e.kind === 'complete' && e.stream === 'contacts')).toBe(true);
    expect(result.failures.map((f) => [f.stream.name, f.error === wide])).toEqual([
      ['conversations', false],
      ['stage_events', true],
      ['deletions', true],
      ['pipeline_stages', true],
    ]);
  });

  it('met before the sync (the account\'s /v1/me): nothing is read, every stream stops on it, reported once', async () => {
    const fake = api();
    const { config } = parseConfig({ api_key: 'dr_live_x', base_url: 'http://127.0.0.1:1' });
    const sink = new RecordingSink();
    const failed = refused();
    const result = await runSync({ config, client: fake, sink, streams: ALL, states: new Map(), failed });
    expect(fake.calls).toEqual([]);
    const names = ALL.map((s) => s.stream.name);
    expect(sink.events).toEqual([
      ...names.map((stream) => ({ kind: 'started', stream })),
      ...names.map((stream) => ({ kind: 'stopped', stream })),
      { kind: 'run-failed', error: failed, stopped: names },
    ]);
    expect(result.runFailure).toBe(failed);
    expect(result.failures.map((f) => f.error)).toEqual(names.map(() => failed));
  });

  it('without one, failures stay per stream and nothing is reported for the run', async () => {
    const fake = api();
    fake.beforePage = (path) => {
      if (path === '/v1/stage_events') throw new ApiError('retries_exhausted', 'transient_error', 'HTTP 500 after retries');
    };
    const { sink, result } = await sync(fake);
    expect(sink.events.filter((e) => e.kind === 'incomplete').map((e) => (e.kind === 'incomplete' ? e.stream : ''))).toEqual(['stage_events']);
    expect(sink.events.filter((e) => e.kind === 'run-failed' || e.kind === 'stopped')).toEqual([]);
    expect(result.runFailure).toBeUndefined();
  });
});

describe('an optional stream the service does not offer', () => {
  it('ends complete and marked skipped (a 404 on /v1/pipeline_stages); a stream it offers is not', async () => {
    const without = new FakeApi({ '/v1/contacts': [], '/v1/conversations': [], '/v1/stage_events': [], '/v1/deletions': [] });
    const { sink } = await sync(without);
    expect(sink.events.filter((e) => e.kind === 'complete' && e.stream === 'pipeline_stages')).toEqual([{ kind: 'complete', stream: 'pipeline_stages', skipped: true }]);
    const { sink: offered } = await sync(api());
    expect(offered.events.filter((e) => e.kind === 'complete' && e.stream === 'pipeline_stages')).toEqual([{ kind: 'complete', stream: 'pipeline_stages' }]);
  });
});
