/**
 * One failure, one message, through the real executables: a service that
 * cannot be reached gets one series of retries for the whole sync and one
 * report with the total; a refused key (401, 403) stops every stream at the
 * first refusal with one config_error; replicate creates no database file
 * until the key has been accepted.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withEmulatorAccount } from '../../helpers/suite.js';
import { ROOT, SOURCE_BIN, TAP_BIN, parseLines, protocolCheck, runCli, writeJson } from '../../helpers/cli.js';
import { replicate, type Account } from '../../helpers/emulator-runs.js';

const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');
const STREAM_COUNT = 5;
let account: Account;
let dir: string;

withEmulatorAccount('one-failure-', { contacts: 30, seed: 71 }, (s) => ({ account, dir } = s));

type Message = Record<string, unknown>;
const errorTraces = (lines: Message[]): Array<{ failure_type: string; message: string; stream_descriptor?: unknown }> =>
  lines.flatMap((m) => (m.type === 'TRACE' && (m.trace as { type: string }).type === 'ERROR' ? [(m.trace as { error: { failure_type: string; message: string } }).error] : []));
const logs = (lines: Message[], level: string): string[] =>
  lines.flatMap((m) => (m.type === 'LOG' && (m.log as { level: string }).level === level ? [(m.log as { message: string }).message] : []));
/** stderr lines of the tap at `level` ("2026-... LEVEL tap-data-read: message"). */
const tapLines = (stderr: string, level: string): string[] => stderr.split('\n').filter((l) => l.includes(` ${level} tap-data-read: `));

describe('a service that cannot be reached (a closed port)', () => {
  // One retry: before, each of the five streams retried on its own (5 WARN lines, 5 traces); now one series for all.
  const closed = (): string => writeJson(dir, 'closed.json', { api_key: account.key, base_url: 'http://127.0.0.1:9', max_retries: 1 });

  it('read: one series of retries, every stream INCOMPLETE, one transient_error with the total', async () => {
    const run = await runCli(SOURCE_BIN, ['read', '--config', closed(), '--catalog', CATALOG]);
    expect(run.code).toBe(75);
    expect(protocolCheck('airbyte', run.stdout).errors).toEqual([]);
    const lines = parseLines(run.stdout);
    const retries = logs(lines, 'WARN').filter((w) => w.includes('retry'));
    expect(retries).toEqual([expect.stringMatching(/^Cannot reach the Data-Read API at http:\/\/127\.0\.0\.1:9: the connection was refused \(ECONNREFUSED\); retry 1 of 1 in .+ \(every request waits for it\)\.$/)]);
    const traces = errorTraces(lines);
    expect(traces).toHaveLength(1);
    expect(traces[0]?.failure_type).toBe('transient_error');
    expect(traces[0]?.stream_descriptor).toBeUndefined();
    expect(traces[0]?.message).toMatch(/^Cannot reach the Data-Read API at http:\/\/127\.0\.0\.1:9: the connection was refused \(ECONNREFUSED\); 2 attempts over [\d.]+ m?s \(1 \+ max_retries 1\)\. /);
    const incomplete = lines.filter((m) => m.type === 'TRACE' && (m.trace as { stream_status?: { status: string } }).stream_status?.status === 'INCOMPLETE');
    expect(incomplete).toHaveLength(STREAM_COUNT);
  });

  it('the tap: one WARNING per retry of the one series, one CRITICAL naming the cause, a final STATE', async () => {
    const run = await runCli(TAP_BIN, ['--config', closed()]);
    expect(run.code).toBe(75);
    // Without a catalog the tap first asks for the service's description, with the sync's own client: one series of
    // retries for both, then the WARNING that the built-in schemas are declared.
    const warnings = tapLines(run.stderr, 'WARNING');
    expect(warnings.filter((l) => l.includes('; retry '))).toHaveLength(1);
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toMatch(/WARNING tap-data-read: Using the built-in stream schemas: .*Cannot reach the Data-Read API/);
    const critical = tapLines(run.stderr, 'CRITICAL');
    // The cause once (no stream named: it is the run's), then the summary naming the streams not finished.
    expect(critical).toHaveLength(2);
    expect(critical[0]).toMatch(/CRITICAL tap-data-read: Cannot reach the Data-Read API at http:\/\/127\.0\.0\.1:9: the connection was refused \(ECONNREFUSED\); 2 attempts over [\d.]+ m?s \(1 \+ max_retries 1\)\. /);
    expect(critical[1]).toMatch(
      /CRITICAL tap-data-read: Sync failed for 5 stream\(s\): contacts, conversations, stage_events, deletions, pipeline_stages; the last STATE is safe to resume from: records: contacts 0, .*; requests: 2, retries: 1, rate-limit waits: 0\.$/,
    );
    expect(parseLines(run.stdout).at(-1)).toMatchObject({ type: 'STATE' });
  });

  it('replicate: refused before any file is created', async () => {
    const db = join(dir, 'closed.db');
    const run = await replicate(writeJson(dir, 'closed0.json', { api_key: account.key, base_url: 'http://127.0.0.1:9', max_retries: 0 }), db);
    expect(run.code).toBe(75);
    expect(run.stderr).toMatch(/Cannot replicate: Cannot reach the Data-Read API at http:\/\/127\.0\.0\.1:9: the connection was refused/);
    expect(readdirSync(dir).filter((f) => f.startsWith('closed.db'))).toEqual([]);
  });
});

describe('a refused key stops every stream at the first refusal', () => {
  const refusedKey = (name: string, extra: Record<string, unknown> = {}): string =>
    writeJson(dir, name, { api_key: 'drk_live_notAKeyOfThisService0123', base_url: account.emulator.url, max_concurrent_requests: 2, ...extra });

  it('read, HTTP 401: one config_error, every stream INCOMPLETE, no request after the first refusals', async () => {
    account.emulator.control.resetStats();
    const run = await runCli(SOURCE_BIN, ['read', '--config', refusedKey('k401.json'), '--catalog', CATALOG]);
    expect(run.code).toBe(78);
    expect(protocolCheck('airbyte', run.stdout).errors).toEqual([]);
    const lines = parseLines(run.stdout);
    const traces = errorTraces(lines);
    expect(traces).toHaveLength(1);
    expect(traces[0]).toMatchObject({ failure_type: 'config_error', message: expect.stringContaining('did not accept the API key (HTTP 401)') });
    expect(traces[0]?.stream_descriptor).toBeUndefined();
    // At most the requests already in flight together (max_concurrent_requests 2), not one per stream.
    expect(account.emulator.control.stats().total).toBeLessThanOrEqual(2);
  });

  it('read, HTTP 403 (the data API switched off): the same, one config_error', async () => {
    const control = account.emulator.control;
    control.updateAccount(account.accountId, { dataApi: false });
    try {
      const run = await runCli(SOURCE_BIN, ['read', '--config', account.config(dir, { max_concurrent_requests: 2 }), '--catalog', CATALOG]);
      expect(run.code).toBe(78);
      const traces = errorTraces(parseLines(run.stdout));
      expect(traces).toHaveLength(1);
      expect(traces[0]).toMatchObject({ failure_type: 'config_error', message: expect.stringContaining('HTTP 403') });
    } finally {
      control.updateAccount(account.accountId, { dataApi: true });
    }
  });

  it('the tap: one CRITICAL with the cause (before: one per stream, 11 lines)', async () => {
    // Schemas pinned: no description is asked for, the streams' own requests meet the refusal.
    const run = await runCli(TAP_BIN, ['--config', refusedKey('k401-tap.json', { use_service_schema: false })]);
    expect(run.code).toBe(78);
    const critical = tapLines(run.stderr, 'CRITICAL');
    expect(critical.filter((l) => l.includes('HTTP 401'))).toHaveLength(1);
    expect(critical).toHaveLength(2); // the cause, then the summary
    expect(run.stderr.trim().split('\n').length).toBeLessThanOrEqual(3); // plus one DEBUG line with the request id
  });

  it('the tap without a catalog: the same, after the one line on the schemas it read from the description', async () => {
    const run = await runCli(TAP_BIN, ['--config', refusedKey('k401-tap-all.json')]);
    expect(run.code).toBe(78);
    const critical = tapLines(run.stderr, 'CRITICAL');
    expect(critical.filter((l) => l.includes('HTTP 401'))).toHaveLength(1);
    expect(critical).toHaveLength(2);
    expect(tapLines(run.stderr, 'INFO')).toEqual([expect.stringMatching(/Stream schemas: the built-in ones merged with the service's description/)]);
    expect(run.stderr.trim().split('\n').length).toBeLessThanOrEqual(4);
  });

  it('replicate: no database file is created until the key has been accepted', async () => {
    const db = join(dir, 'refused.db');
    const run = await replicate(refusedKey('k401-replica.json'), db);
    expect(run.code).toBe(78);
    expect(run.stderr).toMatch(/Cannot replicate: The Data-Read API did not accept the API key \(HTTP 401\)/);
    expect(existsSync(db)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.startsWith('refused.db'))).toEqual([]);
  });
});
