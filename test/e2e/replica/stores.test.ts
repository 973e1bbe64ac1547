/**
 * One end-to-end suite for the three stores of `replicate` (SQLite, a
 * PostgreSQL schema on the tests' real server, a DuckDB file), the same
 * test code for each, against the emulator: the store equals the service
 * after a full run and incremental runs with changes and deletions, and
 * after SIGKILLs at random points; a second writer exits 75 at once; a
 * field the service adds becomes a column; hashed personal data leaves no
 * raw value in the tables; the long pause is healed. Many accounts (a
 * config with `accounts`) into each store: every table keyed by (account,
 * id), each account exact after full and incremental runs with changes and
 * deletions, one key revoked (the others exact, 78 naming the entry), an
 * entry bound to its account, killed then resumed, and a store of the other
 * kind of config refused unchanged. PostgreSQL alone: a wrong password (78,
 * no password in any output), a server that cannot be reached (75).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { ExtraField } from 'data-read-emulator';
import { DuckdbStore } from '../../../src/stores/duckdb/store.js';
import { PostgresStore } from '../../../src/stores/postgres/store.js';
import { parseStoreTarget } from '../../../src/stores/target.js';
import { replicaRecords, replicaStates } from '../../../src/replica/records.js';
import type { StreamState } from '../../../src/engine/state.js';
import { LISTS, changeRound, dumpLists, prng, replicaAsDump, replicate, type Account } from '../../helpers/emulator-runs.js';
import { adminClient, freshDatabase, type TestDatabase } from '../../helpers/postgres.js';
import { readDatabase } from '../../helpers/sqlite.js';
import { SOURCE_BIN, runCli, writeJson } from '../../helpers/cli.js';
import { withEmulatorAccount } from '../../helpers/suite.js';

const DAY_MS = 86_400_000;

/** A store as the suite sees it: a new one's --db, and what it holds. */
interface StoreKind {
  readonly name: 'sqlite' | 'postgres' | 'duckdb';
  /** The --db of a new, empty store named `label` (in `dir` for a file). */
  fresh(dir: string, label: string): Promise<string>;
  /** Every list's records, in the dump's shape and order (each list by id). */
  dump(db: string): Promise<Record<string, unknown[]>>;
  /** The state saved by each stream's last commit. */
  states(db: string): Promise<Map<string, StreamState>>;
  /** The columns of a table. */
  columns(db: string, table: string): Promise<string[]>;
  /** A store of many accounts: every list's rows (with their account column), and the states saved. */
  accounts(db: string): Promise<Record<string, Record<string, unknown>[]>>;
  accountStates(db: string): Promise<Map<string, StreamState>>;
  /** The primary key's columns of a table, in order. */
  primaryKey(db: string, table: string): Promise<string[]>;
}

/** The databases the PostgreSQL runs made, dropped at the end. */
const databases: TestDatabase[] = [];
afterAll(async () => {
  for (const db of databases.splice(0)) await db.drop();
});

async function readStore<T>(open: () => Promise<PostgresStore | DuckdbStore>, read: (store: PostgresStore | DuckdbStore) => Promise<T>): Promise<T> {
  const store = await open();
  try {
    return await read(store);
  } finally {
    await store.close();
  }
}

async function asDump(store: PostgresStore | DuckdbStore): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const list of LISTS) out[list] = await store.readRecords(list);
  return out;
}

const pgTarget = (url: string) => parseStoreTarget(url, undefined, {});
const openPg = (url: string, accountKey = false) => () => PostgresStore.open(pgTarget(url) as Parameters<typeof PostgresStore.open>[0], { lock: false, accountKey });
const openDuck = (path: string, accountKey = false) => () => DuckdbStore.open(parseStoreTarget(`duckdb:${path}`, undefined, {}) as Parameters<typeof DuckdbStore.open>[0], { accountKey });

async function asRows(store: PostgresStore | DuckdbStore): Promise<Record<string, Record<string, unknown>[]>> {
  const out: Record<string, Record<string, unknown>[]> = {};
  for (const list of LISTS) out[list] = await store.readRecords(list);
  return out;
}

async function pgRows<T extends Record<string, unknown>>(db: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = await adminClient(db);
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

const STORES: readonly StoreKind[] = [
  {
    name: 'sqlite',
    fresh: async (dir, label) => join(dir, `${label}.db`),
    dump: async (db) => replicaAsDump(db),
    columns: async (db, table) => readDatabase(db, (h) => h.prepare(`SELECT name FROM pragma_table_info('${table}')`).all().map((r) => String(r.name))),
    accounts: async (db) => {
      const records = replicaRecords(db);
      return Object.fromEntries(LISTS.map((list) => [list, (records.get(list) ?? []) as Record<string, unknown>[]]));
    },
    states: async (db) => replicaStates(db),
    accountStates: async (db) => replicaStates(db),
    primaryKey: async (db, table) =>
      readDatabase(db, (h) =>
        h
          .prepare(`SELECT name, pk FROM pragma_table_info('${table}') WHERE pk > 0 ORDER BY pk`)
          .all()
          .map((r) => String(r.name)),
      ),
  },
  {
    name: 'postgres',
    fresh: async (_dir, label) => {
      const db = await freshDatabase(`e2e_${label.replace(/\W/g, '_')}`);
      databases.push(db);
      return db.url;
    },
    dump: (db) => readStore(openPg(db), asDump),
    states: (db) => readStore(openPg(db), (s) => s.loadStates()),
    columns: async (db, table) => {
      const client = await adminClient(db);
      try {
        const { rows } = await client.query<{ column_name: string }>("SELECT column_name FROM information_schema.columns WHERE table_schema = 'data_read' AND table_name = $1", [table]);
        return rows.map((r) => r.column_name);
      } finally {
        await client.end();
      }
    },
    accounts: (db) => readStore(openPg(db, true), asRows),
    accountStates: (db) => readStore(openPg(db, true), (s) => s.loadStates()),
    primaryKey: async (db, table) =>
      (
        await pgRows<{ name: string }>(
          db,
          `SELECT a.attname AS name FROM pg_index i JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) ON true
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
            WHERE i.indrelid = ('data_read.' || quote_ident($1))::regclass AND i.indisprimary ORDER BY k.n`,
          [table],
        )
      ).map((r) => r.name),
  },
  {
    name: 'duckdb',
    fresh: async (dir, label) => join(dir, `${label}.duckdb`),
    dump: (db) => readStore(openDuck(db), asDump),
    states: (db) => readStore(openDuck(db), (s) => s.loadStates()),
    columns: (db) => readStore(openDuck(db), async (s) => s.layoutOf('contacts').columns.map((c) => c.field)),
    accounts: (db) => readStore(openDuck(db, true), asRows),
    accountStates: (db) => readStore(openDuck(db, true), (s) => s.loadStates()),
    primaryKey: (db, table) =>
      readStore(openDuck(db, true), async (s) => {
        const reader = await (s as DuckdbStore).session.runAndReadAll(
          `SELECT constraint_column_names AS c FROM duckdb_constraints() WHERE schema_name = 'main' AND table_name = '${table}' AND constraint_type = 'PRIMARY KEY'`,
        );
        return ((reader.getRowObjectsJS()[0]?.c ?? []) as unknown[]).map(String);
      }),
  },
];

describe.each(STORES)('replicate into $name', (store) => {
  describe('equals the service', () => {
    let account: Account;
    let dir: string;
    withEmulatorAccount(`stores-${store.name}-`, { contacts: 200, seed: 41 }, (s) => ({ account, dir } = s));

    it('after a full run and after incremental runs with changes and deletions', { timeout: 180_000 }, async () => {
      const config = account.config(dir);
      const db = await store.fresh(dir, 'exact');
      const first = await replicate(config, db);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stdout).toBe('');
      expect(first.stderr).toMatch(/Replica up to date: contacts \d+ rows/);
      expect(await store.dump(db)).toStrictEqual(dumpLists(account.dump()));
      for (let round = 0; round < 2; round++) {
        changeRound(account);
        const run = await replicate(config, db);
        expect(run.code, run.stderr).toBe(0);
        expect(run.stderr).toContain('continuing from its saved state');
        expect(run.stderr).toMatch(/deletions applied: \d+ rows removed/);
        expect(await store.dump(db)).toStrictEqual(dumpLists(account.dump()));
      }
      const states = await store.states(db);
      for (const stream of ['contacts', 'conversations', 'stage_events', 'deletions']) {
        expect(states.get(stream)?.sync_watermark, stream).toMatch(/^\d{4}-\d\d-\d\dT/);
        expect(states.get(stream)?.resume, stream).toBeUndefined();
      }
    });

    it('a field the service adds becomes a column on the next run', { timeout: 120_000 }, async () => {
      const config = account.config(dir);
      const db = await store.fresh(dir, 'drift');
      expect((await replicate(config, db)).code).toBe(0);
      const field: ExtraField = { list: 'contacts', name: `score_${store.name}`, type: 'integer' };
      account.emulator.control.addExtraField(field);
      account.mutate({ op: 'update_contacts', count: 30 });
      const run = await replicate(config, db);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain(field.name);
      expect(await store.columns(db, 'contacts')).toContain(field.name);
      // Every row equals the service's record; a contact not read again since the field appeared has it not yet
      // (SQLite lists it in the row's _absent; PostgreSQL and DuckDB hold NULL in the new column).
      const held = await store.dump(db);
      const truth = dumpLists(account.dump());
      let readAgain = 0;
      const without = (record: Record<string, unknown>): Record<string, unknown> => {
        const { [field.name]: _added, ...before } = record;
        return before;
      };
      const heldContacts = (held.contacts as Record<string, unknown>[]).map((row) => {
        if (row[field.name] === undefined || row[field.name] === null) return without(row);
        readAgain++;
        return row;
      });
      const contacts = (truth.contacts as Record<string, unknown>[]).map((record, i) => (Object.hasOwn(heldContacts[i] ?? {}, field.name) ? record : without(record)));
      expect(readAgain).toBeGreaterThanOrEqual(20);
      held.contacts = heldContacts;
      expect(held).toStrictEqual({ ...truth, contacts });
    });

    it('a key of another account is refused (78) naming both accounts, nothing changed', { timeout: 60_000 }, async () => {
      const db = await store.fresh(dir, 'account');
      expect((await replicate(account.config(dir), db)).code).toBe(0);
      const before = await store.dump(db);
      const control = account.emulator.control;
      const other = control.createAccount({ name: 'Another company' });
      control.seed(other.id, { contacts: 10 });
      const config = writeJson(dir, 'other-account.json', { api_key: control.createKey(other.id).key, base_url: account.emulator.url, page_size: 100 });
      const run = await replicate(config, db);
      expect(run.code, run.stderr).toBe(78);
      expect(run.stderr).toContain('"Replica test"');
      expect(run.stderr).toContain('"Another company"');
      expect(await store.dump(db)).toStrictEqual(before);
      // The same store given a config with accounts (this key as one entry): its rows cannot be told apart by account.
      const many = writeJson(dir, 'as-accounts.json', { base_url: account.emulator.url, page_size: 100, accounts: [{ name: 'main', api_key: account.key }] });
      const refused = await replicate(many, db);
      expect(refused.code, refused.stderr).toBe(78);
      expect(refused.stderr).toMatch(/built from a config with one api_key .*"accounts"/);
      expect(await store.dump(db)).toStrictEqual(before);
    });

    it('a second writer exits 75 at once, naming the first; the store stays exact', { timeout: 120_000 }, async () => {
      const config = account.config(dir, { page_size: 10, max_concurrent_requests: 1 });
      const db = await store.fresh(dir, 'writers');
      // Slow enough that the first run is still writing when the second process has started, on a busy machine too.
      account.emulator.control.setLatency(60);
      let second: Promise<Awaited<ReturnType<typeof replicate>>> | undefined;
      const first = replicate(config, db, {
        onStderr: (text) => {
          if (second === undefined && /Replicating into/.test(text)) second = replicate(config, db);
        },
      });
      const one = await first;
      account.emulator.control.setLatency(0);
      expect(second).toBeDefined();
      const two = await (second as Promise<Awaited<ReturnType<typeof replicate>>>);
      expect(one.code, one.stderr).toBe(0);
      expect(two.code, two.stderr).toBe(75);
      expect(two.stderr).toMatch(/another|Another|locked|lock/);
      expect(await store.dump(db)).toStrictEqual(dumpLists(account.dump()));
    });
  });

  describe('many accounts', () => {
    let account: Account;
    let dir: string;
    withEmulatorAccount(`stores-accounts-${store.name}-`, { contacts: 40, seed: 71 }, (s) => ({ account, dir } = s));
    let files = 0;

    interface Tenant {
      readonly entry: string;
      readonly id: string;
      readonly key: string;
      readonly keyId?: string;
    }
    const tenant = (entry: string, name: string, contacts: number): Tenant => {
      const control = account.emulator.control;
      const created = control.createAccount({ name });
      const { key, id: keyId } = control.createKey(created.id);
      control.seed(created.id, { contacts });
      return { entry, id: created.id, key, keyId };
    };
    const asAccount = (t: Tenant): Account => ({
      ...account,
      accountId: t.id,
      key: t.key,
      mutate: (m) => void account.emulator.control.mutate(t.id, m),
      dump: () => account.emulator.control.dump(t.id),
    });
    const configOf = (tenants: readonly Tenant[], extra: Record<string, unknown> = {}): string =>
      writeJson(dir, `accounts-${++files}.json`, { base_url: account.emulator.url, page_size: 25, accounts: tenants.map((t) => ({ name: t.entry, api_key: t.key })), ...extra });
    const byId = (a: unknown, b: unknown): number => {
      const x = String((a as { id: unknown }).id);
      const y = String((b as { id: unknown }).id);
      return x < y ? -1 : x > y ? 1 : 0;
    };
    /** Each account's rows in the dump's shape (without the account column), each list by id: the store read once. */
    const shares = async (db: string): Promise<(entry: string) => Record<string, unknown[]>> => {
      const rows = await store.accounts(db);
      return (entry) =>
        Object.fromEntries(
        LISTS.map((list) => [
          list,
          (rows[list] ?? [])
            .filter((r) => r.account === entry)
            .map(({ account: _account, ...rest }) => rest)
            .sort(byId),
          ]),
        );
    };
    const share = async (db: string, entry: string): Promise<Record<string, unknown[]>> => (await shares(db))(entry);
    /** Every account of `tenants` equals its dump. */
    const exact = async (db: string, tenants: readonly Tenant[]): Promise<void> => {
      const of = await shares(db);
      for (const t of tenants) expect(of(t.entry), t.entry).toStrictEqual(truth(t));
    };
    const truth = (t: Tenant): Record<string, unknown[]> => {
      const lists = dumpLists(account.emulator.control.dump(t.id));
      return Object.fromEntries(LISTS.map((list) => [list, [...(lists[list] ?? [])].sort(byId)]));
    };
    const errorLines = (stderr: string): string[] => stderr.split('\n').filter((l) => /\bERROR\b/.test(l) && l.includes('Replication incomplete'));

    it(
      'keys every table by (account, id); each account exact after full and incremental runs with changes and deletions; a key revoked; an entry bound; the other kind of config refused',
      { timeout: 300_000 },
      async () => {
        const main: Tenant = { entry: 'main', id: account.accountId, key: account.key };
        const north = tenant('north', 'North', 30);
        let south = tenant('south', 'South', 30);
        const db = await store.fresh(dir, 'accounts');
        const summary = join(dir, `summary-${store.name}.json`);
        const first = await runCli(SOURCE_BIN, ['replicate', '--config', configOf([main, north, south]), '--db', db, '--summary', summary], { timeoutMs: 120_000 });
        expect(first.code, first.stderr).toBe(0);
        expect(first.stdout).toBe('');
        expect(first.stderr).toContain('Replicating 3 account(s)');
        await exact(db, [main, north, south]);
        for (const list of LISTS) expect(await store.primaryKey(db, list), list).toEqual(['account', 'id']);
        expect(Object.keys((await store.accountStates(db)).get('contacts')?.accounts ?? {}).sort()).toEqual(['main', 'north', 'south']);
        const report = JSON.parse(readFileSync(summary, 'utf8')) as { accounts: { name: string; status: string; records: number }[] };
        expect(report.accounts.map((a) => [a.name, a.status])).toEqual([
          ['main', 'succeeded'],
          ['north', 'succeeded'],
          ['south', 'succeeded'],
        ]);
        expect(report.accounts.every((a) => a.records > 0)).toBe(true);

        // Changes and deletions in two accounts: each exact, the third's rows untouched by their deletions.
        changeRound(asAccount(main));
        changeRound(asAccount(north));
        const southBefore = (await shares(db))('south');
        const second = await replicate(configOf([main, north, south]), db);
        expect(second.code, second.stderr).toBe(0);
        expect(second.stderr).toContain('continuing from its saved state');
        expect(second.stderr).toMatch(/deletions applied: \d+ rows removed/);
        await exact(db, [main, north, south]);
        expect(truth(south)).toStrictEqual(southBefore);

        // South's key revoked: the others read and saved, 78, one error naming south; south's rows as they were.
        changeRound(asAccount(north));
        changeRound(asAccount(south));
        const southKept = await share(db, 'south');
        account.emulator.control.revokeKey(south.keyId as string);
        const revokedSummary = join(dir, `summary-revoked-${store.name}.json`);
        const revoked = await runCli(SOURCE_BIN, ['replicate', '--config', configOf([main, north, south]), '--db', db, '--summary', revokedSummary], { timeoutMs: 120_000 });
        expect(revoked.code, revoked.stderr).toBe(78);
        const errors = errorLines(revoked.stderr);
        expect(errors, revoked.stderr).toHaveLength(1);
        expect(errors[0]).toMatch(/1 of 3 accounts failed.*account "south"/);
        const held = await shares(db);
        for (const t of [main, north]) expect(held(t.entry), t.entry).toStrictEqual(truth(t));
        expect(held('south')).toStrictEqual(southKept);
        expect(truth(south)).not.toStrictEqual(southKept);
        const failed = JSON.parse(readFileSync(revokedSummary, 'utf8')) as { accounts: { name: string; status: string; failure_type: string | null }[] };
        expect(failed.accounts.find((a) => a.name === 'south')).toMatchObject({ status: 'failed', failure_type: 'config_error' });
        expect(failed.accounts.find((a) => a.name === 'north')).toMatchObject({ status: 'succeeded', failure_type: null });
        // A new key of the same account: it goes on from its own state, exact again.
        const renewed = account.emulator.control.createKey(south.id);
        south = { ...south, key: renewed.key, keyId: renewed.id };
        const again = await replicate(configOf([main, north, south]), db);
        expect(again.code, again.stderr).toBe(0);
        await exact(db, [main, north, south]);

        // The entry "north" given South's key: that entry fails alone (78, both accounts named), nothing of it written.
        const northRows = await share(db, 'north');
        changeRound(asAccount(main));
        const swapped = await replicate(configOf([{ ...north, key: south.key }, main]), db);
        expect(swapped.code, swapped.stderr).toBe(78);
        expect(swapped.stderr).toMatch(/account "north": .*"North".*"South"/);
        const after = await shares(db);
        expect(after('north')).toStrictEqual(northRows);
        expect(after('main')).toStrictEqual(truth(main));

        // A config of one api_key given this store: refused (78), nothing changed.
        const before = await store.accounts(db);
        const one = await replicate(account.config(dir), db);
        expect(one.code, one.stderr).toBe(78);
        expect(one.stderr).toMatch(/built from a config with "accounts"/);
        expect(await store.accounts(db)).toStrictEqual(before);
      },
    );

    it('killed mid-run with SIGKILL, then run again: every account exact', { timeout: 240_000 }, async () => {
      const east = tenant('east', 'East', 300);
      const west = tenant('west', 'West', 300);
      const db = await store.fresh(dir, 'accounts-killed');
      const cfg = configOf([east, west], { page_size: 10, max_concurrent_requests: 1 });
      // A slower service and a progress line per page: kills by bytes of stderr land inside the reads, after commits
      // (PostgreSQL and DuckDB commit a group of checkpoints every 250 ms at least).
      account.emulator.control.setLatency(10);
      const env = { SOURCE_DATA_READ_PROGRESS_MS: '0' };
      const outcomes: string[] = [];
      let resumed = 0;
      try {
        for (const bytes of [6000, 12000, 18000]) {
          const run = await replicate(cfg, db, { killAfterStderrBytes: bytes, env });
          outcomes.push(`${bytes} -> ${run.killed ? 'killed' : `exit ${run.code}`}`);
          if (!run.killed) expect(run.code, run.stderr).toBe(0);
          // A kill inside a read leaves that account's resume cursor, committed with the rows before it.
          const states = [...(await store.accountStates(db)).values()];
          if (run.killed && states.some((st) => Object.values(st.accounts ?? {}).some((one) => one.resume !== undefined))) resumed++;
        }
      } finally {
        account.emulator.control.setLatency(0);
      }
      expect(outcomes.filter((o) => o.endsWith('killed')).length, outcomes.join('; ')).toBeGreaterThanOrEqual(2);
      expect(resumed, outcomes.join('; ')).toBeGreaterThanOrEqual(1);
      changeRound(asAccount(east));
      const last = await replicate(cfg, db);
      expect(last.code, last.stderr).toBe(0);
      await exact(db, [east, west]);
    });
  });

  describe('killed at random points', () => {
    let account: Account;
    let dir: string;
    withEmulatorAccount(`stores-kill-${store.name}-`, { contacts: 500, seed: 43 }, (s) => ({ account, dir } = s));

    it('SIGKILLs mid-run with changes in between, then a run to completion: exact', { timeout: 240_000 }, async () => {
      const seed = Number(process.env.REPLICA_KILL_SEED ?? Date.now() % 100_000);
      const random = prng(seed);
      const config = account.config(dir, { page_size: 20, max_concurrent_requests: 2 });
      const db = await store.fresh(dir, 'kill');
      account.emulator.control.setLatency(6);
      const env = { SOURCE_DATA_READ_PROGRESS_MS: '0' };
      const kills: string[] = [];
      let midRun = 0;
      for (let i = 0; i < 4; i++) {
        const point = i % 2 === 1 ? { killAfterStderrBytes: 300 + Math.floor(random() * 4000) } : { killAfterMs: 400 + Math.floor(random() * 1500) };
        const run = await replicate(config, db, { ...point, env });
        kills.push(`${JSON.stringify(point)} -> ${run.killed ? 'killed' : `exit ${run.code}`}`);
        if (run.killed) midRun++;
        else expect(run.code, run.stderr).toBe(0);
        if (i % 2 === 1) changeRound(account, 2);
      }
      expect(midRun, `seed ${seed}: ${kills.join('; ')}`).toBeGreaterThanOrEqual(2);
      account.emulator.control.setLatency(0);
      const last = await replicate(config, db, { env });
      expect(last.code, last.stderr).toBe(0);
      expect(await store.dump(db), `seed ${seed}: ${kills.join('; ')}`).toStrictEqual(dumpLists(account.dump()));
    });
  });

  describe('personal data hashed', () => {
    let account: Account;
    let dir: string;
    withEmulatorAccount(`stores-hash-${store.name}-`, { contacts: 60, seed: 47 }, (s) => ({ account, dir } = s));

    it('no raw value in the tables; a run with other treatments is refused (78), nothing changed', { timeout: 120_000 }, async () => {
      const db = await store.fresh(dir, 'hashed');
      const hashKey = 'k3y-for-the-stores-suite-0123456789abcdef';
      const run = await replicate(account.config(dir, { personal_data: 'hash', hash_key: hashKey }), db);
      expect(run.code, run.stderr).toBe(0);
      const held = JSON.stringify(await store.dump(db));
      const emails = account.dump().contacts.map((c) => (c as Record<string, unknown>).email).filter((e): e is string => typeof e === 'string' && e !== '');
      expect(emails.length).toBeGreaterThan(10);
      for (const email of emails) expect(held).not.toContain(email);
      const before = await store.dump(db);
      const other = await replicate(account.config(dir), db);
      expect(other.code, other.stderr).toBe(78);
      expect(other.stderr).toMatch(/other personal-data treatments/);
      expect(await store.dump(db)).toStrictEqual(before);
    });
  });

  describe('after a pause longer than the deletion retention', () => {
    let account: Account;
    let dir: string;
    withEmulatorAccount(`stores-pause-${store.name}-`, { contacts: 120, seed: 53 }, (s) => ({ account, dir } = s));

    it('reads contacts and conversations in full and removes what the service no longer has', { timeout: 180_000 }, async () => {
      const control = account.emulator.control;
      const config = account.config(dir, { page_size: 20 });
      const db = await store.fresh(dir, 'pause');
      expect((await replicate(config, db)).code).toBe(0);
      control.advanceClock(10 * DAY_MS);
      const gone = account.dump().contacts.slice(0, 4).map((c) => c.id);
      account.mutate({ op: 'delete_contacts', ids: gone });
      control.advanceClock(95 * DAY_MS);
      account.mutate({ op: 'update_contacts', count: 5 });
      const run = await replicate(config, db);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toMatch(/WARN/);
      const held = await store.dump(db);
      const truth = dumpLists(account.dump());
      for (const list of ['contacts', 'conversations', 'stage_events', 'pipeline_stages']) expect(held[list], list).toStrictEqual(truth[list]);
      const ids = new Set((held.contacts as { id: string }[]).map((c) => c.id));
      for (const id of gone) expect(ids.has(id)).toBe(false);
    });
  });
});

describe('replicate into PostgreSQL: faults', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('stores-pg-faults-', { contacts: 20, seed: 59 }, (s) => ({ account, dir } = s));

  it('a wrong password: 78, naming the refused login, the password in no output', { timeout: 60_000 }, async () => {
    const url = new URL(await STORES[1]!.fresh(dir, 'password'));
    const wrong = 'not-the-Password-42';
    url.password = wrong;
    const run = await replicate(account.config(dir), url.toString());
    expect(run.code, run.stderr).toBe(78);
    expect(run.stderr).toMatch(/password|login|authentication/i);
    expect(run.stderr).toContain('***');
    expect(`${run.stdout}${run.stderr}`).not.toContain(wrong);
  });

  it('a missing database: 78, naming the database', { timeout: 60_000 }, async () => {
    const url = new URL(await STORES[1]!.fresh(dir, 'missing'));
    url.pathname = '/no_such_database_here';
    const run = await replicate(account.config(dir), url.toString());
    expect(run.code, run.stderr).toBe(78);
    expect(run.stderr).toContain('no_such_database_here');
  });

  it('the connection dropped mid-run (the server ends the session): 75, nothing half-written; the next run is exact', { timeout: 120_000 }, async () => {
    const url = await STORES[1]!.fresh(dir, 'dropped');
    const database = new URL(url).pathname.slice(1);
    const config = account.config(dir, { page_size: 5, max_concurrent_requests: 1 });
    account.mutate({ op: 'create_contacts', count: 200, withConversation: true });
    account.emulator.control.setLatency(15);
    const admin = await adminClient(url);
    let terminated = 0;
    let asked = false;
    try {
      const run = await replicate(config, url, {
        onStderr: (text) => {
          if (asked || !/Replicating into/.test(text)) return;
          asked = true;
          // Once the run has committed something, its session is ended by the server, as a restart or a failover would.
          const end = async (): Promise<void> => {
            for (let i = 0; i < 200 && terminated === 0; i++) {
              const { rows } = await admin.query<{ n: string }>('SELECT count(*) AS n FROM data_read._replica_state').catch(() => ({ rows: [{ n: '0' }] }));
              if (Number(rows[0]?.n) > 0) {
                const ended = await admin.query(
                  "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name LIKE 'source-data-read%'",
                  [database],
                );
                terminated = ended.rowCount ?? 0;
              } else await new Promise((r) => setTimeout(r, 25));
            }
          };
          void end();
        },
      });
      expect(terminated, run.stderr).toBeGreaterThan(0);
      expect(run.code, run.stderr).toBe(75);
      expect(run.stderr).toMatch(/run replicate again|Run replicate again/);
    } finally {
      await admin.end();
      account.emulator.control.setLatency(0);
    }
    const again = await replicate(config, url);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('continuing from its saved state');
    expect(await STORES[1]!.dump(url)).toStrictEqual(dumpLists(account.dump()));
  });

  it('a server that cannot be reached: 75', { timeout: 60_000 }, async () => {
    const run = await replicate(account.config(dir), 'postgresql://someone:secret-pw@127.0.0.1:1/analytics?connect_timeout=2');
    expect(run.code, run.stderr).toBe(75);
    expect(`${run.stdout}${run.stderr}`).not.toContain('secret-pw');
  });
});

describe('replicate into DuckDB without its optional package', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('stores-no-driver-', { contacts: 10, seed: 67 }, (s) => ({ account, dir } = s));

  it('is a config_error (78) naming the package, and creates no file', { timeout: 60_000 }, async () => {
    // The package made unresolvable, as after npm install --omit=optional.
    const hook = join(dir, 'no-duckdb.mjs');
    writeFileSync(
      hook,
      "import { registerHooks } from 'node:module';\n" +
        'registerHooks({ resolve(specifier, context, next) {\n' +
        "  if (specifier === '@duckdb/node-api') throw Object.assign(new Error(`Cannot find package '${specifier}'`), { code: 'ERR_MODULE_NOT_FOUND' });\n" +
        '  return next(specifier, context);\n' +
        '} });\n',
    );
    const db = join(dir, 'none.duckdb');
    const run = await replicate(account.config(dir), db, { env: { NODE_OPTIONS: `--import=${pathToFileURL(hook).href}` } });
    expect(run.code, run.stderr).toBe(78);
    expect(run.stderr).toContain('@duckdb/node-api');
    expect(existsSync(db)).toBe(false);
    // A run into SQLite under the same hook never needs it.
    expect((await replicate(account.config(dir), join(dir, 'plain.db'), { env: { NODE_OPTIONS: `--import=${pathToFileURL(hook).href}` } })).code).toBe(0);
  });
});
