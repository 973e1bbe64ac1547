/**
 * Personal data through the real executables, against the emulator and its
 * real data, in all three faces: with `personal_data: hash` no raw e-mail,
 * phone, full name or ad click id of the dataset appears on stdout, stderr
 * or in the replica file (and its WAL); every hashed value equals the
 * HMAC-SHA-256 computed here with node:crypto; a dropped field is absent
 * from records and schemas; a field only the service describes takes a
 * treatment; incremental syncs still work, ids and cursors untouched. A
 * replica refuses other treatments without changing; the Airbyte face honours
 * the configured catalog's properties as field selection; bad treatments
 * fail `check`.
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import type { ExtraField } from 'data-read-emulator';
import { ROOT, SOURCE_BIN, TAP_BIN, connectionStatusOf, parseLines, protocolCheckAsync, runCli, writeJson } from '../../helpers/cli.js';
import { MemoryDestination, airbyteStateFile, normalizeDump } from '../../helpers/destination.js';
import { replicate, type Account } from '../../helpers/emulator-runs.js';
import { withEmulatorAccount } from '../../helpers/suite.js';

type Json = Record<string, unknown>;

const HASH_KEY = 'e2e-personal-data-key-5b1f0c9e7d';
/** A string field only the service describes (added at run time), given its own treatment. */
const NOTE: ExtraField = { list: 'contacts', name: 'lead_note', type: 'string', description: 'A free note on the lead' };
const TREATMENTS = [
  { stream: 'contacts', field: 'job_title', treatment: 'drop' },
  { stream: 'contacts', field: 'lead_note', treatment: 'sha256' },
];

let account: Account;
let dir: string;
let n = 0;

withEmulatorAccount('personal-data-', { contacts: 150, seed: 31 }, (suite) => {
  ({ account, dir } = suite);
  account.emulator.control.addExtraField(NOTE);
});

/** A config file of its own for this account. */
function config(extra: Json = {}): string {
  return writeJson(dir, `config-${n++}.json`, { api_key: account.key, base_url: account.emulator.url, page_size: 50, ...extra });
}
const hashConfig = (extra: Json = {}): string => config({ personal_data: 'hash', hash_key: HASH_KEY, field_treatments: TREATMENTS, ...extra });

// The treatments, written here independently of the connector's code.
const hmac = (value: string): string => createHmac('sha256', HASH_KEY).update(value, 'utf8').digest('hex');
const sha256 = (value: string): string => createHash('sha256').update(value, 'utf8').digest('hex');
const text = (v: string): string => v.trim().normalize('NFC');
const email = (v: string): string => v.trim().toLowerCase();
const phone = (v: string): string => v.replace(/[^+0-9]/g, '');

/** The contact as every face must emit it with hashConfig. */
function expectedContact(raw: Json): Json {
  const out: Json = { ...raw };
  const h = (field: string, norm: (v: string) => string): void => {
    const v = raw[field];
    if (typeof v === 'string') out[field] = hmac(norm(v));
  };
  for (const f of ['name', 'first_name', 'last_name', 'first_origin_ctwa_clid']) h(f, text);
  h('email', email);
  h('phone', phone);
  delete out.job_title;
  if (typeof raw.lead_note === 'string') out.lead_note = sha256(text(raw.lead_note));
  return out;
}

/** Raw personal values of the dataset that must never leave the connector (short ones could occur by chance). */
function rawValues(): string[] {
  const dump = account.dump();
  const values = new Set<string>();
  for (const c of dump.contacts as unknown as Json[]) {
    for (const f of ['name', 'email', 'phone', 'first_origin_ctwa_clid']) if (typeof c[f] === 'string' && (c[f] as string).length >= 8) values.add(c[f] as string);
  }
  for (const c of dump.conversations as unknown as Json[]) if (typeof c.origin_ctwa_clid === 'string') values.add(c.origin_ctwa_clid);
  expect(values.size).toBeGreaterThan(300);
  return [...values];
}

/** The raw values found in `text` (none expected), and whether the hash key is in it. */
function leaks(output: string | Buffer): string[] {
  const haystack = typeof output === 'string' ? Buffer.from(output, 'utf8') : output;
  return [...rawValues(), HASH_KEY].filter((v) => haystack.includes(Buffer.from(v, 'utf8')));
}

/** A stream's entry of a --summary file. */
function summaryStream(path: string, stream: string): Json | undefined {
  const summary = JSON.parse(readFileSync(path, 'utf8')) as { streams: Json[] };
  return summary.streams.find((s) => s.name === stream);
}

function contactsById(): Map<string, Json> {
  return new Map((account.dump().contacts as unknown as Json[]).map((c) => [c.id as string, c]));
}

const airbyteRecords = (stdout: string, stream: string): Json[] =>
  parseLines(stdout).flatMap((m) => (m.type === 'RECORD' && (m.record as Json).stream === stream ? [(m.record as Json).data as Json] : []));

function lastAirbyteStates(stdout: string): Map<string, unknown> {
  const states = new Map<string, unknown>();
  for (const m of parseLines(stdout)) {
    if (m.type !== 'STATE') continue;
    const s = (m.state as Json).stream as { stream_descriptor: { name: string }; stream_state: unknown };
    states.set(s.stream_descriptor.name, s.stream_state);
  }
  return states;
}

describe('personal_data hash, against the emulator', () => {
  it('Airbyte: discover describes the treated fields; read emits HMAC tokens only, incremental still works', async () => {
    const cfg = hashConfig({ deletions_as_tombstones: true });
    const discovered = await runCli(SOURCE_BIN, ['discover', '--config', cfg]);
    expect(discovered.code, discovered.stderr).toBe(0);
    const catalog = parseLines(discovered.stdout).find((m) => m.type === 'CATALOG')?.catalog as { streams: { name: string; json_schema: { properties: Record<string, Json> } }[] };
    const contacts = catalog.streams.find((s) => s.name === 'contacts');
    const props = contacts?.json_schema.properties ?? {};
    expect(props.job_title).toBeUndefined();
    expect(props.email).toMatchObject({ type: ['null', 'string'], minLength: 64, maxLength: 64, pattern: '^[0-9a-f]{64}$' });
    expect(String(props.email?.description)).toMatch(/HMAC-SHA-256 under the configured hash_key of the e-mail trimmed and lower-cased/);
    expect(String(props.lead_note?.description)).toMatch(/plain SHA-256/);
    expect(leaks(discovered.stdout + discovered.stderr)).toEqual([]);

    const configured = writeJson(dir, `configured-${n++}.json`, {
      streams: catalog.streams
        .filter((s) => ['contacts', 'conversations', 'deletions'].includes(s.name))
        .map((stream) => ({ stream, sync_mode: 'incremental', destination_sync_mode: 'append_dedup', cursor_field: [], primary_key: [] })),
    });
    const before = contactsById();
    const first = await runCli(SOURCE_BIN, ['read', '--config', cfg, '--catalog', configured]);
    expect(first.code, first.stderr).toBe(0);
    expect((await protocolCheckAsync('airbyte', first.stdout)).errors).toEqual([]);
    // (The seeded account has deletions already: their tombstones come first.)
    const records = airbyteRecords(first.stdout, 'contacts').filter((r) => typeof r._ab_cdc_deleted_at !== 'string');
    expect(records.length).toBe(before.size);
    for (const record of records) expect(record).toEqual(expectedContact(before.get(record.id as string) as Json));
    expect(records.filter((r) => typeof r.lead_note === 'string').length).toBeGreaterThan(0);
    expect(leaks(first.stdout + first.stderr)).toEqual([]);

    // What changed since, incrementally: updated and new contacts hashed, deleted ones as tombstones without the dropped field.
    account.mutate({ op: 'update_contacts', count: 12 });
    account.mutate({ op: 'create_contacts', count: 6, withConversation: true });
    account.mutate({ op: 'delete_contacts', count: 3 });
    const after = contactsById();
    const state = writeJson(dir, `state-${n++}.json`, airbyteStateFile(lastAirbyteStates(first.stdout)));
    const readSummary = join(dir, `read-summary-${n++}.json`);
    const second = await runCli(SOURCE_BIN, ['read', '--config', cfg, '--catalog', configured, '--state', state, '--summary', readSummary]);
    expect(second.code, second.stderr).toBe(0);
    const changed = airbyteRecords(second.stdout, 'contacts');
    expect(leaks(readFileSync(readSummary))).toEqual([]);
    expect(summaryStream(readSummary, 'contacts')).toMatchObject({ status: 'complete', records: changed.length });
    const live = changed.filter((r) => typeof r._ab_cdc_deleted_at !== 'string');
    const tombstones = changed.filter((r) => typeof r._ab_cdc_deleted_at === 'string');
    expect(live.length).toBeGreaterThanOrEqual(18);
    expect(live.length).toBeLessThan(after.size);
    for (const record of live) {
      const raw = after.get(record.id as string) as Json;
      expect(record).toEqual(expectedContact(raw));
    }
    expect(tombstones.length).toBe(3);
    for (const t of tombstones) {
      expect(t).not.toHaveProperty('job_title');
      expect(t.email).toBeNull();
    }
    expect(leaks(second.stdout + second.stderr)).toEqual([]);
  });

  it('Singer: SCHEMA without the dropped field, RECORDs with the same tokens as the Airbyte face', async () => {
    const before = contactsById();
    const tapSummary = join(dir, 'tap-summary.json');
    const run = await runCli(TAP_BIN, ['--config', hashConfig(), '--summary', tapSummary]);
    expect(run.code, run.stderr).toBe(0);
    expect(leaks(readFileSync(tapSummary))).toEqual([]);
    expect(summaryStream(tapSummary, 'contacts')).toMatchObject({ status: 'complete', records: before.size });
    expect((await protocolCheckAsync('singer', run.stdout)).errors).toEqual([]);
    const messages = parseLines(run.stdout);
    const schema = messages.find((m) => m.type === 'SCHEMA' && m.stream === 'contacts')?.schema as { properties: Record<string, Json> };
    expect(schema.properties.job_title).toBeUndefined();
    expect(schema.properties.phone).toMatchObject({ pattern: '^[0-9a-f]{64}$' });
    const records = messages.filter((m) => m.type === 'RECORD' && m.stream === 'contacts').map((m) => m.record as Json);
    expect(records.length).toBe(before.size);
    for (const record of records) expect(record).toEqual(expectedContact(before.get(record.id as string) as Json));
    expect(leaks(run.stdout + run.stderr)).toEqual([]);
  });

  it('replica: hashed columns, no column for the dropped field, nothing raw in the file or its WAL; incremental runs go on', async () => {
    const db = join(dir, 'hashed.db');
    const cfg = hashConfig();
    const first = await replicate(cfg, db);
    expect(first.code, first.stderr).toBe(0);
    const check = (): void => {
      const conn = new DatabaseSync(db, { readOnly: true });
      try {
        const columns = conn.prepare("SELECT name FROM pragma_table_info('contacts')").all().map((r) => r.name);
        expect(columns).not.toContain('job_title');
        expect(columns).toContain('email');
        const now = contactsById();
        const rows = conn.prepare('SELECT id, updated_at, name, email, phone, lead_note FROM contacts').all();
        expect(rows.length).toBe(now.size);
        for (const row of rows) {
          const want = expectedContact(now.get(String(row.id)) as Json);
          expect({ id: row.id, updated_at: row.updated_at, name: row.name, email: row.email, phone: row.phone, lead_note: row.lead_note }).toEqual({
            id: want.id, updated_at: want.updated_at, name: want.name, email: want.email, phone: want.phone, lead_note: want.lead_note,
          });
        }
      } finally {
        conn.close();
      }
      expect(leaks(readFileSync(db))).toEqual([]);
      if (existsSync(`${db}-wal`)) expect(leaks(readFileSync(`${db}-wal`))).toEqual([]);
    };
    check();
    expect(leaks(first.stdout + first.stderr)).toEqual([]);
    account.mutate({ op: 'update_contacts', count: 10 });
    account.mutate({ op: 'create_contacts', count: 4 });
    const second = await replicate(cfg, db);
    expect(second.code, second.stderr).toBe(0);
    check();
  });

  it('replica: a run with other treatments is refused, naming the change, and the file does not change', async () => {
    const db = join(dir, 'refuse.db');
    expect((await replicate(hashConfig(), db)).code).toBe(0);
    const bytes = readFileSync(db);
    for (const [other, change] of [
      [config(), /contacts\.email: hash then, keep now/],
      [hashConfig({ hash_key: 'another-key-0123456789' }), /hash_key \(another key/],
      [hashConfig({ field_treatments: [TREATMENTS[1]] }), /contacts\.job_title: drop then, keep now/],
    ] as const) {
      const summary = join(dir, 'refused-summary.json');
      const run = await runCli(SOURCE_BIN, ['replicate', '--config', other, '--db', db, '--summary', summary]);
      expect(run.code, run.stderr).toBe(78);
      expect(JSON.parse(readFileSync(summary, 'utf8'))).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error' });
      expect(leaks(readFileSync(summary))).toEqual([]);
      expect(readFileSync(summary, 'utf8')).not.toContain('another-key-0123456789');
      expect(run.stderr).toMatch(change);
      expect(run.stderr).toMatch(/Nothing was changed in it\..*replicate into a new file/);
      expect(run.stderr).not.toContain(HASH_KEY);
      expect(run.stderr).not.toContain('another-key-0123456789');
      expect(readFileSync(db).equals(bytes)).toBe(true);
    }
  });
  it('replica: a file with the older 64-bit key fingerprint keeps its key, upgraded to scrypt by the next save; another key is refused', async () => {
    const db = join(dir, 'old-fingerprint.db');
    expect((await replicate(hashConfig(), db)).code).toBe(0);
    // Its record of treatments as the build before the scrypt fingerprint wrote it.
    const fixture = readFileSync(join(ROOT, 'test', 'e2e', 'replica', 'fixtures', 'personal-data-hmac-fingerprint.sql'), 'utf8');
    const record = (): Json => {
      const conn = new DatabaseSync(db, { readOnly: true });
      try {
        return JSON.parse(String(conn.prepare('SELECT treatments FROM _replica_personal_data').get()?.treatments)) as Json;
      } finally {
        conn.close();
      }
    };
    const conn = new DatabaseSync(db);
    conn.exec('DROP TABLE _replica_personal_data');
    conn.exec(fixture);
    conn.close();
    const old = record();
    expect(old['(hash_key)']).toMatch(/^[0-9a-f]{16}$/);
    const bytes = readFileSync(db);
    const refused = await runCli(SOURCE_BIN, ['replicate', '--config', hashConfig({ hash_key: 'another-key-0123456789' }), '--db', db]);
    expect(refused.code, refused.stderr).toBe(78);
    expect(refused.stderr).toMatch(/hash_key \(another key/);
    expect(readFileSync(db).equals(bytes)).toBe(true);
    account.mutate({ op: 'update_contacts', count: 3 });
    const run = await replicate(hashConfig(), db);
    expect(run.code, run.stderr).toBe(0);
    const upgraded = record();
    expect(upgraded).toEqual({ ...old, '(hash_key)': expect.stringMatching(/^\$scrypt\$ln=14,r=8,p=2\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/) });
    expect(readFileSync(db).includes(HASH_KEY)).toBe(false);
    // The rows written before and after join: one key's tokens.
    const now = contactsById();
    const rows = new DatabaseSync(db, { readOnly: true });
    try {
      for (const row of rows.prepare('SELECT id, email FROM contacts').all()) expect(row.email).toBe(expectedContact(now.get(String(row.id)) as Json).email);
    } finally {
      rows.close();
    }
    const again = await runCli(SOURCE_BIN, ['replicate', '--config', hashConfig({ hash_key: 'another-key-0123456789' }), '--db', db]);
    expect(again.code, again.stderr).toBe(78);
  });
});

describe('field selection and bad treatments', () => {
  it('Airbyte: fields taken out of a configured stream\'s json_schema are not emitted (the key and cursor are)', async () => {
    const catalog = JSON.parse(readFileSync(join(ROOT, 'catalog', 'configured_catalog.json'), 'utf8')) as { streams: { stream: { name: string; json_schema: { properties: Json } } }[] };
    const contacts = catalog.streams.filter((s) => s.stream.name === 'contacts');
    for (const s of contacts) {
      delete s.stream.json_schema.properties.email;
      delete s.stream.json_schema.properties.phone;
    }
    const path = join(dir, `selected-${n++}.json`);
    writeFileSync(path, JSON.stringify({ streams: contacts }));
    const run = await runCli(SOURCE_BIN, ['read', '--config', config(), '--catalog', path]);
    expect(run.code, run.stderr).toBe(0);
    const records = airbyteRecords(run.stdout, 'contacts');
    expect(records.length).toBe(contactsById().size);
    for (const r of records) {
      expect(r).not.toHaveProperty('email');
      expect(r).not.toHaveProperty('phone');
      expect(typeof r.id).toBe('string');
      expect(typeof r.updated_at).toBe('string');
      expect(r).toHaveProperty('name');
    }
  });

  it('Airbyte: a field selected again, or a treatment changed, since the saved state: the stream is read in full, so every row has it', async () => {
    const full = JSON.parse(readFileSync(join(ROOT, 'catalog', 'configured_catalog.json'), 'utf8')) as { streams: { stream: { name: string; json_schema: { properties: Json } } }[] };
    const contacts = full.streams.filter((s) => s.stream.name === 'contacts');
    const trimmed = structuredClone(contacts);
    for (const s of trimmed) delete s.stream.json_schema.properties.email;
    const trimmedPath = writeJson(dir, `trimmed-${n++}.json`, { streams: trimmed });
    const fullPath = writeJson(dir, `full-${n++}.json`, { streams: contacts });
    const dest = new MemoryDestination('deletions');
    const cfg = config();
    const read = async (catalog: string, readConfig: string): Promise<string> => {
      const state = writeJson(dir, `state-${n++}.json`, airbyteStateFile(dest.states));
      const run = await runCli(SOURCE_BIN, ['read', '--config', readConfig, '--catalog', catalog, '--state', state]);
      expect(run.code, run.stderr).toBe(0);
      dest.applyAirbyte(run.stdout);
      return run.stderr + run.stdout;
    };
    await read(trimmedPath, cfg);
    expect(dest.rows('contacts').every((r) => !('email' in r))).toBe(true);
    account.mutate({ op: 'update_contacts', count: 5 });
    // A state of the last release (no account, no emitted) says nothing of its shape: read on incrementally.
    const legacy = new Map([...dest.states].map(([name, state]) => [name, { sync_watermark: (state as Json).sync_watermark }]));
    const old = await runCli(SOURCE_BIN, ['read', '--config', cfg, '--catalog', fullPath, '--state', writeJson(dir, `state-${n++}.json`, airbyteStateFile(legacy))]);
    expect(old.code, old.stderr).toBe(0);
    expect(old.stdout + old.stderr).not.toContain('another shape');
    expect(airbyteRecords(old.stdout, 'contacts').length).toBeLessThan(contactsById().size / 2);

    // email selected again: an incremental read would bring it to the 5 changed contacts alone.
    const again = await read(fullPath, cfg);
    expect(dest.rows('contacts')).toEqual(normalizeDump(account.dump()).contacts);
    expect(again).toContain("contacts: the records read up to the saved state carried another shape than this run's: email selected again.");
    expect(dest.states.get('contacts')).not.toHaveProperty('emitted');

    // Hashed from now on: the rows kept before must not keep their raw e-mails.
    const hashed = await read(fullPath, config({ personal_data: 'hash', hash_key: HASH_KEY }));
    expect(hashed).toMatch(/: fields treated otherwise \(none before, email hash, .* now\)\./);
    expect(dest.states.get('contacts')).toMatchObject({ emitted: { treated: { email: 'hash', phone: 'hash' } } });
    const raw = contactsById();
    for (const row of dest.rows('contacts')) {
      const e = raw.get(row.id as string)?.email;
      expect(row.email).toBe(typeof e === 'string' ? hmac(email(e)) : null);
    }
    // The same shape again: incremental.
    account.mutate({ op: 'update_contacts', count: 2 });
    const same = await read(fullPath, config({ personal_data: 'hash', hash_key: HASH_KEY }));
    expect(same).not.toContain('another shape');
  });

  it('a hash_key that looks easy to guess: check (LOG WARN), the tap and replicate warn, naming a good key, never quoting it', async () => {
    const weak = 'summer-breeze-in-lisbon-2024!';
    const cfg = hashConfig({ hash_key: weak });
    const warning = /hash_key looks easy to guess \(a word or words with at most a number\).*openssl rand -hex 32/;
    const checked = await runCli(SOURCE_BIN, ['check', '--config', cfg]);
    expect(connectionStatusOf(checked.stdout).status).toBe('SUCCEEDED');
    const logged = parseLines(checked.stdout).filter((m) => m.type === 'LOG').map((m) => m.log as Json);
    expect(logged.filter((l) => l.level === 'WARN' && warning.test(String(l.message)))).toHaveLength(1);
    const tap = await runCli(TAP_BIN, ['--config', cfg, '--discover']);
    expect(tap.code, tap.stderr).toBe(0);
    expect(tap.stderr).toMatch(warning);
    const replica = await replicate(cfg, join(dir, 'weak-key.db'));
    expect(replica.code, replica.stderr).toBe(0);
    expect(replica.stderr).toMatch(warning);
    for (const run of [checked, tap, replica]) expect(run.stdout + run.stderr).not.toContain(weak);
    // A key made the way the warning says draws none.
    const good = await runCli(SOURCE_BIN, ['check', '--config', hashConfig({ hash_key: randomBytes(32).toString('hex') })]);
    expect(good.stdout).not.toMatch(/looks easy to guess/);
  });

  it('check fails naming the entry: an unknown field, a key field, hash without hash_key', async () => {
    const cases: [Json, RegExp][] = [
      [{ field_treatments: [{ stream: 'contacts', field: 'emial', treatment: 'drop' }] }, /field_treatments\[0\]: contacts has no field "emial"/],
      [{ field_treatments: [{ stream: 'conversations', field: 'id', treatment: 'drop' }] }, /field_treatments\[0\].*id cannot be treated \(it is the primary key of conversations\);/],
      [{ personal_data: 'hash' }, /personal_data is hash but hash_key is not set/],
    ];
    for (const [extra, message] of cases) {
      const run = await runCli(SOURCE_BIN, ['check', '--config', config(extra)]);
      expect(run.code).toBe(0);
      const status = connectionStatusOf(run.stdout);
      expect(status.status).toBe('FAILED');
      expect(status.message).toMatch(message);
    }
    // A field only the service describes is a field: check succeeds.
    const ok = await runCli(SOURCE_BIN, ['check', '--config', hashConfig()]);
    expect(connectionStatusOf(ok.stdout).status).toBe('SUCCEEDED');
    expect(ok.stdout + ok.stderr).not.toContain(HASH_KEY);
  });
});
