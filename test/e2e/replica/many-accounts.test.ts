/**
 * `replicate` of a config with `accounts` into a SQLite file (connector
 * contract, "Many accounts" and "Stores"), the real executable against one
 * emulator serving several accounts and keys:
 * - every table keyed by (account, id), each account's rows equal its dump,
 *   each stream's state one per account, `--summary` one entry per account;
 * - incremental per account, deletions of one account leaving the other's
 *   rows (the emulator never gives two accounts one id: the same id in two
 *   accounts is tested on the store, test/replica/many-accounts.test.ts);
 * - one key revoked: the others exact, exit 78, one error naming it;
 * - the binding per entry: an entry whose key reads another account fails
 *   alone (78), nothing of it written;
 * - an account removed keeps its rows and state, one added is read in full;
 * - a replica of one api_key given a config with accounts, and the reverse:
 *   refused (78), the file byte for byte unchanged;
 * - the long pause healed per account: one account's rows deleted in the
 *   gap removed, the other's kept.
 * Killed mid-run then resumed, and the rest again for every store (SQLite,
 * PostgreSQL, DuckDB): test/e2e/replica/stores/.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from 'data-read-emulator';
import { replicaRecords, replicaStates } from '../../../src/replica/records.js';
import { SOURCE_BIN, runCli, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';
import { LIMITS_OUT_OF_REACH, LISTS, changeRound, dumpLists, requireBuild, type Account } from '../../helpers/emulator-runs.js';
import { docRecipe } from '../../helpers/readme.js';
import { readDatabase } from '../../helpers/sqlite.js';

const DAY_MS = 86_400_000;

interface Tenant {
  readonly entry: string;
  readonly id: string;
  readonly name: string;
  readonly key: string;
  readonly keyId: string;
}

let emulator: Emulator;
let dir: string;
let files = 0;

beforeAll(async () => {
  requireBuild();
  dir = tempDir('replica-accounts-');
  emulator = await startEmulator({ host: '127.0.0.1', port: 0, seed: 37, frozenClock: true, limits: LIMITS_OUT_OF_REACH });
});

afterAll(async () => {
  await emulator?.close();
});

function tenant(entry: string, name: string, contacts: number): Tenant {
  const account = emulator.control.createAccount({ name });
  const { key, id: keyId } = emulator.control.createKey(account.id);
  emulator.control.seed(account.id, { contacts });
  return { entry, id: account.id, name, key, keyId };
}

/** The emulator account of a tenant, as the helpers' changeRound takes it. */
function asAccount(t: Tenant): Account {
  return {
    emulator,
    accountId: t.id,
    key: t.key,
    config: () => '',
    mutate: (m) => void emulator.control.mutate(t.id, m),
    dump: () => emulator.control.dump(t.id),
  };
}

function config(tenants: readonly { entry: string; key: string }[], extra: Record<string, unknown> = {}): string {
  return writeJson(dir, `config-${++files}.json`, {
    base_url: emulator.url,
    page_size: 25,
    accounts: tenants.map((t) => ({ name: t.entry, api_key: t.key })),
    ...extra,
  });
}

function replicate(cfg: string, db: string, summary?: string): Promise<CliResult> {
  const args = ['replicate', '--config', cfg, '--db', db];
  if (summary !== undefined) args.push('--summary', summary);
  return runCli(SOURCE_BIN, args, { timeoutMs: 120_000 });
}

/** One account's rows, in the dump's shape (without the account column), each list by id. */
function share(db: string, entry: string): Record<string, unknown[]> {
  const records = replicaRecords(db);
  const out: Record<string, unknown[]> = {};
  for (const list of LISTS) {
    out[list] = (records.get(list) ?? [])
      .filter((r) => r.account === entry)
      .map(({ account: _account, ...rest }) => rest)
      .sort((a, b) => String(a.id).localeCompare(String(b.id)));
  }
  return out;
}

function sortedDump(t: Tenant): Record<string, unknown[]> {
  const lists = dumpLists(emulator.control.dump(t.id));
  for (const list of LISTS) lists[list] = [...(lists[list] ?? [])].sort((a, b) => String((a as { id: string }).id).localeCompare(String((b as { id: string }).id)));
  return lists;
}

const errorsOf = (stderr: string): string[] => stderr.split('\n').filter((l) => /\bERROR\b/.test(l));
const bytes = (path: string): Buffer => readFileSync(path);

describe('replicate with accounts into a SQLite file', () => {
  let acme: Tenant;
  let globex: Tenant;
  let db: string;

  beforeAll(() => {
    acme = tenant('acme-br', 'Acme', 60);
    globex = tenant('globex', 'Globex', 45);
    db = join(dir, 'many.db');
  });

  it('keys every table by (account, id); each account exact, its state under its entry, the summary per account', async () => {
    const summary = join(dir, 'summary-1.json');
    const run = await replicate(config([acme, globex]), db, summary);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('');
    for (const t of [acme, globex]) expect(share(db, t.entry)).toEqual(sortedDump(t));
    const keys = readDatabase(db, (h) =>
      LISTS.map((list) =>
        h
          .prepare(`PRAGMA table_info("${list}")`)
          .all()
          .filter((c) => Number(c.pk) > 0)
          .sort((a, b) => Number(a.pk) - Number(b.pk))
          .map((c) => String(c.name)),
      ),
    );
    for (const k of keys) expect(k).toEqual(['account', 'id']);
    const states = replicaStates(db);
    expect(Object.keys(states.get('contacts')?.accounts ?? {}).sort()).toEqual(['acme-br', 'globex']);
    const report = JSON.parse(readFileSync(summary, 'utf8')) as { accounts: { name: string; status: string; records: number }[] };
    expect(report.accounts.map((a) => [a.name, a.status])).toEqual([
      ['acme-br', 'succeeded'],
      ['globex', 'succeeded'],
    ]);
    expect(report.accounts.every((a) => a.records > 0)).toBe(true);
  });

  it("goes on incrementally per account; deletions of one account leave the other account's rows", async () => {
    // The emulator gives no two accounts the same id: the same id in two accounts is test/replica/many-accounts.test.ts's.
    changeRound(asAccount(acme));
    const run = await replicate(config([acme, globex]), db);
    expect(run.code, run.stderr).toBe(0);
    for (const t of [acme, globex]) expect(share(db, t.entry)).toEqual(sortedDump(t));
    // Acme's deletions removed Acme's rows only: Globex kept all of its own.
    expect(share(db, 'globex').contacts).toHaveLength(sortedDump(globex).contacts?.length ?? -1);
  });

  it('a key revoked: the other account exact and saved, exit 78, one error naming the account', async () => {
    changeRound(asAccount(globex));
    changeRound(asAccount(acme));
    const before = share(db, 'acme-br');
    emulator.control.revokeKey(acme.keyId);
    const summary = join(dir, 'summary-2.json');
    const run = await replicate(config([acme, globex]), db, summary);
    expect(run.code, run.stderr).toBe(78);
    const errors = errorsOf(run.stderr).filter((l) => l.includes('Replication incomplete'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/1 of 2 accounts failed.*account "acme-br"/);
    expect(share(db, 'globex')).toEqual(sortedDump(globex));
    expect(share(db, 'acme-br')).toEqual(before);
    const report = JSON.parse(readFileSync(summary, 'utf8')) as { accounts: { name: string; status: string; failure_type: string | null }[] };
    expect(report.accounts.find((a) => a.name === 'acme-br')).toMatchObject({ status: 'failed', failure_type: 'config_error' });
    expect(report.accounts.find((a) => a.name === 'globex')).toMatchObject({ status: 'succeeded', failure_type: null });
    // A new key of the same account: it goes on from its own state, exact again.
    const renewed = emulator.control.createKey(acme.id);
    acme = { ...acme, key: renewed.key, keyId: renewed.id };
    const again = await replicate(config([acme, globex]), db);
    expect(again.code, again.stderr).toBe(0);
    for (const t of [acme, globex]) expect(share(db, t.entry)).toEqual(sortedDump(t));
  });

  it('binds each entry to its account: an entry whose key reads another account fails alone (78), nothing of it written', async () => {
    const initech = tenant('initech', 'Initech', 20);
    changeRound(asAccount(acme));
    const globexRows = share(db, 'globex');
    // The entry "globex" given Initech's key.
    const run = await replicate(config([{ entry: 'globex', key: initech.key }, acme]), db);
    expect(run.code, run.stderr).toBe(78);
    expect(run.stderr).toMatch(/account "globex": .*"Globex".*"Initech"/);
    expect(share(db, 'globex')).toEqual(globexRows);
    expect(share(db, 'acme-br')).toEqual(sortedDump(acme));
  });

  it('an account removed from the config keeps its rows and its state; one added starts from start_date', async () => {
    const globexRows = share(db, 'globex');
    const globexState = replicaStates(db).get('contacts')?.accounts?.globex;
    expect(globexState).toBeDefined();
    const hooli = tenant('hooli', 'Hooli', 15);
    const run = await replicate(config([acme, hooli]), db);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/no longer in the config \(globex\)/);
    expect(share(db, 'globex')).toEqual(globexRows);
    expect(replicaStates(db).get('contacts')?.accounts?.globex).toEqual(globexState);
    for (const t of [acme, hooli]) expect(share(db, t.entry)).toEqual(sortedDump(t));
  });

  it('a replica of one api_key given accounts, and the reverse: refused (78), the file unchanged', async () => {
    const single = join(dir, 'single.db');
    const one = writeJson(dir, `config-${++files}.json`, { base_url: emulator.url, api_key: globex.key });
    const built = await replicate(one, single);
    expect(built.code, built.stderr).toBe(0);
    const was = bytes(single);
    const refused = await replicate(config([globex]), single);
    expect(refused.code).toBe(78);
    expect(refused.stderr).toMatch(/built from a config with one api_key.*Replicate the accounts into a new file/);
    expect(bytes(single).equals(was)).toBe(true);

    const manyWas = bytes(db);
    const reverse = await replicate(one, db);
    expect(reverse.code).toBe(78);
    expect(reverse.stderr).toMatch(/built from a config with "accounts".*Replicate this account into a new file/);
    expect(bytes(db).equals(manyWas)).toBe(true);
  });

  it('heals a long pause per account: the healed account exact, the rows of an account that did not read untouched', { timeout: 240_000 }, async () => {
    const north = tenant('north', 'North', 40);
    const south = tenant('south', 'South', 40);
    const healDb = join(dir, 'heal.db');
    const cfg = config([north, south]);
    const first = await replicate(cfg, healDb);
    expect(first.code, first.stderr).toBe(0);
    emulator.control.advanceClock(10 * DAY_MS);
    const gone = emulator.control.dump(north.id).contacts.slice(0, 3).map((c) => (c as { id: string }).id);
    emulator.control.mutate(north.id, { op: 'delete_contacts', ids: gone });
    emulator.control.advanceClock(95 * DAY_MS);
    // South's key refused this time: its rows must stay as they were while North's heal sweeps North's.
    const southRows = share(healDb, 'south');
    emulator.control.revokeKey(south.keyId);
    const run = await replicate(cfg, healDb);
    expect(run.code, run.stderr).toBe(78);
    expect(run.stderr).toMatch(/WARN .*Account "north": deletions: .*The replica read contacts and conversations in full and removed \d+ row\(s\)/);
    expect(run.stderr).not.toMatch(/Account "south": .*in full/);
    expect(share(healDb, 'north')).toEqual(sortedDump(north));
    for (const id of gone) expect(share(healDb, 'north').contacts?.some((c) => (c as { id: string }).id === id)).toBe(false);
    expect(share(healDb, 'south')).toEqual(southRows);
    expect(southRows.contacts?.length).toBeGreaterThan(0);
  });

  it('an account whose deletion log passes its retention during the run: its log left unread (75), healed by the next run', { timeout: 120_000 }, async () => {
    const edge = tenant('edge', 'Edge', 30);
    const edgeDb = join(dir, 'edge.db');
    const cfg = config([edge]);
    expect((await replicate(cfg, edgeDb)).code).toBe(0);
    const gone = (emulator.control.dump(edge.id).contacts[0] as { id: string }).id;
    emulator.control.mutate(edge.id, { op: 'delete_contacts', ids: [gone] });
    // A minute short of where the connector counts a gap (the retention less an hour and the 5-minute look-back)
    // when the run looks; past the retention when it reads the log.
    emulator.control.advanceClock(90 * DAY_MS - 66 * 60_000);
    emulator.control.setFaults([{ kind: 'slow', every: 1, times: 1, paths: ['/v1/deletions'], slowMs: 1500 }]);
    const running = replicate(cfg, edgeDb);
    while (emulator.control.faults().rules[0]?.fired !== 1) await new Promise((resolve) => setTimeout(resolve, 5));
    emulator.control.advanceClock(75 * 60_000);
    const raced = await running;
    emulator.control.clearFaults();
    expect(raced.code, raced.stderr).toBe(75);
    expect(raced.stderr).toMatch(/account "edge": deletions: the saved watermark \S+ became older than the service's 90-day retention/);
    const healed = await replicate(cfg, edgeDb);
    expect(healed.code, healed.stderr).toBe(0);
    expect(share(edgeDb, 'edge')).toEqual(sortedDump(edge));
  });
});

describe('an entry renamed in the config (the same key, the same account)', () => {
  it('says so in a WARN naming both entries and the account; the removal of docs/many-accounts.md leaves the rows under the new name alone', async () => {
    // The former entry is the one docs/many-accounts.md's statements name.
    const acmeBr = tenant('acme-br', 'Acme Brazil', 20);
    const stark = tenant('stark', 'Stark', 10);
    const renamedDb = join(dir, 'renamed.db');
    const first = await replicate(config([acmeBr, stark]), renamedDb);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).not.toMatch(/no longer in the config \(its state names/);

    const renamed = { ...acmeBr, entry: 'acme-brazil' };
    const run = await replicate(config([renamed, stark]), renamedDb);
    expect(run.code, run.stderr).toBe(0);
    const warns = run.stderr.split('\n').filter((l) => /\bWARN\b/.test(l));
    const said = warns.filter((l) => l.includes('no longer in the config'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(
      new RegExp(
        `Account "acme-brazil": it reads an account of the same name, "Acme Brazil" at ${emulator.url.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}, as entry "acme-br", ` +
          'which is no longer in the config .*the rows and state of "acme-br" stay: its rows sit under both names\\. ' +
          'Rename the entry back to "acme-br" .*remove the rows whose account is "acme-br"',
      ),
    );
    expect(run.stderr).not.toContain(acmeBr.key);
    // As the WARN says: the account's rows under both names.
    expect(share(renamedDb, 'acme-brazil')).toEqual(sortedDump(acmeBr));
    expect(share(renamedDb, 'acme-br')).toEqual(sortedDump(acmeBr));

    // The removal docs/many-accounts.md gives for a SQLite file ("Renaming an entry"), as written.
    const db = new DatabaseSync(renamedDb);
    try {
      db.exec(docRecipe('docs/many-accounts.md', 'many-accounts-rename-sqlite', 'sql'));
    } finally {
      db.close();
    }
    const after = await replicate(config([renamed, stark]), renamedDb);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stderr).not.toMatch(/no longer in the config/);
    expect(Object.values(share(renamedDb, 'acme-br')).flat()).toEqual([]);
    expect(share(renamedDb, 'acme-brazil')).toEqual(sortedDump(acmeBr));
    expect(share(renamedDb, 'stark')).toEqual(sortedDump(stark));
    expect(Object.keys(replicaStates(renamedDb).get('contacts')?.accounts ?? {}).sort()).toEqual(['acme-brazil', 'stark']);
  });
});
