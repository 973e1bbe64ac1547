/**
 * The real `source-data-read` executable against the real emulator over
 * loopback: protocol output checked by the Airbyte protocol check, and the replica it
 * yields compared with the emulator's dump after rounds of changes.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dayOfActivity, startEmulator, type Emulator, type FaultRule } from 'data-read-emulator';
import { ROOT, SOURCE_BIN, connectionStatusOf, parseLines, protocolCheck, runCli, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';
import { MemoryDestination, airbyteStateFile, normalizeDump, type StreamStates } from '../../helpers/destination.js';
import { LIMITS_OUT_OF_REACH } from '../../helpers/emulator-runs.js';

const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');
let emu: Emulator;
let dir: string;

beforeAll(async () => {
  emu = await startEmulator({ port: 0, host: '127.0.0.1', seed: 7, limits: LIMITS_OUT_OF_REACH });
  dir = tempDir('sdr-e2e-');
});
afterAll(async () => {
  await emu.close();
});

interface Account {
  id: string;
  key: string;
  config: (extra?: Record<string, unknown>) => string;
}

function account(contacts: number, limits?: Record<string, number>, on: Emulator = emu): Account {
  const acc = on.control.createAccount({ name: `Acme ${contacts}`, ...(limits ? { limits } : {}) });
  on.control.seed(acc.id, { contacts });
  const key = on.control.createKey(acc.id).key;
  let n = 0;
  return {
    id: acc.id,
    key,
    // Accounts of several emulators share the directory: the port keeps their file names apart.
    config: (extra = {}) => writeJson(dir, `config-${new URL(on.url).port}-${acc.id}-${n++}.json`, { api_key: key, base_url: on.url, ...extra }),
  };
}

/**
 * An emulator of the test's own, for tests that set faults or read the request counts (both the emulator's,
 * not an account's): with it they run at the same time as each other. Their time is mostly the waits they
 * cause (rate-limit windows, backoff, Retry-After, timeouts), which then overlap.
 */
async function withOwnEmulator(test: (own: Emulator) => Promise<void>): Promise<void> {
  const own = await startEmulator({ port: 0, host: '127.0.0.1', seed: 7, limits: LIMITS_OUT_OF_REACH });
  try {
    await test(own);
  } finally {
    await own.close();
  }
}

async function read(config: string, states?: StreamStates, catalog = CATALOG): Promise<CliResult> {
  const args = ['read', '--config', config, '--catalog', catalog];
  if (states && states.size > 0) args.push('--state', writeJson(dir, `state-${Date.now()}-${Math.random()}.json`, airbyteStateFile(states)));
  return runCli(SOURCE_BIN, args);
}

function expectValid(result: CliResult, key: string): void {
  const summary = protocolCheck('airbyte', result.stdout);
  expect(summary.errors).toEqual([]);
  expect(result.stdout + result.stderr).not.toContain(key);
}

function changeSomething(acc: Account): void {
  emu.control.advanceClock(60_000);
  for (const m of dayOfActivity(0.25)) emu.control.mutate(acc.id, m);
  emu.control.advanceClock(60_000);
}

// The suites on the shared emulator (its clock, its request counts) run one after another, as before; together they
// run beside the suite below, whose tests each start an emulator of their own and mostly wait (backoff, Retry-After).
describe('on the shared emulator', { concurrent: true }, () => {
  describe('check', { concurrent: false }, () => {
    it('SUCCEEDED names the account', async () => {
      const acc = account(5);
      const result = await runCli(SOURCE_BIN, ['check', '--config', acc.config()]);
      expectValid(result, acc.key);
      expect(connectionStatusOf(result.stdout)).toEqual({ status: 'SUCCEEDED', message: expect.stringContaining('"Acme 5"') });
    });

    it('FAILED explains a revoked key (401), a switched-off data API (403) and a key without data:read', async () => {
      const acc = account(1);
      const revoked = emu.control.createKey(acc.id);
      emu.control.revokeKey(revoked.id);
      const noScope = emu.control.createKey(acc.id, { scopes: ['contacts:write'] });
      const off = emu.control.createAccount({ name: 'Off', dataApi: false });
      const offKey = emu.control.createKey(off.id);
      const cases: [string, RegExp][] = [
        [revoked.key, /401|missing, invalid or revoked/i],
        [noScope.key, /data:read/],
        [offKey.key, /403|switched off|plan/i],
      ];
      for (const [key, message] of cases) {
        const config = writeJson(dir, `bad-${key}.json`, { api_key: key, base_url: emu.url });
        const result = await runCli(SOURCE_BIN, ['check', '--config', config]);
        expectValid(result, key);
        const [m] = parseLines(result.stdout) as [{ connectionStatus: { status: string; message: string } }];
        expect(m.connectionStatus.status).toBe('FAILED');
        expect(m.connectionStatus.message).toMatch(message);
      }
    });

    it('read with a revoked key ends in config_error, exit 78', async () => {
      const acc = account(1);
      const k = emu.control.createKey(acc.id);
      emu.control.revokeKey(k.id);
      const result = await read(writeJson(dir, 'revoked.json', { api_key: k.key, base_url: emu.url }));
      expect(result.code).toBe(78);
      expectValid(result, k.key);
      const failures = parseLines(result.stdout).flatMap((m) => (m.type === 'TRACE' && (m.trace as { type: string }).type === 'ERROR' ? [(m.trace as { error: { failure_type: string } }).error.failure_type] : []));
      expect(failures.length).toBeGreaterThan(0);
      expect(new Set(failures)).toEqual(new Set(['config_error']));
    });
  });

  describe('read', { concurrent: false }, () => {
    it('a full sync then rounds of changes and incremental syncs: the replica equals the dump every time', async () => {
      const acc = account(700);
      const config = acc.config();
      const replica = new MemoryDestination();
      const first = await read(config);
      expect(first.code).toBe(0);
      expectValid(first, acc.key);
      let states = replica.applyAirbyte(first.stdout);
      expect(replica.toDump()).toEqual(normalizeDump(emu.control.dump(acc.id)));
      const fullCount = parseLines(first.stdout).filter((m) => m.type === 'RECORD').length;

      for (let round = 0; round < 3; round++) {
        changeSomething(acc);
        const next = await read(config, states);
        expect(next.code).toBe(0);
        expectValid(next, acc.key);
        states = replica.applyAirbyte(next.stdout);
        expect(replica.toDump(), `round ${round}`).toEqual(normalizeDump(emu.control.dump(acc.id)));
        // Incremental: far fewer records than the full sync.
        expect(parseLines(next.stdout).filter((m) => m.type === 'RECORD').length).toBeLessThan(fullCount / 3);
      }
      for (const [, state] of states) expect(Object.keys(state as object)).toEqual(['sync_watermark', 'account']);
    });

    it('makes exactly ceil(N/200) list requests per stream with limit=200 (and one catch-up read), one /v1/me, nothing undocumented', async () => {
      const acc = account(450); // contacts: 3 pages of 200
      emu.control.resetStats();
      const catalog = writeJson(dir, 'contacts-only.json', { streams: [{ stream: { name: 'contacts', json_schema: {} }, sync_mode: 'full_refresh', destination_sync_mode: 'overwrite' }] });
      const result = await read(acc.config(), undefined, catalog);
      expect(result.code).toBe(0);
      const contacts = emu.control.dump(acc.id).contacts.length;
      const stats = emu.control.stats();
      expect(contacts).toBeGreaterThan(400);
      // One /v1/me a run: whose account the key reads (the state it writes names it).
      expect(stats.byPath['/v1/me']).toEqual({ 200: 1 });
      // A full read of more than one page is followed by one read of what changed after its watermark (nothing here).
      expect(stats.total).toBe(Math.ceil(contacts / 200) + 1 + 1);
    });

    it('the look-back repeats a few records, and a second read without changes keeps the watermark moving forward', async () => {
      const acc = account(50);
      const config = acc.config();
      const replica = new MemoryDestination();
      const states = replica.applyAirbyte((await read(config)).stdout);
      const before = states.get('contacts') as { sync_watermark: string };
      emu.control.advanceClock(1_000);
      const again = await read(config, states);
      replica.applyAirbyte(again.stdout);
      const after = states.get('contacts') as { sync_watermark: string };
      expect(Date.parse(after.sync_watermark)).toBeGreaterThan(Date.parse(before.sync_watermark));
      expect(replica.toDump()).toEqual(normalizeDump(emu.control.dump(acc.id)));
    });

    it('a stale resume cursor restarts the read from the last complete watermark, losing nothing', async () => {
      const acc = account(300);
      const config = acc.config();
      const replica = new MemoryDestination();
      const states = replica.applyAirbyte((await read(config)).stdout);
      changeSomething(acc);
      const contacts = states.get('contacts') as { sync_watermark: string };
      states.set('contacts', { ...contacts, resume: { cursor: 'forged-or-expired-cursor', sync_watermark: contacts.sync_watermark } });
      const result = await read(config, states);
      expect(result.code).toBe(0);
      expectValid(result, acc.key);
      expect(result.stdout).toMatch(/rejected the saved resume cursor/);
      replica.applyAirbyte(result.stdout);
      expect(replica.toDump()).toEqual(normalizeDump(emu.control.dump(acc.id)));
    });

    it('SIGKILL after page k of n: resuming from the last emitted state yields every record', async () => {
      const acc = account(1200);
      const config = acc.config({ max_concurrent_requests: 1, page_size: 50 });
      const catalog = writeJson(dir, 'contacts-inc.json', { streams: [{ stream: { name: 'contacts', json_schema: {} }, sync_mode: 'incremental', destination_sync_mode: 'append_dedup' }] });
      const truth = emu.control.dump(acc.id).contacts.map((c) => c.id).sort();
      for (const k of [1, 7, 15]) {
        const killed = await new Promise<string>((resolve) => {
          const child = spawn(process.execPath, [SOURCE_BIN, 'read', '--config', config, '--catalog', catalog], { stdio: ['ignore', 'pipe', 'ignore'] });
          let out = '';
          let states = 0;
          child.stdout.on('data', (b: Buffer) => {
            const text = b.toString('utf8');
            out += text;
            states += (text.match(/"type":"STATE"/g) ?? []).length;
            if (states >= k) child.kill('SIGKILL');
          });
          child.on('close', () => resolve(out));
        });
        // Only whole lines count: a killed writer may leave half a line.
        const complete = killed.slice(0, killed.lastIndexOf('\n') + 1);
        const replica = new MemoryDestination();
        const states = replica.applyAirbyte(complete);
        expect(states.get('contacts'), `k=${k}`).toHaveProperty('resume');
        const resumed = await read(config, states, catalog);
        expect(resumed.code).toBe(0);
        replica.applyAirbyte(resumed.stdout);
        expect([...(replica.tables.get('contacts')?.keys() ?? [])].sort(), `killed after ${k} states`).toEqual(truth);
      }
    });

  });

  describe('read with deletions_as_tombstones', { concurrent: false }, () => {
    it('follows each page\'s tombstones with a STATE of their stream never repeated, and reads such a STATE back', async () => {
      const acc = account(30);
      emu.control.mutate(acc.id, { op: 'delete_contacts', count: 6 });
      // Two deletions a page: the log's read takes several pages, each with tombstones of contacts.
      const config = acc.config({ page_size: 2, deletions_as_tombstones: true });
      const first = await read(config);
      expect(first.code).toBe(0);
      // The protocol check fails a STATE of a stream equal to its previous one with RECORDs of the stream between.
      expectValid(first, acc.key);
      type State = { type: string; state?: { stream: { stream_descriptor: { name: string }; stream_state: Record<string, unknown> } } };
      const afterTombstones = (parseLines(first.stdout) as State[])
        .filter((m) => m.type === 'STATE' && m.state?.stream.stream_descriptor.name === 'contacts')
        .map((m) => m.state?.stream.stream_state ?? {})
        .filter((state) => 'tombstones_through' in state);
      expect(afterTombstones.length).toBeGreaterThan(2);
      // The checked-in catalog was discovered without tombstones: its contacts and conversations do not declare
      // _ab_cdc_deleted_at, and a destination would keep each deleted row as a row of nulls. Said, once a stream.
      const warned = (parseLines(first.stdout) as { type: string; log?: { level: string; message: string } }[])
        .filter((m) => m.type === 'LOG' && m.log?.level === 'WARN' && m.log.message.includes('does not declare _ab_cdc_deleted_at'))
        .map((m) => m.log?.message.match(/^Stream "(\w+)"/)?.[1]);
      expect(warned).toEqual(['contacts', 'conversations']);
      // A run stopped after the first batch: the platform passes that STATE back, and the next read takes it.
      const next = await read(config, new Map([['contacts', afterTombstones[0]]]));
      expect(next.stderr).not.toContain('Invalid state');
      expect(next.code).toBe(0);
      expectValid(next, acc.key);
    });
  });
});

describe.concurrent('read, each on an emulator of its own', () => {
  it('paces on RateLimit-* instead of provoking 429 storms', () => withOwnEmulator(async (own) => {
    const acc = account(400, { perMinute: 6, windowMs: 1000 }, own);
    const result = await read(acc.config({ page_size: 50, max_concurrent_requests: 2 }));
    expect(result.code).toBe(0);
    expectValid(result, acc.key);
    const stats = own.control.stats();
    expect(stats.total).toBeGreaterThan(12);
    expect(stats.byStatus['429'] ?? 0).toBeLessThanOrEqual(1);
  }));

  const faults: FaultRule[] = [
    { kind: '500', every: 4 },
    { kind: '503', every: 4, retryAfterSeconds: 1 },
    { kind: '429', every: 4, retryAfterSeconds: 1 },
    { kind: 'reset', every: 4 },
    { kind: 'truncated', every: 4 },
    { kind: 'slow', every: 5, slowMs: 1500 },
  ];
  it.each(faults.map((f) => [f.kind, f] as const))('completes exactly through %s faults', (_kind, rule) => withOwnEmulator(async (own) => {
    const acc = account(250, undefined, own);
    const config = acc.config({ request_timeout_seconds: 1 });
    const replica = new MemoryDestination();
    own.control.setFaults([{ ...rule, paths: ['/v1/*'] }]);
    const result = await read(config);
    expect(result.code, result.stdout.slice(-2000)).toBe(0);
    expectValid(result, acc.key);
    replica.applyAirbyte(result.stdout);
    expect(own.control.faults().injected.total).toBeGreaterThan(0);
    own.control.clearFaults();
    expect(replica.toDump()).toEqual(normalizeDump(own.control.dump(acc.id)));
  }));
});
