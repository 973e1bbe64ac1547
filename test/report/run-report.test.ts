import { describe, expect, it } from 'vitest';
import { ConfigError, ConnectorError } from '../../src/errors.js';
import { RunRecorder, SUMMARY_MAX_BYTES, summaryJson, type StreamSummary } from '../../src/report/run-report.js';
import { RunSummarySchema } from '../../src/report/run-summary-schema.js';

function clock(start = Date.parse('2026-03-01T10:00:00.000Z')): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

describe('RunRecorder', () => {
  it('reports each stream: status, records, tombstones, watermark before and after (of the last STATE), and the request counts', () => {
    const c = clock();
    const r = new RunRecorder('read', { now: c.now });
    r.setRequestCounts(() => ({ requests: 7, retries: 2, rateLimitWaits: 1, rateLimitWaitMs: 1500 }));
    r.plan([
      { name: 'contacts', state: { sync_watermark: '2026-02-01T00:00:00.000Z' } },
      { name: 'deletions', state: undefined },
      { name: 'conversations', state: { sync_watermark: '2026-02-02T00:00:00.000Z' } },
      { name: 'stage_events' },
    ]);
    r.records('contacts', 10, 2);
    r.state('contacts', { sync_watermark: '2026-02-01T00:00:00.000Z', resume: { cursor: 'c1', sync_watermark: '2026-03-01T00:00:00.000Z' } });
    r.records('contacts', 5);
    r.state('contacts', { sync_watermark: '2026-03-01T00:00:00.000Z' });
    r.streamEnded('contacts', 'complete');
    r.records('deletions', 3);
    r.state('deletions', { resume: { cursor: 'x', sync_watermark: '2026-03-01T00:00:00.000Z' } });
    r.streamEnded('deletions', 'incomplete', new ConnectorError('transient_error', 'deletions: HTTP 503 after 5 retries'));
    r.streamEnded('conversations', 'stopped');
    c.advance(2500);
    const s = r.finish(75);
    expect(RunSummarySchema.parse(s)).toEqual(s);
    expect(s).toMatchObject({
      summary_version: 1,
      command: 'read',
      status: 'failed',
      exit_code: 75,
      failure_type: 'transient_error',
      message: 'deletions: HTTP 503 after 5 retries',
      started_at: '2026-03-01T10:00:00.000Z',
      finished_at: '2026-03-01T10:00:02.500Z',
      duration_seconds: 2.5,
      requests: 7,
      retries: 2,
      rate_limit_waits: 1,
      rate_limit_wait_seconds: 1.5,
    });
    expect(s.streams).toEqual([
      { name: 'contacts', status: 'complete', records: 15, tombstones: 2, sync_watermark_before: '2026-02-01T00:00:00.000Z', sync_watermark_after: '2026-03-01T00:00:00.000Z' },
      { name: 'deletions', status: 'incomplete', records: 3, tombstones: 0, sync_watermark_before: null, sync_watermark_after: null },
      { name: 'conversations', status: 'skipped', records: 0, tombstones: 0, sync_watermark_before: '2026-02-02T00:00:00.000Z', sync_watermark_after: '2026-02-02T00:00:00.000Z' },
      { name: 'stage_events', status: 'skipped', records: 0, tombstones: 0, sync_watermark_before: null, sync_watermark_after: null },
    ]);
  });

  it("a face's written watermark replaces the STATE it was handed; none written keeps the one the run started from", () => {
    const r = new RunRecorder('replicate');
    r.plan([{ name: 'contacts', state: { sync_watermark: '2026-01-01T00:00:00.000Z' } }, { name: 'deletions', state: { sync_watermark: '2026-01-02T00:00:00.000Z' } }]);
    r.state('contacts', { sync_watermark: '2026-02-01T00:00:00.000Z' });
    r.state('deletions', { sync_watermark: '2026-02-02T00:00:00.000Z' });
    r.written('contacts', 3, 0, '2026-01-15T00:00:00.000Z');
    r.written('deletions', 0, 0, null);
    const [contacts, deletions] = r.finish(75).streams;
    expect(contacts?.sync_watermark_after).toBe('2026-01-15T00:00:00.000Z');
    expect(deletions?.sync_watermark_after).toBe('2026-01-02T00:00:00.000Z');
  });

  it('a stream the service does not offer ends skipped, and its end listeners (Dagster Pipes) hear it so', () => {
    const r = new RunRecorder('sync');
    const heard: StreamSummary[] = [];
    r.onStreamEnd((s) => heard.push(s));
    r.plan([{ name: 'pipeline_stages' }]);
    r.streamEnded('pipeline_stages', 'skipped');
    expect(heard.map((s) => s.status)).toEqual(['skipped']);
    expect(r.finish(0).streams[0]?.status).toBe('skipped');
  });

  it('a failure before the first request: every planned stream skipped, the cause and its type, redacted', () => {
    const r = new RunRecorder('sync');
    r.setRedact((t) => t.split('sk_live_secret').join('***'));
    r.plan([{ name: 'contacts' }]);
    r.fail(new ConfigError('The key sk_live_secret was refused (HTTP 401).'));
    const s = r.finish(78);
    expect(s).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error', message: 'The key *** was refused (HTTP 401).' });
    expect(s.streams[0]?.status).toBe('skipped');
    expect(JSON.stringify(s)).not.toContain('sk_live_secret');
  });

  it("with accounts, each account's message is redacted as the run's is", () => {
    const r = new RunRecorder('replicate');
    r.setRedact((t) => t.split('sk_live_secret').join('***'));
    r.setAccounts(() => [
      { name: 'a', status: 'succeeded', records: 3, failure_type: null, message: null },
      { name: 'b', status: 'failed', records: 0, failure_type: 'config_error', message: 'The service said: "key sk_live_secret revoked".' },
    ]);
    r.fail(new ConfigError('1 of 2 accounts failed: account "b": The service said: "key sk_live_secret revoked".'));
    const s = r.finish(78);
    expect(s.accounts?.[1]?.message).toBe('The service said: "key *** revoked".');
    expect(JSON.stringify(s)).not.toContain('sk_live_secret');
  });

  it('success has no failure type or message; an interruption says so; the first finish is final', () => {
    const ok = new RunRecorder('replicate');
    ok.plan([{ name: 'contacts' }]);
    ok.streamEnded('contacts', 'complete');
    expect(ok.finish(0)).toMatchObject({ status: 'succeeded', failure_type: null, message: null, streams: [{ status: 'complete' }] });
    const stopped = new RunRecorder('read');
    stopped.interrupted('SIGTERM');
    const s = stopped.finish(143);
    expect(s).toMatchObject({ status: 'interrupted', exit_code: 143, failure_type: null });
    expect(s.message).toContain('SIGTERM');
    expect(stopped.finish(0)).toBe(s);
  });

  it('replicate: the rows written replace the records counted on the way; a second pass keeps the first watermark before', () => {
    const r = new RunRecorder('replicate');
    r.plan([{ name: 'contacts', state: { sync_watermark: '2026-01-01T00:00:00.000Z' } }]);
    r.records('contacts', 10);
    r.plan([{ name: 'contacts', state: { sync_watermark: '2026-02-01T00:00:00.000Z' } }]);
    r.written('contacts', 8, 1);
    expect(r.finish(0).streams[0]).toMatchObject({ records: 8, tombstones: 1, sync_watermark_before: '2026-01-01T00:00:00.000Z' });
  });

  it('a stream named before its state is known takes the state of the plan that follows', () => {
    const r = new RunRecorder('replicate');
    r.plan([{ name: 'contacts' }]);
    r.plan([{ name: 'contacts', state: { sync_watermark: '2026-01-01T00:00:00.000Z' } }]);
    expect(r.finish(0).streams[0]).toMatchObject({ sync_watermark_before: '2026-01-01T00:00:00.000Z', sync_watermark_after: '2026-01-01T00:00:00.000Z', status: 'skipped' });
  });

  it('a plan without a state keeps the watermark a plan before it gave (replicate heal pass: read from no state)', () => {
    const r = new RunRecorder('replicate');
    r.plan([{ name: 'contacts' }]);
    r.plan([{ name: 'contacts', state: { sync_watermark: '2026-01-01T00:00:00.000Z' } }]);
    r.plan([{ name: 'contacts', state: undefined }]);
    expect(r.finish(0).streams[0]).toMatchObject({ sync_watermark_before: '2026-01-01T00:00:00.000Z' });
  });

  it('the failure told is the one the exit status stands for (the first of its type), else the first', () => {
    const r = new RunRecorder('sync');
    r.plan([{ name: 'contacts' }, { name: 'conversations' }]);
    r.streamEnded('contacts', 'incomplete', new ConnectorError('system_error', 'write EPIPE'));
    r.fail(new ConnectorError('transient_error', 'stdout was closed'));
    expect(r.finish(75)).toMatchObject({ failure_type: 'transient_error', message: 'stdout was closed' });
    const other = new RunRecorder('read');
    other.fail(new ConnectorError('system_error', 'first'));
    other.fail(new ConnectorError('transient_error', 'second'));
    expect(other.finish(1)).toMatchObject({ failure_type: 'system_error', message: 'first' });
  });

  it('tells listeners each stream as it ends', () => {
    const r = new RunRecorder('read');
    const seen: StreamSummary[] = [];
    r.onStreamEnd((s) => seen.push(s));
    r.plan([{ name: 'contacts' }]);
    r.records('contacts', 2);
    r.state('contacts', { sync_watermark: '2026-03-01T00:00:00.000Z' });
    r.streamEnded('contacts', 'complete');
    expect(seen).toEqual([{ name: 'contacts', status: 'complete', records: 2, tombstones: 0, sync_watermark_before: null, sync_watermark_after: '2026-03-01T00:00:00.000Z' }]);
  });

  it('summaryJson fits 4 KiB (Kubernetes termination message) even with a long message', () => {
    const r = new RunRecorder('read');
    r.plan(['contacts', 'conversations', 'deletions', 'pipeline_stages', 'stage_events'].map((name) => ({ name, state: { sync_watermark: '2026-02-01T00:00:00.000Z' } })));
    r.fail(new ConnectorError('system_error', 'x'.repeat(20_000)));
    const text = summaryJson(r.finish(70));
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(SUMMARY_MAX_BYTES);
    expect(RunSummarySchema.parse(JSON.parse(text))).toMatchObject({ exit_code: 70 });
  });

  it("lists a stream's schema changes (replicate), and leaves the last of the longest lists out, counted, to fit 4 KiB", () => {
    const r = new RunRecorder('replicate');
    r.plan([{ name: 'contacts' }, { name: 'deletions' }]);
    const added = (n: number) => Array.from({ length: n }, (_, i) => ({ column: `field_${String(i).padStart(3, '0')}`, change: 'added' as const, from_type: null, to_type: 'bigint' }));
    r.schemaChanges('contacts', added(2));
    r.schemaChanges('deletions', []);
    const small = RunSummarySchema.parse(JSON.parse(summaryJson(r.finish(0))));
    expect(small.streams.map((s) => [s.name, s.schema_changes, s.schema_changes_omitted])).toEqual([
      ['contacts', added(2), undefined],
      ['deletions', [], undefined],
    ]);

    const big = new RunRecorder('replicate');
    big.plan([{ name: 'contacts' }, { name: 'deletions' }]);
    big.schemaChanges('contacts', added(80));
    big.schemaChanges('deletions', added(3));
    const text = summaryJson(big.finish(0));
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(SUMMARY_MAX_BYTES);
    const [contacts, deletions] = RunSummarySchema.parse(JSON.parse(text)).streams;
    const kept = contacts?.schema_changes?.length ?? 0;
    expect(kept).toBeGreaterThan(10);
    expect(contacts?.schema_changes).toEqual(added(kept));
    expect(contacts?.schema_changes_omitted).toBe(80 - kept);
    expect(deletions?.schema_changes).toEqual(added(3));
    // The recorder's own summary is whole.
    expect(big.finish(0).streams[0]?.schema_changes).toHaveLength(80);
  });
});
