/**
 * The performance benchmark of source-data-read: every figure beside its
 * target, measured in one run on one machine, printed as a table and written
 * to bench/results.json (and bench/results.md, the table as Markdown).
 *
 *   npm run bench               full run (100k and 1M records; about 5 minutes on 2 cores)
 *   npm run bench -- --quick    100k only, fewer repeats (about a minute)
 *   npm run bench -- --only throughput,memory,slow,requests,pacing,shared,transient,parallel,startup,seed,replica,stores,personal,singer,accounts
 *   npm run bench -- --only pacing,shared,transient     the rate-limit sections alone (about two minutes)
 *   npm run bench -- --proxy    every connector run through a forward proxy (http_proxy)
 *
 * What is measured (the connector is always the real executable,
 * bin/source-data-read, in its own process; servers run in other processes):
 *  1. throughput: `read` of the contacts stream (realistic ~1 KB records, every
 *     field of the schema) from a pre-rendered page server, stdout to
 *     /dev/null, against a raw undici baseline (bench/baseline.ts) in the same run;
 *  2. memory: peak RSS for 100k and 1M records, and with a slow stdout reader;
 *  3. requests: list requests made for N records vs ceil(N/200), one /v1/me, nothing else;
 *  4. pacing: against the emulator with a small per-window limit;
 *     4b. shared key: several `read` processes on one key of the emulator
 *     (429s, time vs the limit's minimum), one process alone alternated
 *     (bench/shared-key.ts);
 *     4c. transient 429s: a read alone on a large quota while a burst
 *     limiter refuses 5 % of the list requests, against the same read
 *     without them plus each 429's Retry-After (bench/transient-429.ts);
 *  5. parallel streams: 4 streams against a slow server, 4 concurrent requests vs 1;
 *  6. start-up: spec and check against `node -e 0`;
 *  7. the emulator: seeding 100k contacts with their past (wall and CPU time;
 *     a figure for context).
 *  8. replica: `replicate` into a new file and incrementally, and its memory,
 *     each against `read` of the same records (bench/replica.ts).
 *  9. stores: `replicate` into a new PostgreSQL schema and a new DuckDB file,
 *     and their memory, against `read` of the same records (bench/stores-replicate.ts).
 *  9. personal data: `read` of contacts with `personal_data: hash` against
 *     the same read with `keep`, alternated in the same run: at full speed
 *     from the page server (medians of 5; CPU per record stated, no target),
 *     and at the service's rate (the page server answering each request
 *     after 60 ms: 1,000 requests a minute; wall time hash / keep).
 * 10. Singer: the tap syncing 200k contacts FULL_TABLE against `read` of the
 *     same pages, alternated in the same run (medians of 5; bench/singer.ts).
 * 11. Many accounts (bench/accounts.ts): 20 accounts each limited to 4
 *     requests per 2 s read together against one alone; 50 accounts of
 *     2,000 contacts at full speed (records/s) and the peak RSS of 50
 *     accounts against 5.
 *
 * With --proxy, a forward proxy (test/helpers/forward-proxy.ts, in this
 * process) carries every request of the connector as absolute-form requests
 * (http_proxy; the servers are http:// on loopback): the request counts,
 * pacing and requests in flight must not change. Throughput then includes
 * the proxy's relaying and is not comparable; the baseline does not use it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createEmulator, startEmulator } from 'data-read-emulator';
import { startForwardProxy, type ForwardProxy } from '../test/helpers/forward-proxy.js';
import {
  API_KEY, BENCH_DIST, HAS_TIME, NODE, PageServer, ROOT, SOURCE_BIN, catalogFor, listRequestsOf, machine, measure, median, removeDir, tempDir,
  writeJson, type Measured,
} from './lib.js';
import { findStreamByPath } from '../src/streams.js';
import { REPLICA_TARGETS, replicaBench } from './replica.js';
import { STORES_TARGETS, storesBench } from './stores-replicate.js';
import { SHARED_KEY_TARGETS, sharedKeyBench } from './shared-key.js';
import { SINGER_TARGETS, singerBench } from './singer.js';
import { ACCOUNTS_TARGETS, accountsBench } from './accounts.js';
import { TRANSIENT_429_TARGETS, transient429Bench } from './transient-429.js';

// ---------------------------------------------------------------- options

const argv = process.argv.slice(2);
const QUICK = argv.includes('--quick');
const onlyArg = argv.find((a) => a.startsWith('--only'));
const onlyValue = onlyArg === undefined ? undefined : onlyArg.includes('=') ? onlyArg.split('=')[1] : argv[argv.indexOf(onlyArg) + 1];
const ONLY = new Set((onlyValue ?? 'throughput,memory,slow,requests,pacing,shared,transient,parallel,startup,seed,replica,stores,personal,singer,accounts').split(','));
const want = (name: string): boolean => ONLY.has(name);
const PROXY = argv.includes('--proxy');

const PAGE = 200;
/** The service's look-back (data-read-api.md): a read from updated_since also gets the 5 minutes before it. */
const LOOK_BACK_MS = 5 * 60 * 1000;
const CONTACTS = '/v1/contacts';
/** The one request a run makes beside its lists: whose account the key reads. */
const ME = '/v1/me';
const INCREMENTAL_PATHS = ['/v1/contacts', '/v1/conversations', '/v1/stage_events', '/v1/deletions'];

const PLAN = QUICK
  ? { sizes: [100_000], repeats: { 100_000: 3 } as Record<number, number>, memoryPair: [10_000, 100_000] as const, slowPair: [10_000, 100_000] as const, slowRepeats: 1, pacingPages: 80, shared: { processes: 3, contacts: 3000, limit: 8, windowMs: 2000, rounds: 2 }, transient: { contacts: 1200, probability: 0.05, rounds: 2 }, parallelPages: 10, parallelRepeats: 1, startupRuns: 7, personalRepeats: 3, personalPaced: { contacts: 30_000, repeats: 1 },
      replica: { size: 100_000, repeats: 2, memoryPair: [10_000, 100_000] as const, memoryRepeats: 1 }, stores: { size: 100_000, repeats: 2, memoryPair: [10_000, 100_000] as const, memoryRepeats: 1 }, singer: { size: 100_000, repeats: 3 },
      accounts: { limited: { accounts: 20, contacts: 1000, limit: 4, windowMs: 2000, rounds: 2 }, scale: { small: 5, large: 50, contacts: 2000, repeats: 1 } } }
  : { sizes: [100_000, 1_000_000], repeats: { 100_000: 3, 1_000_000: 3 } as Record<number, number>, memoryPair: [100_000, 1_000_000] as const, slowPair: [20_000, 200_000] as const, slowRepeats: 2, pacingPages: 120, shared: { processes: 3, contacts: 3000, limit: 8, windowMs: 2000, rounds: 3 }, transient: { contacts: 1200, probability: 0.05, rounds: 3 }, parallelPages: 20, parallelRepeats: 2, startupRuns: 11, personalRepeats: 5, personalPaced: { contacts: 30_000, repeats: 2 },
      replica: { size: 200_000, repeats: 3, memoryPair: [100_000, 1_000_000] as const, memoryRepeats: 2 }, stores: { size: 200_000, repeats: 3, memoryPair: [100_000, 1_000_000] as const, memoryRepeats: 3 }, singer: { size: 200_000, repeats: 5 },
      accounts: { limited: { accounts: 20, contacts: 1000, limit: 4, windowMs: 2000, rounds: 3 }, scale: { small: 5, large: 50, contacts: 2000, repeats: 3 } } };

const TARGETS = {
  throughputRatio: 0.85,
  memoryDeltaMb: 15,
  pacingFactor: 1.1,
  pacingMax429: 1,
  parallelRatio: 0.35,
  /** personal_data hash vs keep at the service's rate: wall time at most 2% longer (no measurable difference). */
  personalPacedRatio: 1.02,
  // Start-up budgets (the issue sets none): spec prints a checked-in snapshot; check
  // needs zod (config validation, ~45 ms to load), the HTTP client (undici's package
  // index, about 110 modules), GET /v1/me (the HTTP parser's WebAssembly compiled on
  // first use) and, for its schema drift line, GET /v1/openapi.json (the page server
  // serves the emulator's, 53 KB); V8 then recompiles the parser with its optimizing
  // tier in the background, which the process waits for at exit. bin/launch.cjs keeps
  // V8's compiled code on disk between runs.
  // ×5 was the budget of one request; the second one (a 53 KB answer to parse and
  // compare) gets one more ×1.
  specRatio: 2,
  checkRatio: 6,
};

// ---------------------------------------------------------------- results

interface Row {
  readonly section: string;
  readonly figure: string;
  readonly value: string;
  readonly target: string;
  /** true/false, or null for figures reported for context only. */
  readonly pass: boolean | null;
  readonly data?: Record<string, unknown>;
}

const rows: Row[] = [];
const raw: Record<string, unknown> = {};

function row(section: string, figure: string, value: string, target: string, pass: boolean | null, data?: Record<string, unknown>): void {
  rows.push({ section, figure, value, target, pass, ...(data ? { data } : {}) });
  const mark = pass === null ? 'info' : pass ? 'PASS' : 'FAIL';
  process.stderr.write(`  ${mark.padEnd(4)}  ${figure}: ${value}  (target ${target})\n`);
}

const fmtInt = (n: number): string => Math.round(n).toLocaleString('en-US');
const mb = (kb: number): number => kb / 1024;
const fmtMb = (kb: number): string => `${mb(kb).toFixed(1)} MB`;
const fmtS = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const k = (n: number): string => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`);
const log = (text: string): void => {
  process.stderr.write(`${text}\n`);
};

// ---------------------------------------------------------------- helpers

interface Files {
  readonly dir: string;
  config(extra?: Record<string, unknown>): string;
  catalog(streams: readonly string[]): string;
}

function files(baseUrl: string, apiKey = API_KEY): Files {
  const dir = tempDir();
  let n = 0;
  return {
    dir,
    config: (extra = {}) => writeJson(dir, `config-${n++}.json`, { api_key: apiKey, base_url: baseUrl, ...extra }),
    catalog: (streams) => writeJson(dir, `catalog-${n++}.json`, catalogFor(streams)),
  };
}

function cpuSeconds(m: Measured): number {
  return m.cpuSeconds;
}

function assertOk(what: string, m: Measured): void {
  if (m.code !== 0) throw new Error(`${what} exited with ${m.code}:\n${m.stderr.slice(-2000)}\n${m.stdout.slice(-2000)}`);
}

const connectorArgs = (config: string, catalog: string): string[] => [SOURCE_BIN, 'read', '--config', config, '--catalog', catalog];
const baselineArgs = (server: PageServer, path: string): string[] => [join(BENCH_DIST, 'baseline.js'), server.url, path, findStreamByPath(path)?.name ?? 'contacts', API_KEY];

// ---------------------------------------------------------------- 0. output check

async function outputCheck(server: PageServer, f: Files): Promise<void> {
  await server.setup({ [CONTACTS]: 1000 });
  const m = await measure(connectorArgs(f.config(), f.catalog(['contacts'])), 'capture');
  assertOk('read (output check)', m);
  const lines = m.stdout.split('\n').filter((l) => l !== '');
  const parsed = lines.map((l) => JSON.parse(l) as { type: string; record?: { data: { id: string } }; state?: { stream: { stream_state: { sync_watermark?: string } } } });
  const records = parsed.filter((p) => p.type === 'RECORD');
  const ids = new Set(records.map((r) => r.record?.data.id));
  const states = parsed.filter((p) => p.type === 'STATE');
  const last = states.at(-1)?.state?.stream.stream_state.sync_watermark;
  const ok = records.length === 1000 && ids.size === 1000 && last === '2025-06-01T12:00:00.000Z';
  row('check', 'read of 1,000 records: RECORD lines, distinct ids, final watermark', `${records.length}, ${ids.size}, ${last ?? 'none'}`, '1000, 1000, the server\'s', ok);
}

// ---------------------------------------------------------------- 1-3. throughput, memory, requests

interface RunResult {
  readonly wallMs: number;
  readonly cpuS: number;
  readonly rssKb: number;
  readonly listRequests: number;
  /** GET /v1/me: one a run (whose account the key reads). */
  readonly meRequests: number;
  readonly otherRequests: number;
}

async function runOnce(server: PageServer, who: 'connector' | 'baseline', n: number, f: Files, stdout: 'null' | 'slow'): Promise<RunResult> {
  await server.setup({ [CONTACTS]: n });
  const args = who === 'connector' ? connectorArgs(f.config(), f.catalog(['contacts'])) : baselineArgs(server, CONTACTS);
  const m = await measure(args, stdout, { timeoutMs: 600_000 });
  assertOk(`${who} (${n} records)`, m);
  const stats = await server.stats();
  const me = stats.other[ME] ?? 0;
  const other = Object.values(stats.other).reduce((a, b) => a + b, 0) - me + stats.badRequests;
  return { wallMs: m.wallMs, cpuS: cpuSeconds(m), rssKb: m.maxRssKb, listRequests: stats.list[CONTACTS] ?? 0, meRequests: me, otherRequests: other };
}

async function throughputAndMemory(server: PageServer, f: Files): Promise<void> {
  const bySize = new Map<number, { connector: RunResult[]; baseline: RunResult[] }>();
  const sizes = [...new Set([...PLAN.sizes, ...(want('memory') ? PLAN.memoryPair : [])])].sort((a, b) => a - b);
  for (const n of sizes) {
    const repeats = PLAN.repeats[n] ?? 3;
    const runs = { connector: [] as RunResult[], baseline: [] as RunResult[] };
    for (let r = 0; r < repeats; r++) {
      // Alternate, so that a slow moment of the machine hits both alike.
      const order: ('connector' | 'baseline')[] = r % 2 === 0 ? ['connector', 'baseline'] : ['baseline', 'connector'];
      for (const who of order) {
        const result = await runOnce(server, who, n, f, 'null');
        runs[who].push(result);
        log(`    ${who.padEnd(9)} ${k(n).padStart(5)} #${r + 1}: ${fmtS(result.wallMs)}, ${fmtInt(n / (result.wallMs / 1000))} rec/s, cpu ${result.cpuS.toFixed(2)} s, peak RSS ${fmtMb(result.rssKb)}`);
      }
    }
    bySize.set(n, runs);
  }
  raw.throughput = Object.fromEntries([...bySize].map(([n, r]) => [n, r]));

  if (want('throughput')) {
    log('\n1. Throughput (contacts, stdout to /dev/null; medians)');
    for (const n of PLAN.sizes) {
      const runs = bySize.get(n);
      if (!runs) continue;
      const c = n / (median(runs.connector.map((r) => r.wallMs)) / 1000);
      const b = n / (median(runs.baseline.map((r) => r.wallMs)) / 1000);
      row('throughput', `${k(n)} records: connector records/s`, fmtInt(c), '—', null);
      row('throughput', `${k(n)} records: raw undici baseline records/s`, fmtInt(b), '—', null);
      row('throughput', `${k(n)} records: connector / baseline`, (c / b).toFixed(2), `≥ ${TARGETS.throughputRatio}`, c / b >= TARGETS.throughputRatio, { connector: c, baseline: b });
      const cc = (median(runs.connector.map((r) => r.cpuS)) / n) * 1e6;
      const bc = (median(runs.baseline.map((r) => r.cpuS)) / n) * 1e6;
      if (Number.isFinite(cc) && Number.isFinite(bc)) row('throughput', `${k(n)} records: CPU per record, connector vs baseline (user+sys)`, `${cc.toFixed(2)} µs vs ${bc.toFixed(2)} µs (×${(cc / bc).toFixed(2)})`, `≤ ×${(1 / TARGETS.throughputRatio).toFixed(2)}`, cc / bc <= 1 / TARGETS.throughputRatio);
    }
  }

  if (want('memory')) {
    log('\n2. Memory (peak RSS, stdout to /dev/null; medians)');
    const [small, large] = PLAN.memoryPair;
    const s = bySize.get(small);
    const l = bySize.get(large);
    if (s && l) {
      const cs = median(s.connector.map((r) => r.rssKb));
      const cl = median(l.connector.map((r) => r.rssKb));
      row('memory', `peak RSS, ${k(small)} records`, fmtMb(cs), '—', null);
      row('memory', `peak RSS, ${k(large)} records`, fmtMb(cl), '—', null);
      row('memory', `peak RSS growth ${k(small)} → ${k(large)} records`, `${(mb(cl) - mb(cs)).toFixed(1)} MB`, `≤ ${TARGETS.memoryDeltaMb} MB`, mb(cl) - mb(cs) <= TARGETS.memoryDeltaMb, { small: cs, large: cl });
      const bs = median(s.baseline.map((r) => r.rssKb));
      const bl = median(l.baseline.map((r) => r.rssKb));
      row('memory', `baseline peak RSS, ${k(small)} → ${k(large)} records`, `${fmtMb(bs)} → ${fmtMb(bl)}`, '—', null);
    }
  }

  if (want('requests')) {
    log('\n3. Requests (counted by the server)');
    for (const n of sizes) {
      const runs = bySize.get(n);
      const last = runs?.connector.at(-1);
      if (!runs || !last) continue;
      const minimum = listRequestsOf(n);
      const ok = runs.connector.every((r) => r.listRequests === minimum && r.meRequests === 1 && r.otherRequests === 0);
      row(
        'requests',
        `${k(n)} records: list requests made (minimum), /v1/me, other requests`,
        `${fmtInt(last.listRequests)} (${fmtInt(minimum)}), ${last.meRequests}, ${last.otherRequests}`,
        `= ceil(N/200) + 1 (the catch-up read), 1, 0`,
        ok,
      );
    }
  }
}

async function slowReader(server: PageServer, f: Files): Promise<void> {
  log('\n2b. Memory with a slow stdout reader (64 KB every 5 ms)');
  const [small, large] = PLAN.slowPair;
  const result = new Map<number, RunResult[]>();
  for (const n of [small, large]) {
    const runs: RunResult[] = [];
    for (let r = 0; r < PLAN.slowRepeats; r++) {
      const one = await runOnce(server, 'connector', n, f, 'slow');
      runs.push(one);
      log(`    connector ${k(n).padStart(5)} #${r + 1}: ${fmtS(one.wallMs)}, peak RSS ${fmtMb(one.rssKb)}`);
    }
    result.set(n, runs);
  }
  raw.slow = Object.fromEntries(result);
  const s = median((result.get(small) ?? []).map((r) => r.rssKb));
  const l = median((result.get(large) ?? []).map((r) => r.rssKb));
  const wall = median((result.get(large) ?? []).map((r) => r.wallMs));
  row('memory', `slow reader: peak RSS ${k(small)} → ${k(large)} records`, `${fmtMb(s)} → ${fmtMb(l)} (${fmtInt(large / (wall / 1000))} rec/s)`, '—', null);
  row('memory', `slow reader: peak RSS growth ${k(small)} → ${k(large)} records`, `${(mb(l) - mb(s)).toFixed(1)} MB`, `≤ ${TARGETS.memoryDeltaMb} MB`, mb(l) - mb(s) <= TARGETS.memoryDeltaMb);
}

// ---------------------------------------------------------------- 4. pacing

async function pacing(): Promise<void> {
  const limit = 20;
  const windowMs = 2000;
  log(`\n4. Pacing against the emulator (${limit} requests per ${windowMs / 1000} s window)`);
  const emu = await startEmulator({ port: 0, host: '127.0.0.1', seed: 7, limits: { perMinute: limit, windowMs, perDay: 1_000_000, concurrency: 8 } });
  const dir = tempDir();
  try {
    const account = emu.control.createAccount({ name: 'Pacing bench' });
    const { key } = emu.control.createKey(account.id);
    emu.control.seed(account.id, { contacts: PLAN.pacingPages * PAGE, testFraction: 0, deletedFraction: 0 });
    const served = emu.control.getAccount(account.id).counts.contacts;
    const pages = Math.max(1, Math.ceil(served / PAGE));
    // Every request counts against the window: the pages and the run's one /v1/me (whose account the key reads).
    const requests = pages + 1;
    const minMs = (Math.ceil(requests / limit) - 1) * windowMs;
    emu.control.resetStats();
    const config = writeJson(dir, 'config.json', { api_key: key, base_url: emu.url });
    const catalog = writeJson(dir, 'catalog.json', catalogFor(['contacts']));
    const before = Date.parse(emu.control.now());
    const m = await measure(connectorArgs(config, catalog), 'null', { timeoutMs: minMs * 3 + 60_000 });
    assertOk('read (pacing)', m);
    const stats = emu.control.stats();
    const listed = Object.entries(stats.byPath).filter(([p]) => p.includes('contacts')).reduce((a, [, by]) => a + (by['200'] ?? 0), 0);
    // A first read of more than one page reads again from its watermark (the catch-up read), and the service
    // answers it with the records of its 5-minute look-back: their pages are needed too. The watermark is the
    // service's time at the read's first page, between `before` and now.
    const updated = emu.control.dump(account.id).contacts.map((c) => Date.parse(c.updated_at));
    const catchUp = (watermark: number): number => (pages > 1 ? Math.max(1, Math.ceil(updated.filter((t) => t >= watermark - LOOK_BACK_MS).length / PAGE)) : 0);
    const fewest = pages + catchUp(Date.parse(emu.control.now()));
    const most = pages + catchUp(before);
    const needed = fewest === most ? String(most) : `${fewest}-${most}`;
    // The limit's minimum for the fewest requests needed.
    const minNeededMs = (Math.ceil((fewest + 1) / limit) - 1) * windowMs;
    const factor = m.wallMs / minNeededMs;
    raw.pacing = { limit, windowMs, served, pages, pagesNeeded: [fewest, most], requests, minMs: minNeededMs, wallMs: m.wallMs, stats };
    row('pacing', `${fewest} pages and /v1/me at ${limit} per ${windowMs / 1000} s: sync time / the limit's minimum`, `${fmtS(m.wallMs)} / ${fmtS(minNeededMs)} = ${factor.toFixed(3)}`, `≤ ${TARGETS.pacingFactor}`, factor <= TARGETS.pacingFactor);
    row('pacing', '429 responses received', String(stats.throttled), `≤ ${TARGETS.pacingMax429}`, stats.throttled <= TARGETS.pacingMax429);
    row('pacing', 'pages served (200) / needed (the read, then its catch-up read)', `${listed} / ${needed}`, '= needed', listed >= fewest && listed <= most);
  } finally {
    await emu.close();
    removeDir(dir);
  }
}

// ---------------------------------------------------------------- 5. parallel streams

async function parallel(server: PageServer, f: Files): Promise<void> {
  const delayMs = 50;
  const pages = PLAN.parallelPages;
  log(`\n5. Parallel streams (4 incremental streams x ${pages} pages, server latency ${delayMs} ms)`);
  const streams = INCREMENTAL_PATHS.map((p) => findStreamByPath(p)?.name ?? p);
  const catalog = f.catalog(streams);
  const times: Record<number, number[]> = { 1: [], 4: [] };
  const inFlight: Record<number, number> = { 1: 0, 4: 0 };
  for (let r = 0; r < PLAN.parallelRepeats; r++) {
    for (const conc of [1, 4]) {
      await server.setup(Object.fromEntries(INCREMENTAL_PATHS.map((p) => [p, pages * PAGE])), delayMs);
      const m = await measure(connectorArgs(f.config({ max_concurrent_requests: conc }), catalog), 'null');
      assertOk(`read (parallel, ${conc})`, m);
      const stats = await server.stats();
      const made = INCREMENTAL_PATHS.map((p) => stats.list[p] ?? 0);
      if (made.some((x) => x !== listRequestsOf(pages * PAGE))) throw new Error(`parallel: expected ${listRequestsOf(pages * PAGE)} list requests per stream, server saw ${made.join(', ')}`);
      inFlight[conc] = Math.max(inFlight[conc] ?? 0, stats.maxInFlight);
      times[conc]?.push(m.wallMs);
      log(`    max_concurrent_requests ${conc}: ${fmtS(m.wallMs)}, at most ${stats.maxInFlight} in flight`);
    }
  }
  const t1 = median(times[1] ?? []);
  const t4 = median(times[4] ?? []);
  raw.parallel = { times, inFlight, pages, delayMs };
  row('parallel', `4 streams: time with 4 concurrent requests / with 1`, `${fmtS(t4)} / ${fmtS(t1)} = ${(t4 / t1).toFixed(2)}`, `≤ ${TARGETS.parallelRatio}`, t4 / t1 <= TARGETS.parallelRatio);
  row('parallel', 'requests in flight at most (4 / 1)', `${inFlight[4]} / ${inFlight[1]}`, '≤ 4 / ≤ 1', (inFlight[4] ?? 99) <= 4 && (inFlight[1] ?? 99) <= 1);
}

// ---------------------------------------------------------------- 6. start-up

async function startup(server: PageServer, f: Files): Promise<void> {
  log(`\n6. Start-up (median of ${PLAN.startupRuns} runs each)`);
  await server.setup({});
  const config = f.config();
  const runs: Record<string, number[]> = { node: [], spec: [], check: [] };
  for (let r = 0; r < PLAN.startupRuns; r++) {
    const nodeRun = await measure(['-e', '0'], 'null');
    const spec = await measure([SOURCE_BIN, 'spec'], 'null');
    const check = await measure([SOURCE_BIN, 'check', '--config', config], 'capture');
    assertOk('spec', spec);
    assertOk('check', check);
    if (!check.stdout.includes('SUCCEEDED')) throw new Error(`check did not succeed: ${check.stdout}`);
    runs.node?.push(nodeRun.wallMs);
    runs.spec?.push(spec.wallMs);
    runs.check?.push(check.wallMs);
  }
  const node = median(runs.node ?? []);
  const spec = median(runs.spec ?? []);
  const check = median(runs.check ?? []);
  raw.startup = runs;
  row('startup', '`node -e 0`', `${node.toFixed(0)} ms`, '—', null);
  row('startup', '`spec`: time, ratio to node -e 0', `${spec.toFixed(0)} ms, ×${(spec / node).toFixed(2)}`, `≤ ×${TARGETS.specRatio}`, spec / node <= TARGETS.specRatio);
  row('startup', '`check` (GET /v1/me, one contact and /v1/openapi.json on loopback): time, ratio', `${check.toFixed(0)} ms, ×${(check / node).toFixed(2)}`, `≤ ×${TARGETS.checkRatio}`, check / node <= TARGETS.checkRatio);
}

// ---------------------------------------------------------------- 7. emulator seeding

function seeding(): void {
  const contacts = 100_000;
  log(`\n7. The emulator: seeding ${contacts.toLocaleString('en-US')} contacts (in this process)`);
  const { control } = createEmulator({ seed: 3 });
  const account = control.createAccount({ name: 'Seeding bench' });
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const seeded = control.seed(account.id, { contacts });
  const cpu = process.cpuUsage(c0);
  const wallMs = performance.now() - t0;
  const cpuMs = (cpu.user + cpu.system) / 1000;
  raw.seed = { ...seeded, wallMs, cpuMs };
  row(
    'emulator',
    `seed ${k(contacts)} contacts (${fmtInt(seeded.conversations)} conversations, ${fmtInt(seeded.stageEvents)} stage changes): wall, CPU`,
    `${fmtS(wallMs)}, ${fmtS(cpuMs)} CPU (${fmtInt(contacts / (cpuMs / 1000))} contacts per CPU-second)`,
    '—',
    null,
  );
}

// ---------------------------------------------------------------- report

function markdown(m: ReturnType<typeof machine>, elapsedS: number): string {
  const lines = [
    `Machine: ${m.nproc} CPUs (\`nproc\`), ${m.cpu}, ${m.memTotal} RAM, Node.js ${m.node}, ${m.os}. ` +
      `Run: \`npm run bench${QUICK || PROXY ? ` --${QUICK ? ' --quick' : ''}${PROXY ? ' --proxy' : ''}` : ''}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${elapsedS.toFixed(0)} s.`,
    '',
    '| | figure | value | target | |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.section} | ${r.figure} | ${r.value} | ${r.target} | ${r.pass === null ? '' : r.pass ? 'pass' : '**FAIL**'} |`),
  ];
  return `${lines.join('\n')}\n`;
}

function table(): string {
  const w = [10, Math.max(...rows.map((r) => r.figure.length)), Math.max(...rows.map((r) => r.value.length)), Math.max(...rows.map((r) => r.target.length)), 4];
  const line = (c: readonly string[]): string => c.map((x, i) => x.padEnd(w[i] ?? 0)).join('  ');
  return [line(['section', 'figure', 'value', 'target', 'mark']), line(w.map((n) => '-'.repeat(n))), ...rows.map((r) => line([r.section, r.figure, r.value, r.target, r.pass === null ? 'info' : r.pass ? 'PASS' : 'FAIL']))].join('\n');
}

// ---------------------------------------------------------------- 9. personal data

const PERSONAL_KEY = 'bench-7c1e94b2d05f3a68e9b14c27d8f06a53';
type Mode = 'keep' | 'hash';

/** `run(mode)` for keep and hash, `repeats` times, alternated so that a slow moment of the machine hits both alike. */
async function alternated(repeats: number, run: (mode: Mode, round: number) => Promise<Measured>): Promise<Record<Mode, Measured[]>> {
  const out: Record<Mode, Measured[]> = { keep: [], hash: [] };
  for (let r = 0; r < repeats; r++) {
    const order: Mode[] = r % 2 === 0 ? ['keep', 'hash'] : ['hash', 'keep'];
    for (const mode of order) out[mode].push(await run(mode, r));
  }
  return out;
}

async function personalData(server: PageServer, f: Files): Promise<void> {
  log('\n9. Personal data: contacts read with personal_data hash vs keep (stdout to /dev/null; medians)');
  const n = PLAN.sizes[0] ?? 100_000;
  const configs = { keep: f.config(), hash: f.config({ personal_data: 'hash', hash_key: PERSONAL_KEY }) };
  const catalog = f.catalog(['contacts']);
  // At full speed, from the page server: what hashing costs per record.
  const runs = await alternated(PLAN.personalRepeats, async (mode, r) => {
    await server.setup({ [CONTACTS]: n });
    const m = await measure(connectorArgs(configs[mode], catalog), 'null', { timeoutMs: 600_000 });
    assertOk(`read with personal_data ${mode} (${n} records)`, m);
    log(`    ${mode.padEnd(5)} ${k(n).padStart(5)} #${r + 1}: ${fmtS(m.wallMs)}, ${fmtInt(n / (m.wallMs / 1000))} rec/s, cpu ${m.cpuSeconds.toFixed(2)} s`);
    return m;
  });
  const wall = { keep: runs.keep.map((m) => m.wallMs), hash: runs.hash.map((m) => m.wallMs) };
  const cpu = { keep: runs.keep.map((m) => m.cpuSeconds), hash: runs.hash.map((m) => m.cpuSeconds) };
  const keep = n / (median(wall.keep) / 1000);
  const hash = n / (median(wall.hash) / 1000);
  raw.personal = { records: n, wallMs: wall, cpuSeconds: cpu };
  row('personal', `full speed, ${k(n)} contacts: records/s with keep, with hash (hash / keep)`, `${fmtInt(keep)}, ${fmtInt(hash)} (${(hash / keep).toFixed(2)})`, '—', null);
  const cpuKeep = (median(cpu.keep) / n) * 1e6;
  const cpuHash = (median(cpu.hash) / n) * 1e6;
  if (Number.isFinite(cpuKeep) && Number.isFinite(cpuHash)) {
    row('personal', `full speed, ${k(n)} contacts: CPU per record, hash vs keep (user+sys)`, `${cpuHash.toFixed(2)} µs vs ${cpuKeep.toFixed(2)} µs (+${(cpuHash - cpuKeep).toFixed(2)} µs)`, '—', null);
  }
  await personalAtServiceRate(server, configs, catalog);
}

/**
 * The same reads at the rate the service allows a key (1,000 requests a
 * minute, about 3,300 records a second): the page server answers each
 * request after 60 ms, and a stream's pages come one at a time (each cursor
 * from the page before). Wall time hash / keep, and how busy the
 * connector's process was.
 */
async function personalAtServiceRate(server: PageServer, configs: Readonly<Record<Mode, string>>, catalog: string): Promise<void> {
  const delayMs = 60_000 / 1000;
  const { contacts, repeats } = PLAN.personalPaced;
  log(`\n9b. Personal data at the service's rate (a page every ${delayMs} ms: 1,000 requests a minute), ${k(contacts)} contacts`);
  const runs = await alternated(repeats, async (mode, r) => {
    await server.setup({ [CONTACTS]: contacts }, delayMs);
    const m = await measure(connectorArgs(configs[mode], catalog), 'null', { timeoutMs: 600_000 });
    assertOk(`read at the service's rate with personal_data ${mode}`, m);
    log(`    ${mode.padEnd(5)} #${r + 1}: ${fmtS(m.wallMs)}, ${fmtInt(contacts / (m.wallMs / 1000))} rec/s, cpu ${m.cpuSeconds.toFixed(2)} s`);
    return m;
  });
  const wall = { keep: runs.keep.map((m) => m.wallMs), hash: runs.hash.map((m) => m.wallMs) };
  const keep = median(wall.keep);
  const hash = median(wall.hash);
  // CPU seconds over wall milliseconds, as a percentage of one core.
  const busy = (mode: Mode, wallMs: number): string => `${((median(runs[mode].map((m) => m.cpuSeconds)) / wallMs) * 100_000).toFixed(1)}%`;
  raw.personalPaced = { delayMs, records: contacts, wallMs: wall, cpuSeconds: { keep: runs.keep.map((m) => m.cpuSeconds), hash: runs.hash.map((m) => m.cpuSeconds) } };
  row('personal', `service's rate, ${k(contacts)} contacts: wall time hash / keep`, `${fmtS(hash)} / ${fmtS(keep)} = ${(hash / keep).toFixed(3)}`, `≤ ${TARGETS.personalPacedRatio}`, hash / keep <= TARGETS.personalPacedRatio);
  row('personal', "service's rate: the connector's CPU use, hash vs keep (of one core)", `${busy('hash', hash)} vs ${busy('keep', keep)}`, '—', null);
}

async function main(): Promise<void> {
  const started = Date.now();
  const m = machine();
  log(`source-data-read benchmark (${QUICK ? 'quick' : 'full'}): ${m.nproc} CPUs, ${m.cpu}, Node ${m.node}${HAS_TIME ? '' : ' (no /usr/bin/time: RSS from /proc VmHWM polling)'}`);
  const server = await PageServer.start();
  const f = files(server.url);
  let proxy: ForwardProxy | undefined;
  if (PROXY) {
    proxy = await startForwardProxy();
    // Inherited by every measured process (the connector honours it; the raw baseline and the bench's own fetches do not).
    process.env.http_proxy = proxy.url;
    log(`Every connector run goes through the forward proxy ${proxy.url} (http_proxy, absolute-form requests).`);
  }
  try {
    await outputCheck(server, f);
    if (want('throughput') || want('memory') || want('requests')) {
      log('\n1-3. Throughput, memory and requests: runs');
      await throughputAndMemory(server, f);
    }
    if (want('slow') && HAS_TIME) await slowReader(server, f);
    if (want('pacing')) await pacing();
    if (want('shared')) raw.sharedKey = await sharedKeyBench(PLAN.shared, { row, log });
    if (want('transient')) raw.transient429 = await transient429Bench(PLAN.transient, { row, log });
    if (want('parallel')) await parallel(server, f);
    if (want('startup')) await startup(server, f);
    if (want('seed')) seeding();
    if (want('replica')) raw.replica = await replicaBench(server, f.dir, PLAN.replica, { row, log });
    if (want('stores')) raw.stores = await storesBench(server, f.dir, PLAN.stores, { row, log });
    if (want('personal')) await personalData(server, f);
    if (want('singer')) raw.singer = await singerBench(server, f.dir, PLAN.singer, { row, log });
    if (want('accounts')) raw.accounts = await accountsBench(PLAN.accounts, { row, log });
    if (proxy !== undefined) {
      const carried = proxy.log.length;
      const answered = proxy.log.filter((e) => e.status === 200).length;
      raw.proxy = { carried, answered, byStatus: proxy.log.reduce<Record<string, number>>((acc, e) => ({ ...acc, [e.status]: (acc[e.status] ?? 0) + 1 }), {}) };
      row('proxy', 'requests the connector sent through the forward proxy (absolute-form), answered 200', `${fmtInt(carried)}, ${fmtInt(answered)}`, '> 0', carried > 0);
    }
  } finally {
    await proxy?.close();
    server.stop();
    removeDir(f.dir);
  }
  const elapsedS = (Date.now() - started) / 1000;
  const out = table();
  process.stdout.write(`\n${out}\n\n${rows.filter((r) => r.pass === false).length} of ${rows.filter((r) => r.pass !== null).length} targets missed; ${elapsedS.toFixed(0)} s.\n`);
  const result = { date: new Date().toISOString(), mode: QUICK ? 'quick' : 'full', machine: m, node: NODE, elapsedSeconds: elapsedS, targets: { ...TARGETS, sharedKey: SHARED_KEY_TARGETS, transient429: TRANSIENT_429_TARGETS, replica: REPLICA_TARGETS, stores: STORES_TARGETS, singer: SINGER_TARGETS, accounts: ACCOUNTS_TARGETS }, rows, raw };
  writeFileSync(join(ROOT, 'bench', 'results.json'), `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(join(ROOT, 'bench', 'results.md'), markdown(m, elapsedS));
  log('wrote bench/results.json and bench/results.md');
}

await main();
