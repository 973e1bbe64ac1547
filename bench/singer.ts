/**
 * The Singer face's figures in the benchmark (section "singer" of run.ts):
 * the tap (`bin/tap-data-read`) syncing N contacts with replication-method
 * FULL_TABLE (so with ACTIVATE_VERSION and a `version` on every RECORD),
 * stdout to /dev/null, against `read` (`bin/source-data-read`, sync mode
 * full_refresh) of the same pages from the same page server, runs
 * alternated in the same run; the figure is the ratio of the median times.
 * A first tap run of 1,000 records, captured, checks that the row measures
 * what it says: every RECORD, each with the version that the
 * ACTIVATE_VERSION after them activates.
 */
import { join } from 'node:path';
import { API_KEY, ROOT, SOURCE_BIN, listRequestsOf, measure, median, writeJson, type Measured, type PageServer } from './lib.js';
import type { Reporter } from './shared-key.js';

/** The tap measured; BENCH_TAP_BIN compares another build (as BENCH_SOURCE_BIN does for read). */
const TAP_BIN = process.env.BENCH_TAP_BIN ?? join(ROOT, 'bin', 'tap-data-read');
const CONTACTS = '/v1/contacts';

export interface SingerPlan {
  readonly size: number;
  readonly repeats: number;
}

export const SINGER_TARGETS = {
  /** The tap's time over read's for the same records (the target). */
  tapOverRead: 1.05,
};

const fmtS = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const k = (n: number): string => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`);

function assertOk(what: string, m: Measured): void {
  if (m.code !== 0) throw new Error(`${what} exited with ${m.code}:\n${m.stderr.slice(-2000)}\n${m.stdout.slice(-2000)}`);
}

/** A Singer catalog selecting contacts, FULL_TABLE (every field). */
const singerCatalog = { streams: [{ tap_stream_id: 'contacts', schema: {}, metadata: [{ breadcrumb: [], metadata: { selected: true, 'replication-method': 'FULL_TABLE' } }] }] };
/** The Airbyte catalog of the same stream in the same mode. */
const airbyteCatalog = {
  streams: [{ stream: { name: 'contacts', json_schema: {}, supported_sync_modes: ['full_refresh', 'incremental'] }, sync_mode: 'full_refresh', destination_sync_mode: 'overwrite' }],
};

interface Line {
  readonly type?: string;
  readonly record?: { readonly id?: string };
  readonly version?: number;
}

/** RECORD lines, distinct ids, and whether each RECORD carries the version one ACTIVATE_VERSION activates. */
function checkTapOutput(stdout: string): { records: number; ids: number; versioned: boolean } {
  const lines = stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Line);
  const records = lines.filter((l) => l.type === 'RECORD');
  const activated = lines.filter((l) => l.type === 'ACTIVATE_VERSION').map((l) => l.version);
  const version = activated.at(-1);
  return {
    records: records.length,
    ids: new Set(records.map((r) => r.record?.id)).size,
    versioned: version !== undefined && records.every((r) => r.version === version),
  };
}

export async function singerBench(server: PageServer, dir: string, plan: SingerPlan, report: Reporter): Promise<Record<string, unknown>> {
  const { row, log } = report;
  const config = writeJson(dir, 'singer-config.json', { api_key: API_KEY, base_url: server.url });
  const tapArgs = [TAP_BIN, '--config', config, '--catalog', writeJson(dir, 'singer-catalog.json', singerCatalog)];
  const readArgs = [SOURCE_BIN, 'read', '--config', config, '--catalog', writeJson(dir, 'singer-airbyte-catalog.json', airbyteCatalog)];

  await server.setup({ [CONTACTS]: 1000 });
  const check = await measure(tapArgs, 'capture');
  assertOk('tap (output check)', check);
  const seen = checkTapOutput(check.stdout);
  row('singer', 'tap, 1,000 records FULL_TABLE: RECORD lines, distinct ids, each with the activated version', `${seen.records}, ${seen.ids}, ${seen.versioned ? 'yes' : 'no'}`, '1000, 1000, yes', seen.records === 1000 && seen.ids === 1000 && seen.versioned);

  const n = plan.size;
  log(`\n10. Singer: the tap (FULL_TABLE) vs read (full_refresh) of ${k(n)} contacts, stdout to /dev/null (runs alternated)`);
  const wall: Record<'tap' | 'read', number[]> = { tap: [], read: [] };
  const cpu: Record<'tap' | 'read', number[]> = { tap: [], read: [] };
  for (let r = 0; r < plan.repeats; r++) {
    // Alternate, so that a slow moment of the machine hits both alike.
    for (const who of r % 2 === 0 ? (['tap', 'read'] as const) : (['read', 'tap'] as const)) {
      await server.setup({ [CONTACTS]: n });
      const m = await measure(who === 'tap' ? tapArgs : readArgs, 'null', { timeoutMs: 600_000 });
      assertOk(`${who} (${n} records)`, m);
      const listed = (await server.stats()).list[CONTACTS] ?? 0;
      if (listed !== listRequestsOf(n)) throw new Error(`${who}: expected ${listRequestsOf(n)} list requests, the server saw ${listed}`);
      wall[who].push(m.wallMs);
      cpu[who].push(m.cpuSeconds);
      log(`    ${who.padEnd(5)} ${k(n).padStart(5)} #${r + 1}: ${fmtS(m.wallMs)}, cpu ${m.cpuSeconds.toFixed(2)} s`);
    }
  }
  const tap = median(wall.tap);
  const read = median(wall.read);
  const ratio = tap / read;
  const rounds = wall.tap.map((t, i) => t / (wall.read[i] ?? Number.NaN));
  row('singer', `${k(n)} contacts: tap (FULL_TABLE) / read, wall time (medians of ${plan.repeats})`, `${fmtS(tap)} / ${fmtS(read)} = ${ratio.toFixed(3)}`, `≤ ${SINGER_TARGETS.tapOverRead}`, ratio <= SINGER_TARGETS.tapOverRead, { rounds });
  const cpuRatio = median(cpu.tap) / median(cpu.read);
  if (Number.isFinite(cpuRatio)) row('singer', `${k(n)} contacts: tap / read, CPU time (user+sys, medians)`, `${median(cpu.tap).toFixed(2)} s / ${median(cpu.read).toFixed(2)} s = ${cpuRatio.toFixed(3)}`, '—', null);
  return { records: n, wallMs: wall, cpuSeconds: cpu, rounds, check: seen };
}
