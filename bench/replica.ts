/**
 * The replica's figures in the benchmark (section "replica" of run.ts), each
 * a ratio to `read` of the same records measured in the same run, runs
 * alternated:
 *  - a new file: `replicate` of N contacts (other streams empty) vs `read`
 *    of the same N to /dev/null;
 *  - incremental: `replicate` into a copy of that N-row file, the server
 *    serving N/10 changed versions of records spread evenly over the file,
 *    vs `read` of those N/10;
 *  - memory: peak RSS of `replicate` (new file) at a small and a large N,
 *    and of `read` at the large N;
 *  - the file's size, and a check that every row (and every change) is there.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, fsyncSync, openSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { API_KEY, SOURCE_BIN, catalogFor, measure, median, writeJson, type Measured, type PageServer } from './lib.js';

export interface ReplicaPlan {
  /** Records of the new-file runs (and of the file the incremental runs start from). */
  readonly size: number;
  readonly repeats: number;
  /** The small and large sizes of the memory runs, and how many runs of each. */
  readonly memoryPair: readonly [number, number];
  readonly memoryRepeats: number;
}

export const REPLICA_TARGETS = {
  newFileRatio: 2.0,
  incrementalRatio: 2.0,
  memoryGrowthMb: 25,
  memoryOverReadMb: 60,
  /**
   * The file 0.1.0 wrote for the bench's 200,000 contacts (WITHOUT ROWID tables),
   * measured with BENCH_SOURCE_BIN pointing at the 0.1.0 build on this bench's data.
   */
  fileMbOf200kIn010: 154.3,
};

export interface Reporter {
  row(section: string, figure: string, value: string, target: string, pass: boolean | null, data?: Record<string, unknown>): void;
  log(text: string): void;
}

const CONTACTS = '/v1/contacts';
/** Every list the replica reads; pipeline_stages is not served (404: skipped with a warning, as the service may). */
const EMPTY_LISTS = { '/v1/conversations': 0, '/v1/stage_events': 0, '/v1/deletions': 0 };
/** What the server sets as updated_at of a changed record (server.ts). */
const CHANGED_AT = '2025-06-01T11:00:00.000Z';

const mb = (kb: number): number => kb / 1024;
const fmtMb = (kb: number): string => `${mb(kb).toFixed(1)} MB`;
const fmtS = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const signedMb = (kb: number): string => `${kb < 0 ? '−' : '+'}${Math.abs(mb(kb)).toFixed(1)} MB`;
const k = (n: number): string => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`);

function assertOk(what: string, m: Measured): void {
  if (m.code !== 0) throw new Error(`${what} exited with ${m.code}:\n${m.stderr.slice(-2000)}\n${m.stdout.slice(-2000)}`);
}

function fileBytes(path: string): number {
  let bytes = 0;
  for (const file of [path, `${path}-wal`]) if (existsSync(file)) bytes += statSync(file).size;
  return bytes;
}

/**
 * Copy a database file and flush the copy to disk: otherwise the first fsync
 * of the measured run (SQLite's, when its WAL starts) pays for writing back
 * the whole copy (on ext4 in data=ordered mode).
 */
function copyDb(from: string, to: string): void {
  copyFileSync(from, to);
  const fd = openSync(to, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Before each measured run: write back what earlier runs left in the page
 * cache (a replicate writes a few hundred MB), so that no run pays for the
 * previous one's writeback in its own fsyncs.
 */
function settleDisk(): void {
  spawnSync('sync', { stdio: 'ignore' });
}

function removeDb(path: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
}

/** Rows of contacts, and how many carry the changed version. */
function contents(path: string): { rows: number; changed: number } {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const rows = Number(db.prepare('SELECT count(*) AS n FROM contacts').get()?.n);
    const changed = Number(db.prepare('SELECT count(*) AS n FROM contacts WHERE updated_at = ?').get(CHANGED_AT)?.n);
    return { rows, changed };
  } finally {
    db.close();
  }
}

interface Run {
  readonly wallMs: number;
  readonly rssKb: number;
}

export async function replicaBench(server: PageServer, dir: string, plan: ReplicaPlan, report: Reporter): Promise<Record<string, unknown>> {
  const { row, log } = report;
  const config = writeJson(dir, 'replica-config.json', { api_key: API_KEY, base_url: server.url });
  const catalog = writeJson(dir, 'replica-catalog.json', catalogFor(['contacts']));
  const base = join(dir, 'replica-base.db');
  const work = join(dir, 'replica-run.db');
  const readArgs = [SOURCE_BIN, 'read', '--config', config, '--catalog', catalog];
  const replicateArgs = (db: string): string[] => [SOURCE_BIN, 'replicate', '--config', config, '--db', db];

  const read = async (n: number, changedOf?: number): Promise<Run> => {
    await server.setup({ [CONTACTS]: n }, 0, changedOf === undefined ? undefined : { [CONTACTS]: changedOf });
    settleDisk();
    const m = await measure(readArgs, 'null', { timeoutMs: 900_000 });
    assertOk(`read (${n} records)`, m);
    return { wallMs: m.wallMs, rssKb: m.maxRssKb };
  };
  const replicate = async (db: string, n: number, changedOf?: number): Promise<Run> => {
    await server.setup({ [CONTACTS]: n, ...EMPTY_LISTS }, 0, changedOf === undefined ? undefined : { [CONTACTS]: changedOf });
    settleDisk();
    const m = await measure(replicateArgs(db), 'null', { timeoutMs: 1_800_000 });
    assertOk(`replicate (${n} records)`, m);
    return { wallMs: m.wallMs, rssKb: m.maxRssKb };
  };

  // ------------------------------------------------ a new file
  const n = plan.size;
  log(`\n8. Replica: replicate of ${k(n)} contacts into a new file vs read of the same (runs alternated)`);
  const fresh = { read: [] as Run[], replicate: [] as Run[] };
  let fileSize = 0;
  let newContents = { rows: 0, changed: 0 };
  for (let r = 0; r < plan.repeats; r++) {
    for (const who of r % 2 === 0 ? (['replicate', 'read'] as const) : (['read', 'replicate'] as const)) {
      if (who === 'read') fresh.read.push(await read(n));
      else {
        removeDb(base);
        fresh.replicate.push(await replicate(base, n));
        fileSize = fileBytes(base);
        newContents = contents(base);
      }
      const last = fresh[who].at(-1);
      if (last) log(`    ${who.padEnd(9)} ${k(n).padStart(5)} #${r + 1}: ${fmtS(last.wallMs)}, peak RSS ${fmtMb(last.rssKb)}`);
    }
  }
  const newRead = median(fresh.read.map((x) => x.wallMs));
  const newReplicate = median(fresh.replicate.map((x) => x.wallMs));
  row('replica', `new file, ${k(n)} contacts: rows in the file, after one replicate`, `${newContents.rows.toLocaleString('en-US')}`, `${n.toLocaleString('en-US')}`, newContents.rows === n);
  row('replica', `new file, ${k(n)} contacts: replicate / read of the same records`, `${fmtS(newReplicate)} / ${fmtS(newRead)} = ${(newReplicate / newRead).toFixed(2)}`, `≤ ${REPLICA_TARGETS.newFileRatio}`, newReplicate / newRead <= REPLICA_TARGETS.newFileRatio);
  const fileMb = fileSize / (1 << 20);
  const reference = n === 200_000 ? REPLICA_TARGETS.fileMbOf200kIn010 : undefined;
  row('replica', `new file, ${k(n)} contacts: file size`, `${fileMb.toFixed(1)} MB`, reference === undefined ? '—' : `≤ ${reference} MB (0.1.0)`, reference === undefined ? null : fileMb <= reference);

  // ------------------------------------------------ incremental
  const changed = Math.round(n / 10);
  log(`\n8b. Replica: incremental replicate of ${k(changed)} changed contacts (spread over the ${k(n)}-row file) vs read of the same`);
  const inc = { read: [] as Run[], replicate: [] as Run[] };
  let incContents = { rows: 0, changed: 0 };
  for (let r = 0; r < plan.repeats; r++) {
    for (const who of r % 2 === 0 ? (['replicate', 'read'] as const) : (['read', 'replicate'] as const)) {
      if (who === 'read') inc.read.push(await read(changed, n));
      else {
        removeDb(work);
        copyDb(base, work);
        inc.replicate.push(await replicate(work, changed, n));
        incContents = contents(work);
      }
      const last = inc[who].at(-1);
      if (last) log(`    ${who.padEnd(9)} ${k(changed).padStart(5)} #${r + 1}: ${fmtS(last.wallMs)}, peak RSS ${fmtMb(last.rssKb)}`);
    }
  }
  removeDb(work);
  const incRead = median(inc.read.map((x) => x.wallMs));
  const incReplicate = median(inc.replicate.map((x) => x.wallMs));
  row('replica', `incremental, ${k(changed)} changed of ${k(n)}: rows, rows changed`, `${incContents.rows.toLocaleString('en-US')}, ${incContents.changed.toLocaleString('en-US')}`, `${n.toLocaleString('en-US')}, ${changed.toLocaleString('en-US')}`, incContents.rows === n && incContents.changed === changed);
  row('replica', `incremental, ${k(changed)} changed of ${k(n)}: replicate / read of the same records`, `${fmtS(incReplicate)} / ${fmtS(incRead)} = ${(incReplicate / incRead).toFixed(2)}`, `≤ ${REPLICA_TARGETS.incrementalRatio}`, incReplicate / incRead <= REPLICA_TARGETS.incrementalRatio);
  removeDb(base);

  // ------------------------------------------------ memory
  const [small, large] = plan.memoryPair;
  log(`\n8c. Replica: peak RSS of replicate (new file) at ${k(small)} and ${k(large)} contacts, and of read at ${k(large)}`);
  const memory = { small: [] as Run[], large: [] as Run[], read: [] as Run[] };
  for (let r = 0; r < plan.memoryRepeats; r++) {
    for (const [key, size] of [['small', small], ['large', large]] as const) {
      removeDb(work);
      memory[key].push(await replicate(work, size));
      log(`    replicate ${k(size).padStart(5)} #${r + 1}: ${fmtS(memory[key].at(-1)?.wallMs ?? 0)}, peak RSS ${fmtMb(memory[key].at(-1)?.rssKb ?? 0)}`);
    }
    removeDb(work);
    memory.read.push(await read(large));
    log(`    read      ${k(large).padStart(5)} #${r + 1}: ${fmtS(memory.read.at(-1)?.wallMs ?? 0)}, peak RSS ${fmtMb(memory.read.at(-1)?.rssKb ?? 0)}`);
  }
  const rs = median(memory.small.map((x) => x.rssKb));
  const rl = median(memory.large.map((x) => x.rssKb));
  const rr = median(memory.read.map((x) => x.rssKb));
  row('replica', `peak RSS of replicate, ${k(small)} → ${k(large)} contacts`, `${fmtMb(rs)} → ${fmtMb(rl)} (${signedMb(rl - rs)})`, `≤ +${REPLICA_TARGETS.memoryGrowthMb} MB`, mb(rl) - mb(rs) <= REPLICA_TARGETS.memoryGrowthMb);
  row('replica', `peak RSS at ${k(large)}: replicate vs read`, `${fmtMb(rl)} vs ${fmtMb(rr)} (${signedMb(rl - rr)})`, `≤ +${REPLICA_TARGETS.memoryOverReadMb} MB`, mb(rl) - mb(rr) <= REPLICA_TARGETS.memoryOverReadMb);
  const largeWall = median(memory.large.map((x) => x.wallMs));
  row('replica', `replicate of ${k(large)} contacts into a new file: time, rows/s`, `${fmtS(largeWall)}, ${Math.round(large / (largeWall / 1000)).toLocaleString('en-US')}`, '—', null);

  return { fresh, inc, memory, fileBytes: fileSize, contents: { fresh: newContents, incremental: incContents } };
}
