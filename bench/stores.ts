/**
 * A micro-benchmark of the stores' writers (not yet part of `npm run bench`):
 * N contact-shaped records (bench/records.ts: every field, ~1 KB of JSON)
 * written in checkpoints of one page (200 records) each, as `replicate`
 * gives them, into
 *  - the SQLite replica (ReplicaStore + ReplicaWriter: checkpoints grouped
 *    per transaction, the WAL thread), the figure to compare with;
 *  - PostgreSQL (PostgresStore: COPY into a staging table, INSERT ... ON
 *    CONFLICT, one transaction per checkpoint): DATABASE_URL's server, or a
 *    throw-away server started here (the tests' one: fsync off);
 *  - DuckDB (DuckdbStore: appender, INSERT ... ON CONFLICT);
 * first into empty tables (every row new), then the same ids again with a
 * later updated_at (every row an update). Records are made before the clock
 * starts; only the writes are timed. Rows per second, each store in the same
 * run (a shared machine: compare the ratios).
 *
 * Then DuckDB's ways of merging a staged group of pages into a table with a
 * primary key, on the same data: INSERT ... ON CONFLICT DO UPDATE, INSERT OR
 * REPLACE, DELETE then INSERT (what the store does), and MERGE INTO.
 *
 *   npm run build && tsc -p tsconfig.bench.json && node .build/bench/bench/stores.js [--rows 200000] [--only sqlite,postgres,duckdb,merges]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReplicaStore, toRows } from '../src/replica/store.js';
import { ReplicaWriter } from '../src/replica/writer.js';
import { DuckdbStore } from '../src/stores/duckdb/store.js';
import { PostgresStore } from '../src/stores/postgres/store.js';
import { parseStoreTarget, type DuckdbTarget, type PostgresTarget } from '../src/stores/target.js';
import { findStream } from '../src/streams.js';
import type { StoreCheckpoint } from '../src/stores/checkpoint.js';
import { MAX_GROUP_ROWS } from '../src/stores/group-writer.js';
import { launchServer, waitUntilReady, type LaunchedServer } from '../test/helpers/postgres-launch.js';
import { GENERATORS, PAGE_SLOT, prng } from './records.js';

const argv = process.argv.slice(2);
const ROWS = Number(argv[argv.indexOf('--rows') + 1] ?? 0) || 200_000;
const PAGE = 200;
const onlyAt = argv.indexOf('--only');
/** `--only sqlite,postgres,duckdb,merges`: some parts only. */
const ONLY = new Set((onlyAt >= 0 ? (argv[onlyAt + 1] ?? '') : 'sqlite,postgres,duckdb,merges').split(','));
/** Pages per group in the merge comparison: the group writer's MAX_GROUP_ROWS. */
const GROUP_PAGES = MAX_GROUP_ROWS / PAGE;

type Data = Record<string, unknown>;

/** N contacts in pages, their ids unique; `minuteShift` moves every updated_at later (an update of the same rows). */
function pages(n: number, shift: number): Data[][] {
  const make = GENERATORS['/v1/contacts'];
  if (!make) throw new Error('no contact generator');
  const r = prng(7);
  const out: Data[][] = [];
  for (let p = 0; p * PAGE < n; p++) {
    const page: Data[] = [];
    for (let i = 0; i < PAGE && p * PAGE + i < n; i++) {
      const record = make(r, i);
      record.id = String(record.id).replace('P'.repeat(PAGE_SLOT), p.toString(16).padStart(PAGE_SLOT, '0'));
      if (shift > 0) record.updated_at = new Date(Date.parse(String(record.updated_at)) + shift).toISOString();
      page.push(record);
    }
    out.push(page);
  }
  return out;
}

const state = (p: number): string => JSON.stringify({ resume: { cursor: `page-${p}`, sync_watermark: '2025-06-01T00:00:00.000Z' } });

interface Timing {
  readonly store: string;
  readonly phase: string;
  readonly ms: number;
}

async function timed(store: string, phase: string, run: () => Promise<void>): Promise<Timing> {
  const start = performance.now();
  await run();
  const ms = performance.now() - start;
  console.log(`  ${store} ${phase}: ${(ms / 1000).toFixed(2)} s`);
  return { store, phase, ms };
}

async function sqlite(dir: string, batches: Record<string, Data[][]>): Promise<Timing[]> {
  const contacts = findStream('contacts');
  if (!contacts) throw new Error('no contacts stream');
  const path = join(dir, 'replica.db');
  const out: Timing[] = [];
  for (const [phase, data] of Object.entries(batches)) {
    out.push(
      await timed('SQLite replica', phase, async () => {
        const store = new ReplicaStore(path, undefined, { lock: true });
        const writer = new ReplicaWriter(store);
        const layout = store.layoutOf(contacts.name);
        data.forEach((page, p) => writer.write({ stream: contacts.name, rows: toRows(layout, page), state: state(p) }));
        await writer.close();
        store.close();
      }),
    );
  }
  return out;
}

async function postgres(batches: Record<string, Data[][]>): Promise<Timing[]> {
  let server: LaunchedServer | undefined;
  let url = process.env.DATABASE_URL;
  if (url === undefined || url === '') {
    const start = performance.now();
    server = await launchServer();
    await waitUntilReady(server.info);
    console.log(`throw-away PostgreSQL server started in ${((performance.now() - start) / 1000).toFixed(2)} s (initdb + start)`);
    url = server.url;
  }
  try {
    const target = parseStoreTarget(url, 'bench_stores', {}) as PostgresTarget;
    const setup = await PostgresStore.open(target);
    await setup.session.query('DROP SCHEMA IF EXISTS bench_stores CASCADE');
    await setup.close();
    const out: Timing[] = [];
    for (const [phase, data] of Object.entries(batches)) {
      out.push(
        await timed('PostgreSQL', phase, async () => {
          const store = await PostgresStore.open(target);
          for (const [p, page] of data.entries()) await store.write({ stream: 'contacts', records: page, state: state(p) });
          await store.close();
        }),
      );
    }
    return out;
  } finally {
    await server?.stop();
  }
}

async function duckdb(dir: string, batches: Record<string, Data[][]>): Promise<Timing[]> {
  const target = parseStoreTarget(`duckdb:${join(dir, 'store.duckdb')}`, undefined, {}) as DuckdbTarget;
  const out: Timing[] = [];
  for (const [phase, data] of Object.entries(batches)) {
    out.push(
      await timed('DuckDB', phase, async () => {
        const store = await DuckdbStore.open(target);
        for (const [p, page] of data.entries()) {
          const checkpoint: StoreCheckpoint = { stream: 'contacts', records: page, state: state(p) };
          await store.write(checkpoint);
        }
        await store.close();
      }),
    );
  }
  return out;
}

/** DuckDB's merges of a staged group (GROUP_PAGES pages) into the table, one transaction per group, as the store writes them. */
async function duckdbMerges(dir: string, batches: Record<string, Data[][]>): Promise<Timing[]> {
  const { DuckDBInstance, DuckDBTimestampTZValue } = await import('@duckdb/node-api');
  const sample = batches.new?.[0]?.[0];
  if (!sample) return [];
  const fields = Object.keys(sample);
  const type = (f: string): string => (f === 'qualification_score' ? 'BIGINT' : f === 'do_not_contact' ? 'BOOLEAN' : f.endsWith('_at') ? 'TIMESTAMPTZ' : 'VARCHAR');
  const columns = fields.map((f) => `"${f}" ${type(f)}`).join(', ');
  const names = fields.map((f) => `"${f}"`).join(', ');
  const sets = fields.filter((f) => f !== 'id').map((f) => `"${f}" = EXCLUDED."${f}"`).join(', ');
  const mergeSets = fields.filter((f) => f !== 'id').map((f) => `"${f}" = s."${f}"`).join(', ');
  const merges: Record<string, string> = {
    'INSERT ... ON CONFLICT DO UPDATE': `INSERT INTO t (${names}) SELECT ${names} FROM s ON CONFLICT (id) DO UPDATE SET ${sets}`,
    'INSERT OR REPLACE': `INSERT OR REPLACE INTO t (${names}) SELECT ${names} FROM s`,
    'DELETE, then INSERT': `DELETE FROM t WHERE id IN (SELECT id FROM s); INSERT INTO t (${names}) SELECT ${names} FROM s`,
    'MERGE INTO': `MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET ${mergeSets} WHEN NOT MATCHED THEN INSERT (${names}) VALUES (${fields.map((f) => `s."${f}"`).join(', ')})`,
  };
  const out: Timing[] = [];
  for (const [name, sql] of Object.entries(merges)) {
    const path = join(dir, `merge-${out.length}.duckdb`);
    const instance = await DuckDBInstance.create(path);
    const c = await instance.connect();
    await c.run(`CREATE TABLE t (${columns.replace('"id" VARCHAR', '"id" VARCHAR PRIMARY KEY')})`);
    await c.run(`CREATE TEMP TABLE s (${columns})`);
    for (const [phase, data] of Object.entries(batches)) {
      out.push(
        await timed(`DuckDB ${name}`, phase, async () => {
          for (let g = 0; g < data.length; g += GROUP_PAGES) {
            await c.run('BEGIN TRANSACTION');
            await c.run('DELETE FROM s');
            const a = await c.createAppender('s', 'main', 'temp');
            for (const record of data.slice(g, g + GROUP_PAGES).flat()) {
              for (const f of fields) {
                const v = record[f];
                if (v === null || v === undefined) a.appendNull();
                else if (type(f) === 'BIGINT') a.appendBigInt(BigInt(v as number));
                else if (type(f) === 'BOOLEAN') a.appendBoolean(v as boolean);
                else if (type(f) === 'TIMESTAMPTZ') a.appendTimestampTZ(new DuckDBTimestampTZValue(BigInt(Date.parse(v as string)) * 1000n));
                else a.appendVarchar(String(v));
              }
              a.endRow();
            }
            a.flushSync();
            a.closeSync();
            for (const statement of sql.split('; ')) await c.run(statement);
            await c.run('COMMIT');
          }
        }),
      );
    }
    c.closeSync();
    instance.closeSync();
  }
  return out;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sdr-bench-stores-'));
  try {
    console.log(`making ${ROWS} contacts in pages of ${PAGE}...`);
    const batches = { new: pages(ROWS, 0), update: pages(ROWS, 3_600_000) };
    const timings: Timing[] = [];
    if (ONLY.has('sqlite')) timings.push(...(await sqlite(dir, batches)));
    if (ONLY.has('postgres')) timings.push(...(await postgres(batches)));
    if (ONLY.has('duckdb')) timings.push(...(await duckdb(dir, batches)));
    if (ONLY.has('merges')) timings.push(...(await duckdbMerges(dir, batches)));
    const sqliteMs = new Map(timings.filter((t) => t.store === 'SQLite replica').map((t) => [t.phase, t.ms]));
    console.log(`\n${ROWS} contacts, checkpoints of ${PAGE}, ${new Date().toISOString().slice(0, 10)}`);
    console.log(`${'store'.padEnd(44)} ${'phase'.padEnd(7)} ${'seconds'.padStart(8)} ${'rows/s'.padStart(9)}  vs SQLite`);
    for (const t of timings) {
      const ratio = t.ms / (sqliteMs.get(t.phase) ?? t.ms);
      console.log(`${t.store.padEnd(44)} ${t.phase.padEnd(7)} ${(t.ms / 1000).toFixed(2).padStart(8)} ${Math.round((ROWS * 1000) / t.ms).toString().padStart(9)}  ${ratio.toFixed(2)}x`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
