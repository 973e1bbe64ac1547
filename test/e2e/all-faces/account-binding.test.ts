/**
 * A replica and a state belong to one account (connector contract,
 * "Accounts"), through the real executables against one emulator serving
 * several accounts:
 * - replicate with another account's config into an existing replica: 78,
 *   both accounts named, the file byte for byte as it was (sha256), no -wal,
 *   -shm or -journal left beside it, the summary failed / config_error;
 * - read and the tap given another account's state: 78 before any RECORD;
 * - a state or replica written before the rule (no account in it) is
 *   accepted and bound by that run's saves;
 * - a renamed account is refused until account_renamed_from confirms it; the
 *   run that confirms it binds the new name, and the next runs need nothing;
 * - one /v1/me a run.
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from 'data-read-emulator';
import { ROOT, SOURCE_BIN, TAP_BIN, parseLines, protocolCheck, runCli, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';
import { requireBuild } from '../../helpers/emulator-runs.js';
import { readDatabase } from '../../helpers/sqlite.js';

const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');

interface Tenant {
  readonly id: string;
  name: string;
  readonly key: string;
}

let emulator: Emulator;
let dir: string;
let acme: Tenant;
let globex: Tenant;
let initech: Tenant;
let files = 0;

beforeAll(async () => {
  requireBuild();
  dir = tempDir('account-binding-');
  // A frozen clock and limits out of reach: reproducible data, no rate-limit wait.
  emulator = await startEmulator({ host: '127.0.0.1', port: 0, seed: 83, frozenClock: true, limits: { perMinute: 10_000_000, perDay: 100_000_000 } });
  const tenant = (name: string, contacts: number): Tenant => {
    const account = emulator.control.createAccount({ name });
    const { key } = emulator.control.createKey(account.id);
    emulator.control.seed(account.id, { contacts });
    return { id: account.id, name, key };
  };
  acme = tenant('Acme Brazil', 60);
  globex = tenant('Globex', 45);
  initech = tenant('Initech', 30);
});

afterAll(async () => {
  await emulator?.close();
});

function config(tenant: Tenant, extra: Record<string, unknown> = {}): string {
  return writeJson(dir, `config-${++files}.json`, { api_key: tenant.key, base_url: emulator.url, page_size: 50, ...extra });
}

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** The files beside the database whose names start with its own (the database itself, -wal, -shm, -journal). */
function filesOf(db: string): string[] {
  const base = db.slice(dir.length + 1);
  return readdirSync(dir).filter((name) => name.startsWith(base)).sort();
}

function meCalls(): number {
  return Object.values(emulator.control.stats().byPath['/v1/me'] ?? {}).reduce((a, b) => a + b, 0);
}

function summaryOf(path: string): { status: string; exit_code: number; failure_type: string | null; message: string | null } {
  return JSON.parse(readFileSync(path, 'utf8')) as { status: string; exit_code: number; failure_type: string | null; message: string | null };
}

/** The TRACE ERROR messages of an Airbyte output. */
function traceErrors(stdout: string): { failure_type: string; message: string }[] {
  return parseLines(stdout)
    .filter((m) => m.type === 'TRACE')
    .map((m) => (m.trace as { error: { failure_type: string; message: string } }).error);
}

/** The messages of the stderr lines at `level` (`<instant> <LEVEL> <program>: <message>`). */
function stderrAt(level: string, stderr: string): string[] {
  return stderr.split('\n').flatMap((line) => {
    const m = new RegExp(`^\\S+ ${level} [\\w-]+: (.*)$`).exec(line);
    return m?.[1] ? [m[1]] : [];
  });
}

const records = (stdout: string): number => parseLines(stdout).filter((m) => m.type === 'RECORD').length;

/** Airbyte: the STATE messages of an output, as the next read's --state. */
function airbyteStates(stdout: string): Record<string, unknown>[] {
  return parseLines(stdout).filter((m) => m.type === 'STATE');
}

/** Airbyte: each stream's last stream_state in an output. */
function streamStates(stdout: string): Map<string, Record<string, unknown>> {
  const out = new Map<string, Record<string, unknown>>();
  for (const m of airbyteStates(stdout)) {
    const s = (m.state as { stream: { stream_descriptor: { name: string }; stream_state: Record<string, unknown> } }).stream;
    out.set(s.stream_descriptor.name, s.stream_state);
  }
  return out;
}

/** Singer: the value of the last STATE of an output. */
function lastSingerState(stdout: string): { bookmarks: Record<string, Record<string, unknown>> } {
  const states = parseLines(stdout).filter((m) => m.type === 'STATE');
  return states[states.length - 1]?.value as { bookmarks: Record<string, Record<string, unknown>> };
}

function read(cfg: string, state?: unknown, summary?: string): Promise<CliResult> {
  const args = ['read', '--config', cfg, '--catalog', CATALOG];
  if (state !== undefined) args.push('--state', writeJson(dir, `state-${++files}.json`, state));
  if (summary !== undefined) args.push('--summary', summary);
  return runCli(SOURCE_BIN, args);
}

function tap(cfg: string, state?: unknown, summary?: string): Promise<CliResult> {
  const args = ['--config', cfg];
  if (state !== undefined) args.push('--state', writeJson(dir, `tap-state-${++files}.json`, state));
  if (summary !== undefined) args.push('--summary', summary);
  return runCli(TAP_BIN, args);
}

function replicate(cfg: string, db: string, summary?: string): Promise<CliResult> {
  return runCli(SOURCE_BIN, ['replicate', '--config', cfg, '--db', db, ...(summary === undefined ? [] : ['--summary', summary])]);
}

/** The account the replica at `db` records. */
function boundAccount(db: string): Record<string, unknown>[] {
  return readDatabase(db, (d) => d.prepare('SELECT entry, account_name, base_url FROM _replica_account').all().map((r) => ({ ...r })));
}

/** What a refusal says, whatever the face: both names, what to do, and the one way to confirm a rename. */
function expectRefusal(message: string | undefined, bound: string, current: string): void {
  expect(message).toContain(`belongs to account "${bound}"`);
  expect(message).toContain(`this config's API key reads account "${current}"`);
  expect(message).toContain(`confirm the rename with "account_renamed_from": "${bound}" in the config`);
}

describe('replicate: a replica belongs to one account', () => {
  it("another account's config is refused with 78, both accounts named, the file byte for byte unchanged", async () => {
    const db = join(dir, 'acme.db');
    const first = await replicate(config(acme), db);
    expect(first.code, first.stderr.slice(-800)).toBe(0);
    expect(boundAccount(db)).toEqual([{ entry: '', account_name: 'Acme Brazil', base_url: emulator.url }]);
    const before = { sha256: sha256(db), files: filesOf(db) };
    expect(before.files).toEqual(['acme.db']);

    const summary = join(dir, 'replicate-refused.json');
    const me = meCalls();
    const refused = await replicate(config(globex), db, summary);
    expect(refused.code, refused.stderr.slice(-800)).toBe(78);
    expect(meCalls() - me).toBe(1);
    const [error, ...more] = stderrAt('ERROR', refused.stderr);
    expect(more).toEqual([]);
    expectRefusal(error, 'Acme Brazil', 'Globex');
    expect(error).toMatch(/^Cannot replicate: The replica ".*acme\.db" belongs to account "Acme Brazil"/);
    expect(error).toContain('Nothing was changed in it.');
    expect(refused.stderr).not.toMatch(/Replica up to date|clock went back/);
    expect({ sha256: sha256(db), files: filesOf(db) }).toEqual(before);
    expect(summaryOf(summary)).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error', message: error?.replace(/^Cannot replicate: /, '') });

    // The right account's config still replicates into it.
    const again = await replicate(config(acme), db);
    expect(again.code, again.stderr.slice(-800)).toBe(0);
  });

  it('a replica from before the rule (no account in it) is accepted and bound to the account of its next run', async () => {
    const db = join(dir, 'old.db');
    expect((await replicate(config(globex), db)).code).toBe(0);
    // The file as the previous release left it: no account table, states without an account.
    const old = new DatabaseSync(db);
    try {
      old.exec('DROP TABLE IF EXISTS _replica_account');
      old.exec("UPDATE _replica_state SET state = json_remove(state, '$.account')");
    } finally {
      old.close();
    }
    const run = await replicate(config(globex), db);
    expect(run.code, run.stderr.slice(-800)).toBe(0);
    expect(stderrAt('INFO', run.stderr)).toContain(
      `The replica "${db}" recorded no account (it was written before replicas recorded theirs): it now belongs to account "Globex".`,
    );
    expect(boundAccount(db)).toEqual([{ entry: '', account_name: 'Globex', base_url: emulator.url }]);
    const states = readDatabase(db, (d) => d.prepare('SELECT state FROM _replica_state').all().map((r) => JSON.parse(String(r.state)) as { account?: unknown }));
    for (const state of states) expect(state.account).toEqual({ name: 'Globex', base_url: emulator.url });

    const sha = sha256(db);
    const refused = await replicate(config(acme), db);
    expect(refused.code).toBe(78);
    expectRefusal(stderrAt('ERROR', refused.stderr)[0], 'Globex', 'Acme Brazil');
    expect(sha256(db)).toBe(sha);
  });
});

describe("read: a state belongs to one account", () => {
  it("another account's state is refused with 78 before any RECORD; the summary says failed / config_error", async () => {
    const first = await read(config(acme));
    expect(first.code, first.stdout.slice(-800)).toBe(0);
    for (const [name, state] of streamStates(first.stdout)) expect(state.account, name).toEqual({ name: 'Acme Brazil', base_url: emulator.url });

    const summary = join(dir, 'read-refused.json');
    const me = meCalls();
    const refused = await read(config(globex), airbyteStates(first.stdout), summary);
    expect(refused.code, refused.stdout.slice(-800)).toBe(78);
    expect(meCalls() - me).toBe(1);
    expect(protocolCheck('airbyte', refused.stdout).errors).toEqual([]);
    expect(records(refused.stdout)).toBe(0);
    expect(airbyteStates(refused.stdout)).toEqual([]);
    const errors = traceErrors(refused.stdout);
    expect(errors.map((e) => e.failure_type)).toEqual(['config_error']);
    expectRefusal(errors[0]?.message, 'Acme Brazil', 'Globex');
    // pipeline_stages is read in full: its state is not read from, and not checked.
    expect(errors[0]?.message).toMatch(/^The state belongs to account "Acme Brazil" \(streams contacts, conversations, stage_events, deletions\), /);
    expect(errors[0]?.message).toContain('nothing was read');
    expect(summaryOf(summary)).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error', message: errors[0]?.message });
  });

  it("a full refresh reads from no state: another account's is not refused there, and the STATEs name the run's account", async () => {
    const acmeState = airbyteStates((await read(config(acme))).stdout);
    const fullRefresh = writeJson(dir, 'full-refresh.json', {
      streams: ['contacts', 'pipeline_stages'].map((name) => ({ stream: { name, json_schema: {} }, sync_mode: 'full_refresh', destination_sync_mode: 'overwrite' })),
    });
    const run = await runCli(SOURCE_BIN, ['read', '--config', config(globex), '--catalog', fullRefresh, '--state', writeJson(dir, `state-${++files}.json`, acmeState)]);
    expect(run.code, run.stdout.slice(-800)).toBe(0);
    const contacts = parseLines(run.stdout).filter((m) => m.type === 'RECORD' && (m.record as { stream: string }).stream === 'contacts');
    expect(contacts).toHaveLength(emulator.control.dump(globex.id).contacts.length);
    for (const [name, state] of streamStates(run.stdout)) expect(state.account, name).toEqual({ name: 'Globex', base_url: emulator.url });
  });

  it('a state from before the rule (no account) is accepted, and the STATE messages of that read carry the account', async () => {
    const first = await read(config(globex));
    const old = airbyteStates(first.stdout).map((m) => {
      const { account: _account, ...rest } = (m.state as { stream: { stream_state: Record<string, unknown> } }).stream.stream_state;
      const state = m.state as { stream: Record<string, unknown> };
      return { ...m, state: { ...state, stream: { ...state.stream, stream_state: rest } } };
    });
    const run = await read(config(globex), old);
    expect(run.code, run.stdout.slice(-800)).toBe(0);
    expect(protocolCheck('airbyte', run.stdout).errors).toEqual([]);
    const states = streamStates(run.stdout);
    expect([...states.keys()].sort()).toEqual(['contacts', 'conversations', 'deletions', 'pipeline_stages', 'stage_events']);
    for (const [name, state] of states) expect(state.account, name).toEqual({ name: 'Globex', base_url: emulator.url });
    // Bound now: another account's key is refused with it.
    const refused = await read(config(acme), airbyteStates(run.stdout));
    expect(refused.code).toBe(78);
    expect(records(refused.stdout)).toBe(0);
  });
});

describe('the tap: a state belongs to one account', () => {
  it("another account's bookmarks are refused with 78 (CRITICAL) before any RECORD", async () => {
    const first = await tap(config(acme));
    expect(first.code, first.stderr.slice(-800)).toBe(0);
    const state = lastSingerState(first.stdout);
    for (const [name, bookmark] of Object.entries(state.bookmarks)) expect(bookmark.account, name).toEqual({ name: 'Acme Brazil', base_url: emulator.url });

    const summary = join(dir, 'tap-refused.json');
    const me = meCalls();
    const refused = await tap(config(globex), state, summary);
    expect(refused.code, refused.stderr.slice(-800)).toBe(78);
    expect(meCalls() - me).toBe(1);
    expect(refused.stdout).toBe('');
    const critical = stderrAt('CRITICAL', refused.stderr);
    expect(critical).toHaveLength(1);
    expectRefusal(critical[0], 'Acme Brazil', 'Globex');
    expect(summaryOf(summary)).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error', message: critical[0] });
  });

  it('bookmarks from before the rule are accepted, and the STATE of that sync carries the account', async () => {
    const first = lastSingerState((await tap(config(globex))).stdout);
    const old = { bookmarks: Object.fromEntries(Object.entries(first.bookmarks).map(([name, { account: _account, ...rest }]) => [name, rest])) };
    const run = await tap(config(globex), old);
    expect(run.code, run.stderr.slice(-800)).toBe(0);
    expect(protocolCheck('singer', run.stdout).errors).toEqual([]);
    const bookmarks = lastSingerState(run.stdout).bookmarks;
    expect(Object.keys(bookmarks).length).toBeGreaterThanOrEqual(4);
    for (const [name, bookmark] of Object.entries(bookmarks)) expect(bookmark.account, name).toEqual({ name: 'Globex', base_url: emulator.url });
  });
});

describe('a renamed account', () => {
  // Before the rename: a replica, an Airbyte state and Singer bookmarks of "Initech".
  const db = (): string => join(dir, 'initech.db');
  let airbyte: CliResult;
  let singer: CliResult;
  beforeAll(async () => {
    const runs = await Promise.all([replicate(config(initech), db()), read(config(initech)), tap(config(initech))]);
    expect(runs.map((r) => r.code)).toEqual([0, 0, 0]);
    [, airbyte, singer] = runs as [CliResult, CliResult, CliResult];
    emulator.control.updateAccount(initech.id, { name: 'Initech Global' });
  });
  const confirmed = (): string => config(initech, { account_renamed_from: 'Initech' });

  it('replicate: refused untouched until account_renamed_from confirms it; that run binds the new name, the next needs nothing', async () => {
    const sha = sha256(db());
    const refused = await replicate(config(initech), db());
    expect(refused.code).toBe(78);
    expectRefusal(stderrAt('ERROR', refused.stderr)[0], 'Initech', 'Initech Global');
    expect(sha256(db())).toBe(sha);

    const ok = await replicate(confirmed(), db());
    expect(ok.code, ok.stderr.slice(-800)).toBe(0);
    expect(stderrAt('INFO', ok.stderr)).toContain(
      `The replica "${db()}" belonged to account "Initech", which account_renamed_from confirms is now "Initech Global": it now belongs to "Initech Global".`,
    );
    expect(boundAccount(db())).toEqual([{ entry: '', account_name: 'Initech Global', base_url: emulator.url }]);
    expect((await replicate(config(initech), db())).code).toBe(0);
    expect(filesOf(db())).toEqual(['initech.db']);
  });

  it('read: refused until account_renamed_from confirms it (another former name is not enough); that read binds the new name', async () => {
    const refused = await read(config(initech), airbyteStates(airbyte.stdout));
    expect(refused.code).toBe(78);
    expectRefusal(traceErrors(refused.stdout)[0]?.message, 'Initech', 'Initech Global');
    const wrong = await read(config(initech, { account_renamed_from: 'Initrode' }), airbyteStates(airbyte.stdout));
    expect(wrong.code).toBe(78);
    expect(traceErrors(wrong.stdout)[0]?.message).toContain('(account_renamed_from is "Initrode")');

    const ok = await read(confirmed(), airbyteStates(airbyte.stdout));
    expect(ok.code, ok.stdout.slice(-800)).toBe(0);
    expect(protocolCheck('airbyte', ok.stdout).errors).toEqual([]);
    for (const [name, state] of streamStates(ok.stdout)) expect(state.account, name).toEqual({ name: 'Initech Global', base_url: emulator.url });
    expect((await read(config(initech), airbyteStates(ok.stdout))).code).toBe(0);
  });

  it('the tap: refused until account_renamed_from confirms it; that sync binds the new name', async () => {
    const refused = await tap(config(initech), lastSingerState(singer.stdout));
    expect(refused.code).toBe(78);
    expectRefusal(stderrAt('CRITICAL', refused.stderr)[0], 'Initech', 'Initech Global');

    const ok = await tap(confirmed(), lastSingerState(singer.stdout));
    expect(ok.code, ok.stderr.slice(-800)).toBe(0);
    for (const [name, bookmark] of Object.entries(lastSingerState(ok.stdout).bookmarks)) {
      expect(bookmark.account, name).toEqual({ name: 'Initech Global', base_url: emulator.url });
    }
    expect((await tap(config(initech), lastSingerState(ok.stdout))).code).toBe(0);
  });
});
