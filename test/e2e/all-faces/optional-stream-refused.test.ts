/**
 * A service that refuses `/v1/pipeline_stages` to the key (HTTP 403: a plan
 * without that resource; the API description shows neither its payload nor
 * its statuses) while the documented lists serve it: through the real
 * executables against a real local server, every other stream is read to
 * its end (all its records, its watermark saved), and the run ends with the
 * one config_error (78) of pipeline_stages. And a key the service knows
 * (/v1/me answers) while every list refuses it (403: a plan without the
 * data): `check` says FAILED, as the first sync would fail.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, SOURCE_BIN, TAP_BIN, connectionStatusOf, parseLines, protocolCheck, runCli, tempDir, writeJson } from '../../helpers/cli.js';

const KEY = 'dr_live_optionalrefused0123';
/** A key /v1/me answers for, to which every list answers 403. */
const NO_DATA_KEY = 'dr_live_plannodata4567';
const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');
const WATERMARK = '2026-03-01T00:00:00.000Z';
/** 60 contacts, served 5 a page: twelve pages, read side by side with the refused stream. */
const CONTACTS = Array.from({ length: 60 }, (_, i) => ({ id: `c${String(i).padStart(3, '0')}`, updated_at: '2026-02-01T00:00:00.000Z', name: `Contact ${i}` }));
const PAGE = 5;

let server: Server;
let dir: string;
let config: string;
let noDataConfig: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const send = (status: number, body: unknown, type = 'application/json'): void => void res.writeHead(status, { 'content-type': type }).end(JSON.stringify(body));
    const problem = (status: number, title: string, detail: string): void => send(status, { type: 'about:blank', title, status, detail, request_id: 'r7' }, 'application/problem+json');
    if (url.pathname === '/v1/me') return send(200, { account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 1000, per_day: 100_000 } });
    if (req.headers.authorization === `Bearer ${NO_DATA_KEY}`) return problem(403, 'Forbidden', 'the plan does not include the data API');
    if (url.pathname === '/v1/pipeline_stages') return problem(403, 'Forbidden', 'the plan has no access to pipeline stages');
    if (!['/v1/contacts', '/v1/conversations', '/v1/stage_events', '/v1/deletions'].includes(url.pathname)) return problem(404, 'Not Found', 'no such path');
    const list = url.pathname === '/v1/contacts' ? CONTACTS : [];
    const from = Number(url.searchParams.get('cursor') ?? '0');
    const data = list.slice(from, from + PAGE);
    const more = from + PAGE < list.length;
    return send(200, { data, next_cursor: more ? String(from + PAGE) : null, has_more: more, sync_watermark: WATERMARK });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  dir = tempDir('optional-refused-');
  const base_url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  config = writeJson(dir, 'config.json', { api_key: KEY, base_url, use_service_schema: false });
  noDataConfig = writeJson(dir, 'no-data.json', { api_key: NO_DATA_KEY, base_url, use_service_schema: false });
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((done) => (server === undefined ? done() : server.close(() => done())));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const ids = (records: unknown[]): string[] => records.map((r) => (r as { id: string }).id).sort();

describe('a 403 on /v1/pipeline_stages alone', () => {
  it('Airbyte read: every contact and every other watermark, then the one config_error of pipeline_stages (78)', async () => {
    const run = await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', CATALOG]);
    expect(run.code, run.stderr).toBe(78);
    expect(protocolCheck('airbyte', run.stdout).errors).toEqual([]);
    const messages = parseLines(run.stdout);
    const records = messages.filter((m) => m.type === 'RECORD').map((m) => m.record as { stream: string; data: unknown });
    expect(ids(records.filter((r) => r.stream === 'contacts').map((r) => r.data))).toEqual(ids(CONTACTS));
    const watermarks = new Map<string, unknown>();
    for (const m of messages) {
      const state = m.state as { stream?: { stream_descriptor: { name: string }; stream_state: { sync_watermark?: string } } } | undefined;
      if (m.type === 'STATE' && state?.stream) watermarks.set(state.stream.stream_descriptor.name, state.stream.stream_state.sync_watermark);
    }
    expect(Object.fromEntries(watermarks)).toEqual({ contacts: WATERMARK, conversations: WATERMARK, stage_events: WATERMARK, deletions: WATERMARK });
    const errors = messages.filter((m) => m.type === 'TRACE' && (m.trace as { type: string }).type === 'ERROR').map((m) => (m.trace as { error: { failure_type: string; message: string; stream_descriptor?: { name: string } } }).error);
    expect(errors.map((e) => [e.stream_descriptor?.name, e.failure_type])).toEqual([['pipeline_stages', 'config_error']]);
    expect(errors[0]?.message).toMatch(/HTTP 403.*the plan has no access to pipeline stages/);
    expect(run.stdout + run.stderr).not.toContain(KEY);
  });

  it('the tap: every contact, then CRITICAL for pipeline_stages (78)', async () => {
    const run = await runCli(TAP_BIN, ['--config', config]);
    expect(run.code, run.stderr).toBe(78);
    expect(protocolCheck('singer', run.stdout).errors).toEqual([]);
    const records = parseLines(run.stdout).filter((m) => m.type === 'RECORD' && m.stream === 'contacts').map((m) => m.record);
    expect(ids(records)).toEqual(ids(CONTACTS));
    expect(run.stderr).toMatch(/CRITICAL tap-data-read: pipeline_stages: .*HTTP 403/);
  });

  it('replicate: every contact committed with its watermark, then 78 naming pipeline_stages', async () => {
    const db = join(dir, 'replica.db');
    const run = await runCli(SOURCE_BIN, ['replicate', '--config', config, '--db', db]);
    expect(run.code, run.stderr).toBe(78);
    expect(run.stderr).toMatch(/pipeline_stages/);
    const file = new DatabaseSync(db, { readOnly: true });
    try {
      expect(ids(file.prepare('SELECT id FROM contacts').all())).toEqual(ids(CONTACTS));
    } finally {
      file.close();
    }
  });
});

describe('a key /v1/me answers for while the lists refuse it (403)', () => {
  it('check: FAILED naming the account, the list and the service\'s words; the key of the other plan: SUCCEEDED', async () => {
    const refused = await runCli(SOURCE_BIN, ['check', '--config', noDataConfig]);
    expect(refused.code, refused.stderr).toBe(0);
    expect(protocolCheck('airbyte', refused.stdout).errors).toEqual([]);
    const status = connectionStatusOf(refused.stdout);
    expect(status.status).toBe('FAILED');
    expect(status.message).toMatch(/The key works for account "Acme" \(\/v1\/me\), but reading its data failed \(\/v1\/contacts\): .*HTTP 403.*the plan does not include the data API/);
    expect(refused.stdout + refused.stderr).not.toContain(NO_DATA_KEY);
    // /v1/pipeline_stages alone refused: the lists check reads serve the key.
    expect(connectionStatusOf((await runCli(SOURCE_BIN, ['check', '--config', config])).stdout).status).toBe('SUCCEEDED');
  });
});
