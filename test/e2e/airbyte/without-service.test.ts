/**
 * The Airbyte executable without a service: spec, discover, and every way a
 * user's config, catalog or state can be wrong. Output is checked with the
 * Airbyte protocol checker.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT, SOURCE_BIN, parseLines, protocolCheck, runCli, tempDir, writeJson } from '../../helpers/cli.js';

const CANARY = 'canary_live_CANARY0SECRET0KEY';
let dir: string;
let config: string;
let catalog: string;

beforeAll(() => {
  dir = tempDir();
  // Port 9 on loopback: nothing listens, so no request can succeed.
  config = writeJson(dir, 'config.json', { api_key: CANARY, base_url: 'http://127.0.0.1:9', max_retries: 0 });
  catalog = join(ROOT, 'catalog', 'configured_catalog.json');
});

function expectCleanError(result: { code: number | null; stdout: string; stderr: string }, failureType: string, message: RegExp): void {
  expect(result.code).toBe(78);
  const summary = protocolCheck('airbyte', result.stdout);
  expect(summary.errors).toEqual([]);
  const traces = parseLines(result.stdout).filter((m) => m.type === 'TRACE' && (m.trace as { type: string }).type === 'ERROR');
  expect(traces).toHaveLength(1);
  const error = (traces[0]?.trace as { error: { failure_type: string; message: string } }).error;
  expect(error.failure_type).toBe(failureType);
  expect(error.message).toMatch(message);
  expect(result.stdout + result.stderr).not.toContain(CANARY);
  expect(result.stdout).not.toMatch(/^\s+at /m);
}

describe('source-data-read spec / discover', () => {
  it('spec prints one valid SPEC whose config schema matches the checked-in snapshot', async () => {
    const result = await runCli(SOURCE_BIN, ['spec']);
    expect(result.code).toBe(0);
    expect(protocolCheck('airbyte', result.stdout).errors).toEqual([]);
    const [message] = parseLines(result.stdout);
    const snapshot = JSON.parse(readFileSync(join(ROOT, 'catalog', 'spec.json'), 'utf8')) as unknown;
    expect(message).toEqual({ type: 'SPEC', spec: snapshot });
  });

  it('discover without the service: the checked-in catalog (the built-in schemas), one WARN saying why, no tombstone columns by default', async () => {
    const result = await runCli(SOURCE_BIN, ['discover', '--config', config]);
    expect(result.code).toBe(0);
    expect(protocolCheck('airbyte', result.stdout).errors).toEqual([]);
    const [log, message, ...rest] = parseLines(result.stdout) as [{ log: { level: string; message: string } }, { catalog: { streams: { name: string; json_schema: { properties: object } }[] } }];
    expect(rest).toEqual([]);
    expect(log.log.level).toBe('WARN');
    expect(log.log.message).toMatch(/^Using the built-in stream schemas: the service's description cannot be used\. Cannot reach the Data-Read API at http:\/\/127\.0\.0\.1:9: the connection was refused/);
    const checkedIn = JSON.parse(readFileSync(join(ROOT, 'catalog', 'discovered_catalog.json'), 'utf8')) as unknown;
    expect(message.catalog).toEqual(checkedIn);
    for (const stream of message.catalog.streams) expect(stream.json_schema.properties).not.toHaveProperty('_ab_cdc_deleted_at');
  });

  it('discover with use_service_schema false: the checked-in catalog alone, no request, nothing else said', async () => {
    const pinned = writeJson(dir, 'pinned.json', { api_key: CANARY, base_url: 'http://127.0.0.1:9', use_service_schema: false });
    const result = await runCli(SOURCE_BIN, ['discover', '--config', pinned]);
    expect(result.code).toBe(0);
    const checkedIn = JSON.parse(readFileSync(join(ROOT, 'catalog', 'discovered_catalog.json'), 'utf8')) as unknown;
    expect(parseLines(result.stdout)).toEqual([{ type: 'CATALOG', catalog: checkedIn }]);
  });

  it('discover declares _ab_cdc_deleted_at on contacts and conversations only when tombstones are on', async () => {
    const withTombstones = writeJson(dir, 'tomb.json', { api_key: CANARY, base_url: 'http://127.0.0.1:9', deletions_as_tombstones: true, use_service_schema: false });
    const result = await runCli(SOURCE_BIN, ['discover', '--config', withTombstones]);
    const [message] = parseLines(result.stdout) as [{ catalog: { streams: { name: string; json_schema: { properties: object } }[] } }];
    const declaring = message.catalog.streams.filter((s) => '_ab_cdc_deleted_at' in s.json_schema.properties).map((s) => s.name);
    expect(declaring).toEqual(['contacts', 'conversations']);
  });

  it('--help and --version tell the truth', async () => {
    const help = await runCli(SOURCE_BIN, ['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/read\s+--config CONFIG.json --catalog CATALOG.json \[--state STATE.json\]/);
    const version = await runCli(SOURCE_BIN, ['--version']);
    expect(version.stdout.trim()).toBe(`source-data-read ${(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version}`);
  });
});

describe('check with a bad config fails cleanly (exit 0, CONNECTION_STATUS FAILED)', () => {
  it.each([
    ['missing api_key', { base_url: 'https://api.example.com' }, /api_key is required/],
    ['plain http to a remote host', { api_key: CANARY, base_url: 'http://api.example.com' }, /https:\/\/ for a remote host/],
    ['page_size 0', { api_key: CANARY, base_url: 'https://api.example.com', page_size: 0 }, /page_size must be an integer from 1 to 200/],
    ['unreachable host', { api_key: CANARY, base_url: 'http://127.0.0.1:9', max_retries: 0 }, /Cannot reach the Data-Read API at http:\/\/127.0.0.1:9/],
    // What Airbyte's UI shows in place of a saved secret, sent back: told as the mask, not as a key too short.
    ['a secret holding Airbyte\'s mask', { api_key: CANARY, base_url: 'https://api.example.com', personal_data: 'hash', hash_key: '**********' }, /^Invalid config: hash_key holds only asterisks, the mask Airbyte shows in place of a saved secret, not the secret itself: enter the hash key again/],
  ])('%s', async (_name, cfg, message) => {
    const path = writeJson(dir, 'check.json', cfg);
    const result = await runCli(SOURCE_BIN, ['check', '--config', path]);
    expect(result.code).toBe(0);
    expect(protocolCheck('airbyte', result.stdout).errors).toEqual([]);
    const [status] = parseLines(result.stdout) as [{ connectionStatus: { status: string; message: string } }];
    expect(status.connectionStatus.status).toBe('FAILED');
    expect(status.connectionStatus.message).toMatch(message);
    expect(result.stdout + result.stderr).not.toContain(CANARY);
  });

  it('a config file that is not JSON', async () => {
    const path = writeJson(dir, 'broken.json', '{"api_key": ');
    const result = await runCli(SOURCE_BIN, ['check', '--config', path]);
    const [status] = parseLines(result.stdout) as [{ connectionStatus: { status: string; message: string } }];
    expect(status.connectionStatus.message).toMatch(/config file .* is not valid JSON/);
  });
});

describe('read with bad input exits 78 with one config_error trace', () => {
  it('an unknown stream in the catalog', async () => {
    const cat = writeJson(dir, 'cat.json', { streams: [{ stream: { name: '__AIRBYTE__stream_that_does_not_exist', json_schema: {} }, sync_mode: 'incremental', destination_sync_mode: 'append' }] });
    expectCleanError(await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', cat]), 'config_error', /does not have/);
  });

  it('an unsupported sync mode', async () => {
    const cat = writeJson(dir, 'cat2.json', { streams: [{ stream: { name: 'pipeline_stages', json_schema: {} }, sync_mode: 'cdc', destination_sync_mode: 'append' }] });
    expectCleanError(await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', cat]), 'config_error', /does not support sync_mode "cdc"/);
  });

  it('a state file that is not JSON', async () => {
    const state = writeJson(dir, 'state.json', 'not json');
    expectCleanError(await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', catalog, '--state', state]), 'config_error', /state file .* is not valid JSON/);
  });

  it('an empty state file', async () => {
    const state = writeJson(dir, 'empty.json', '');
    expectCleanError(await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', catalog, '--state', state]), 'config_error', /state file .* is empty/);
  });

  it('a watermark that is not a date', async () => {
    const state = writeJson(dir, 'wm.json', [{ type: 'STREAM', stream: { stream_descriptor: { name: 'contacts' }, stream_state: { sync_watermark: 'yesterday' } } }]);
    expectCleanError(await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', catalog, '--state', state]), 'config_error', /Invalid state for stream "contacts": sync_watermark must be an ISO 8601 date-time/);
  });

  it('a missing config file', async () => {
    expectCleanError(await runCli(SOURCE_BIN, ['read', '--config', join(dir, 'nope.json'), '--catalog', catalog]), 'config_error', /Cannot read the config file .*: no such file/);
  });

  it('an unreachable service: every stream INCOMPLETE, one transient_error for the run (not one per stream), no key anywhere', async () => {
    const result = await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', catalog]);
    expect(result.code).toBe(75);
    const summary = protocolCheck('airbyte', result.stdout);
    expect(summary.errors).toEqual([]);
    expect(Object.values(summary.final_status ?? {})).toEqual(['INCOMPLETE', 'INCOMPLETE', 'INCOMPLETE', 'INCOMPLETE', 'INCOMPLETE']);
    const lines = parseLines(result.stdout);
    const errors = lines
      .filter((m) => m.type === 'TRACE' && (m.trace as { type: string }).type === 'ERROR')
      .map((m) => (m.trace as { error: { failure_type: string; message: string; stream_descriptor?: unknown } }).error);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ failure_type: 'transient_error' });
    // The run's failure names no stream, says the address once and the total.
    expect(errors[0]?.stream_descriptor).toBeUndefined();
    expect(errors[0]?.message).toMatch(/^Cannot reach the Data-Read API at http:\/\/127\.0\.0\.1:9: the connection was refused \(ECONNREFUSED\); 1 attempt \(1 \+ max_retries 0\)\. Check base_url and the network\. The sync stops; the next sync resumes from the saved state\.$/);
    // The ERROR trace comes after every INCOMPLETE.
    const last = lines.findLastIndex((m) => m.type === 'TRACE' && (m.trace as { type: string }).type === 'STREAM_STATUS');
    const trace = lines.findIndex((m) => m.type === 'TRACE' && (m.trace as { type: string }).type === 'ERROR');
    expect(trace).toBeGreaterThan(last);
    // The closing LOG counts the streams that failed.
    const logs = lines.filter((m) => m.type === 'LOG').map((m) => m.log as { level: string; message: string });
    expect(logs.at(-1)).toEqual({
      level: 'WARN',
      message: 'Sync ended with 5 failed stream(s): records: contacts 0, conversations 0, stage_events 0, deletions 0, pipeline_stages 0; requests: 1, retries: 0, rate-limit waits: 0.',
    });
    expect(result.stdout + result.stderr).not.toContain(CANARY);
  });
});
