/**
 * A base_url that points at a website (a company's site, the API's
 * documentation, a login portal), through the real executables against a
 * real local server that answers every request with a small HTML page:
 * after the retries of the account check, `check`, `read`, the tap and
 * `replicate` say that base_url does not seem to be the Data-Read API (a
 * config_error, exit 78), not that the service broke its contract, and quote
 * what came back without the key.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, SOURCE_BIN, TAP_BIN, connectionStatusOf, parseLines, protocolCheck, runCli, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';

const KEY = 'dr_live_123456789abcdef';
const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');

let server: Server;
let base: string;
let dir: string;
let config: string;
/** The paths asked of the website, in order. */
const asked: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    asked.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    // A site that greets with what it was sent: the key must not be quoted back.
    res.end(`<!doctype html><title>Acme</title>Hi ${req.headers.authorization ?? 'guest'}! <p>${'Our products. '.repeat(20)}</p>`);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  dir = tempDir('website-');
  // max_retries 1: the account check is still retried (a gateway's passing page must pass), once for a short test.
  config = writeJson(dir, 'config.json', { api_key: KEY, base_url: base, max_retries: 1, use_service_schema: false });
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((done) => (server === undefined ? done() : server.close(() => done())));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const SAYS = new RegExp(
  '^The address in base_url \\(http://127\\.0\\.0\\.1:\\d+\\) does not seem to be the Data-Read API: GET /v1/me answered HTTP 200 with a body that is not the JSON promised: ' +
    'the body is not valid JSON; content-type text/html; charset=utf-8, \\d+ bytes, beginning "<!doctype html><title>Acme</title>Hi Bearer \\*\\*\\*! <p>Our products\\. .*" ' +
    '\\(2 attempts over [^)]+\\)\\. Check base_url: it must be the address before /v1, for example https://api\\.example\\.com\\.$',
);

function expectNoKey(run: CliResult, ...more: string[]): void {
  for (const text of [run.stdout, run.stderr, ...more]) {
    expect(text).not.toContain(KEY);
    expect(text).not.toContain('123456789abcdef');
    expect(text).not.toContain('broke its API contract');
  }
}

/** The summary file's failure, as written. */
function summaryOf(path: string): { status: string; exit_code: number; failure_type: string; message: string } {
  return JSON.parse(readFileSync(path, 'utf8')) as { status: string; exit_code: number; failure_type: string; message: string };
}

describe('a base_url that points at a website', () => {
  it('check: CONNECTION_STATUS FAILED saying base_url does not seem to be the API, after the retries of GET /v1/me', async () => {
    asked.length = 0;
    const run = await runCli(SOURCE_BIN, ['check', '--config', config]);
    expect(run.code, run.stderr.slice(-800)).toBe(0);
    expect(protocolCheck('airbyte', run.stdout).errors).toEqual([]);
    const status = connectionStatusOf(run.stdout);
    expect(status.status).toBe('FAILED');
    expect(status.message).toMatch(SAYS);
    expect(asked).toEqual(['/v1/me', '/v1/me']);
    expectNoKey(run);
  });

  it('read: exit 78, one config_error trace with the same words', async () => {
    const summary = join(dir, 'read-summary.json');
    const run = await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', CATALOG, '--summary', summary]);
    expect(run.code, run.stderr.slice(-800)).toBe(78);
    expect(protocolCheck('airbyte', run.stdout).errors).toEqual([]);
    const traces = parseLines(run.stdout).filter((m) => m.type === 'TRACE' && (m.trace as { type: string }).type === 'ERROR');
    expect(traces).toHaveLength(1);
    const error = (traces[0]?.trace as { error: { failure_type: string; message: string } }).error;
    expect(error.failure_type).toBe('config_error');
    expect(error.message).toMatch(SAYS);
    expect(summaryOf(summary)).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error', message: expect.stringMatching(SAYS) });
    expectNoKey(run, readFileSync(summary, 'utf8'));
  });

  it('the tap: exit 78, a CRITICAL line with the same words, and so its --summary', async () => {
    const summary = join(dir, 'tap-summary.json');
    const run = await runCli(TAP_BIN, ['--config', config, '--summary', summary]);
    expect(run.code, run.stderr.slice(-800)).toBe(78);
    const critical = run.stderr.split('\n').filter((l) => l.includes(' CRITICAL tap-data-read: '));
    expect(critical.map((l) => l.replace(/^.* CRITICAL tap-data-read: /, ''))).toContainEqual(expect.stringMatching(SAYS));
    expect(summaryOf(summary)).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error', message: expect.stringMatching(SAYS) });
    expectNoKey(run, readFileSync(summary, 'utf8'));
  });

  it('replicate: exit 78, its summary says the same words', async () => {
    const summary = join(dir, 'replicate-summary.json');
    const run = await runCli(SOURCE_BIN, ['replicate', '--config', config, '--db', join(dir, 'copy.db'), '--summary', summary]);
    expect(run.code, run.stderr.slice(-800)).toBe(78);
    expect(run.stderr).toContain('does not seem to be the Data-Read API');
    expect(summaryOf(summary)).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error', message: expect.stringMatching(SAYS) });
    expectNoKey(run, readFileSync(summary, 'utf8'));
  });
});
