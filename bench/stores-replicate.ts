/**
 * The PostgreSQL and DuckDB stores in the benchmark (section "stores" of
 * run.ts), each a ratio to `read` of the same records measured in the same
 * run, runs alternated (read, PostgreSQL, DuckDB, then another order):
 *  - `replicate --db postgresql://...` of N contacts into a new schema
 *    (DATABASE_URL's server, or the tests' throw-away server started here
 *    on this machine: it shares the CPUs with the connector, and runs with
 *    fsync off) vs `read` of the same N to /dev/null;
 *  - `replicate --db X.duckdb` of N contacts into a new file vs the same;
 *  - memory: peak RSS of `replicate` into each store at a small and a large
 *    N, medians of a few runs each (flat: the connector's memory does not
 *    follow the rows);
 *  - a check that every row is in the store.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { DuckDBInstance } from '@duckdb/node-api';
import { launchServer, waitUntilReady, type LaunchedServer } from '../test/helpers/postgres-launch.js';
import { API_KEY, SOURCE_BIN, catalogFor, measure, median, writeJson, type PageServer } from './lib.js';
import type { Reporter } from './replica.js';

export interface StoresPlan {
  /** Records of the timed runs. */
  readonly size: number;
  readonly repeats: number;
  /** The small and large sizes of the memory runs. */
  readonly memoryPair: readonly [number, number];
  /** Runs per store and size (medians compared): one run's peak varies by about ±20 MB. */
  readonly memoryRepeats: number;
}

export const STORES_TARGETS = {
  /** replicate into PostgreSQL / read of the same records (the server shares the machine). */
  postgresRatio: 2.5,
  duckdbRatio: 2.0,
  /** Peak RSS growth from the small to the large memory runs (medians), in either store. */
  memoryGrowthMb: 25,
};

const CONTACTS = '/v1/contacts';
const EMPTY_LISTS = { '/v1/conversations': 0, '/v1/stage_events': 0, '/v1/deletions': 0 };
const SCHEMA = 'bench_replicate';

const mb = (kb: number): number => kb / 1024;
const fmtMb = (kb: number): string => `${mb(kb).toFixed(1)} MB`;
const fmtS = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const k = (n: number): string => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`);

interface Run {
  readonly wallMs: number;
  readonly rssKb: number;
}

type Who = 'read' | 'postgres' | 'duckdb';

async function postgresRows(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM "${SCHEMA}".contacts`);
    return Number(rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

async function dropSchema(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${SCHEMA}" CASCADE`);
  } finally {
    await client.end();
  }
}

async function duckdbRows(path: string): Promise<number> {
  const instance = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
  const connection = await instance.connect();
  try {
    const reader = await connection.runAndReadAll('SELECT count(*) AS n FROM main.contacts');
    return Number((reader.getRowObjectsJS()[0] as { n: bigint | number }).n);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

function removeDuckdb(path: string): void {
  for (const suffix of ['', '.wal']) rmSync(`${path}${suffix}`, { force: true });
}

export async function storesBench(server: PageServer, dir: string, plan: StoresPlan, report: Reporter): Promise<Record<string, unknown>> {
  const { row, log } = report;
  let launched: LaunchedServer | undefined;
  let url = process.env.DATABASE_URL;
  if (url === undefined || url === '') {
    launched = await launchServer();
    await waitUntilReady(launched.info);
    url = launched.url;
  }
  try {
    const config = writeJson(dir, 'stores-config.json', { api_key: API_KEY, base_url: server.url });
    const catalog = writeJson(dir, 'stores-catalog.json', catalogFor(['contacts']));
    const duckdb = join(dir, 'stores-bench.duckdb');
    const args: Record<Who, readonly string[]> = {
      read: [SOURCE_BIN, 'read', '--config', config, '--catalog', catalog],
      postgres: [SOURCE_BIN, 'replicate', '--config', config, '--db', url, '--schema', SCHEMA],
      duckdb: [SOURCE_BIN, 'replicate', '--config', config, '--db', duckdb],
    };
    const run = async (who: Who, n: number): Promise<Run> => {
      await server.setup(who === 'read' ? { [CONTACTS]: n } : { [CONTACTS]: n, ...EMPTY_LISTS }, 0);
      if (who === 'postgres') await dropSchema(url);
      if (who === 'duckdb') removeDuckdb(duckdb);
      const m = await measure(args[who], 'null', { timeoutMs: 1_800_000 });
      if (m.code !== 0) throw new Error(`${who} (${n} records) exited with ${m.code}:\n${m.stderr.slice(-2000)}`);
      return { wallMs: m.wallMs, rssKb: m.maxRssKb };
    };

    const n = plan.size;
    log(`\n9. Stores: replicate of ${k(n)} contacts into a new PostgreSQL schema and a new DuckDB file vs read of the same (runs alternated)`);
    const runs: Record<Who, Run[]> = { read: [], postgres: [], duckdb: [] };
    const orders: readonly (readonly Who[])[] = [
      ['read', 'postgres', 'duckdb'],
      ['duckdb', 'postgres', 'read'],
      ['postgres', 'read', 'duckdb'],
    ];
    const held = { postgres: 0, duckdb: 0 };
    for (let r = 0; r < plan.repeats; r++) {
      for (const who of orders[r % orders.length] ?? []) {
        const m = await run(who, n);
        runs[who].push(m);
        if (who === 'postgres') held.postgres = await postgresRows(url);
        if (who === 'duckdb') held.duckdb = await duckdbRows(duckdb);
        log(`    ${who.padEnd(9)} ${k(n).padStart(5)} #${r + 1}: ${fmtS(m.wallMs)}, peak RSS ${fmtMb(m.rssKb)}`);
      }
    }
    const read = median(runs.read.map((x) => x.wallMs));
    const figures: Record<string, unknown> = { size: n, runs };
    for (const [who, target, name] of [
      ['postgres', STORES_TARGETS.postgresRatio, 'PostgreSQL'],
      ['duckdb', STORES_TARGETS.duckdbRatio, 'DuckDB'],
    ] as const) {
      const wall = median(runs[who].map((x) => x.wallMs));
      row('stores', `${name}, ${k(n)} contacts: rows in the store, after one replicate`, held[who].toLocaleString('en-US'), n.toLocaleString('en-US'), held[who] === n);
      row('stores', `${name}, ${k(n)} contacts: replicate / read of the same records`, `${fmtS(wall)} / ${fmtS(read)} = ${(wall / read).toFixed(2)}`, `≤ ${target}`, wall / read <= target);
      figures[`${who}Ratio`] = wall / read;
    }

    const [small, large] = plan.memoryPair;
    log(`\n9b. Stores: peak RSS of replicate into each store at ${k(small)} and ${k(large)} contacts (medians of ${plan.memoryRepeats})`);
    for (const who of ['postgres', 'duckdb'] as const) {
      const memory = { small: [] as Run[], large: [] as Run[] };
      for (let r = 0; r < plan.memoryRepeats; r++) {
        memory.small.push(await run(who, small));
        memory.large.push(await run(who, large));
        log(`    ${who.padEnd(9)} #${r + 1} ${k(small)}: peak RSS ${fmtMb(memory.small.at(-1)?.rssKb ?? 0)}; ${k(large)}: ${fmtMb(memory.large.at(-1)?.rssKb ?? 0)}`);
      }
      const a = median(memory.small.map((x) => x.rssKb));
      const b = median(memory.large.map((x) => x.rssKb));
      const growth = mb(b - a);
      row('stores', `${who === 'postgres' ? 'PostgreSQL' : 'DuckDB'}: peak RSS of replicate, ${k(small)} → ${k(large)} contacts`, `${fmtMb(a)} → ${fmtMb(b)} (${growth >= 0 ? '+' : '−'}${Math.abs(growth).toFixed(1)} MB)`, `≤ +${STORES_TARGETS.memoryGrowthMb} MB`, growth <= STORES_TARGETS.memoryGrowthMb);
      figures[`${who}Memory`] = memory;
    }
    await dropSchema(url);
    removeDuckdb(duckdb);
    return figures;
  } finally {
    await launched?.stop();
  }
}
