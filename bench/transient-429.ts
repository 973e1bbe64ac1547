/**
 * The "transient 429" figures of the benchmark (section "transient" of
 * run.ts): one `read` alone on a key with a large quota (100,000 requests a
 * minute), of an account of 1,200 contacts (every stream), while the
 * emulator's burst limiter refuses 5 % of the list requests with "429,
 * Retry-After 1, RateLimit-Remaining 0, RateLimit-Reset 1". Each round reads
 * the same account without faults and with them, alternated, so that the
 * two reads meet the same machine. A 429 may cost its Retry-After (and the
 * backoff of the failure policy; these faults have none), not the rest of
 * the window: the read with faults, against the read without them plus the
 * Retry-After of each 429, at most TRANSIENT_429_TARGETS.factor.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator } from 'data-read-emulator';
import { STREAMS } from '../src/streams.js';
import { ROOT, SOURCE_BIN, measure, median, removeDir, tempDir, writeJson, type Measured } from './lib.js';
import type { Reporter } from './shared-key.js';

export interface Transient429Plan {
  readonly contacts: number;
  readonly probability: number;
  readonly rounds: number;
}

export const TRANSIENT_429_TARGETS = {
  /** Read with the 429s / (the same read without them + the Retry-After of each 429), median of the rounds. */
  factor: 1.1,
};

const LIMIT = 100_000;
const RETRY_AFTER_S = 1;
const PAGE = 100;
/** Every stream, each in its own sync mode (pipeline_stages: full refresh). */
const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');
const fmtS = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

export interface Transient429Round {
  readonly cleanMs: number;
  readonly faultedMs: number;
  readonly throttled: number;
  /** What the read with faults announced as rate-limit waits (its --summary), s. */
  readonly rateLimitWaitSeconds: number;
  readonly factor: number;
  /** Both reads emitted every record of the account, each once. */
  readonly complete: boolean;
}

interface Read {
  readonly m: Measured;
  readonly complete: boolean;
  readonly rateLimitWaitSeconds: number;
}

/** Records by stream, counted from the RECORD lines (each id once): true when they are the emulator's. */
function completeRead(stdout: string, truth: Record<string, number>): boolean {
  const ids = new Map<string, Set<string>>();
  let lines = 0;
  for (const line of stdout.split('\n')) {
    if (!line.includes('"type":"RECORD"')) continue;
    const { record } = JSON.parse(line) as { record: { stream: string; data: { id: string } } };
    const set = ids.get(record.stream) ?? new Set<string>();
    set.add(record.data.id);
    ids.set(record.stream, set);
    lines += 1;
  }
  const expected = Object.values(truth).reduce((a, n) => a + n, 0);
  return lines === expected && Object.entries(truth).every(([stream, n]) => (ids.get(stream)?.size ?? 0) === n);
}

async function read(dir: string, config: string, truth: Record<string, number>, n: number): Promise<Read> {
  const summary = join(dir, `summary-${n}.json`);
  const m = await measure([SOURCE_BIN, 'read', '--config', config, '--catalog', CATALOG, '--summary', summary], 'capture', { timeoutMs: 300_000 });
  if (m.code !== 0) throw new Error(`read (transient 429) exited with ${m.code}:\n${m.stderr.slice(-2000)}\n${m.stdout.slice(-2000)}`);
  const waited = (JSON.parse(readFileSync(summary, 'utf8')) as { rate_limit_wait_seconds: number }).rate_limit_wait_seconds;
  return { m, complete: completeRead(m.stdout, truth), rateLimitWaitSeconds: waited };
}

export async function transient429Bench(plan: Transient429Plan, out: Reporter): Promise<Transient429Round[]> {
  const t = TRANSIENT_429_TARGETS;
  out.log(
    `\n4c. Transient 429s: one read of an account of ${plan.contacts.toLocaleString('en-US')} contacts (every stream) alone on a key of ${LIMIT.toLocaleString('en-US')} requests a minute, ` +
      `${Math.round(plan.probability * 100)} % of the list requests refused with 429 (Retry-After ${RETRY_AFTER_S}, RateLimit-Remaining 0, RateLimit-Reset 1), against the same read without them; ${plan.rounds} rounds, alternated`,
  );
  const emu = await startEmulator({ port: 0, host: '127.0.0.1', seed: 29, limits: { perMinute: LIMIT, windowMs: 60_000, perDay: 100_000_000, concurrency: 8 } });
  const dir = tempDir();
  const rounds: Transient429Round[] = [];
  try {
    const account = emu.control.createAccount({ name: 'Transient 429 bench' });
    const { key } = emu.control.createKey(account.id);
    emu.control.seed(account.id, { contacts: plan.contacts });
    const dump = emu.control.dump(account.id);
    const truth = Object.fromEntries(STREAMS.map((s) => [s.name, (dump[s.name as keyof typeof dump] as unknown[]).length]));
    const config = writeJson(dir, 'config.json', { api_key: key, base_url: emu.url, page_size: PAGE });
    const rule = { kind: '429' as const, probability: plan.probability, retryAfterSeconds: RETRY_AFTER_S, rateLimitRemaining: 0, rateLimitReset: 1, paths: STREAMS.map((s) => s.path) };
    let n = 0;
    for (let r = 0; r < plan.rounds; r++) {
      let clean: Read | undefined;
      let faulted: Read | undefined;
      let throttled = 0;
      for (const withFaults of r % 2 === 0 ? [false, true] : [true, false]) {
        // The same schedule each round: the same requests refused.
        if (withFaults) emu.control.setFaults([rule]);
        else emu.control.clearFaults();
        emu.control.resetStats();
        const one = await read(dir, config, truth, n++);
        if (withFaults) {
          faulted = one;
          throttled = emu.control.stats().throttled;
        } else {
          clean = one;
        }
      }
      if (clean === undefined || faulted === undefined) throw new Error('transient 429: a read is missing');
      const allowanceMs = throttled * RETRY_AFTER_S * 1000;
      const round: Transient429Round = {
        cleanMs: clean.m.wallMs,
        faultedMs: faulted.m.wallMs,
        throttled,
        rateLimitWaitSeconds: faulted.rateLimitWaitSeconds,
        factor: faulted.m.wallMs / (clean.m.wallMs + allowanceMs),
        complete: clean.complete && faulted.complete,
      };
      rounds.push(round);
      out.log(
        `    #${r + 1}: without 429s ${fmtS(round.cleanMs)}, with ${throttled} x 429 ${fmtS(round.faultedMs)}: ${fmtS(round.faultedMs)} / (${fmtS(round.cleanMs)} + ${throttled} x ${RETRY_AFTER_S} s) = ${round.factor.toFixed(3)}; ` +
          `rate-limit waits ${round.rateLimitWaitSeconds.toFixed(2)} s; every record ${round.complete ? 'yes' : 'NO'}`,
      );
    }
  } finally {
    await emu.close();
    removeDir(dir);
  }
  const factor = median(rounds.map((x) => x.factor));
  const waitsOk = rounds.every((x) => x.rateLimitWaitSeconds <= x.throttled * RETRY_AFTER_S);
  const what = `${Math.round(plan.probability * 100)} % transient 429s`;
  out.row(
    'transient',
    `${what} on a key alone (${LIMIT.toLocaleString('en-US')}/min): read with them / (read without + Retry-After of each 429) (median)`,
    `${factor.toFixed(3)} (${rounds.map((x) => x.factor.toFixed(2)).join(', ')})`,
    `≤ ${t.factor}`,
    factor <= t.factor,
    { rounds },
  );
  out.row(
    'transient',
    `${what}: 429s, rate-limit waits announced (s) per round`,
    rounds.map((x) => `${x.throttled}, ${x.rateLimitWaitSeconds.toFixed(2)}`).join('; '),
    `≤ 429s × ${RETRY_AFTER_S} s`,
    waitsOk,
  );
  out.row('transient', `${what}: records of the account, each once, with and without them`, rounds.every((x) => x.complete) ? 'all' : 'some missing', 'all', rounds.every((x) => x.complete));
  return rounds;
}
