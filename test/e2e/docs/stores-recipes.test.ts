/**
 * The recipes of docs/stores-postgresql.md and docs/stores-duckdb.md, run as
 * written against the emulator: `replicate` into the tests' PostgreSQL
 * server (DATABASE_URL) and into a DuckDB file, then each page's dashboard
 * query, whose counts add up to the service's contacts.
 */
import { randomBytes } from 'node:crypto';
import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import { ROOT, tempDir, writeJson } from '../../helpers/cli.js';
import { emulatorAccount, requireBuild, type Account } from '../../helpers/emulator-runs.js';
import { adminClient, freshDatabase, postgresAdminUrl, type TestDatabase } from '../../helpers/postgres.js';
import { docRecipe, runShell } from '../../helpers/readme.js';

let account: Account;
let dir: string;
beforeAll(async () => {
  requireBuild();
  account = await emulatorAccount(80, 61);
  dir = tempDir('sdr-docs-stores-');
  symlinkSync(join(ROOT, 'bin'), join(dir, 'bin'));
  writeJson(dir, 'config.json', { api_key: account.key, base_url: account.emulator.url });
});
afterAll(async () => {
  await account?.emulator.close();
});

interface Row {
  temperature: unknown;
  contacts: unknown;
  do_not_contact: unknown;
}

function checkCounts(rows: readonly Row[]): void {
  const contacts = account.dump().contacts as unknown as { temperature: string | null; do_not_contact: boolean }[];
  expect(rows.reduce((n, r) => n + Number(r.contacts), 0)).toBe(contacts.length);
  expect(rows.reduce((n, r) => n + Number(r.do_not_contact), 0)).toBe(contacts.filter((c) => c.do_not_contact).length);
  expect(rows.length).toBe(new Set(contacts.map((c) => c.temperature)).size);
}

describe('docs/stores-postgresql.md', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase('docs');
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('replicates into the schema data_read, and the dashboard query counts every contact', async () => {
    const run = await runShell(docRecipe('docs/stores-postgresql.md', 'postgres-replicate'), { cwd: dir, env: { ...process.env, DATABASE_URL: db.url } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/Replica up to date/);
    expect(run.stderr).not.toContain(new URL(db.url).password);
    const client = await adminClient(db.url);
    try {
      const { rows } = await client.query<Row>(docRecipe('docs/stores-postgresql.md', 'postgres-dashboard', 'sql'));
      checkCounts(rows);
    } finally {
      await client.end();
    }
  });
});

describe("docs/stores-postgresql.md's dashboard role", () => {
  let db: TestDatabase;
  const suffix = randomBytes(4).toString('hex');
  const loader = `loader_${suffix}`;
  const metabase = `metabase_${suffix}`;
  const password = randomBytes(8).toString('hex');
  const as = (role: string): string => {
    const u = new URL(db.url);
    u.username = role;
    u.password = password;
    return u.toString();
  };
  beforeAll(async () => {
    db = await freshDatabase('docs_role');
  });
  afterAll(async () => {
    await db?.drop();
    // Roles are the server's, not the database's: dropped once the database that held their objects is gone.
    const admin = await adminClient(await postgresAdminUrl());
    try {
      for (const role of [loader, metabase]) await admin.query(`DROP ROLE IF EXISTS ${role}`);
    } finally {
      await admin.end();
    }
  });

  it('set up by an administrator before the first run, reads every table the runs make, one made again included', async () => {
    const admin = await adminClient(db.url);
    try {
      // The replicating role may create its schema; the dashboard's role is the page's, set up first, as a team does.
      for (const role of [loader, metabase]) await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
      await admin.query(`GRANT CREATE ON DATABASE "${new URL(db.url).pathname.slice(1)}" TO ${loader}`);
      const grants = docRecipe('docs/stores-postgresql.md', 'postgres-dashboard-role', 'sql').replace(/\bloader\b/g, loader).replace(/\bmetabase\b/g, metabase);
      await admin.query(grants);
    } finally {
      await admin.end();
    }
    const replicate = async (): Promise<void> => {
      const run = await runShell(docRecipe('docs/stores-postgresql.md', 'postgres-replicate'), { cwd: dir, env: { ...process.env, DATABASE_URL: as(loader) } });
      expect(run.code, run.stderr).toBe(0);
    };
    const counts = async (): Promise<Record<string, number>> => {
      const reader = await adminClient(as(metabase));
      try {
        const out: Record<string, number> = {};
        for (const table of ['contacts', 'pipeline_stages']) out[table] = Number((await reader.query<{ n: string }>(`SELECT count(*) AS n FROM data_read.${table}`)).rows[0]?.n);
        return out;
      } finally {
        await reader.end();
      }
    };
    const dump = account.dump();
    const expected = { contacts: dump.contacts.length, pipeline_stages: dump.pipeline_stages.length };
    await replicate();
    expect(await counts()).toEqual(expected);
    // A table dropped by hand is made again by the next run (Tables and types): the dashboard still reads it.
    const owner = await adminClient(as(loader));
    try {
      await owner.query('DROP TABLE data_read.pipeline_stages');
    } finally {
      await owner.end();
    }
    await replicate();
    expect(await counts()).toEqual(expected);
  });
});

describe('docs/stores-duckdb.md', () => {
  it('replicates into analytics.duckdb, and the dashboard query counts every contact', async () => {
    const run = await runShell(docRecipe('docs/stores-duckdb.md', 'duckdb-replicate'), { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const instance = await DuckDBInstance.create(join(dir, 'analytics.duckdb'), { access_mode: 'READ_ONLY' });
    const connection = await instance.connect();
    try {
      const reader = await connection.runAndReadAll(docRecipe('docs/stores-duckdb.md', 'duckdb-dashboard', 'sql'));
      checkCounts(reader.getRowObjectsJS() as unknown as Row[]);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });
});
