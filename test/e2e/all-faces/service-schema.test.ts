/**
 * Schemas from the service itself, through the real executables: against the
 * emulator, discover declares pipeline_stages' fields typed from
 * /v1/openapi.json, and a field the service adds (at run time, no release)
 * appears in discover, in Singer SCHEMA and in both faces' records, exactly;
 * check reports the drift; use_service_schema false pins the built-in
 * schemas. Against a small server, each way the description can fail falls
 * back to the built-in schemas with one WARN; a rejected key fails discover.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { withEmulatorAccount } from '../../helpers/suite.js';
import type { ExtraField } from 'data-read-emulator';
import { parseExactJson } from '../../../src/exact-json.js';
import { ROOT, SOURCE_BIN, TAP_BIN, parseLines, protocolCheckAsync, runCli, writeJson } from '../../helpers/cli.js';
import type { Account } from '../../helpers/emulator-runs.js';
import { EMULATOR_STAGE_PROPERTIES } from '../../helpers/stage-fields.js';

type Json = Record<string, unknown>;
type Catalog = { streams: { name: string; json_schema: { properties: Record<string, Json> } }[] };

const LIFETIME: ExtraField = { list: 'contacts', name: 'lifetime_value', type: 'integer', description: 'Lifetime value, in cents' };

let account: Account;
let dir: string;

withEmulatorAccount('service-schema-', { contacts: 120, seed: 23 }, (s) => ({ account, dir } = s));

function logs(stdout: string, level?: string): string[] {
  return parseLines(stdout).flatMap((m) => {
    const log = m.log as { level: string; message: string } | undefined;
    return m.type === 'LOG' && log !== undefined && (level === undefined || log.level === level) ? [log.message] : [];
  });
}

function catalogOf(stdout: string): Catalog {
  const message = parseLines(stdout).find((m) => m.type === 'CATALOG') as { catalog: Catalog } | undefined;
  if (message === undefined) throw new Error(`no CATALOG in ${stdout.slice(0, 500)}`);
  return message.catalog;
}

const propsOf = (catalog: Catalog, stream: string): Record<string, Json> => catalog.streams.find((s) => s.name === stream)?.json_schema.properties ?? {};

/** RECORD lines of a stream, parsed keeping every number as written. */
function exactRecords(stdout: string, stream: string, singer: boolean): Json[] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{"type":"RECORD"'))
    .map((l) => parseExactJson(l) as Json)
    .filter((m) => (singer ? m.stream : (m.record as Json).stream) === stream)
    .map((m) => (singer ? m.record : (m.record as Json).data) as Json);
}

/** What the emulator serves for a field, by record id, as JSON text (exact). */
function servedValues(list: 'contacts', field: string): Map<string, string> {
  return new Map(account.dump()[list].map((r) => [r.id, JSON.stringify((r as Json)[field])]));
}

describe('against the emulator', () => {
  it('discover declares the typed pipeline_stages fields the service describes (one request), and says so in one INFO', async () => {
    account.emulator.control.resetStats();
    const run = await runCli(SOURCE_BIN, ['discover', '--config', account.config(dir)]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(account.emulator.control.stats()).toMatchObject({ total: 1, byPath: { '/v1/openapi.json': { 200: 1 } } });
    expect((await protocolCheckAsync('airbyte', run.stdout)).errors).toEqual([]);
    expect(logs(run.stdout)).toEqual([
      "Stream schemas: the built-in ones merged with the service's description (OpenAPI 3.1.0, GET /v1/openapi.json): fields added: pipeline_stages + key, name, pipeline_id, position, outcome.",
    ]);
    const catalog = catalogOf(run.stdout);
    expect(propsOf(catalog, 'pipeline_stages')).toEqual(EMULATOR_STAGE_PROPERTIES);
    // Every other stream as built in: the emulator describes what the connector knows.
    const checkedIn = JSON.parse(readFileSync(join(ROOT, 'catalog', 'discovered_catalog.json'), 'utf8')) as Catalog;
    expect(catalog.streams.filter((s) => s.name !== 'pipeline_stages')).toEqual(checkedIn.streams.filter((s) => s.name !== 'pipeline_stages'));
  });

  it('use_service_schema false: the built-in schemas, no request for the description', async () => {
    account.emulator.control.resetStats();
    const run = await runCli(SOURCE_BIN, ['discover', '--config', account.config(dir, { use_service_schema: false })]);
    expect(run.code).toBe(0);
    const checkedIn = JSON.parse(readFileSync(join(ROOT, 'catalog', 'discovered_catalog.json'), 'utf8')) as unknown;
    expect(parseLines(run.stdout)).toEqual([{ type: 'CATALOG', catalog: checkedIn }]);
    expect(account.emulator.control.stats().total).toBe(0);
  });

  describe('a field the service adds, without a connector release', () => {
    let airbyteCatalog: Catalog;
    beforeAll(async () => {
      account.emulator.control.addExtraField(LIFETIME);
      account.mutate({ op: 'update_contacts', count: 10 });
    });

    it('check: one drift line naming it (INFO: the service only adds fields)', async () => {
      const run = await runCli(SOURCE_BIN, ['check', '--config', account.config(dir)]);
      const [drift, status] = parseLines(run.stdout) as [{ log: { level: string; message: string } }, { connectionStatus: { status: string } }];
      expect(status.connectionStatus.status).toBe('SUCCEEDED');
      expect(drift.log).toEqual({
        level: 'INFO',
        message:
          'Schema drift: the service describes 6 fields the built-in schemas lack: contacts.lifetime_value, pipeline_stages.key, pipeline_stages.name, ' +
          'pipeline_stages.pipeline_id, pipeline_stages.position and pipeline_stages.outcome (discover declares them).',
      });
    });

    it('Airbyte: discover declares it typed; a read of that catalog passes its values exactly and warns of nothing', async () => {
      const run = await runCli(SOURCE_BIN, ['discover', '--config', account.config(dir)]);
      expect(run.code).toBe(0);
      airbyteCatalog = catalogOf(run.stdout);
      expect(propsOf(airbyteCatalog, 'contacts').lifetime_value).toEqual({ type: ['null', 'integer'], description: 'Lifetime value, in cents' });
      expect(Object.keys(propsOf(airbyteCatalog, 'contacts')).at(-1)).toBe('lifetime_value');

      const configured = writeJson(dir, 'configured.json', {
        streams: airbyteCatalog.streams.map((stream) => ({ stream, sync_mode: 'full_refresh', destination_sync_mode: 'overwrite' })),
      });
      const read = await runCli(SOURCE_BIN, ['read', '--config', account.config(dir), '--catalog', configured]);
      expect(read.code, read.stdout.slice(-600)).toBe(0);
      expect((await protocolCheckAsync('airbyte', read.stdout)).errors).toEqual([]);
      expect(logs(read.stdout, 'WARN')).toEqual([]);
      const served = servedValues('contacts', 'lifetime_value');
      const records = exactRecords(read.stdout, 'contacts', false);
      expect(records.length).toBe(served.size);
      for (const r of records) expect(JSON.stringify(r.lifetime_value), String(r.id)).toBe(served.get(String(r.id)));
      expect(records.some((r) => /^\d{16,}$/.test(JSON.stringify(r.lifetime_value)))).toBe(true);
    });

    it('Singer: --discover declares it; SCHEMA carries it; records pass singer-check (schema, formats, enums) with exact values', async () => {
      const config = account.config(dir);
      const discovered = await runCli(TAP_BIN, ['--config', config, '--discover']);
      expect(discovered.code, discovered.stderr).toBe(0);
      expect(discovered.stderr).toMatch(/INFO tap-data-read: Stream schemas: the built-in ones merged with the service's description .* contacts \+ lifetime_value; pipeline_stages \+ key, name/);
      const catalog = writeJson(dir, 'singer-catalog.json', discovered.stdout);
      const sync = await runCli(TAP_BIN, ['--config', config, '--catalog', catalog]);
      expect(sync.code, sync.stderr).toBe(0);
      const summary = await protocolCheckAsync('singer', sync.stdout);
      expect(summary.errors).toEqual([]);
      const schemas = parseLines(sync.stdout).filter((m) => m.type === 'SCHEMA') as { stream: string; schema: { properties: Record<string, Json> } }[];
      expect(schemas.find((s) => s.stream === 'contacts')?.schema.properties.lifetime_value).toEqual({ type: ['null', 'integer'], description: 'Lifetime value, in cents' });
      expect(schemas.find((s) => s.stream === 'pipeline_stages')?.schema.properties.position).toEqual({ type: 'integer', description: 'Position of the stage in its funnel, from 0' });
      const served = servedValues('contacts', 'lifetime_value');
      const synced = exactRecords(sync.stdout, 'contacts', true);
      expect(synced.length).toBe(served.size);
      for (const r of synced) expect(JSON.stringify(r.lifetime_value)).toBe(served.get(String(r.id)));

      // Without a catalog, the tap declares what discover would.
      const all = await runCli(TAP_BIN, ['--config', config]);
      expect(all.code).toBe(0);
      expect((await protocolCheckAsync('singer', all.stdout)).errors).toEqual([]);
      const allSchemas = parseLines(all.stdout).filter((m) => m.type === 'SCHEMA') as { stream: string; schema: { properties: Record<string, Json> } }[];
      expect(allSchemas.find((s) => s.stream === 'contacts')?.schema.properties).toHaveProperty('lifetime_value');
    });

    it('read with the catalog discovered before the field appeared: records pass as received, the field undeclared, no WARN', async () => {
      const old = JSON.parse(readFileSync(join(ROOT, 'catalog', 'configured_catalog.json'), 'utf8')) as { streams: { stream: { name: string } }[] };
      const configured = writeJson(dir, 'old-configured.json', { streams: old.streams.filter((s) => s.stream.name === 'contacts') });
      const read = await runCli(SOURCE_BIN, ['read', '--config', account.config(dir), '--catalog', configured]);
      expect(read.code).toBe(0);
      expect(logs(read.stdout, 'WARN')).toEqual([]);
      expect(exactRecords(read.stdout, 'contacts', false).every((r) => Object.hasOwn(r, 'lifetime_value'))).toBe(true);
    });
  });
});

/** A small service: /v1/openapi.json answered by `answer`; everything else 404. */
async function describedBy(answer: (res: import('node:http').ServerResponse) => void): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    if (req.url === '/v1/openapi.json') answer(res);
    else res.writeHead(404, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ type: 'about:blank', title: 'Not Found', status: 404, detail: 'no such path', request_id: 'r1' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const json = (status: number, body: unknown, type = 'application/json') => (res: import('node:http').ServerResponse): void => {
  res.writeHead(status, { 'content-type': type }).end(typeof body === 'string' ? body : JSON.stringify(body));
};

describe('a description that cannot be had: the built-in schemas, one WARN saying why', () => {
  const checkedIn = (): unknown => JSON.parse(readFileSync(join(ROOT, 'catalog', 'discovered_catalog.json'), 'utf8'));

  it.each([
    ['404', json(404, { type: 'about:blank', title: 'Not Found', status: 404, detail: 'no such path', request_id: 'r2' }, 'application/problem+json'), /answered HTTP 404/],
    ['not JSON', json(200, '<html><body>Maintenance</body></html>', 'text/html'), /body that is not the JSON promised/],
    ['not OpenAPI 3.x', json(200, { swagger: '2.0', info: { title: 'old' }, paths: {} }), /Swagger 2\.0 document, not OpenAPI 3\.x/],
    ['an unknown shape', json(200, { openapi: '3.0.3', info: { title: 'x', version: '1' }, paths: { '/v1/contacts': { get: { responses: { 200: { description: 'ok' } } } } } }), /its shape is not the expected one/],
    ['a timeout', () => undefined, /no response|timed out|timeout/i],
  ])('%s', async (_name, answer, why) => {
    const { url, server } = await describedBy(answer);
    try {
      const config = writeJson(dir, 'broken.json', { api_key: 'drk_live_BROKENDESCRIPTION', base_url: url, max_retries: 0, request_timeout_seconds: 1 });
      const airbyte = await runCli(SOURCE_BIN, ['discover', '--config', config]);
      expect(airbyte.code, airbyte.stdout).toBe(0);
      expect((await protocolCheckAsync('airbyte', airbyte.stdout)).errors).toEqual([]);
      const warns = logs(airbyte.stdout, 'WARN');
      expect(warns).toHaveLength(1);
      expect(warns[0]).toMatch(/^Using the built-in stream schemas: the service's description cannot be used\./);
      expect(warns[0]).toMatch(why);
      expect(logs(airbyte.stdout)).toHaveLength(1);
      expect(catalogOf(airbyte.stdout)).toEqual(checkedIn());

      const singer = await runCli(TAP_BIN, ['--config', config, '--discover']);
      expect(singer.code).toBe(0);
      const lines = singer.stderr.split('\n').filter((l) => l !== '');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/ WARNING tap-data-read: Using the built-in stream schemas/);
      const pinned = await runCli(TAP_BIN, ['--config', writeJson(dir, 'pinned.json', { api_key: 'drk_live_BROKENDESCRIPTION', base_url: url, use_service_schema: false }), '--discover']);
      expect(JSON.parse(singer.stdout)).toEqual(JSON.parse(pinned.stdout));
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('a description refused to a key that reads the data (403): every face goes on with the built-in schemas', async () => {
    const WATERMARK = '2026-03-01T00:00:00.000Z';
    const problem = (status: number, detail: string) => JSON.stringify({ type: 'about:blank', title: status === 403 ? 'Forbidden' : 'Not Found', status, detail, request_id: 'r9' });
    const server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const reply = (status: number, body: string, type = 'application/json'): void => void res.writeHead(status, { 'content-type': type }).end(body);
      if (path === '/v1/openapi.json') reply(403, problem(403, 'the description needs the docs:read scope'), 'application/problem+json');
      else if (path === '/v1/me') reply(200, JSON.stringify({ account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 1000, per_day: 100_000 } }));
      else if (path === '/v1/pipeline_stages' || !['/v1/contacts', '/v1/conversations', '/v1/stage_events', '/v1/deletions'].includes(path)) reply(404, problem(404, 'no such path'), 'application/problem+json');
      else {
        const data = path === '/v1/contacts' ? [{ id: 'c1', updated_at: '2026-02-01T00:00:00.000Z', name: 'Ana' }] : [];
        reply(200, JSON.stringify({ data, next_cursor: null, has_more: false, sync_watermark: WATERMARK }));
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const config = writeJson(dir, 'description-refused.json', { api_key: 'drk_live_DESCRIPTIONREFUSED', base_url: url });
      const refused = /^Using the built-in stream schemas: the service's description cannot be used\. GET \/v1\/openapi\.json answered HTTP 403 though \/v1\/me takes the key: the service does not show its description to this key\. The service said: "Forbidden: the description needs the docs:read scope" \(request_id r9\)\./;

      const airbyte = await runCli(SOURCE_BIN, ['discover', '--config', config]);
      expect(airbyte.code, airbyte.stdout).toBe(0);
      expect((await protocolCheckAsync('airbyte', airbyte.stdout)).errors).toEqual([]);
      expect(logs(airbyte.stdout, 'WARN')).toEqual([expect.stringMatching(refused)]);
      expect(catalogOf(airbyte.stdout)).toEqual(JSON.parse(readFileSync(join(ROOT, 'catalog', 'discovered_catalog.json'), 'utf8')));

      const discovered = await runCli(TAP_BIN, ['--config', config, '--discover']);
      expect(discovered.code, discovered.stderr).toBe(0);
      const tap = await runCli(TAP_BIN, ['--config', config]);
      expect(tap.code, tap.stderr).toBe(0);
      expect((await protocolCheckAsync('singer', tap.stdout)).errors).toEqual([]);
      expect(parseLines(tap.stdout).filter((m) => m.type === 'RECORD').map((m) => (m.record as Json).id)).toEqual(['c1']);
      expect(tap.stderr).toMatch(/WARNING tap-data-read: Using the built-in stream schemas: .*answered HTTP 403 though \/v1\/me takes the key/);

      const replica = await runCli(SOURCE_BIN, ['replicate', '--config', config, '--db', join(dir, 'description-refused.db')]);
      expect(replica.code, replica.stderr).toBe(0);
      expect(replica.stderr).toMatch(/WARN source-data-read: Using the built-in stream schemas: .*answered HTTP 403 though \/v1\/me takes the key/);
      expect(replica.stderr).toMatch(/contacts 1 rows?/);
      expect(airbyte.stdout + discovered.stderr + tap.stdout + tap.stderr + replica.stderr).not.toContain('drk_live_DESCRIPTIONREFUSED');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('a rejected key is the one thing that fails discover (config_error; CRITICAL for the tap)', async () => {
    const { url, server } = await describedBy(json(401, { type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'invalid API key', request_id: 'r3' }, 'application/problem+json'));
    try {
      const config = writeJson(dir, 'rejected.json', { api_key: 'drk_live_REJECTEDKEY', base_url: url });
      const airbyte = await runCli(SOURCE_BIN, ['discover', '--config', config]);
      expect(airbyte.code).toBe(78);
      expect((await protocolCheckAsync('airbyte', airbyte.stdout)).errors).toEqual([]);
      const trace = parseLines(airbyte.stdout).find((m) => m.type === 'TRACE') as { trace: { error: { failure_type: string; message: string } } };
      expect(trace.trace.error.failure_type).toBe('config_error');
      expect(trace.trace.error.message).toMatch(/did not accept the API key \(HTTP 401\)/);
      const singer = await runCli(TAP_BIN, ['--config', config, '--discover']);
      expect(singer.code).toBe(78);
      expect(singer.stdout).toBe('');
      expect(singer.stderr).toMatch(/CRITICAL tap-data-read: The Data-Read API did not accept the API key \(HTTP 401\)/);
      expect(airbyte.stdout + airbyte.stderr + singer.stderr).not.toContain('drk_live_REJECTEDKEY');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
