/**
 * The real executable against the emulator (in process, 127.0.0.1, port 0),
 * its output checked by the Singer protocol checker and replayed into a
 * replica that must equal the emulator's dump. Needs `npm run build`.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Dump, type Emulator, type Mutation } from 'data-read-emulator';
import type { CatalogEntry } from '../../../src/protocols/singer/catalog.js';
import { parseLines, protocolCheck, runCli, TAP_BIN, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';
import { MemoryDestination, type SingerStateValue } from '../../helpers/destination.js';
import { LIMITS_OUT_OF_REACH } from '../../helpers/emulator-runs.js';

let emu: Emulator;
const dir = tempDir('tap-e2e-');

beforeAll(async () => {
  emu = await startEmulator({ seed: 'singer-e2e', limits: LIMITS_OUT_OF_REACH });
});
afterAll(async () => {
  await emu?.close();
});

interface Account {
  id: string;
  key: string;
  config: string;
}

let accounts = 0;
function newAccount(contacts: number, extra: Record<string, unknown> = {}): Account {
  const account = emu.control.createAccount({ name: `singer ${++accounts}` });
  const { key } = emu.control.createKey(account.id);
  emu.control.seed(account.id, { contacts });
  const config = writeJson(dir, `config-${accounts}.json`, { api_key: key, base_url: emu.url, page_size: 50, ...extra });
  return { id: account.id, key, config };
}

function mutate(account: Account, ...mutations: Mutation[]): void {
  for (const m of mutations) emu.control.mutate(account.id, m);
}

const CHANGES: Mutation[] = [
  { op: 'update_contacts', count: 12 },
  { op: 'update_conversations', count: 6 },
  { op: 'move_contacts', count: 5 },
  { op: 'create_contacts', count: 7, withConversation: true },
  { op: 'create_conversations', count: 3 },
  { op: 'delete_contacts', count: 4 },
  { op: 'delete_conversations', count: 2 },
];

let runs = 0;
async function tap(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const r = await runCli(TAP_BIN, args, { env });
  runs++;
  if (r.stderr.includes('CRITICAL') && r.code === 0) throw new Error(`CRITICAL with exit 0:\n${r.stderr}`);
  return r;
}

function stateFile(value: SingerStateValue | undefined): string {
  return writeJson(dir, `state-${runs}.json`, value ?? {});
}

/** The Singer check must pass with no warning; returns its summary. */
function check(stdout: string) {
  const summary = protocolCheck('singer', stdout);
  expect(summary.errors).toEqual([]);
  expect(summary.n_errors).toBe(0);
  expect(summary.warnings ?? []).toEqual([]);
  return summary;
}

const recordsOf = (stdout: string, stream: string) =>
  parseLines(stdout).filter((l) => l.type === 'RECORD' && l.stream === stream).map((l) => l.record as Record<string, unknown>);

function expectReplicaEqualsDump(replica: MemoryDestination, dump: Dump, streams: readonly (keyof Dump)[]): void {
  for (const stream of streams) expect({ stream, rows: replica.rows(stream) }).toEqual({ stream, rows: dump[stream] });
}

/** The catalog of `--discover`, edited as Meltano's select and metadata rules edit it. */
async function selectCatalog(config: string, rules: Record<string, { fields?: string[]; method?: 'FULL_TABLE' | 'INCREMENTAL' }>): Promise<string> {
  const discovered = await tap(['--config', config, '--discover']);
  expect(discovered.code).toBe(0);
  const catalog = JSON.parse(discovered.stdout) as { streams: CatalogEntry[] };
  for (const entry of catalog.streams) {
    const rule = rules[entry.tap_stream_id];
    for (const m of entry.metadata) {
      if (m.breadcrumb.length === 0) {
        m.metadata.selected = rule !== undefined;
        if (rule?.method) m.metadata['replication-method'] = rule.method;
      } else {
        m.metadata.selected = rule !== undefined && (rule.fields === undefined || rule.fields.includes(m.breadcrumb[1] as string));
      }
    }
  }
  return writeJson(dir, `catalog-${runs}-${Object.keys(rules).join('-')}.json`, catalog);
}

/** A first sync of `catalog` into `replica`, then 4 contacts deleted an hour later, an hour before the next sync: that sync's state. */
async function syncThenDelete(account: Account, config: string, catalog: string, replica: MemoryDestination): Promise<SingerStateValue | undefined> {
  const first = await tap(['--config', config, '--catalog', catalog]);
  expect(first.code).toBe(0);
  const state = replica.applySinger(first.stdout);
  emu.control.advanceClock(3_600_000);
  mutate(account, { op: 'delete_contacts', count: 4 });
  emu.control.advanceClock(3_600_000);
  return state;
}

describe('tap-data-read against the emulator', () => {
  it('full sync of every stream, changes, incremental sync: upserts plus deletions equal the dump', async () => {
    const account = newAccount(400);
    const replica = new MemoryDestination();

    const full = await tap(['--config', account.config]);
    expect(full.stderr).not.toContain('CRITICAL');
    expect(full.code).toBe(0);
    const fullCheck = check(full.stdout);
    const lines = parseLines(full.stdout);
    expect(lines.at(-1)?.type).toBe('STATE');
    // A STATE after each checkpoint: 400 contacts in pages of 50 give several.
    expect(fullCheck.counts?.STATE).toBeGreaterThan(8);
    const schemas = lines.filter((l) => l.type === 'SCHEMA');
    expect(schemas.map((s) => [s.stream, s.key_properties, s.bookmark_properties])).toEqual([
      ['contacts', ['id'], ['updated_at']],
      ['conversations', ['id'], ['updated_at']],
      ['stage_events', ['id'], ['created_at']],
      ['deletions', ['id'], ['deleted_at']],
      ['pipeline_stages', ['id'], []],
    ]);
    for (const l of lines.filter((x) => x.type === 'RECORD')) expect(l.time_extracted).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const state1 = replica.applySinger(full.stdout);
    expect(state1?.currently_syncing).toBeNull();
    for (const stream of ['contacts', 'conversations', 'stage_events', 'deletions']) {
      expect(Object.keys(state1?.bookmarks[stream] ?? {})).toEqual(['sync_watermark', 'account']);
    }
    expectReplicaEqualsDump(replica, emu.control.dump(account.id), ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages']);

    mutate(account, ...CHANGES);
    const incremental = await tap(['--config', account.config, '--state', stateFile(state1)]);
    expect(incremental.code).toBe(0);
    check(incremental.stdout);
    // Incremental: only what changed (and the 5-minute look-back) is read again.
    expect(recordsOf(incremental.stdout, 'contacts').length).toBeLessThan(60);
    const state2 = replica.applySinger(incremental.stdout);
    for (const stream of ['contacts', 'conversations', 'stage_events', 'deletions']) {
      expect(Date.parse(String(state2?.bookmarks[stream]?.sync_watermark))).toBeGreaterThanOrEqual(Date.parse(String(state1?.bookmarks[stream]?.sync_watermark)));
    }
    expectReplicaEqualsDump(replica, emu.control.dump(account.id), ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages']);
  });

  it('stream and field selection (Meltano select rules), full and incremental, legacy --properties too', async () => {
    const account = newAccount(250);
    const catalog = await selectCatalog(account.config, {
      contacts: { fields: ['email', 'first_name'] },
      deletions: {},
      stage_events: { method: 'FULL_TABLE' },
    });
    const full = await tap(['--config', account.config, '--catalog', catalog]);
    expect(full.code).toBe(0);
    check(full.stdout);
    const lines = parseLines(full.stdout);
    const streams = new Set(lines.filter((l) => l.type !== 'STATE').map((l) => l.stream));
    expect([...streams].sort()).toEqual(['contacts', 'deletions', 'stage_events']);
    const contactsSchema = lines.find((l) => l.type === 'SCHEMA' && l.stream === 'contacts');
    expect(Object.keys((contactsSchema?.schema as { properties: object }).properties)).toEqual(['id', 'updated_at', 'first_name', 'email']);
    expect(lines.find((l) => l.type === 'SCHEMA' && l.stream === 'stage_events')?.bookmark_properties).toEqual([]);
    for (const r of recordsOf(full.stdout, 'contacts')) expect(Object.keys(r).sort()).toEqual(['email', 'first_name', 'id', 'updated_at']);

    const replica = new MemoryDestination();
    const state1 = replica.applySinger(full.stdout);
    expect(Object.keys(state1?.bookmarks ?? {}).sort()).toEqual(['contacts', 'deletions', 'stage_events']);
    const project = (rows: Record<string, unknown>[]) => rows.map(({ id, updated_at, email, first_name }) => ({ id, updated_at, email, first_name }));
    let dump = emu.control.dump(account.id);
    expect(replica.rows('contacts')).toEqual(project(dump.contacts));
    expectReplicaEqualsDump(replica, dump, ['stage_events', 'deletions']);

    mutate(account, ...CHANGES);
    // The same selection through the legacy flag, with the bookmarks of the first run.
    const incremental = await tap(['--config', account.config, '--properties', catalog, '--state', stateFile(state1)]);
    expect(incremental.code).toBe(0);
    check(incremental.stdout);
    expect(recordsOf(incremental.stdout, 'contacts').length).toBeLessThan(60);
    dump = emu.control.dump(account.id);
    // FULL_TABLE: stage_events is read whole again.
    expect(recordsOf(incremental.stdout, 'stage_events')).toHaveLength(dump.stage_events.length);
    replica.applySinger(incremental.stdout);
    expect(replica.rows('contacts')).toEqual(project(dump.contacts));
    expectReplicaEqualsDump(replica, dump, ['stage_events', 'deletions']);
    expect(parseLines(incremental.stdout).some((l) => l.stream === 'conversations')).toBe(false);
  });

  it('a field selected again since the bookmark: the stream is read in full, every row gets it back', async () => {
    const account = newAccount(150);
    const replica = new MemoryDestination();
    const without = await selectCatalog(account.config, { contacts: { fields: ['first_name', 'email'] } });
    const first = await tap(['--config', account.config, '--catalog', without]);
    expect(first.code).toBe(0);
    const state1 = replica.applySinger(first.stdout);
    expect(replica.rows('contacts').every((r) => !('job_title' in r))).toBe(true);

    mutate(account, { op: 'update_contacts', count: 4 });
    const every = await selectCatalog(account.config, { contacts: {} });
    const again = await tap(['--config', account.config, '--catalog', every, '--state', stateFile(state1)]);
    expect(again.code).toBe(0);
    check(again.stdout);
    const state2 = replica.applySinger(again.stdout);
    expectReplicaEqualsDump(replica, emu.control.dump(account.id), ['contacts']);
    expect(again.stderr).toMatch(/contacts: the records read up to the saved state carried another shape than this run's: [^.]*job_title[^.]* selected again\. /);
    expect(state2?.bookmarks.contacts).not.toHaveProperty('emitted');
  });

  it('deletions as tombstones with --config ENV: _sdc_deleted_at rows delete, the result equals the dump', async () => {
    const account = newAccount(200);
    const base = writeJson(dir, 'tomb-base.json', { base_url: emu.url, page_size: 40 });
    const env = { TAP_DATA_READ_API_KEY: account.key, TAP_DATA_READ_DELETIONS_AS_TOMBSTONES: 'true', TAP_DATA_READ_PAGE_SIZE: '60' };
    const args = ['--config', base, '--config', 'ENV'];
    const replica = new MemoryDestination('tombstones');
    const full = await tap(args, env);
    expect(full.code).toBe(0);
    check(full.stdout);
    expect(full.stderr).not.toContain(account.key);
    const state1 = replica.applySinger(full.stdout);

    mutate(account, { op: 'delete_contacts', count: 5 }, { op: 'delete_conversations', count: 3 }, { op: 'update_contacts', count: 4 });
    const incremental = await tap([...args, '--state', stateFile(state1)], env);
    expect(incremental.code).toBe(0);
    check(incremental.stdout);
    const tombstones = recordsOf(incremental.stdout, 'contacts').filter((r) => r._sdc_deleted_at != null);
    expect(tombstones.length).toBeGreaterThanOrEqual(5);
    expect(tombstones[0]).toMatchObject({ email: null, updated_at: tombstones[0]?._sdc_deleted_at });
    expect(recordsOf(incremental.stdout, 'conversations').some((r) => r._sdc_deleted_at != null)).toBe(true);
    const schema = parseLines(incremental.stdout).find((l) => l.type === 'SCHEMA' && l.stream === 'stage_events');
    expect(JSON.stringify(schema)).not.toContain('_sdc_deleted_at');
    replica.applySinger(incremental.stdout);
    // The deletion log is not applied: the tombstones alone remove the rows.
    expectReplicaEqualsDump(replica, emu.control.dump(account.id), ['contacts', 'conversations', 'stage_events', 'deletions']);
  });

  it('deletions as tombstones, contacts deselected for a while: selected again, it gets the tombstones it missed', async () => {
    const account = newAccount(120, { deletions_as_tombstones: true });
    const replica = new MemoryDestination('tombstones');
    const both = await selectCatalog(account.config, { contacts: {}, deletions: {} });
    // contacts left out while the log goes on: its deletions meanwhile have no stream to go to.
    const state1 = await syncThenDelete(account, account.config, both, replica);
    const logOnly = await selectCatalog(account.config, { deletions: {} });
    const paused = await tap(['--config', account.config, '--catalog', logOnly, '--state', stateFile(state1)]);
    expect(paused.code).toBe(0);
    const state2 = replica.applySinger(paused.stdout);
    const from = state1?.bookmarks.deletions?.sync_watermark;

    emu.control.advanceClock(3_600_000);
    mutate(account, { op: 'delete_contacts', count: 2 }, { op: 'update_contacts', count: 3 });
    const again = await tap(['--config', account.config, '--catalog', both, '--state', stateFile(state2)]);
    expect(again.code).toBe(0);
    check(again.stdout);
    const state3 = replica.applySinger(again.stdout);
    expectReplicaEqualsDump(replica, emu.control.dump(account.id), ['contacts']);
    expect(state2?.bookmarks.deletions?.tombstones_missed).toEqual({ contacts: from, conversations: from });
    expect(again.stderr).toContain(`contacts was not selected while deletions was read with deletions_as_tombstones since ${String(from)}`);
    expect(state3?.bookmarks.deletions?.tombstones_missed).toEqual({ conversations: from });

    // Left out longer than the log keeps deletions: the gap is said, with what to do.
    const longPause = await tap(['--config', account.config, '--catalog', logOnly, '--state', stateFile(state3)]);
    expect(longPause.code).toBe(0);
    let state = replica.applySinger(longPause.stdout);
    for (let day = 0; day < 91; day += 30) {
      emu.control.advanceClock(Math.min(30, 91 - day) * 86_400_000);
      const monthly = await tap(['--config', account.config, '--catalog', logOnly, '--state', stateFile(state)]);
      expect(monthly.code).toBe(0);
      state = replica.applySinger(monthly.stdout) ?? state;
    }
    const late = await tap(['--config', account.config, '--catalog', both, '--state', stateFile(state)]);
    expect(late.code).toBe(0);
    expect(late.stderr).toMatch(/deletions: the saved watermark \S+ is 9\d days old on the service's clock .*deletions between .* are gone\. .*contacts/);
  });

  it('deletions_as_tombstones turned on after syncs without it: the deletions the log keeps get their tombstones', async () => {
    const account = newAccount(100);
    const on = writeJson(dir, `config-tombstones-${account.id}.json`, { ...(JSON.parse(readFileSync(account.config, 'utf8')) as object), deletions_as_tombstones: true });
    const catalog = await selectCatalog(account.config, { contacts: {}, deletions: {} });
    const replica = new MemoryDestination('tombstones');
    const state1 = await syncThenDelete(account, account.config, catalog, replica);
    const off = await tap(['--config', account.config, '--catalog', catalog, '--state', stateFile(state1)]);
    expect(off.code).toBe(0);
    const state2 = replica.applySinger(off.stdout);

    const onCatalog = await selectCatalog(on, { contacts: {}, deletions: {} });
    const turnedOn = await tap(['--config', on, '--catalog', onCatalog, '--state', stateFile(state2)]);
    expect(turnedOn.code).toBe(0);
    check(turnedOn.stdout);
    const state3 = replica.applySinger(turnedOn.stdout);
    expectReplicaEqualsDump(replica, emu.control.dump(account.id), ['contacts']);
    expect(turnedOn.stderr).toContain(`deletions was read without deletions_as_tombstones up to ${String(state2?.bookmarks.deletions?.sync_watermark)}`);
    // Read with tombstones from now on (conversations, not selected, gets none).
    expect(Object.keys(state3?.bookmarks.deletions?.tombstones_missed ?? {})).toEqual(['conversations']);

    // On from then on: read on incrementally.
    const next = await tap(['--config', on, '--catalog', onCatalog, '--state', stateFile(state3)]);
    expect(next.code).toBe(0);
    expect(next.stderr).not.toContain('without deletions_as_tombstones');
  });

  it('a failure mid-read: CRITICAL, exit 75 (transient), the last STATE resumes and nothing is lost', async () => {
    const account = newAccount(300, { max_retries: 0 });
    emu.control.setFaults([{ kind: '500', every: 3, times: 1, paths: ['/v1/contacts'] }]);
    let failed: CliResult;
    try {
      failed = await tap(['--config', account.config]);
    } finally {
      emu.control.clearFaults();
    }
    expect(failed.code).toBe(75);
    expect(failed.stderr).toMatch(/CRITICAL .*contacts/);
    check(failed.stdout);
    const replica = new MemoryDestination();
    const state1 = replica.applySinger(failed.stdout);
    expect(state1?.currently_syncing).toBe('contacts');
    const whose = { name: expect.any(String), base_url: emu.url };
    expect(state1?.bookmarks.contacts).toEqual({ resume: { cursor: expect.any(String), sync_watermark: expect.any(String) }, account: whose });
    expect(Object.keys(state1?.bookmarks.conversations ?? {})).toEqual(['sync_watermark', 'account']);

    const resumed = await tap(['--config', account.config, '--state', stateFile(state1)]);
    expect(resumed.code).toBe(0);
    check(resumed.stdout);
    const state2 = replica.applySinger(resumed.stdout);
    expect(state2?.bookmarks.contacts).toEqual({ sync_watermark: expect.any(String), account: whose });
    // The resumed first read, then the read of what changed after its watermark: the bookmark is that read's, no earlier.
    const resumedRead = (state1?.bookmarks.contacts?.resume as { sync_watermark: string }).sync_watermark;
    expect(Date.parse(String(state2?.bookmarks.contacts?.sync_watermark))).toBeGreaterThanOrEqual(Date.parse(resumedRead));
    expectReplicaEqualsDump(replica, emu.control.dump(account.id), ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages']);
  });

  it('a revoked key: CRITICAL naming the cause, exit 78, the given bookmarks written back unchanged', async () => {
    const account = newAccount(10);
    const keyInfo = emu.control.lookupKey(account.key);
    if (!keyInfo) throw new Error('key not found');
    emu.control.revokeKey(keyInfo.id);
    const state = { bookmarks: { contacts: { sync_watermark: '2026-01-01T00:00:00.000Z' } }, currently_syncing: null };
    const r = await tap(['--config', account.config, '--state', writeJson(dir, 'revoked-state.json', state)]);
    expect(r.code).toBe(78);
    expect(r.stderr).toMatch(/CRITICAL .*(401|key)/i);
    expect(r.stderr).not.toContain(account.key);
    const last = parseLines(r.stdout).at(-1);
    expect(last).toMatchObject({ type: 'STATE', value: { bookmarks: state.bookmarks } });
  });
});
