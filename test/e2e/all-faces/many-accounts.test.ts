/**
 * Many accounts in one run (connector contract, "Many accounts"), through the
 * real executables against one emulator serving several accounts and keys:
 * - Airbyte read and the Singer tap: every account's records exact (each
 *   account's share of the output, applied to a destination, equals that
 *   account's dump), each record with its account, one state per stream
 *   holding every account's; then incremental per account;
 * - an account added starts from start_date, one removed keeps its state;
 * - one key revoked: the others exact, exit 78, one error naming it, the
 *   summary's per-account entries; check names the failing key;
 * - Singer FULL_TABLE: a stage removed in one account leaves the target,
 *   the other accounts' stages stay;
 * - states of the wrong shape refused (78), the account binding per entry
 *   (the replica of many accounts: test/e2e/replica/many-accounts.test.ts
 *   for a SQLite file, test/e2e/replica/stores/ for every store);
 * - several keys rate-limited at once: no 429 beyond one per key;
 * - stopped by SIGTERM after an account failed: the last words of every
 *   face name it and why.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from 'data-read-emulator';
import { SOURCE_BIN, TAP_BIN, parseLines, protocolCheckAsync, runAndSignal, runCli, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';
import { STATE_CADENCE } from '../../../src/engine/accounts.js';
import { MemoryDestination, type Row } from '../../helpers/destination.js';
import { LIMITS_OUT_OF_REACH, requireBuild } from '../../helpers/emulator-runs.js';

interface Tenant {
  readonly entry: string;
  readonly id: string;
  readonly name: string;
  key: string;
  readonly keyId: string;
}

type Message = { readonly type: string; readonly [field: string]: unknown };

let emulator: Emulator;
let dir: string;
let files = 0;

beforeAll(async () => {
  requireBuild();
  dir = tempDir('many-accounts-');
  emulator = await startEmulator({ host: '127.0.0.1', port: 0, seed: 91, frozenClock: true, limits: LIMITS_OUT_OF_REACH });
});

afterAll(async () => {
  await emulator?.close();
});

function tenant(entry: string, name: string, contacts: number, limits?: { perMinute: number; windowMs: number }): Tenant {
  const account = emulator.control.createAccount({ name, ...(limits ? { limits: { ...limits, perDay: 1_000_000 } } : {}) });
  const { key, id: keyId } = emulator.control.createKey(account.id);
  emulator.control.seed(account.id, { contacts });
  return { entry, id: account.id, name, key, keyId };
}

function config(tenants: readonly Tenant[], extra: Record<string, unknown> = {}): string {
  return writeJson(dir, `config-${++files}.json`, {
    base_url: emulator.url,
    page_size: 40,
    accounts: tenants.map((t) => ({ name: t.entry, api_key: t.key })),
    ...extra,
  });
}

/** The configured catalog of every stream, as discover declares it with accounts. */
async function catalogFor(cfg: string): Promise<string> {
  const discovered = await runCli(SOURCE_BIN, ['discover', '--config', cfg]);
  expect(discovered.code, discovered.stderr).toBe(0);
  const catalog = parseLines(discovered.stdout).find((m) => m.type === 'CATALOG')?.catalog as { streams: { name: string; supported_sync_modes: string[]; source_defined_primary_key: unknown }[] };
  for (const stream of catalog.streams) expect(stream.source_defined_primary_key).toEqual([['account'], ['id']]);
  return writeJson(dir, `catalog-${++files}.json`, {
    streams: catalog.streams.map((stream) => ({
      stream,
      sync_mode: stream.supported_sync_modes.includes('incremental') ? 'incremental' : 'full_refresh',
      destination_sync_mode: 'append_dedup',
      primary_key: [['account'], ['id']],
    })),
  });
}

function read(cfg: string, catalog: string, state?: unknown, summary?: string): Promise<CliResult> {
  const args = ['read', '--config', cfg, '--catalog', catalog];
  if (state !== undefined) args.push('--state', writeJson(dir, `state-${++files}.json`, state));
  if (summary !== undefined) args.push('--summary', summary);
  return runCli(SOURCE_BIN, args, { timeoutMs: 120_000 });
}

function tap(cfg: string, state?: unknown, summary?: string): Promise<CliResult> {
  const args = ['--config', cfg];
  if (state !== undefined) args.push('--state', writeJson(dir, `tap-state-${++files}.json`, state));
  if (summary !== undefined) args.push('--summary', summary);
  return runCli(TAP_BIN, args, { timeoutMs: 120_000 });
}

/**
 * Each account's share of an Airbyte output, by entry: its records (without the account field) and each STATE
 * narrowed to its own state. The output is parsed once for all the entries (it holds some 27,000 records in the
 * STATEs' group): parsed again for each, the checks of one output took some 5 s of CPU.
 */
function airbyteShares(stdout: string, entries: readonly string[]): Map<string, Message[]> {
  const shares = new Map<string, Message[]>(entries.map((entry) => [entry, []]));
  const unowned: Message[] = [];
  for (const m of parseLines(stdout) as Message[]) {
    if (m.type === 'RECORD') {
      const record = m.record as { stream: string; data: Row };
      if (typeof record.data.account !== 'string') unowned.push(m);
      const { account, ...data } = record.data;
      shares.get(account as string)?.push({ ...m, record: { ...record, data } });
    } else if (m.type === 'STATE') {
      const s = (m.state as { stream: { stream_descriptor: { name: string }; stream_state: { accounts: Record<string, unknown> } } }).stream;
      for (const [entry, share] of shares) share.push({ type: 'STATE', state: { type: 'STREAM', stream: { ...s, stream_state: s.stream_state.accounts[entry] ?? {} } } });
    }
  }
  expect(unowned.length, `records without their account, such as ${JSON.stringify(unowned[0])}`).toBe(0);
  return shares;
}

/** One account's share of an Airbyte output. */
function airbyteShare(stdout: string, entry: string): Message[] {
  return airbyteShares(stdout, [entry]).get(entry) ?? [];
}

/** Each account's share of a Singer output, as JSON lines, by entry (the output parsed once, as airbyteShares). */
function singerShares(stdout: string, entries: readonly string[]): Map<string, string> {
  const shares = new Map<string, string[]>(entries.map((entry) => [entry, []]));
  const unowned: Message[] = [];
  for (const m of parseLines(stdout) as Message[]) {
    if (m.type === 'RECORD') {
      const record = m.record as Row;
      if (typeof record.account !== 'string') unowned.push(m);
      const { account, ...rest } = record;
      shares.get(account as string)?.push(JSON.stringify({ ...m, record: rest }));
    } else {
      const line = JSON.stringify(m);
      for (const lines of shares.values()) lines.push(line);
    }
  }
  expect(unowned.length, `records without their account, such as ${JSON.stringify(unowned[0])}`).toBe(0);
  return new Map([...shares].map(([entry, lines]) => [entry, lines.join('\n')]));
}

/** One account's share of a Singer output, as JSON lines. */
function singerShare(stdout: string, entry: string): string {
  return singerShares(stdout, [entry]).get(entry) ?? '';
}

/** Each stream's last stream_state in an Airbyte output. */
function streamStates(stdout: string): Map<string, { accounts: Record<string, Record<string, unknown>> }> {
  const out = new Map<string, { accounts: Record<string, Record<string, unknown>> }>();
  for (const m of parseLines(stdout).filter((l) => l.type === 'STATE')) {
    const s = (m.state as { stream: { stream_descriptor: { name: string }; stream_state: { accounts: Record<string, Record<string, unknown>> } } }).stream;
    out.set(s.stream_descriptor.name, s.stream_state);
  }
  return out;
}

const stateLines = (stdout: string): Message[] => parseLines(stdout).filter((m) => m.type === 'STATE') as Message[];

function traceErrors(stdout: string): { failure_type: string; message: string }[] {
  return parseLines(stdout)
    .filter((m) => m.type === 'TRACE' && (m.trace as { type: string }).type === 'ERROR')
    .map((m) => (m.trace as { error: { failure_type: string; message: string } }).error);
}

const recordsOf = (stdout: string, entry: string, stream?: string): number =>
  parseLines(stdout).filter((m) => {
    if (m.type !== 'RECORD') return false;
    const r = m.record as { stream: string; data?: Row } & Row;
    const data = (r.data ?? r) as Row;
    // Airbyte names the stream in the record, Singer in the message.
    return data.account === entry && (stream === undefined || (m.stream ?? r.stream) === stream);
  }).length;

interface Summary {
  status: string;
  rate_limit_waits: number;
  exit_code: number;
  failure_type: string | null;
  message: string | null;
  accounts?: { name: string; status: string; records: number; failure_type: string | null; message: string | null }[];
}
const summaryOf = (path: string): Summary => JSON.parse(readFileSync(path, 'utf8')) as Summary;

describe('Airbyte read with accounts', () => {
  let acme: Tenant;
  let globex: Tenant;
  let initech: Tenant;
  let catalog: string;
  const destinations = new Map<string, MemoryDestination>();
  let firstRun: CliResult;

  beforeAll(async () => {
    acme = tenant('acme-br', 'Acme Brazil', 90);
    globex = tenant('globex', 'Globex', 60);
    initech = tenant('initech.us', 'Initech', 45);
    catalog = await catalogFor(config([acme, globex, initech]));
  });

  it('reads every account exactly, each record with its account, one state per stream holding every account', async () => {
    const summary = join(dir, 'summary-1.json');
    firstRun = await read(config([acme, globex, initech]), catalog, undefined, summary);
    expect(firstRun.code, firstRun.stdout.slice(-1500)).toBe(0);
    expect((await protocolCheckAsync('airbyte', firstRun.stdout)).n_errors).toBe(0);
    for (const t of [acme, globex, initech]) {
      const destination = new MemoryDestination();
      destination.applyAirbyte(airbyteShare(firstRun.stdout, t.entry));
      destinations.set(t.entry, destination);
      const diff = destination.diff(emulator.control.dump(t.id));
      expect(diff, `${t.entry}: ${diff.examples.join('; ')}`).toMatchObject({ missing: 0, stale: 0, extra: 0 });
      expect(recordsOf(firstRun.stdout, t.entry)).toBeGreaterThan(0);
    }
    const states = streamStates(firstRun.stdout);
    expect([...states.keys()].sort()).toEqual(['contacts', 'conversations', 'deletions', 'pipeline_stages', 'stage_events']);
    for (const [, state] of states) {
      expect(Object.keys(state.accounts)).toEqual(['acme-br', 'globex', 'initech.us']);
      // Each account's state is a state of one account, bound to the account its key reads.
      expect(state.accounts['acme-br']).toMatchObject({ sync_watermark: expect.any(String), account: { name: 'Acme Brazil', base_url: emulator.url } });
      expect(state.accounts.globex?.account).toMatchObject({ name: 'Globex' });
    }
    // One stream status per resource, not per account.
    const statuses = parseLines(firstRun.stdout).filter((m) => m.type === 'TRACE' && (m.trace as { type: string }).type === 'STREAM_STATUS');
    const complete = statuses.filter((m) => JSON.stringify(m).includes('"COMPLETE"'));
    expect(complete).toHaveLength(5);
    const s = summaryOf(summary);
    expect(s).toMatchObject({ status: 'succeeded', exit_code: 0 });
    expect(s.accounts?.map((a) => [a.name, a.status])).toEqual([['acme-br', 'succeeded'], ['globex', 'succeeded'], ['initech.us', 'succeeded']]);
    expect(s.accounts?.find((a) => a.name === 'globex')?.records).toBe(recordsOf(firstRun.stdout, 'globex'));
    // No key anywhere in the output.
    for (const t of [acme, globex, initech]) expect(firstRun.stdout + firstRun.stderr).not.toContain(t.key);
  });

  it('goes on incrementally per account: only what changed, every account exact', async () => {
    emulator.control.advanceClock(60_000);
    emulator.control.mutate(acme.id, { op: 'update_contacts', count: 7 });
    emulator.control.mutate(globex.id, { op: 'create_contacts', count: 4, withConversation: true });
    emulator.control.mutate(initech.id, { op: 'delete_contacts', count: 2 });
    emulator.control.advanceClock(10 * 60_000);
    const second = await read(config([acme, globex, initech]), catalog, stateLines(firstRun.stdout));
    expect(second.code, second.stdout.slice(-1500)).toBe(0);
    for (const t of [acme, globex, initech]) {
      const destination = destinations.get(t.entry) as MemoryDestination;
      destination.applyAirbyte(airbyteShare(second.stdout, t.entry));
      const diff = destination.diff(emulator.control.dump(t.id));
      expect(diff, `${t.entry}: ${diff.examples.join('; ')}`).toMatchObject({ missing: 0, stale: 0, extra: 0 });
    }
    // Incremental: far fewer contacts than the accounts hold.
    expect(recordsOf(second.stdout, 'acme-br', 'contacts')).toBeLessThan(20);
    expect(recordsOf(second.stdout, 'acme-br', 'contacts')).toBeGreaterThanOrEqual(7);
    expect(recordsOf(second.stdout, 'globex', 'contacts')).toBeGreaterThanOrEqual(4);
    expect(recordsOf(second.stdout, 'globex', 'contacts')).toBeLessThan(20);
    firstRun = second;
  });

  it('reads an account added from start_date and keeps the state of one removed', async () => {
    // Added under a name the entries' pattern allows and that JavaScript objects treat apart: its state must be an own field.
    const umbrella = tenant('__proto__', 'Umbrella', 30);
    const before = streamStates(firstRun.stdout);
    // acme-br removed, umbrella added.
    const run = await read(config([globex, initech, umbrella]), catalog, stateLines(firstRun.stdout));
    expect(run.code, run.stdout.slice(-1500)).toBe(0);
    const umbrellaDestination = new MemoryDestination();
    umbrellaDestination.applyAirbyte(airbyteShare(run.stdout, umbrella.entry));
    expect(umbrellaDestination.diff(emulator.control.dump(umbrella.id))).toMatchObject({ missing: 0, stale: 0, extra: 0 });
    expect(recordsOf(run.stdout, 'acme-br')).toBe(0);
    expect(recordsOf(run.stdout, 'globex', 'contacts')).toBeLessThan(10);
    for (const [stream, state] of streamStates(run.stdout)) {
      expect(Object.keys(state.accounts), stream).toEqual(['globex', 'initech.us', '__proto__', 'acme-br']);
      expect(state.accounts['acme-br'], stream).toEqual(before.get(stream)?.accounts['acme-br']);
    }
    const logs = parseLines(run.stdout).filter((m) => m.type === 'LOG').map((m) => (m.log as { message: string }).message);
    expect(logs.some((l) => /no longer in the config \(acme-br\).*kept/.test(l))).toBe(true);
  });

  it('an entry renamed in the config (its key and account the same): read in full under its new name, with a WARN naming both', async () => {
    const renamed = { ...initech, entry: 'initech-us' };
    const run = await read(config([acme, globex, renamed]), catalog, stateLines(firstRun.stdout));
    expect(run.code, run.stdout.slice(-1500)).toBe(0);
    expect(recordsOf(run.stdout, 'initech-us', 'contacts')).toBe(emulator.control.dump(initech.id).contacts.length);
    const warns = parseLines(run.stdout)
      .filter((m) => m.type === 'LOG' && (m.log as { level: string }).level === 'WARN')
      .map((m) => (m.log as { message: string }).message);
    expect(warns.filter((w) => w.includes('as entry "initech.us"'))).toEqual([
      expect.stringMatching(/^Account "initech-us": it reads an account of the same name, "Initech" at \S+, as entry "initech\.us", which is no longer in the config .*Rename the entry back to "initech\.us"/),
    ]);
    expect(run.stdout + run.stderr).not.toContain(initech.key);
  });

  it('check of a list of one entry says one account, not "all 1 accounts"', async () => {
    const solo = tenant('solo', 'Solo', 5);
    const check = await runCli(SOURCE_BIN, ['check', '--config', config([solo])]);
    expect(check.code).toBe(0);
    const status = parseLines(check.stdout).find((m) => m.type === 'CONNECTION_STATUS')?.connectionStatus as { status: string; message: string };
    expect(status).toEqual({ status: 'SUCCEEDED', message: 'Connected to the one account listed: "solo" (account "Solo").' });
  });

  it('one key revoked: the others are read exactly and saved, exit 78, one error naming it; check names it', async () => {
    const hooli = tenant('hooli', 'Hooli', 25);
    const pied = tenant('pied', 'Pied Piper', 25);
    const dunder = tenant('dunder', 'Dunder', 25);
    emulator.control.revokeKey(pied.keyId);
    const cfg = config([hooli, pied, dunder]);
    const summary = join(dir, 'summary-revoked.json');
    const run = await read(cfg, catalog, undefined, summary);
    expect(run.code).toBe(78);
    expect((await protocolCheckAsync('airbyte', run.stdout)).n_errors).toBe(0);
    for (const t of [hooli, dunder]) {
      const destination = new MemoryDestination();
      destination.applyAirbyte(airbyteShare(run.stdout, t.entry));
      expect(destination.diff(emulator.control.dump(t.id)), t.entry).toMatchObject({ missing: 0, stale: 0, extra: 0 });
    }
    const errors = traceErrors(run.stdout);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.failure_type).toBe('config_error');
    expect(errors[0]?.message).toMatch(/^1 of 3 accounts failed \(the other 2 were read and their states saved\): account "pied": .*401/);
    expect(errors[0]?.message).not.toMatch(/"hooli"|"dunder"/);
    const states = streamStates(run.stdout);
    for (const [, state] of states) expect(Object.keys(state.accounts)).toEqual(['hooli', 'dunder']);
    const s = summaryOf(summary);
    expect(s).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error' });
    expect(s.accounts).toEqual([
      { name: 'hooli', status: 'succeeded', records: recordsOf(run.stdout, 'hooli'), failure_type: null, message: null },
      { name: 'pied', status: 'failed', records: 0, failure_type: 'config_error', message: expect.stringMatching(/401/) },
      { name: 'dunder', status: 'succeeded', records: recordsOf(run.stdout, 'dunder'), failure_type: null, message: null },
    ]);

    emulator.control.resetStats();
    const check = await runCli(SOURCE_BIN, ['check', '--config', cfg]);
    expect(check.code).toBe(0);
    // One /v1/me per account (the contract's allowance), the description once.
    const me = emulator.control.stats().byPath['/v1/me'] ?? {};
    expect(Object.values(me).reduce((a, n) => a + n, 0)).toBe(3);
    const status = parseLines(check.stdout).find((m) => m.type === 'CONNECTION_STATUS')?.connectionStatus as { status: string; message: string };
    expect(status.status).toBe('FAILED');
    expect(status.message).toMatch(/^1 of 3 accounts failed the check \(the other 2 connected\): account "pied": .*HTTP 401/);
    expect(check.stdout).not.toContain(pied.key);

    // A new key for the account: the next run reads it from start_date, the others incrementally.
    const fresh = emulator.control.createKey(pied.id);
    pied.key = fresh.key;
    const next = await read(config([hooli, pied, dunder]), catalog, stateLines(run.stdout));
    expect(next.code, next.stdout.slice(-800)).toBe(0);
    const piedDestination = new MemoryDestination();
    piedDestination.applyAirbyte(airbyteShare(next.stdout, 'pied'));
    expect(piedDestination.diff(emulator.control.dump(pied.id))).toMatchObject({ missing: 0, stale: 0, extra: 0 });
    expect(recordsOf(next.stdout, 'hooli', 'contacts')).toBeLessThan(10);
  });

  it('refuses a state of one account with accounts, and a state of many accounts with api_key (78, nothing read)', async () => {
    const single = [{ type: 'STREAM', stream: { stream_descriptor: { name: 'contacts' }, stream_state: { sync_watermark: '2026-01-01T00:00:00.000Z' } } }];
    const run = await read(config([acme]), catalog, single);
    expect(run.code).toBe(78);
    expect(recordsOf(run.stdout, 'acme-br')).toBe(0);
    expect(traceErrors(run.stdout)[0]?.message).toMatch(/state of stream "contacts" is the state of one account.*\{"accounts": \{"acme-br"/);

    const one = writeJson(dir, `config-${++files}.json`, { base_url: emulator.url, api_key: acme.key });
    const many = stateLines(firstRun.stdout);
    const oneCatalog = writeJson(dir, `catalog-${++files}.json`, {
      streams: [{ stream: { name: 'contacts', json_schema: {} }, sync_mode: 'incremental', destination_sync_mode: 'append_dedup' }],
    });
    const refused = await read(one, oneCatalog, many);
    expect(refused.code).toBe(78);
    expect(parseLines(refused.stdout).filter((m) => m.type === 'RECORD')).toHaveLength(0);
    expect(traceErrors(refused.stdout)[0]?.message).toMatch(/holds the states of many accounts \("acme-br", "globex", "initech\.us"\).*this config reads one account/);
  });

  it('binds each entry to its account: an entry whose key now reads another account fails alone (78, both named)', async () => {
    // The entry "globex" given initech's key: its state belongs to Globex.
    const swapped = config([{ ...globex, key: initech.key }, acme]);
    const run = await read(swapped, catalog, stateLines(firstRun.stdout));
    expect(run.code).toBe(78);
    const errors = traceErrors(run.stdout);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/account "globex": The state belongs to account "Globex".*reads account "Initech"/);
    // What to do is said of the entry: its key, another entry's name, or a rename confirmed inside it.
    expect(errors[0]?.message).toContain('Give the accounts entry "globex" back the API key of "Globex", or read "Initech" under an entry of a new name');
    expect(errors[0]?.message).toContain('confirm the rename with "account_renamed_from": "Globex" in the accounts entry "globex".');
    expect(recordsOf(run.stdout, 'globex')).toBe(0);
    expect(recordsOf(run.stdout, 'acme-br')).toBeGreaterThan(0);
  });
});

/**
 * A guard for the cases of the STATEs' group, and for its set-up (not a bound on their speed). Each case runs the
 * connector over the group's 10 accounts (some 27,000 records, 18 MB of output) once or twice and checks every
 * account's share of the output, all CPU-bound: on a 2-core machine at a load of 15-19, three of the five took past
 * vitest's default 30 s; at 20-28, all five, one of them 102 s.
 */
const STATES_GROUP_MS = 180_000;

describe('the STATEs of many accounts: by records and checkpoints, not by page', { timeout: STATES_GROUP_MS }, () => {
  // 10 accounts of 500 contacts (some 27,000 records over the streams, pages of 40): more than the cadence's records in
  // the larger streams, so STATEs come mid-run too.
  let tenants: Tenant[];
  let cfg: string;
  let catalog: string;
  let whole: CliResult;
  /** The whole sync's messages, parsed once (18 MB of output: each parse took some 0.15 s of CPU). */
  let wholeMessages: Record<string, unknown>[];
  /** The whole sync's RECORDs. */
  let total: number;
  beforeAll(async () => {
    tenants = Array.from({ length: 10 }, (_, i) => tenant(`kill-${i}`, `Kill ${i}`, 500));
    cfg = config(tenants);
    catalog = await catalogFor(cfg);
    whole = await read(cfg, catalog);
    expect(whole.code, whole.stdout.slice(-1500)).toBe(0);
    wholeMessages = parseLines(whole.stdout);
    total = wholeMessages.filter((m) => m.type === 'RECORD').length;
  }, STATES_GROUP_MS);

  /** The STATE lines of each stream; the RECORD lines of each stream. */
  /** Every account exact in a destination that takes each of `outputs` in turn (Airbyte's or the tap's stdout). */
  const expectEveryAccountExact = (face: 'airbyte' | 'singer', ...outputs: string[]): void => {
    const entries = tenants.map((t) => t.entry);
    const destinations = new Map(entries.map((entry) => [entry, new MemoryDestination()]));
    for (const out of outputs) {
      if (face === 'airbyte') for (const [entry, share] of airbyteShares(out, entries)) destinations.get(entry)?.applyAirbyte(share);
      else for (const [entry, share] of singerShares(out, entries)) destinations.get(entry)?.applySinger(share);
    }
    for (const t of tenants) expect(destinations.get(t.entry)?.diff(emulator.control.dump(t.id)), t.entry).toMatchObject({ missing: 0, stale: 0, extra: 0 });
  };
  const perStream = (messages: readonly Record<string, unknown>[], type: 'STATE' | 'RECORD'): Map<string, number> => {
    const out = new Map<string, number>();
    for (const m of messages) {
      if (m.type !== type) continue;
      const name = type === 'RECORD' ? (m.record as { stream: string }).stream : (m.state as { stream: { stream_descriptor: { name: string } } }).stream.stream_descriptor.name;
      out.set(name, (out.get(name) ?? 0) + 1);
    }
    return out;
  };

  it('a whole sync: per stream at most its end, one before each deletions STATE, and one per cadence of records or checkpoints', async () => {
    expect((await protocolCheckAsync('airbyte', whole.stdout)).n_errors).toBe(0);
    const records = perStream(wholeMessages, 'RECORD');
    const states = perStream(wholeMessages, 'STATE');
    const deletions = states.get('deletions') ?? 0;
    for (const [stream, n] of records) {
      // Pages of 40 bound the checkpoints: a STATE per page would be n / 40 of them.
      const bound = 1 + deletions + Math.floor(n / STATE_CADENCE.records) + Math.floor((n / 40 + tenants.length) / STATE_CADENCE.checkpoints);
      expect(states.get(stream) ?? 0, `${stream}: ${n} records`).toBeLessThanOrEqual(bound);
    }
    expect(Math.max(...records.values())).toBeGreaterThan(STATE_CADENCE.records);
    expectEveryAccountExact('airbyte', whole.stdout);
  });

  it('killed (SIGKILL) mid-run: resumed from its last STATEs, every account is exact (records after them come again)', async () => {
    // Killed at 85 % of the records: past the first STATE of stage_events by the cadence (its 10,000th record, some 78 %).
    const killed = await runAndSignal(SOURCE_BIN, ['read', '--config', cfg, '--catalog', catalog], { signal: 'SIGKILL', pattern: /"type":"RECORD"/, count: Math.floor(total * 0.85) });
    expect(killed.signal).toBe('SIGKILL');
    // Whole lines only: the kill may cut the last one.
    const written = killed.stdout.slice(0, killed.stdout.lastIndexOf('\n') + 1);
    const states = stateLines(written);
    expect(states.length).toBeGreaterThan(0);
    const resumed = await read(cfg, catalog, states);
    expect(resumed.code, resumed.stdout.slice(-1500)).toBe(0);
    expect((await protocolCheckAsync('airbyte', resumed.stdout)).n_errors).toBe(0);
    // A destination commits the records before each STATE and drops those after the last one.
    expectEveryAccountExact('airbyte', written, resumed.stdout);
    // It went on from the STATEs: what it read again is bounded by the cadence, not the whole sync.
    const again = parseLines(resumed.stdout).filter((m) => m.type === 'RECORD').length;
    expect(again).toBeLessThan(total);
  });

  it('SIGTERM mid-run: the last words carry the checkpoints held back; resumed from them, every account is exact', async () => {
    const stopped = await runAndSignal(SOURCE_BIN, ['read', '--config', cfg, '--catalog', catalog], { signal: 'SIGTERM', pattern: /"type":"RECORD"/, count: Math.floor(total * 0.4) });
    expect(stopped.code).toBe(143);
    expect((await protocolCheckAsync('airbyte', stopped.stdout)).n_errors).toBe(0);
    const lines = parseLines(stopped.stdout);
    const lastRecord = lines.findLastIndex((m) => m.type === 'RECORD');
    // After the last record: the STATEs of the last words, each holding positions past the start of some account.
    const after = lines.slice(lastRecord + 1).filter((m) => m.type === 'STATE');
    expect(after.length).toBeGreaterThan(0);
    const resumed = await read(cfg, catalog, lines.filter((m) => m.type === 'STATE'));
    expect(resumed.code, resumed.stdout.slice(-1500)).toBe(0);
    expectEveryAccountExact('airbyte', stopped.stdout, resumed.stdout);
    // The last words saved the progress: the resumed run reads what was left (and the pages in flight), not everything again.
    const again = parseLines(resumed.stdout).filter((m) => m.type === 'RECORD').length;
    expect(again).toBeLessThan(total * 0.7);
  });

  it('the tap, SIGTERM mid-run: its final STATE carries the checkpoints held back; resumed from it, every account is exact', async () => {
    const stopped = await runAndSignal(TAP_BIN, ['--config', cfg], { signal: 'SIGTERM', pattern: /"type":"RECORD"/, count: Math.floor(total * 0.4) });
    expect(stopped.code).toBe(143);
    expect((await protocolCheckAsync('singer', stopped.stdout)).n_errors).toBe(0);
    // The last line alone (the checker above parsed every line).
    const last = parseLines(stopped.stdout.slice(stopped.stdout.trimEnd().lastIndexOf('\n') + 1)).at(-1);
    expect(last?.type).toBe('STATE');
    const resumed = await tap(cfg, last?.value);
    expect(resumed.code, resumed.stderr.slice(-1500)).toBe(0);
    expectEveryAccountExact('singer', stopped.stdout, resumed.stdout);
    // The last words saved the progress: the resumed run reads what was left (and the pages in flight), not everything again.
    const again = parseLines(resumed.stdout).filter((m) => m.type === 'RECORD').length;
    expect(again).toBeLessThan(total * 0.7);
  });

  it('the tap: STATEs by the cadence too, every account exact', async () => {
    const run = await tap(cfg);
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    expect((await protocolCheckAsync('singer', run.stdout)).n_errors).toBe(0);
    const messages = parseLines(run.stdout);
    const records = messages.filter((m) => m.type === 'RECORD').length;
    // One STATE per stream's end and a few by the cadence, where a STATE per page would be records / 40.
    expect(messages.filter((m) => m.type === 'STATE').length).toBeLessThanOrEqual(2 * 5 + Math.floor(records / STATE_CADENCE.records));
    expectEveryAccountExact('singer', run.stdout);
  });
});

describe('stopped by SIGTERM after an account failed', () => {
  // The error naming each failed account is said once every account ended; a signal that comes first ends the run
  // before that: its last words name them, or the reason (a key revoked) is in no line of the run.
  let cfg: string;
  let catalog: string;
  const revokedMessage = /account "stop-revoked": The Data-Read API did not accept the API key \(HTTP 401\)/;

  beforeAll(async () => {
    const revoked = tenant('stop-revoked', 'Stop Revoked', 5);
    emulator.control.revokeKey(revoked.keyId);
    const reading = tenant('stop-reading', 'Stop Reading', 600);
    // One account at a time: the revoked one has ended before the other reads its first page.
    cfg = config([revoked, reading], { max_concurrent_accounts: 1 });
    catalog = await catalogFor(cfg);
    // Slow pages: the signal comes while the second account still reads.
    emulator.control.setLatency(40);
  });

  afterAll(() => {
    emulator.control.setLatency(0);
  });

  it('read: the ERROR trace of the interruption names the account that failed and why', async () => {
    const stopped = await runAndSignal(SOURCE_BIN, ['read', '--config', cfg, '--catalog', catalog], { signal: 'SIGTERM', pattern: /"type":"RECORD"/ });
    expect(stopped.code, stopped.stdout.slice(-800)).toBe(143);
    expect((await protocolCheckAsync('airbyte', stopped.stdout)).n_errors).toBe(0);
    const errors = traceErrors(stopped.stdout);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/^The sync was interrupted \(SIGTERM\) before it finished/);
    expect(errors[0]?.message).toMatch(revokedMessage);
  });

  it('the tap: its CRITICAL line names the account that failed and why', async () => {
    const stopped = await runAndSignal(TAP_BIN, ['--config', cfg], { signal: 'SIGTERM', pattern: /"type":"RECORD"/ });
    expect(stopped.code, stopped.stderr.slice(-800)).toBe(143);
    const critical = stopped.stderr.split('\n').filter((l) => l.includes(' CRITICAL tap-data-read: '));
    expect(critical).toHaveLength(1);
    expect(critical[0]).toMatch(/Interrupted by SIGTERM/);
    expect(critical[0]).toMatch(revokedMessage);
  });

  it('replicate: its line on the interruption names the account that failed and why', async () => {
    const db = join(dir, 'stopped-after-failure.db');
    const stopped = await runAndSignal(SOURCE_BIN, ['replicate', '--config', cfg, '--db', db], { signal: 'SIGTERM', on: 'stderr', pattern: /Account "stop-reading": Connected/ });
    expect(stopped.code, stopped.stderr.slice(-800)).toBe(143);
    const said = stopped.stderr.split('\n').filter((l) => l.includes('Interrupted (SIGTERM)'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(revokedMessage);
  });
});

describe('a reader of stdout that goes away', () => {
  /** Runs `bin` with a stdout whose reader goes away once it took a RECORD (as `| head` does): exit status and stderr. */
  async function intoClosedPipe(bin: string, args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let taken = '';
    child.stdout.on('data', (b: Buffer) => {
      taken += b.toString('utf8');
      if (taken.includes('"type":"RECORD"')) child.stdout.destroy();
    });
    const err: Buffer[] = [];
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    return { code, stderr: Buffer.concat(err).toString('utf8') };
  }

  // What the accounts not started would read could reach no one: they are not read (no request with their keys).
  for (const [face, bin, level] of [
    ['the tap', TAP_BIN, 'CRITICAL'],
    ['read', SOURCE_BIN, 'ERROR'],
  ] as const) {
    it(`${face}: the accounts not started yet are not read; 75 with one line saying stdout was closed`, async () => {
      const tenants = ['first', 'second', 'third'].map((name) => tenant(`closed-${face.length}-${name}`, `Closed ${name}`, 200));
      // One account at a time, small pages: the reader goes away while the first account reads.
      const cfg = config(tenants, { max_concurrent_accounts: 1, page_size: 5 });
      const summary = join(dir, `closed-${face.length}.json`);
      const args = bin === TAP_BIN ? ['--config', cfg] : ['read', '--config', cfg, '--catalog', await catalogFor(cfg)];
      const run = await intoClosedPipe(bin, [...args, '--summary', summary]);
      expect(run.code, run.stderr.slice(-800)).toBe(75);
      const used = emulator.control.stats().maxInFlightByKey;
      expect(used[tenants[0]?.keyId ?? '']).toBeGreaterThan(0);
      expect(tenants.slice(1).map((t) => used[t.keyId] ?? 0), run.stderr.slice(-800)).toEqual([0, 0]);
      const said = run.stderr.split('\n').filter((l) => l.includes(` ${level} `));
      expect(said, run.stderr.slice(-800)).toHaveLength(1);
      expect(said[0]).toMatch(/stdout was closed before the command ended/);
      // The summary still names every stream, none of them finished.
      const streams = (JSON.parse(readFileSync(summary, 'utf8')) as { streams: { name: string; status: string }[] }).streams;
      expect(streams.map((s) => s.name).sort()).toEqual(['contacts', 'conversations', 'deletions', 'pipeline_stages', 'stage_events']);
      expect(new Set(streams.map((s) => s.status))).toEqual(new Set(['incomplete']));
    });
  }
});

describe('Singer tap with accounts', () => {
  it('syncs every account exactly with bookmarks per account; a stage removed in one account leaves only that account', async () => {
    const north = tenant('north', 'North', 40);
    const south = tenant('south', 'South', 35);
    const cfg = config([north, south]);
    const summary = join(dir, 'tap-summary.json');
    const first = await tap(cfg, undefined, summary);
    expect(first.code, first.stderr.slice(-1500)).toBe(0);
    expect((await protocolCheckAsync('singer', first.stdout)).n_errors).toBe(0);
    const schemas = parseLines(first.stdout).filter((m) => m.type === 'SCHEMA');
    for (const s of schemas) expect(s.key_properties).toEqual(['account', 'id']);
    const destinations = new Map<string, MemoryDestination>();
    for (const t of [north, south]) {
      const destination = new MemoryDestination();
      destination.applySinger(singerShare(first.stdout, t.entry));
      destinations.set(t.entry, destination);
      expect(destination.diff(emulator.control.dump(t.id)), t.entry).toMatchObject({ missing: 0, stale: 0, extra: 0 });
    }
    const last = stateLines(first.stdout).at(-1)?.value as { bookmarks: Record<string, { accounts: Record<string, unknown> }> };
    for (const bookmark of Object.values(last.bookmarks)) expect(Object.keys(bookmark.accounts)).toEqual(['north', 'south']);
    expect(summaryOf(summary).accounts?.map((a) => a.status)).toEqual(['succeeded', 'succeeded']);

    // A target honouring ACTIVATE_VERSION: pipeline_stages rows keyed by (account, id) with their version.
    const table = new Map<string, number>();
    const apply = (stdout: string): void => {
      for (const m of parseLines(stdout)) {
        if (m.type === 'RECORD' && m.stream === 'pipeline_stages') {
          const r = m.record as Row;
          table.set(`${String(r.account)}/${String(r.id)}`, m.version as number);
        } else if (m.type === 'ACTIVATE_VERSION' && m.stream === 'pipeline_stages') {
          for (const [key, version] of table) if (version < (m.version as number)) table.delete(key);
        }
      }
    };
    apply(first.stdout);
    const stages = (t: Tenant): string[] => emulator.control.pipelineStages(t.id).map((s) => `${t.entry}/${s.id}`).sort();
    expect([...table.keys()].sort()).toEqual([...stages(north), ...stages(south)].sort());
    const removed = emulator.control.pipelineStages(north.id)[0]?.id as string;
    emulator.control.removePipelineStage(north.id, removed);
    emulator.control.advanceClock(10 * 60_000);
    const second = await tap(cfg, last);
    expect(second.code, second.stderr.slice(-800)).toBe(0);
    expect(parseLines(second.stdout).filter((m) => m.type === 'ACTIVATE_VERSION')).toHaveLength(1);
    apply(second.stdout);
    expect([...table.keys()].sort()).toEqual([...stages(north), ...stages(south)].sort());
    expect(table.has(`north/${removed}`)).toBe(false);
    for (const t of [north, south]) {
      const destination = destinations.get(t.entry) as MemoryDestination;
      destination.applySinger(singerShare(second.stdout, t.entry));
      expect(destination.diff(emulator.control.dump(t.id)), t.entry).toMatchObject({ missing: 0, stale: 0, extra: 0 });
    }
    // Incremental per account (the service's 5-minute look-back may bring a few again).
    expect(recordsOf(second.stdout, 'north', 'contacts')).toBeLessThan(5);

    // One account failing: no ACTIVATE_VERSION (its rows keep their version), the other's records and bookmarks saved, 78.
    emulator.control.revokeKey(south.keyId);
    const third = await tap(cfg, stateLines(second.stdout).at(-1)?.value);
    expect(third.code).toBe(78);
    expect(parseLines(third.stdout).filter((m) => m.type === 'ACTIVATE_VERSION')).toHaveLength(0);
    expect(third.stderr).toMatch(/CRITICAL tap-data-read: 1 of 2 accounts failed \(the other one was read and its state saved\): account "south": .*401/);
    expect(recordsOf(third.stdout, 'north', 'pipeline_stages')).toBeGreaterThan(0);

    // South removed from the config: its bookmark stays, and no ACTIVATE_VERSION would remove its rows.
    const fourth = await tap(config([north]), stateLines(third.stdout).at(-1)?.value);
    expect(fourth.code, fourth.stderr.slice(-800)).toBe(0);
    expect(parseLines(fourth.stdout).filter((m) => m.type === 'ACTIVATE_VERSION')).toHaveLength(0);
    expect(fourth.stderr).toMatch(/WARNING tap-data-read: pipeline_stages: no ACTIVATE_VERSION: the bookmark holds an account no longer in the config \(south\)/);
    const kept = stateLines(fourth.stdout).at(-1)?.value as { bookmarks: Record<string, { accounts: Record<string, unknown> }> };
    expect(Object.keys(kept.bookmarks.pipeline_stages?.accounts ?? {})).toEqual(['north', 'south']);
  });

  it('an entry renamed in the config (its key and account the same): synced in full under its new name, with a WARNING naming both', async () => {
    const east = tenant('east', 'East', 12);
    const first = await tap(config([east]));
    expect(first.code, first.stderr.slice(-800)).toBe(0);
    const renamed = { ...east, entry: 'east-2' };
    const run = await tap(config([renamed]), stateLines(first.stdout).at(-1)?.value);
    expect(run.code, run.stderr.slice(-800)).toBe(0);
    expect((await protocolCheckAsync('singer', run.stdout)).n_errors).toBe(0);
    expect(recordsOf(run.stdout, 'east-2', 'contacts')).toBe(emulator.control.dump(east.id).contacts.length);
    const warnings = run.stderr.split('\n').filter((l) => l.includes('as entry "east"'));
    expect(warnings).toEqual([
      expect.stringMatching(/^\S+ WARNING tap-data-read: Account "east-2": it reads an account of the same name, "East" at \S+, as entry "east", which is no longer in the config .*Rename the entry back to "east"/),
    ]);
    expect(run.stdout + run.stderr).not.toContain(east.key);
  });
});

// The last two suites, each on an emulator of its own, wait on their rate-limit windows most of the time: they run
// together.
describe.concurrent('many keys rate-limited at once', () => {
  let limitedEmulator: Emulator;
  afterAll(async () => {
    await limitedEmulator?.close();
  });

  it('paces each key on its own budget: every account exact, no 429 beyond one per key', async () => {
    // A running clock (the rate-limit windows follow it), 4 requests per 1-second window per account.
    limitedEmulator = await startEmulator({ host: '127.0.0.1', port: 0, seed: 92, limits: LIMITS_OUT_OF_REACH });
    const control = limitedEmulator.control;
    const limited = Array.from({ length: 4 }, (_, i) => {
      const account = control.createAccount({ name: `Limited ${i}`, limits: { perMinute: 4, windowMs: 1000, perDay: 1_000_000 } });
      const { key } = control.createKey(account.id);
      control.seed(account.id, { contacts: 300, deletedFraction: 0 });
      return { entry: `limited-${i}`, id: account.id, key };
    });
    const cfg = writeJson(dir, `config-${++files}.json`, {
      base_url: limitedEmulator.url,
      page_size: 20,
      max_concurrent_accounts: 4,
      accounts: limited.map((t) => ({ name: t.entry, api_key: t.key })),
    });
    const catalog = writeJson(dir, `catalog-${++files}.json`, {
      streams: [{ stream: { name: 'contacts', json_schema: {} }, sync_mode: 'incremental', destination_sync_mode: 'append_dedup' }],
    });
    const summary = join(dir, 'limited-summary.json');
    const run = await read(cfg, catalog, undefined, summary);
    expect(run.code, run.stdout.slice(-800)).toBe(0);
    const stats = control.stats();
    // 17 requests a key (/v1/me, 15 pages and the read after them) against 4 a window: every key had to wait for its windows, however slow the machine
    // (with 7 requests a key, a machine too loaded to send them within one second needed no wait).
    expect(summaryOf(summary).rate_limit_waits).toBeGreaterThanOrEqual(limited.length);
    expect(stats.byStatus['429'] ?? 0).toBeLessThanOrEqual(limited.length);
    for (const t of limited) {
      const dump = control.dump(t.id);
      const ids = new Set(parseLines(run.stdout).filter((m) => m.type === 'RECORD' && (m.record as { data: Row }).data.account === t.entry).map((m) => (m.record as { data: Row }).data.id));
      expect(ids.size, t.entry).toBe(dump.contacts.length);
    }
    // Each account's 15 pages, and its read of what changed after its first read's watermark.
    expect(stats.byPath['/v1/contacts']?.['200']).toBe(limited.length * 16);
  }, 120_000);
});

describe.concurrent('a key revoked mid-run', () => {
  let own: Emulator;
  afterAll(async () => {
    await own?.close();
  });

  it('stops that account at its last checkpoint; the others exact; the next run resumes it and reads the others incrementally', async () => {
    // A running clock and 4 requests a second per account: each account's read spans several windows.
    own = await startEmulator({ host: '127.0.0.1', port: 0, seed: 93, limits: LIMITS_OUT_OF_REACH });
    const control = own.control;
    const made = ['first', 'victim', 'last'].map((entry) => {
      const account = control.createAccount({ name: `Mid ${entry}`, limits: { perMinute: 4, windowMs: 1000, perDay: 1_000_000 } });
      const { key, id: keyId } = control.createKey(account.id);
      control.seed(account.id, { contacts: 400, deletedFraction: 0 });
      return { entry, id: account.id, key, keyId };
    });
    const victim = made[1] as (typeof made)[number];
    const catalog = writeJson(dir, `catalog-${++files}.json`, {
      streams: [{ stream: { name: 'contacts', json_schema: {} }, sync_mode: 'incremental', destination_sync_mode: 'append_dedup' }],
    });
    const configOf = (): string =>
      writeJson(dir, `config-${++files}.json`, { base_url: own.url, page_size: 50, max_concurrent_accounts: 3, accounts: made.map((t) => ({ name: t.entry, api_key: t.key })) });

    // Revoke the victim's key once its first records went out.
    const first = await new Promise<CliResult>((resolvePromise, reject) => {
      const child = spawn(process.execPath, [SOURCE_BIN, 'read', '--config', configOf(), '--catalog', catalog], { stdio: ['ignore', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let revoked = false;
      child.stdout.on('data', (b: Buffer) => {
        out.push(b);
        if (!revoked && b.toString('utf8').includes('"account":"victim"')) {
          revoked = true;
          control.revokeKey(victim.keyId);
        }
      });
      child.stderr.on('data', (b: Buffer) => err.push(b));
      child.on('error', reject);
      child.on('close', (code, signal) => resolvePromise({ code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
    });
    expect(first.code, first.stdout.slice(-1000)).toBe(78);
    const errors = traceErrors(first.stdout);
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/^1 of 3 accounts failed .*account "victim": .*\(HTTP 401\).*revoked/);
    const victimRead = recordsOf(first.stdout, 'victim');
    expect(victimRead).toBeGreaterThan(0);
    expect(victimRead).toBeLessThan(400);
    const destinations = new Map(made.map((t) => [t.entry, new MemoryDestination()]));
    for (const t of made) destinations.get(t.entry)?.applyAirbyte(airbyteShare(first.stdout, t.entry));
    const contactsOf = (t: (typeof made)[number]): string[] => control.dump(t.id).contacts.map((c) => String((c as Row).id)).sort();
    for (const t of made.filter((m) => m !== victim)) expect([...(destinations.get(t.entry)?.table('contacts').keys() ?? [])].sort(), t.entry).toEqual(contactsOf(t));
    // The victim's state is its last checkpoint: a read in progress.
    expect(streamStates(first.stdout).get('contacts')?.accounts.victim).toMatchObject({ resume: { cursor: expect.any(String) } });

    victim.key = control.createKey(victim.id).key;
    const second = await read(configOf(), catalog, stateLines(first.stdout));
    expect(second.code, second.stdout.slice(-1000)).toBe(0);
    for (const t of made) destinations.get(t.entry)?.applyAirbyte(airbyteShare(second.stdout, t.entry));
    for (const t of made) expect([...(destinations.get(t.entry)?.table('contacts').keys() ?? [])].sort(), t.entry).toEqual(contactsOf(t));
    // The victim resumed where it stopped, the others went on incrementally.
    expect(recordsOf(second.stdout, 'victim')).toBeLessThanOrEqual(400 - victimRead + 50);
    expect(recordsOf(second.stdout, 'first')).toBeLessThan(50);
  }, 120_000);
});
