/**
 * The "shared key" figures of the benchmark (section "shared" of run.ts):
 * several `read` processes started together on ONE key of the emulator,
 * whose rate limiter counts per key across connections. Each round counts
 * the 429s the emulator answered and the time from the first request the
 * emulator received to the last response it finished (the processes'
 * start-up, three Node.js processes at once on a busy machine, is left out;
 * the wall time until the last process ended is reported beside it),
 * against the minimum the limit allows for every request answered:
 * (ceil(requests / limit) - 1) windows, as the single-process pacing row.
 * A round of one process alone on the same kind of key runs alternately,
 * for comparison in the same run.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startEmulator } from 'data-read-emulator';
import { SOURCE_BIN, catalogFor, measure, median, removeDir, tempDir, writeJson, type Measured } from './lib.js';

export interface SharedKeyPlan {
  readonly processes: number;
  readonly contacts: number;
  readonly limit: number;
  readonly windowMs: number;
  readonly rounds: number;
}

export const SHARED_KEY_TARGETS = {
  /** Several processes on one key: 429s per round, time / the limit's minimum (median). */
  sharedMax429: 2,
  sharedFactor: 1.1,
  /** One process alone on such a key. */
  aloneMax429: 0,
};

export interface Reporter {
  row(section: string, figure: string, value: string, target: string, pass: boolean | null, data?: Record<string, unknown>): void;
  log(text: string): void;
}

export interface Round {
  readonly processes: number;
  readonly wallMs: number;
  /** First request received to last response finished, at the emulator. */
  readonly spanMs: number;
  readonly minMs: number;
  readonly factor: number;
  readonly answered: number;
  readonly throttled: number;
  readonly retries: number;
}

const PAGE = 200;
const fmtS = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

function assertOk(what: string, m: Measured): void {
  if (m.code !== 0) throw new Error(`${what} exited with ${m.code}:\n${m.stderr.slice(-2000)}\n${m.stdout.slice(-2000)}`);
}

/** Retries the connector reported in its closing log line ("requests: N, retries: N, ..."), summed over its lines. */
function retriesOf(m: Measured): number {
  let sum = 0;
  for (const match of m.stdout.matchAll(/retries: (\d+)/g)) sum += Number(match[1]);
  return sum;
}

/** `processes` reads of `contacts` contacts started together on one new key of a fresh emulator. */
export async function sharedKeyRound(plan: SharedKeyPlan, processes: number): Promise<Round> {
  const emu = await startEmulator({ port: 0, host: '127.0.0.1', seed: 11, limits: { perMinute: plan.limit, windowMs: plan.windowMs, perDay: 1_000_000, concurrency: 8 } });
  const dir = tempDir();
  try {
    const account = emu.control.createAccount({ name: 'Shared key bench' });
    const { key } = emu.control.createKey(account.id);
    emu.control.seed(account.id, { contacts: plan.contacts, testFraction: 0, deletedFraction: 0 });
    emu.control.resetStats();
    const config = writeJson(dir, 'config.json', { api_key: key, base_url: emu.url, page_size: PAGE });
    const catalog = writeJson(dir, 'catalog.json', catalogFor(['contacts']));
    const args = [SOURCE_BIN, 'read', '--config', config, '--catalog', catalog];
    let first = Number.NaN;
    let last = Number.NaN;
    emu.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (req.url?.startsWith('/v1/') !== true) return;
      if (Number.isNaN(first)) first = performance.now();
      res.once('finish', () => {
        last = performance.now();
      });
    });
    const started = performance.now();
    const runs = await Promise.all(Array.from({ length: processes }, () => measure(args, 'capture', { timeoutMs: 300_000 })));
    const wallMs = performance.now() - started;
    runs.forEach((m, i) => assertOk(`read ${i + 1} of ${processes} (shared key)`, m));
    const stats = emu.control.stats();
    const answered = Object.values(stats.byPath).reduce((a, by) => a + (by['200'] ?? 0), 0);
    const minMs = Math.max(1, Math.ceil(answered / plan.limit) - 1) * plan.windowMs;
    const spanMs = last - first;
    return { processes, wallMs, spanMs, minMs, factor: spanMs / minMs, answered, throttled: stats.throttled, retries: runs.reduce((a, m) => a + retriesOf(m), 0) };
  } finally {
    await emu.close();
    removeDir(dir);
  }
}

/** Alternate rounds of N processes and of one process; rows for both. */
export async function sharedKeyBench(plan: SharedKeyPlan, out: Reporter): Promise<{ shared: Round[]; alone: Round[] }> {
  const t = SHARED_KEY_TARGETS;
  out.log(`\n4b. Shared key: ${plan.processes} reads of ${plan.contacts.toLocaleString('en-US')} contacts started together on one key (${plan.limit} requests per ${plan.windowMs / 1000} s window), and one read alone; ${plan.rounds} rounds each, alternated`);
  const shared: Round[] = [];
  const alone: Round[] = [];
  for (let r = 0; r < plan.rounds; r++) {
    const order = r % 2 === 0 ? [plan.processes, 1] : [1, plan.processes];
    for (const n of order) {
      const round = await sharedKeyRound(plan, n);
      (n === 1 ? alone : shared).push(round);
      out.log(`    ${n} process${n === 1 ? ' ' : 'es'} #${r + 1}: ${fmtS(round.spanMs)} / ${fmtS(round.minMs)} = ${round.factor.toFixed(3)} (wall ${fmtS(round.wallMs)}), ${round.answered} requests answered, ${round.throttled} x 429, ${round.retries} retries`);
    }
  }
  const sf = median(shared.map((x) => x.factor));
  const s429 = Math.max(...shared.map((x) => x.throttled));
  const af = median(alone.map((x) => x.factor));
  const a429 = Math.max(...alone.map((x) => x.throttled));
  const list = (rounds: Round[]): string => rounds.map((x) => String(x.throttled)).join(', ');
  out.row('shared key', `${plan.processes} processes on one key (${plan.limit} per ${plan.windowMs / 1000} s): 429s per round`, list(shared), `each ≤ ${t.sharedMax429}`, s429 <= t.sharedMax429, { rounds: shared });
  out.row('shared key', `${plan.processes} processes on one key: first request to last response / the limit's minimum (median)`, `${sf.toFixed(3)} (${shared.map((x) => x.factor.toFixed(2)).join(', ')})`, `≤ ${t.sharedFactor}`, sf <= t.sharedFactor);
  out.row('shared key', 'one process alone on such a key: 429s per round', list(alone), `each ≤ ${t.aloneMax429}`, a429 <= t.aloneMax429, { rounds: alone });
  // Few windows: process start-up weighs on this ratio; the pacing row (section 4) holds the single-process target.
  out.row('shared key', "one process alone: first request to last response / the limit's minimum (median)", `${af.toFixed(3)} (${alone.map((x) => x.factor.toFixed(2)).join(', ')})`, '—', null);
  return { shared, alone };
}
