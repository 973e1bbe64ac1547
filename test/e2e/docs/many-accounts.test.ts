/**
 * docs/many-accounts.md's recipes, run as written one after the other in a
 * folder laid out like a clone, against the real emulator: three accounts
 * (the default one and two the control API adds), check, an Airbyte full
 * read and a read from its state, and the tap given the list through the
 * environment as Meltano gives it, and the replica of the three accounts:
 * a SQLite file, then (docs/stores-postgresql.md's recipe, from the same
 * folder) a schema of the tests' PostgreSQL server (DATABASE_URL), whose
 * dashboard query counts each account's contacts.
 */
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLines, ROOT, tempDir } from '../../helpers/cli.js';
import { docRecipe, runShell } from '../../helpers/readme.js';
import { requireBuild } from '../../helpers/emulator-runs.js';
import { adminClient, freshDatabase, type TestDatabase } from '../../helpers/postgres.js';

const PAGE = 'docs/many-accounts.md';
const POSTGRES_PAGE = 'docs/stores-postgresql.md';

describe('docs/many-accounts.md: the recipes, pasted', () => {
  let checkout: string;
  let result: Awaited<ReturnType<typeof runShell>>;
  let database: TestDatabase | undefined;
  const file = (name: string): string => join(checkout, 'example', name);
  const messages = (name: string): Record<string, unknown>[] => parseLines(readFileSync(file(name), 'utf8'));
  const accountsOf = (name: string, stream: string): Map<string, number> => {
    const counts = new Map<string, number>();
    for (const m of messages(name)) {
      if (m.type !== 'RECORD') continue;
      const record = m.record as { stream?: string; data?: Record<string, unknown> } & Record<string, unknown>;
      if ((m.stream ?? record.stream) !== stream) continue;
      const account = String((record.data ?? record).account);
      counts.set(account, (counts.get(account) ?? 0) + 1);
    }
    return counts;
  };

  beforeAll(async () => {
    requireBuild();
    checkout = tempDir('sdr-many-accounts-');
    for (const name of ['bin', 'scripts', 'packages']) symlinkSync(join(ROOT, name), join(checkout, name));
    database = await freshDatabase('docs_accounts');
    // The PostgreSQL recipe of docs/stores-postgresql.md runs from the page's example folder, before the emulator stops.
    const recipes = ['many-accounts-setup', 'many-accounts-airbyte', 'many-accounts-meltano', 'many-accounts-replica'].map((name) => docRecipe(PAGE, name));
    const script = [...recipes, docRecipe(POSTGRES_PAGE, 'many-accounts-postgres'), docRecipe(PAGE, 'many-accounts-stop')].join('\n');
    result = await runShell(script, { cwd: checkout, env: { ...process.env, DATABASE_URL: database.url, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` } });
  }, 120_000);

  afterAll(async () => {
    await database?.drop();
    while (checkout !== undefined && existsSync(file('emulator.json'))) await new Promise((r) => setTimeout(r, 50));
  });

  it('runs to the end; check connects to all three accounts', () => {
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/"status":"SUCCEEDED","message":"Connected to all 3 accounts: \\"main\\" .*\\"north\\" .*\\"south\\"/);
  });

  it('reads every account in full, then only what changed, and says so per account in the summary', () => {
    const full = accountsOf('full.jsonl', 'contacts');
    expect([...full.keys()].sort()).toEqual(['main', 'north', 'south']);
    expect(full.get('main')).toBeGreaterThan(150);
    expect(full.get('north')).toBeGreaterThan(70);
    const next = accountsOf('next.jsonl', 'contacts');
    for (const name of ['main', 'north', 'south']) expect(next.get(name) ?? 0, name).toBeLessThan(full.get(name) ?? 0);
    expect(result.stdout).toMatch(/^main: succeeded, \d+ records\nnorth: succeeded, \d+ records\nsouth: succeeded, \d+ records$/m);
    const state = readFileSync(file('state.json'), 'utf8');
    expect(state).toContain('"stream_state":{"accounts":{"main":');
  });

  it('replicates the three accounts into one SQLite file, keyed by account and id, and goes on from its state', () => {
    expect(result.stdout).toMatch(/^main: \d+ contacts\nnorth: \d+ contacts\nsouth: \d+ contacts$/m);
    const summary = JSON.parse(readFileSync(file('replica-summary.json'), 'utf8')) as { accounts: { name: string; status: string }[] };
    expect(summary.accounts.map((a) => `${a.name} ${a.status}`)).toEqual(['main succeeded', 'north succeeded', 'south succeeded']);
    expect(result.stderr).toMatch(/Replicating 3 account\(s\) into accounts\.db \(continuing from its saved state\)/);
  });

  it('replicates the three accounts into a PostgreSQL schema, keyed by account and id: the same contacts per account as the SQLite file', async () => {
    expect(result.stdout).toMatch(/^main: succeeded\nnorth: succeeded\nsouth: succeeded$/m);
    expect(result.stderr).toMatch(/Replicating 3 account\(s\) into postgresql:\/\/.*\*\*\*/);
    expect(result.stderr).not.toContain(new URL(database?.url ?? 'postgresql://x').password);
    const client = await adminClient(database?.url ?? '');
    try {
      const { rows } = await client.query<{ account: string; contacts: string }>(docRecipe(POSTGRES_PAGE, 'many-accounts-postgres-query', 'sql'));
      const sqlite = /^main: (\d+) contacts\nnorth: (\d+) contacts\nsouth: (\d+) contacts$/m.exec(result.stdout);
      expect(sqlite).not.toBeNull();
      expect(rows.map((r) => `${r.account} ${Number(r.contacts)}`)).toEqual([`main ${sqlite?.[1]}`, `north ${sqlite?.[2]}`, `south ${sqlite?.[3]}`]);
      const keys = await client.query<{ name: string }>(
        "SELECT a.attname AS name FROM pg_index i JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) ON true JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum WHERE i.indrelid = 'accounts.contacts'::regclass AND i.indisprimary ORDER BY k.n",
      );
      expect(keys.rows.map((r) => r.name)).toEqual(['account', 'id']);
    } finally {
      await client.end();
    }
  });

  it('takes the list through the environment, as Meltano gives it, and resumes from its bookmarks', () => {
    const first = accountsOf('tap-1.jsonl', 'contacts');
    expect([...first.keys()].sort()).toEqual(['main', 'north', 'south']);
    const second = accountsOf('tap-2.jsonl', 'contacts');
    for (const name of ['main', 'north', 'south']) expect(second.get(name) ?? 0, name).toBeLessThan(first.get(name) ?? 0);
    const schema = messages('tap-1.jsonl').find((m) => m.type === 'SCHEMA');
    expect(schema?.key_properties).toEqual(['account', 'id']);
    // No key in any file the recipes wrote beside the config and the key files.
    const keys = (JSON.parse(readFileSync(file('config.json'), 'utf8')) as { accounts: { api_key: string }[] }).accounts.map((a) => a.api_key);
    for (const name of ['full.jsonl', 'next.jsonl', 'tap-1.jsonl', 'tap-2.jsonl', 'summary.json']) {
      const text = readFileSync(file(name), 'utf8');
      for (const key of keys) expect(text, name).not.toContain(key);
    }
  });
});
