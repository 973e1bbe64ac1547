/**
 * Many accounts and the service down (connector contract, "Many accounts";
 * src/engine/service-outage.ts), through the real executables of each face
 * that reads accounts (Airbyte read, the tap's sync, replicate):
 * - the service unreachable (a closed port): the first two accounts retry and
 *   fail, the others are not tried, each named with why in the error and the
 *   summary (status not_tried), 75, their states unchanged;
 * - the service answering 503 to everything: the same, each account after the
 *   first two probed once (one /v1/me, no retries) before it is not tried;
 * - two accounts whose own /v1/me answers 500 (a tenant broken on the
 *   service's side; a proxy in front of the emulator answers for them): the
 *   next account's probe is answered, and every other account is read;
 * - keys refused (401) in a row stop nothing: every other account is read.
 * Retries are kept short with max_retries 1 (one wait of a second or so).
 */
import { readFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from 'data-read-emulator';
import type { RunSummary } from '../../../src/report/run-report.js';
import { replicaStates } from '../../../src/replica/records.js';
import { SOURCE_BIN, TAP_BIN, parseLines, runCli, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';
import { LIMITS_OUT_OF_REACH, requireBuild } from '../../helpers/emulator-runs.js';
import { closedPort } from '../../helpers/forward-proxy.js';

type Face = 'read' | 'tap' | 'replicate';
const FACES: readonly Face[] = ['read', 'tap', 'replicate'];
const NAMES = ['acc-1', 'acc-2', 'acc-3', 'acc-4', 'acc-5', 'acc-6'];

let emulator: Emulator;
let dir: string;
let down: string;
let files = 0;
const keys = new Map<string, string>();
const revoked = new Map<string, string>();

beforeAll(async () => {
  requireBuild();
  dir = tempDir('many-accounts-outage-');
  down = `http://127.0.0.1:${await closedPort()}`;
  emulator = await startEmulator({ host: '127.0.0.1', port: 0, seed: 57, frozenClock: true, limits: LIMITS_OUT_OF_REACH });
  for (const name of NAMES) {
    const account = emulator.control.createAccount({ name: `Tenant ${name}` });
    keys.set(name, emulator.control.createKey(account.id).key);
    const gone = emulator.control.createKey(account.id);
    emulator.control.revokeKey(gone.id);
    revoked.set(name, gone.key);
    emulator.control.seed(account.id, { contacts: 12 });
  }
});

afterAll(async () => {
  await emulator?.close();
});

/** A config of every account, one at a time (the order of their ends is theirs), retries short. */
function config(baseUrl: string, key: (name: string) => string = (name) => keys.get(name) as string): string {
  return writeJson(dir, `config-${++files}.json`, {
    base_url: baseUrl,
    use_service_schema: false,
    max_concurrent_accounts: 1,
    max_retries: 1,
    page_size: 50,
    accounts: NAMES.map((name) => ({ name, api_key: key(name) })),
  });
}

let catalogPath: Promise<string> | undefined;
/**
 * The configured catalog of every stream, as discover declares it with accounts (pinned schemas: no request).
 * Made once: the faces' tests run together and share it.
 */
function catalog(): Promise<string> {
  catalogPath ??= discoverCatalog();
  return catalogPath;
}

async function discoverCatalog(): Promise<string> {
  const discovered = await runCli(SOURCE_BIN, ['discover', '--config', config(down)]);
  expect(discovered.code, discovered.stderr).toBe(0);
  const streams = (parseLines(discovered.stdout).find((m) => m.type === 'CATALOG')?.catalog as { streams: { supported_sync_modes: string[] }[] }).streams;
  return writeJson(dir, 'catalog.json', {
    streams: streams.map((stream) => ({
      stream,
      sync_mode: stream.supported_sync_modes.includes('incremental') ? 'incremental' : 'full_refresh',
      destination_sync_mode: 'append_dedup',
      primary_key: [['account'], ['id']],
    })),
  });
}

interface Run extends CliResult {
  readonly summary: RunSummary;
  /** Each stream's state of every account the run ends with (the input's when it wrote none). */
  readonly states: Map<string, Record<string, unknown>>;
}

/** One run of `face`; `db` the replica's file (replicate), `states` the input state (read and the tap), by stream. */
async function run(face: Face, cfg: string, db: string, states?: Map<string, Record<string, unknown>>): Promise<Run> {
  const summaryPath = join(dir, `summary-${++files}.json`);
  let result: CliResult;
  if (face === 'replicate') result = await runCli(SOURCE_BIN, ['replicate', '--config', cfg, '--db', db, '--summary', summaryPath], { timeoutMs: 120_000 });
  else {
    const args = face === 'read' ? ['read', '--config', cfg, '--catalog', await catalog()] : ['--config', cfg];
    if (states !== undefined && states.size > 0) {
      const input =
        face === 'read'
          ? [...states].map(([name, accounts]) => ({ type: 'STREAM', stream: { stream_descriptor: { name }, stream_state: { accounts } } }))
          : { bookmarks: Object.fromEntries([...states].map(([name, accounts]) => [name, { accounts }])) };
      args.push('--state', writeJson(dir, `state-${++files}.json`, input));
    }
    args.push('--summary', summaryPath);
    result = await runCli(face === 'read' ? SOURCE_BIN : TAP_BIN, args, { timeoutMs: 120_000 });
  }
  const out = new Map(states ?? []);
  if (face === 'replicate') {
    for (const [name, state] of replicaStates(db)) out.set(name, (state.accounts ?? {}) as Record<string, unknown>);
  } else {
    for (const m of parseLines(result.stdout)) {
      if (face === 'read' && m.type === 'STATE') {
        const s = (m.state as { stream: { stream_descriptor: { name: string }; stream_state: { accounts: Record<string, unknown> } } }).stream;
        out.set(s.stream_descriptor.name, s.stream_state.accounts);
      }
      if (face === 'tap' && m.type === 'STATE') {
        for (const [name, bookmark] of Object.entries((m.value as { bookmarks: Record<string, { accounts: Record<string, unknown> }> }).bookmarks)) out.set(name, bookmark.accounts);
      }
    }
  }
  return { ...result, summary: JSON.parse(readFileSync(summaryPath, 'utf8')) as RunSummary, states: out };
}

/** The accounts whose requests were retried: each says so in its own log line. */
function retried(r: CliResult): string[] {
  const text = `${r.stdout}\n${r.stderr}`;
  return [...new Set([...text.matchAll(/Account \\?"([^"\\]+)\\?": (?:Cannot reach the Data-Read API|GET \/v1\/me)[^\n]*retry 1 of 1/g)].map((m) => m[1] as string))].sort();
}

const statuses = (s: RunSummary): Record<string, string> => Object.fromEntries((s.accounts ?? []).map((a) => [a.name, a.status]));

// The faces' runs wait out their retries most of the time, and each has its own files: they run together. The
// 503 case, which spoils the shared emulator for every account, runs alone between the two groups.
describe.concurrent.each(FACES)('%s with accounts and the service down', (face) => {
  it('unreachable: two accounts retry and fail, the others are not tried and say why (75); their states are unchanged', async () => {
    const db = join(dir, `${face}-down.db`);
    // A first run reads every account: each has a state of its own.
    const first = await run(face, config(emulator.url), db);
    expect(first.code, first.stderr.slice(-800)).toBe(0);
    for (const name of NAMES) expect(first.states.get('contacts')?.[name]).toMatchObject({ sync_watermark: expect.any(String) });

    const second = await run(face, config(down), db, first.states);
    expect(second.code, second.stderr.slice(-800)).toBe(75);
    // Only the first two accounts tried (and retried); the others sent nothing.
    expect(retried(second)).toEqual(['acc-1', 'acc-2']);
    expect(second.summary.requests).toBe(4);
    expect(statuses(second.summary)).toEqual({ 'acc-1': 'failed', 'acc-2': 'failed', 'acc-3': 'not_tried', 'acc-4': 'not_tried', 'acc-5': 'not_tried', 'acc-6': 'not_tried' });
    const why = `accounts "acc-1" and "acc-2" found the Data-Read API at ${down} unavailable and no account was read since`;
    for (const account of (second.summary.accounts ?? []).filter((a) => a.status === 'not_tried')) {
      expect(account).toMatchObject({ failure_type: 'transient_error', records: 0, message: `Not tried: ${why}. Its state is unchanged; the next run reads it.` });
    }
    expect(second.summary).toMatchObject({ exit_code: 75, failure_type: 'transient_error' });
    expect(second.summary.message).toMatch(/^2 of 6 accounts failed and 4 were not tried/);
    const said = `${second.stdout}\n${second.stderr}`.replaceAll('\\"', '"');
    expect(said).toContain(`The 4 accounts not started yet are not tried this run: ${why}. Their states are unchanged; the next run reads them.`);
    const error = `accounts "acc-3", "acc-4", "acc-5" and "acc-6" not tried (${why}): their states are unchanged, the next run reads them.`;
    expect(said).toContain(error);
    // Every account failed or was not tried: none is said to be complete.
    expect(said).not.toContain('the others are complete');
    if (face === 'tap') {
      expect(said).toMatch(
        /CRITICAL tap-data-read: Sync failed for 2 account\(s\): acc-1, acc-2; 4 not tried \(the service found unavailable\), the last STATE is safe to resume from: records: .*; accounts: 6 \(2 failed: acc-1, acc-2; 4 not tried\); requests: 4, /,
      );
    }
    if (face === 'read') expect(said).toMatch(/"level":"WARN","message":"Sync ended with 2 failed account\(s\) and 4 not tried: records: .*; accounts: 6 \(2 failed: acc-1, acc-2; 4 not tried\); requests: 4, /);
    // Nothing lost: every account's state is the one the first run ended with.
    for (const stream of first.states.keys()) expect(second.states.get(stream), stream).toEqual(first.states.get(stream));
  });

  it('keys refused (401) in a row stop nothing: every other account is read (78)', async () => {
    const refused = new Set(['acc-1', 'acc-2', 'acc-4']);
    const r = await run(face, config(emulator.url, (name) => (refused.has(name) ? (revoked.get(name) as string) : (keys.get(name) as string))), join(dir, `${face}-401.db`));
    expect(r.code, r.stderr.slice(-800)).toBe(78);
    expect(statuses(r.summary)).toEqual({ 'acc-1': 'failed', 'acc-2': 'failed', 'acc-3': 'succeeded', 'acc-4': 'failed', 'acc-5': 'succeeded', 'acc-6': 'succeeded' });
    for (const account of r.summary.accounts ?? []) if (account.status === 'succeeded') expect(account.records).toBeGreaterThan(0);
    expect(`${r.stdout}\n${r.stderr}`).not.toMatch(/not tried/);
    if (face === 'tap') expect(r.stderr).toMatch(/CRITICAL tap-data-read: Sync failed for 3 account\(s\): acc-1, acc-2, acc-4; the others are complete, the last STATE is safe to resume from: records: /);
  });
});

describe('the service answering 503 to everything', () => {
  it('read: two accounts retry and fail, the others are not tried (75)', async () => {
    emulator.control.setFaults([{ kind: '503', every: 1, retryAfterSeconds: 1 }]);
    try {
      const r = await run('read', config(emulator.url), join(dir, 'unused.db'));
      expect(r.code, r.stderr.slice(-800)).toBe(75);
      expect(retried(r)).toEqual(['acc-1', 'acc-2']);
      expect(statuses(r.summary)).toEqual({ 'acc-1': 'failed', 'acc-2': 'failed', 'acc-3': 'not_tried', 'acc-4': 'not_tried', 'acc-5': 'not_tried', 'acc-6': 'not_tried' });
      expect(r.summary.accounts?.[0]?.message).toMatch(/HTTP 503/);
      expect(r.summary.accounts?.[2]?.message).toBe(
        `Not tried: accounts "acc-1" and "acc-2" found the Data-Read API at ${emulator.url} unavailable and no account was read since; ` +
          'one request of its own to /v1/me, without retries, failed too (HTTP 503). Its state is unchanged; the next run reads it.',
      );
      // Two accounts of two attempts each, then one probe of each other account.
      expect(r.summary.requests).toBe(8);
    } finally {
      emulator.control.setFaults([]);
    }
  });
});

/**
 * A proxy in front of the emulator that answers 500 to the /v1/me of the given keys (their tenant broken on the
 * service's side) and passes every other request on.
 */
async function brokenTenants(upstream: string, broken: readonly string[]): Promise<{ url: string; server: Server }> {
  const target = new URL(upstream);
  const refused = new Set(broken.map((key) => `Bearer ${key}`));
  const server = createServer((req, res) => {
    if ((req.url ?? '').startsWith('/v1/me') && refused.has(req.headers.authorization ?? '')) {
      res.writeHead(500, { 'content-type': 'application/problem+json' });
      res.end(JSON.stringify({ title: 'Internal Server Error', status: 500 }));
      return;
    }
    const forward = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe.concurrent.each(FACES)('%s with the first two accounts answering 500 to their own /v1/me', (face) => {
  it('the next account is probed and answered: every other account is read and its state saved (75 for the two)', async () => {
    const proxy = await brokenTenants(emulator.url, [keys.get('acc-1') as string, keys.get('acc-2') as string]);
    try {
      const r = await run(face, config(proxy.url), join(dir, `${face}-own-5xx.db`));
      expect(r.code, r.stderr.slice(-800)).toBe(75);
      expect(retried(r)).toEqual(['acc-1', 'acc-2']);
      expect(statuses(r.summary)).toEqual({ 'acc-1': 'failed', 'acc-2': 'failed', 'acc-3': 'succeeded', 'acc-4': 'succeeded', 'acc-5': 'succeeded', 'acc-6': 'succeeded' });
      for (const name of ['acc-3', 'acc-4', 'acc-5', 'acc-6']) {
        expect(r.summary.accounts?.find((a) => a.name === name)?.records, name).toBeGreaterThan(0);
        expect(r.states.get('contacts')?.[name], name).toMatchObject({ sync_watermark: expect.any(String) });
      }
      for (const name of ['acc-1', 'acc-2']) expect(r.states.get('contacts')?.[name], name).toBeUndefined();
      expect(r.summary.accounts?.[0]?.message).toMatch(/HTTP 500/);
      expect(r.summary.message).toMatch(/^2 of 6 accounts failed \(the other 4 were read and their states saved\)/);
      const said = `${r.stdout}\n${r.stderr}`.replaceAll('\\"', '"');
      expect(said).toContain('Account "acc-3": the Data-Read API answered its /v1/me after accounts "acc-1" and "acc-2" found it unavailable');
      expect(said).not.toMatch(/Not tried:|were not tried| not tried \(/);
      // No key in any message.
      for (const key of keys.values()) expect(said).not.toContain(key);
    } finally {
      await new Promise<void>((resolve) => proxy.server.close(() => resolve()));
    }
  });
});
