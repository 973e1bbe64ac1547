/**
 * The "many accounts" figures of the benchmark (section "accounts" of
 * run.ts), against one emulator serving every account (in this process):
 * - limited: N accounts, each key limited to a few requests per short window,
 *   read together by one `read` (max_concurrent_accounts N) against one of
 *   those accounts read alone with the same limit, alternated: wall time
 *   together / alone (each key paced on its own budget, the accounts in
 *   parallel: close to 1), and the 429s;
 * - scale: `read` of contacts from 5 and from 50 accounts of the same size at
 *   full speed (limits out of reach, max_concurrent_accounts 4): records a
 *   second, and the peak RSS of each (flat as accounts grow).
 */
import { startEmulator, type Emulator } from 'data-read-emulator';
import { SOURCE_BIN, catalogFor, measure, median, removeDir, tempDir, writeJson, type Measured } from './lib.js';
import type { Reporter } from './shared-key.js';

export interface AccountsPlan {
  /** Accounts read together, each limited to `limit` requests per `windowMs`, and contacts per account. */
  readonly limited: { readonly accounts: number; readonly contacts: number; readonly limit: number; readonly windowMs: number; readonly rounds: number };
  /** Accounts at full speed: the small and the large count, contacts per account. */
  readonly scale: { readonly small: number; readonly large: number; readonly contacts: number; readonly repeats: number };
}

export const ACCOUNTS_TARGETS = {
  /** N limited accounts read together / one alone, wall time (median). */
  limitedRatio: 1.5,
  /** 429s of a round of N accounts together: at most one per key (a single process's allowance). */
  limitedMax429PerKey: 1,
  /** Peak RSS of the large count of accounts minus that of the small count, MB. */
  scaleMemoryDeltaMb: 30,
};

const PAGE = 200;
const fmtS = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

function assertOk(what: string, m: Measured): void {
  if (m.code !== 0) throw new Error(`${what} exited with ${m.code}:\n${m.stderr.slice(-2000)}\n${m.stdout.slice(-2000)}`);
}

interface Tenant {
  readonly name: string;
  readonly key: string;
}

function tenants(emu: Emulator, count: number, contacts: number, limits?: { perMinute: number; windowMs: number }): Tenant[] {
  return Array.from({ length: count }, (_, i) => {
    const account = emu.control.createAccount({ name: `Bench ${i}`, ...(limits ? { limits: { ...limits, perDay: 1_000_000, concurrency: 8 } } : {}) });
    const { key } = emu.control.createKey(account.id);
    emu.control.seed(account.id, { contacts, testFraction: 0, deletedFraction: 0 });
    return { name: `account-${i}`, key };
  });
}

function read(dir: string, emu: Emulator, accounts: readonly Tenant[], extra: Record<string, unknown>, stdout: 'null' | 'capture'): Promise<Measured> {
  const config = writeJson(dir, `config-${accounts.length}-${Date.now()}.json`, {
    base_url: emu.url,
    page_size: PAGE,
    accounts: accounts.map((t) => ({ name: t.name, api_key: t.key })),
    ...extra,
  });
  const catalog = writeJson(dir, 'catalog.json', catalogFor(['contacts']));
  return measure([SOURCE_BIN, 'read', '--config', config, '--catalog', catalog], stdout, { timeoutMs: 600_000 });
}

const recordLines = (m: Measured): number => m.stdout.split('\n').filter((l) => l.startsWith('{"type":"RECORD"')).length;

export async function accountsBench(plan: AccountsPlan, out: Reporter): Promise<Record<string, unknown>> {
  const t = ACCOUNTS_TARGETS;
  const raw: Record<string, unknown> = {};
  const dir = tempDir();
  try {
    // ---------------------------------------------------------- limited keys, together vs alone
    const l = plan.limited;
    out.log(
      `\n11a. Many accounts, each key limited (${l.limit} requests per ${l.windowMs / 1000} s window, ${l.contacts.toLocaleString('en-US')} contacts each): ` +
        `${l.accounts} accounts read together by one read, and one alone; ${l.rounds} rounds each, alternated`,
    );
    const together: { wallMs: number; throttled: number; records: number }[] = [];
    const alone: { wallMs: number; throttled: number; records: number }[] = [];
    for (let r = 0; r < l.rounds; r++) {
      for (const n of r % 2 === 0 ? [l.accounts, 1] : [1, l.accounts]) {
        // A fresh emulator a round: every key starts with a full window.
        const emu = await startEmulator({ port: 0, host: '127.0.0.1', seed: 31 + r, limits: { perMinute: 10_000_000, perDay: 100_000_000 } });
        try {
          const accounts = tenants(emu, n, l.contacts, { perMinute: l.limit, windowMs: l.windowMs });
          emu.control.resetStats();
          const m = await read(dir, emu, accounts, { max_concurrent_accounts: Math.min(64, n) }, 'capture');
          assertOk(`read of ${n} limited account(s)`, m);
          const records = recordLines(m);
          const round = { wallMs: m.wallMs, throttled: emu.control.stats().throttled, records };
          (n === 1 ? alone : together).push(round);
          out.log(`    ${n} account${n === 1 ? ' ' : 's'} #${r + 1}: ${fmtS(round.wallMs)}, ${records} records, ${round.throttled} x 429`);
        } finally {
          await emu.close();
        }
      }
    }
    const ratio = median(together.map((x) => x.wallMs)) / median(alone.map((x) => x.wallMs));
    const worst429 = Math.max(...together.map((x) => x.throttled));
    out.row(
      'many accounts',
      `${l.accounts} accounts each limited to ${l.limit} per ${l.windowMs / 1000} s, read together / one alone: wall time (medians)`,
      `${ratio.toFixed(2)} (${fmtS(median(together.map((x) => x.wallMs)))} / ${fmtS(median(alone.map((x) => x.wallMs)))})`,
      `≤ ${t.limitedRatio}`,
      ratio <= t.limitedRatio,
      { together, alone },
    );
    out.row('many accounts', `${l.accounts} limited accounts together: 429s per round`, together.map((x) => String(x.throttled)).join(', '), `each ≤ ${l.accounts * t.limitedMax429PerKey} (one per key)`, worst429 <= l.accounts * t.limitedMax429PerKey);
    raw.limited = { together, alone, ratio };

    // ---------------------------------------------------------- scale: records/s and memory, small vs large
    const s = plan.scale;
    out.log(`\n11b. Many accounts at full speed: read of contacts from ${s.small} and from ${s.large} accounts of ${s.contacts.toLocaleString('en-US')} contacts each (max_concurrent_accounts 4), alternated`);
    const emu = await startEmulator({ port: 0, host: '127.0.0.1', seed: 41, limits: { perMinute: 10_000_000, perDay: 100_000_000 } });
    try {
      const all = tenants(emu, s.large, s.contacts);
      const runs = new Map<number, { wallMs: number; rssKb: number; cpuS: number; recordsPerS: number }[]>([[s.small, []], [s.large, []]]);
      for (let r = 0; r < s.repeats; r++) {
        for (const n of r % 2 === 0 ? [s.small, s.large] : [s.large, s.small]) {
          const m = await read(dir, emu, all.slice(0, n), {}, 'null');
          assertOk(`read of ${n} accounts`, m);
          const records = n * s.contacts;
          const run = { wallMs: m.wallMs, rssKb: m.maxRssKb, cpuS: m.cpuSeconds, recordsPerS: records / (m.wallMs / 1000) };
          runs.get(n)?.push(run);
          out.log(`    ${n} accounts #${r + 1}: ${fmtS(run.wallMs)}, ${Math.round(run.recordsPerS).toLocaleString('en-US')} records/s, peak RSS ${(run.rssKb / 1024).toFixed(1)} MB, CPU ${run.cpuS.toFixed(2)} s`);
        }
      }
      const small = runs.get(s.small) ?? [];
      const large = runs.get(s.large) ?? [];
      const rate = median(large.map((x) => x.recordsPerS));
      const deltaMb = (median(large.map((x) => x.rssKb)) - median(small.map((x) => x.rssKb))) / 1024;
      out.row('many accounts', `${s.large} accounts x ${s.contacts.toLocaleString('en-US')} contacts at full speed: records/s (median)`, Math.round(rate).toLocaleString('en-US'), '—', null, { small, large });
      out.row(
        'many accounts',
        `peak RSS, ${s.large} accounts minus ${s.small} accounts (medians)`,
        `${deltaMb >= 0 ? '+' : ''}${deltaMb.toFixed(1)} MB (${(median(large.map((x) => x.rssKb)) / 1024).toFixed(1)} / ${(median(small.map((x) => x.rssKb)) / 1024).toFixed(1)} MB)`,
        `≤ +${t.scaleMemoryDeltaMb} MB`,
        deltaMb <= t.scaleMemoryDeltaMb,
      );
      raw.scale = { small, large, recordsPerS: rate, memoryDeltaMb: deltaMb };
    } finally {
      await emu.close();
    }
    return raw;
  } finally {
    removeDir(dir);
  }
}
