/**
 * The replica answers from indexes (EXPLAIN QUERY PLAN): every SQL block of
 * the README and the docs/ pages, every query of the demo's dashboard (demo/dashboard.ts), and the lookups the
 * replica makes while it writes (the deleted-row guard, deletions applied).
 * A table is read whole only by a query that aggregates the whole table (a
 * count, a GROUP BY, a median); a lookup by key, a join and a correlated
 * subquery search an index; SQLite never has to build an automatic index.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { buildOpenApiDocument } from 'data-read-emulator';
import { describeStreams } from '../../src/engine/connect.js';
import { ReplicaStore } from '../../src/replica/store.js';
import { summarize } from '../../demo/dashboard.js';
import { ROOT, tempDir } from '../helpers/cli.js';
import { FakeApi } from '../helpers/fake-api.js';

const dir = tempDir('replica-plans-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function plan(db: DatabaseSync, sql: string): string[] {
  return db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all().map((r) => String(r.detail));
}

/** The SQL statements of the ```sql blocks of the README and the docs/ pages. */
function readmeStatements(): string[] {
  // The stores' pages (docs/stores-*.md) hold PostgreSQL and DuckDB SQL, run by test/e2e/docs/stores-recipes.test.ts.
  const pages = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md') && !f.startsWith('stores-')).map((f) => `docs/${f}`)];
  const readme = pages.map((page) => readFileSync(join(ROOT, page), 'utf8')).join('\n');
  const out: string[] = [];
  // A block under a recipe marker (the removal of a renamed entry, docs/many-accounts.md) is run as written against the
  // store it names, with its many accounts, by the test naming the recipe (recipes-readme.test.ts checks one does).
  for (const block of readme.matchAll(/(<!-- recipe: [\w-]+ -->\n)?```sql\n([\s\S]*?)```/g)) {
    if (block[1] !== undefined) continue;
    // Written for a warehouse (docs/deletions.md): its interval as SQLite writes it, to be planned here.
    const sqlite = (block[2] ?? '').replace(/(\w+\.\w+) \+ INTERVAL '(\d+) minutes'/g, "strftime('%Y-%m-%dT%H:%M:%fZ', $1, '+$2 minutes')");
    for (const statement of sqlite.replace(/--.*$/gm, '').split(';')) if (statement.trim() !== '') out.push(statement.trim());
  }
  return out;
}

/** The statements the dashboard summary runs (captured by handing it a database that records them). */
function summaryStatements(db: DatabaseSync): string[] {
  const seen: string[] = [];
  const recording = {
    prepare: (sql: string) => (seen.push(sql), db.prepare(sql)),
    exec: (sql: string) => db.exec(sql),
    get isTransaction() {
      return db.isTransaction;
    },
  } as unknown as DatabaseSync;
  summarize(recording);
  return seen.filter((sql) => !/\bsqlite_schema\b/.test(sql));
}

const TABLES = new Set(['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages', '_replica_state', '_replica_tables']);
const NOT_ALIASES = new Set(['where', 'on', 'left', 'join', 'inner', 'group', 'order', 'limit', 'using']);

/** The tables a statement names, by the name its plan uses for them (the table's, or its alias). */
function tablesOf(sql: string): Set<string> {
  const names = new Set<string>();
  for (const m of sql.matchAll(/\b(?:from|join)\s+"?(\w+)"?(?:\s+(?:as\s+)?(\w+))?/gi)) {
    const table = m[1] ?? '';
    if (!TABLES.has(table)) continue;
    const alias = m[2];
    names.add(alias !== undefined && !NOT_ALIASES.has(alias.toLowerCase()) ? alias : table);
  }
  return names;
}

/**
 * The problems of one plan: an automatic index; more than one table read
 * whole (a join or subquery that does not search an index); a table read
 * whole by a statement that looks rows up by a key (= on id, object_id or
 * stream), except the table that drives a correlated subquery.
 */
function problems(sql: string, lines: readonly string[]): string[] {
  const out: string[] = [];
  const tables = tablesOf(sql);
  const scans = lines.filter((l) => tables.has(/^SCAN (\w+)/.exec(l)?.[1] ?? ''));
  for (const line of lines) if (/AUTOMATIC/.test(line)) out.push(`builds an automatic index: ${line}`);
  if (scans.length > 1) out.push(`reads more than one table whole: ${scans.join('; ')}`);
  const looksUp = /\b(?:\w+\.)?"?(id|object_id|stream)"?\s*=\s*(\?|'[^']*')/i.test(sql);
  const correlated = lines.some((l) => /CORRELATED/.test(l));
  if (scans.length === 1 && looksUp && !correlated) out.push(`reads a table whole to look rows up: ${scans[0]}`);
  return out;
}

describe('the replica answers from indexes', () => {
  const path = join(dir, 'replica.db');
  let store: ReplicaStore;
  let db: DatabaseSync;
  beforeAll(async () => {
    // A replica of the emulator: its tables as the service's description makes them (pipeline_stages with name, key, ...).
    const api = new FakeApi();
    api.openApi = buildOpenApiDocument();
    const { schemas } = await describeStreams(api);
    store = new ReplicaStore(path, undefined, { schemas });
    db = store.db;
  });
  afterAll(() => store.close());

  it('the queries of the docs and the dashboard summary: no full scan where an index is natural', () => {
    const statements = [...readmeStatements(), ...summaryStatements(db)];
    expect(readmeStatements().length).toBeGreaterThan(0);
    expect(statements.length).toBeGreaterThan(6);
    const report = statements.map((sql) => ({ sql: sql.replace(/\s+/g, ' '), plan: plan(db, sql), problems: problems(sql, plan(db, sql)) }));
    expect(report.filter((r) => r.problems.length > 0)).toEqual([]);

    const byText = (needle: string) => report.find((r) => r.sql.includes(needle))?.plan ?? [];
    // The deletion model of docs/deletions.md: one row of contacts at a time, the deletions found by object_id.
    expect(byText('DELETE FROM contacts')).toContain('SEARCH d USING INDEX _replica_deletions_object (object_id=?)');
    // The dashboard's stage names: a lookup of each stage by its key.
    expect(byText('LEFT JOIN pipeline_stages').some((l) => /^SEARCH s USING (INDEX sqlite_autoindex_pipeline_stages_1|PRIMARY KEY) \(id=\?\)/.test(l))).toBe(true);
    // Counting rows reads the small primary-key index, not the ~1 KB rows.
    expect(byText('SELECT count(*) AS n FROM contacts')).toEqual([expect.stringMatching(/^SCAN contacts USING COVERING INDEX sqlite_autoindex_contacts_1/)]);
  });

  it('the lookups the replica makes while writing search an index', () => {
    // The deleted-row guard: the deletions of one object, found by object_id.
    expect(plan(db, 'SELECT "deleted_at" AS d FROM "deletions" WHERE "object_id" = ? AND "object_type" = ?')).toEqual([
      'SEARCH deletions USING INDEX _replica_deletions_object (object_id=?)',
    ]);
    for (const table of ['contacts', 'conversations']) {
      expect(plan(db, `SELECT "updated_at" AS c FROM "${table}" WHERE "id" = ?`)).toEqual([`SEARCH ${table} USING INDEX sqlite_autoindex_${table}_1 (id=?)`]);
      expect(plan(db, `DELETE FROM "${table}" WHERE "id" = ?`)).toEqual([`SEARCH ${table} USING INDEX sqlite_autoindex_${table}_1 (id=?)`]);
    }
    expect(plan(db, 'SELECT * FROM "contacts" ORDER BY "id"')).toEqual(['SCAN contacts USING INDEX sqlite_autoindex_contacts_1']);
  });
});
