/**
 * The real executables behind a corporate network: the emulator over TLS
 * with a certificate from a throw-away CA, reached through a real forward
 * proxy (test/helpers/forward-proxy.ts) on 127.0.0.1. Airbyte `check` and
 * `read`, the Singer tap and `replicate`, through CONNECT tunnels and
 * absolute-form requests, with and without Basic credentials; the proxy's
 * log shows it carried the traffic, and each replica equals the emulator's
 * dump. Without ca_certificate the TLS emulator fails clearly in both faces;
 * a 407, a proxy that is down and unusable settings are told in plain words;
 * no credential appears in any output. Needs `npm run build`.
 */
import { symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withProxyLab } from '../../helpers/suite.js';
import type { Emulator } from 'data-read-emulator';
import { type TestCa } from '../../helpers/certificates.js';
import { ROOT, SOURCE_BIN, TAP_BIN, connectionStatusOf, parseLines, protocolCheck, runCli, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';
import { closedPort, startForwardProxy, type ForwardProxy } from '../../helpers/forward-proxy.js';
import { docRecipe, runShell } from '../../helpers/readme.js';
import { MemoryDestination, airbyteStateFile, normalizeDump } from '../../helpers/destination.js';
import { dumpLists, replicaAsDump, replicate } from '../../helpers/emulator-runs.js';

const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');
const STREAMS = ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages'] as const;
const PASSWORD = 'Pr0xy:p@ss/w0rd';
const ENCODED = encodeURIComponent(PASSWORD);
const SECRETS = [PASSWORD, ENCODED, Buffer.from(`etl:${PASSWORD}`).toString('base64')];

let ca: TestCa;
let tlsEmu: Emulator;
let plainEmu: Emulator;
let proxy: ForwardProxy;
let authProxy: ForwardProxy;
const dir = tempDir('sdr-proxy-e2e-');
/** Every output of every run, searched for credentials at the end. */
const outputs: string[] = [];

// A frozen clock: reproducible data; limits out of reach because its windows never reset.
const EMULATOR = { frozenClock: true, limits: { perMinute: 10_000_000, perDay: 100_000_000 } };
withProxyLab({ seed: 'proxy-e2e', password: PASSWORD, emulator: EMULATOR }, (lab) => ({ ca, tlsEmu, plainEmu, proxy, authProxy } = lab));

interface Account {
  readonly emu: Emulator;
  readonly id: string;
  readonly key: string;
  config(extra?: Record<string, unknown>): string;
}

let accounts = 0;
function account(emu: Emulator, contacts: number): Account {
  const acc = emu.control.createAccount({ name: `Behind a proxy ${++accounts}` });
  emu.control.seed(acc.id, { contacts });
  const key = emu.control.createKey(acc.id).key;
  let n = 0;
  return {
    emu,
    id: acc.id,
    key,
    config: (extra = {}) => writeJson(dir, `config-${accounts}-${n++}.json`, { api_key: key, base_url: emu.url, page_size: 50, max_concurrent_requests: 3, ...extra }),
  };
}

function change(acc: Account): void {
  const c = acc.emu.control;
  c.advanceClock(60_000);
  c.mutate(acc.id, { op: 'update_contacts', count: 12 });
  c.mutate(acc.id, { op: 'move_contacts', count: 6 });
  c.mutate(acc.id, { op: 'create_contacts', count: 5, withConversation: true });
  c.mutate(acc.id, { op: 'delete_contacts', count: 3 });
  c.mutate(acc.id, { op: 'delete_conversations', count: 2 });
  c.advanceClock(60_000);
}

async function run(bin: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const result = await runCli(bin, args, { env });
  outputs.push(result.stdout, result.stderr);
  return result;
}

const airbyte = (args: string[], env?: Record<string, string>): Promise<CliResult> => run(SOURCE_BIN, args, env);
const tap = (args: string[], env?: Record<string, string>): Promise<CliResult> => run(TAP_BIN, args, env);

function connectionStatus(result: CliResult): { status: string; message: string } {
  expect(protocolCheck('airbyte', result.stdout).errors).toEqual([]);
  return connectionStatusOf(result.stdout);
}

function errorTraces(result: CliResult): { failure_type: string; message: string }[] {
  return parseLines(result.stdout).flatMap((m) =>
    m.type === 'TRACE' && (m.trace as { type: string }).type === 'ERROR' ? [(m.trace as { error: { failure_type: string; message: string } }).error] : [],
  );
}

function logs(result: CliResult): string {
  return parseLines(result.stdout)
    .filter((m) => m.type === 'LOG')
    .map((m) => (m.log as { message: string }).message)
    .join('\n');
}

/** The proxy's log entries since `from`, as "METHOD target status". */
function seen(p: ForwardProxy, from: number): string[] {
  return p.log.slice(from).map((e) => `${e.method} ${e.target.replace(/\?.*$/, '')} ${e.status}`);
}

describe('Airbyte through a CONNECT tunnel (HTTPS_PROXY), the API behind a private CA', () => {
  it('check, a full read and an incremental read: the proxy carried every connection, the replica equals the dump', async () => {
    const acc = account(tlsEmu, 400);
    const config = acc.config({ ca_certificate: ca.caCert });
    const env = { HTTPS_PROXY: proxy.url };
    const start = proxy.log.length;

    const check = await airbyte(['check', '--config', config], env);
    expect(connectionStatus(check)).toEqual({ status: 'SUCCEEDED', message: expect.stringContaining(`"${'Behind a proxy'}`) });

    const replica = new MemoryDestination();
    const full = await airbyte(['read', '--config', config, '--catalog', CATALOG], env);
    expect(full.code, full.stderr).toBe(0);
    expect(protocolCheck('airbyte', full.stdout).errors).toEqual([]);
    expect(logs(full)).toContain(`go through the proxy 127.0.0.1:${proxy.port} (HTTPS_PROXY) through a CONNECT tunnel`);
    const states = replica.applyAirbyte(full.stdout);
    expect(replica.toDump()).toEqual(normalizeDump(acc.emu.control.dump(acc.id)));

    change(acc);
    const state = writeJson(dir, `state-${acc.id}.json`, airbyteStateFile(states));
    const incremental = await airbyte(['read', '--config', config, '--catalog', CATALOG, '--state', state], env);
    expect(incremental.code, incremental.stderr).toBe(0);
    replica.applyAirbyte(incremental.stdout);
    expect(replica.toDump()).toEqual(normalizeDump(acc.emu.control.dump(acc.id)));

    const entries = seen(proxy, start);
    // One tunnel per pooled connection: the check's, then at most max_concurrent_requests per read.
    expect(entries.length).toBeGreaterThanOrEqual(3);
    expect(entries.length).toBeLessThanOrEqual(1 + 3 + 3);
    expect(new Set(entries)).toEqual(new Set([`CONNECT 127.0.0.1:${tlsEmu.port} 200`]));
    process.stderr.write(`proxy (CONNECT) saw for check + full + incremental read: ${JSON.stringify(entries)}\n`);
  });
});

describe('the Singer tap through a proxy that wants Basic credentials (proxy_url from TAP_DATA_READ_* variables)', () => {
  it('a full sync and an incremental one: the credentials went to the proxy, the replica equals the dump', async () => {
    const acc = account(tlsEmu, 250);
    const config = acc.config();
    const env = {
      TAP_DATA_READ_PROXY_URL: `http://etl:${ENCODED}@127.0.0.1:${authProxy.port}`,
      TAP_DATA_READ_CA_CERTIFICATE: ca.caCert,
    };
    const start = authProxy.log.length;
    const replica = new MemoryDestination();
    const full = await tap(['--config', config, '--config', 'ENV'], env);
    expect(full.code, full.stderr).toBe(0);
    expect(protocolCheck('singer', full.stdout).errors).toEqual([]);
    const state1 = replica.applySinger(full.stdout);
    const dump1 = acc.emu.control.dump(acc.id);
    for (const stream of STREAMS) expect({ stream, rows: replica.rows(stream) }).toEqual({ stream, rows: dump1[stream] });

    change(acc);
    const incremental = await tap(['--config', config, '--config', 'ENV', '--state', writeJson(dir, 'singer-state.json', state1)], env);
    expect(incremental.code, incremental.stderr).toBe(0);
    replica.applySinger(incremental.stdout);
    const dump2 = acc.emu.control.dump(acc.id);
    for (const stream of STREAMS) expect({ stream, rows: replica.rows(stream) }).toEqual({ stream, rows: dump2[stream] });

    const entries = authProxy.log.slice(start);
    expect(entries.length).toBeGreaterThanOrEqual(2);
    expect(entries.every((e) => e.method === 'CONNECT' && e.status === 200 && e.authorization === `Basic ${SECRETS[2]}`)).toBe(true);
    expect(full.stderr).toContain(`go through the proxy 127.0.0.1:${authProxy.port} (proxy_url) through a CONNECT tunnel, with the credentials it carries`);
    process.stderr.write(`proxy (Basic auth) saw for two tap runs: ${JSON.stringify(seen(authProxy, start))}\n`);
  });
});

describe('replicate and Airbyte read as absolute-form requests (http_proxy, an http:// API)', () => {
  it('replicate: every request went to the proxy as GET http://host:port/v1/..., the SQLite replica equals the dump', async () => {
    const acc = account(plainEmu, 300);
    const config = acc.config();
    const db = join(dir, 'replica.db');
    const start = authProxy.log.length;
    const requestsBefore = plainEmu.control.stats().total;
    const env = { http_proxy: `http://etl:${ENCODED}@127.0.0.1:${authProxy.port}` };
    const first = await replicate(config, db, { env });
    outputs.push(first.stdout, first.stderr);
    expect(first.code, first.stderr).toBe(0);
    expect(replicaAsDump(db)).toStrictEqual(dumpLists(acc.emu.control.dump(acc.id)));
    change(acc);
    const second = await replicate(config, db, { env });
    outputs.push(second.stdout, second.stderr);
    expect(second.code, second.stderr).toBe(0);
    expect(replicaAsDump(db)).toStrictEqual(dumpLists(acc.emu.control.dump(acc.id)));

    const entries = authProxy.log.slice(start);
    // Every API request the emulator answered came through the proxy, once.
    expect(entries.length).toBe(plainEmu.control.stats().total - requestsBefore);
    expect(entries.every((e) => e.method === 'GET' && e.target.startsWith(`${plainEmu.url}/v1/`) && e.status === 200 && e.host === `127.0.0.1:${plainEmu.port}`)).toBe(true);
    expect(entries.every((e) => e.authorization === `Basic ${SECRETS[2]}`)).toBe(true);
    const paths = [...new Set(entries.map((e) => new URL(e.target).pathname))].sort();
    // The service's description too (the replica's columns): through the same proxy.
    expect(paths).toEqual(['/v1/contacts', '/v1/conversations', '/v1/deletions', '/v1/me', '/v1/openapi.json', '/v1/pipeline_stages', '/v1/stage_events']);
    const shown = entries.slice(0, 2).map((e) => ({ ...e, authorization: e.authorization === undefined ? undefined : 'Basic (the test credentials)' }));
    process.stderr.write(`proxy (absolute-form) saw ${entries.length} requests for two replicate runs, e.g. ${JSON.stringify(shown)}\n`);
  });

  it('Airbyte read: the same replica as without the proxy', async () => {
    const acc = account(plainEmu, 150);
    const start = proxy.log.length;
    const result = await airbyte(['read', '--config', acc.config(), '--catalog', CATALOG], { http_proxy: proxy.url });
    expect(result.code, result.stderr).toBe(0);
    const replica = new MemoryDestination();
    replica.applyAirbyte(result.stdout);
    expect(replica.toDump()).toEqual(normalizeDump(acc.emu.control.dump(acc.id)));
    expect(seen(proxy, start).every((e) => e.startsWith(`GET ${plainEmu.url}/v1/`))).toBe(true);
    expect(proxy.log.length - start).toBeGreaterThan(5);
  });
});

describe('a private CA without a proxy: fails clearly without ca_certificate, works with it, in both faces', () => {
  it('Airbyte: check FAILED and read config_error point to ca_certificate; with it, check and read succeed', async () => {
    const acc = account(tlsEmu, 60);
    const check = await airbyte(['check', '--config', acc.config()]);
    const status = connectionStatus(check);
    expect(status.status).toBe('FAILED');
    expect(status.message).toMatch(/TLS certificate of 127\.0\.0\.1:\d+ is not trusted/);
    expect(status.message).toContain('ca_certificate');
    const read = await airbyte(['read', '--config', acc.config(), '--catalog', CATALOG]);
    expect(read.code).toBe(78);
    const errors = errorTraces(read);
    expect(errors.length).toBeGreaterThan(0);
    expect(new Set(errors.map((e) => e.failure_type))).toEqual(new Set(['config_error']));
    expect(errors[0]?.message).toContain('ca_certificate');

    const wrong = connectionStatus(await airbyte(['check', '--config', acc.config({ ca_certificate: ca.otherCaCert })]));
    expect(wrong).toMatchObject({ status: 'FAILED', message: expect.stringContaining('that ca_certificate holds the certificate authority') });
    const ok = connectionStatus(await airbyte(['check', '--config', acc.config({ ca_certificate: ca.caCert })]));
    expect(ok.status).toBe('SUCCEEDED');
    const good = await airbyte(['read', '--config', acc.config({ ca_certificate: ca.caCert }), '--catalog', CATALOG]);
    expect(good.code, good.stderr).toBe(0);
    const replica = new MemoryDestination();
    replica.applyAirbyte(good.stdout);
    expect(replica.toDump()).toEqual(normalizeDump(acc.emu.control.dump(acc.id)));
  });

  it('Singer: CRITICAL pointing to ca_certificate, exit 78; with it, the replica equals the dump', async () => {
    const acc = account(tlsEmu, 60);
    const failed = await tap(['--config', acc.config()]);
    expect(failed.code).toBe(78);
    expect(failed.stderr).toMatch(/CRITICAL .*TLS certificate of 127\.0\.0\.1:\d+ is not trusted.*ca_certificate/);
    const result = await tap(['--config', acc.config({ ca_certificate: ca.caCert })]);
    expect(result.code, result.stderr).toBe(0);
    expect(protocolCheck('singer', result.stdout).errors).toEqual([]);
    const replica = new MemoryDestination();
    replica.applySinger(result.stdout);
    const dump = acc.emu.control.dump(acc.id);
    for (const stream of STREAMS) expect({ stream, rows: replica.rows(stream) }).toEqual({ stream, rows: dump[stream] });
  });

  it('an unreadable ca_certificate: check FAILED, the tap CRITICAL, each saying what to give', async () => {
    const acc = account(tlsEmu, 1);
    const config = acc.config({ ca_certificate: 'MIIB...just the middle' });
    const status = connectionStatus(await airbyte(['check', '--config', config]));
    expect(status).toMatchObject({ status: 'FAILED', message: expect.stringContaining('ca_certificate must hold one or more PEM certificates') });
    const result = await tap(['--config', config, '--discover']);
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('ca_certificate must hold one or more PEM certificates');
  });
});

describe('when the proxy says no, or is not there', () => {
  it('407 (wrong password): check FAILED and read config_error name the proxy, never the credentials; the tap says the same', async () => {
    const acc = account(tlsEmu, 5);
    const config = acc.config({ ca_certificate: ca.caCert, proxy_url: `http://etl:wrong-${ENCODED}@127.0.0.1:${authProxy.port}` });
    const status = connectionStatus(await airbyte(['check', '--config', config]));
    expect(status.status).toBe('FAILED');
    expect(status.message).toContain(`the proxy 127.0.0.1:${authProxy.port} (proxy_url) did not accept the user name and password given in proxy_url (HTTP 407`);
    const read = await airbyte(['read', '--config', config, '--catalog', CATALOG]);
    expect(read.code).toBe(78);
    expect(new Set(errorTraces(read).map((e) => e.failure_type))).toEqual(new Set(['config_error']));
    expect(errorTraces(read)[0]?.message).toContain('407');
    const singer = await tap(['--config', config]);
    expect(singer.code).toBe(78);
    expect(singer.stderr).toMatch(/CRITICAL .*the proxy 127\.0\.0\.1:\d+ \(proxy_url\) did not accept/);
    for (const r of [read, singer]) expect(r.stdout + r.stderr).not.toContain(`wrong-${ENCODED}`);
  });

  it('a proxy that is down: retried, then a transient_error that names it (read), FAILED (check)', async () => {
    const acc = account(tlsEmu, 5);
    const port = await closedPort();
    const env = { HTTPS_PROXY: `http://etl:${ENCODED}@127.0.0.1:${port}` };
    const config = acc.config({ ca_certificate: ca.caCert, max_retries: 1 });
    const status = connectionStatus(await airbyte(['check', '--config', config], env));
    expect(status.status).toBe('FAILED');
    expect(status.message).toContain(`the proxy 127.0.0.1:${port} (HTTPS_PROXY) refused the connection (ECONNREFUSED)`);
    const read = await airbyte(['read', '--config', config, '--catalog', join(ROOT, 'catalog', 'configured_catalog.json')], env);
    expect(read.code).toBe(75);
    // The proxy is down for every stream alike: one series of retries, one transient_error for the run.
    const errors = errorTraces(read);
    expect(errors.map((e) => e.failure_type)).toEqual(['transient_error']);
    expect(errors[0]?.message).toMatch(new RegExp(`the proxy 127\\.0\\.0\\.1:${port} \\(HTTPS_PROXY\\) refused the connection \\(ECONNREFUSED\\); 2 attempts over .* \\(1 \\+ max_retries 1\\)\\. Check that the proxy`));
    expect(logs(read).match(/retry 1 of 1/g)).toHaveLength(1);
  });

  it('NO_PROXY exempts the API: the proxy named (down) is not used', async () => {
    const acc = account(tlsEmu, 5);
    const port = await closedPort();
    const result = await airbyte(['check', '--config', acc.config({ ca_certificate: ca.caCert })], { HTTPS_PROXY: `http://127.0.0.1:${port}`, NO_PROXY: 'localhost,127.0.0.1' });
    expect(connectionStatus(result).status).toBe('SUCCEEDED');
  });

  it('check tells the route as read does: the proxy it goes through, and ALL_PROXY not read (a WARN before its answer)', async () => {
    const acc = account(plainEmu, 1);
    const config = acc.config();
    const ignored = await airbyte(['check', '--config', config], { ALL_PROXY: `http://127.0.0.1:${await closedPort()}` });
    expect(connectionStatus(ignored).status).toBe('SUCCEEDED');
    expect(logs(ignored)).toContain(`ALL_PROXY is not read: requests to 127.0.0.1:${plainEmu.port} go without a proxy; name the proxy in HTTPS_PROXY or proxy_url.`);
    const through = await airbyte(['check', '--config', config], { HTTP_PROXY: `http://etl:${ENCODED}@127.0.0.1:${authProxy.port}` });
    expect(connectionStatus(through).status).toBe('SUCCEEDED');
    expect(logs(through)).toContain(`go through the proxy 127.0.0.1:${authProxy.port} (HTTP_PROXY) as absolute-form requests, with the credentials it carries.`);
    // With accounts: each key has a client of its own on the same route, told once.
    const many = writeJson(dir, 'config-accounts-route.json', { accounts: [{ name: 'a', api_key: acc.key }, { name: 'b', api_key: account(plainEmu, 1).key }], base_url: plainEmu.url });
    const both = await airbyte(['check', '--config', many], { ALL_PROXY: `http://127.0.0.1:${await closedPort()}` });
    expect(connectionStatus(both).status).toBe('SUCCEEDED');
    expect(logs(both).match(/ALL_PROXY is not read/g)).toHaveLength(1);
  });

  it('unusable settings are told by name: a SOCKS proxy in HTTPS_PROXY or in proxy_url', async () => {
    const acc = account(tlsEmu, 1);
    const fromEnv = connectionStatus(await airbyte(['check', '--config', acc.config({ ca_certificate: ca.caCert })], { HTTPS_PROXY: `socks5://etl:${ENCODED}@127.0.0.1:1080` }));
    expect(fromEnv).toMatchObject({ status: 'FAILED', message: expect.stringContaining('HTTPS_PROXY names a SOCKS proxy (socks5://), which this connector does not support') });
    const fromConfig = connectionStatus(await airbyte(['check', '--config', acc.config({ proxy_url: `socks5://etl:${ENCODED}@127.0.0.1:1080` })]));
    expect(fromConfig).toMatchObject({ status: 'FAILED', message: expect.stringContaining('proxy_url names a SOCKS proxy') });
    // A read: the setting is the whole run's, so one config_error, not one per stream.
    const read = await airbyte(['read', '--config', acc.config({ ca_certificate: ca.caCert }), '--catalog', join(ROOT, 'catalog', 'configured_catalog.json')], {
      HTTPS_PROXY: `socks5://etl:${ENCODED}@127.0.0.1:1080`,
    });
    expect(read.code).toBe(78);
    expect(errorTraces(read)).toEqual([expect.objectContaining({ failure_type: 'config_error', message: expect.stringContaining('HTTPS_PROXY names a SOCKS proxy') })]);
  });
});

describe('the recipe of docs/networking.md', () => {
  it('runs as written (its proxy address replaced by this test\'s proxy): FAILED without the CA, SUCCEEDED with it and through the proxy', async () => {
    const recipeProxy = await startForwardProxy({ auth: { user: 'etl', password: 's3cret' } });
    const checkout = tempDir('sdr-recipe-');
    for (const name of ['bin', 'scripts', 'packages']) symlinkSync(join(ROOT, name), join(checkout, name));
    const script = docRecipe('docs/networking.md', 'private-ca-proxy').replace('proxy.example.com:3128', `127.0.0.1:${recipeProxy.port}`);
    try {
      const result = await runShell(script, { cwd: checkout, env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` } });
      outputs.push(result.stdout, result.stderr);
      expect(result.code, result.stderr).toBe(0);
      const statuses = parseLines(result.stdout).filter((m) => m.type === 'CONNECTION_STATUS').map((m) => (m as { connectionStatus: { status: string; message: string } }).connectionStatus);
      expect(statuses.map((s) => s.status)).toEqual(['FAILED', 'SUCCEEDED', 'SUCCEEDED']);
      expect(statuses[0]?.message).toContain('ca_certificate');
      expect(recipeProxy.log.map((e) => [e.method, e.status, e.authorization])).toEqual([['CONNECT', 200, `Basic ${Buffer.from('etl:s3cret').toString('base64')}`]]);
      expect(result.stdout + result.stderr).not.toContain('s3cret');
    } finally {
      await recipeProxy.close();
    }
  });
});

describe('secrets', () => {
  it('the proxy password appears in no output of any run above (as written, percent-encoded, or as the Basic token)', () => {
    expect(outputs.length).toBeGreaterThan(20);
    const all = outputs.join('\n');
    for (const secret of SECRETS) expect(all).not.toContain(secret);
  });
});
