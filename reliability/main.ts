/**
 * `npm run reliability`: the whole reliability and security suite at full
 * size, printed as tables (markdown). Exit 1 when anything was lost, leaked or
 * unclear. test/reliability runs the same code at CI size.
 *
 *   npm run reliability [-- --only faults,crash,rates,slow,contract,input,secrets,emulator]
 */
import { BAD_INPUT_CASES, runBadInput } from './bad-input.js';
import { CONTRACT_CASES, runContractCases } from './contract.js';
import { runCrashScenario } from './crash.js';
import { runEmulatorSecurity } from './emulator-security.js';
import { TRANSPORT_KINDS, runFaultScenario, type FaultScenario } from './faults.js';
import { inPool, leakWatch } from './harness.js';
import { runConcurrency, runPerDay, runPerMinute } from './rates.js';
import { runSecrets } from './secrets.js';
import { runClosedReader, runSlowReader } from './slow-reader.js';

interface Summary {
  readonly area: string;
  readonly figures: string;
  readonly lost: string;
  readonly ok: boolean;
}

const say = (text = ''): void => void process.stdout.write(`${text}\n`);
const table = (head: readonly string[], rows: readonly (readonly (string | number)[])[]): void => {
  say(`| ${head.join(' | ')} |`);
  say(`|${head.map(() => '---').join('|')}|`);
  for (const row of rows) say(`| ${row.join(' | ')} |`);
  say();
};
const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

const problems: string[] = [];
const summaries: Summary[] = [];

async function section(name: string, run: () => Promise<Summary>): Promise<void> {
  const started = performance.now();
  say(`## ${name}`);
  say();
  const summary = await run();
  summaries.push(summary);
  say(`(${seconds(performance.now() - started)})`);
  say();
}

const SECTIONS: Record<string, () => Promise<void>> = {
  faults: () => section('1. Fault matrix', async () => {
    const rates = [0.05, 0.2, 0.5];
    // Every other scenario with deletions as tombstones (a destination that deletes by tombstones only).
    const scenarios: FaultScenario[] = TRANSPORT_KINDS.flatMap((kind, k) => rates.map((probability, r) => ({
      kind, rate: { probability }, contacts: 80, pageSize: 25, rounds: 3, maxRetries: 3, maxReruns: 10, seed: 100 + k * 10 + r, tombstones: (k + r) % 2 === 1,
    })));
    // The slowest (50%) first, so the pool ends evenly.
    scenarios.sort((a, b) => ('probability' in b.rate ? b.rate.probability : 0) - ('probability' in a.rate ? a.rate.probability : 0));
    const results = await inPool(scenarios, 5, (s) => runFaultScenario(s));
    results.sort((a, b) => TRANSPORT_KINDS.indexOf(a.kind) - TRANSPORT_KINDS.indexOf(b.kind) || parseFloat(a.rate) - parseFloat(b.rate));
    table(['fault', 'rate', 'tombstones', 'syncs', 'of which reruns', 'requests', 'faults injected', 'retries', 'records lost', 'time'],
      results.map((r) => [r.kind, r.rate, r.tombstones ? 'yes' : 'no', r.syncs, r.reruns, r.requests, r.faults, r.retries, r.lost + r.extra, seconds(r.ms)]));
    for (const r of results) problems.push(...r.problems);
    const lost = sum(results.map((r) => r.lost + r.extra));
    return {
      area: `Fault matrix: ${TRANSPORT_KINDS.length} faults × 5/20/50 % of requests, full sync + 3 rounds of changes and deletions`,
      figures: `${sum(results.map((r) => r.syncs))} syncs (${sum(results.map((r) => r.reruns))} reruns after a transient error), ${sum(results.map((r) => r.faults))} faults injected, ${sum(results.map((r) => r.retries))} retries`,
      lost: String(lost),
      ok: lost === 0 && results.every((r) => r.problems.length === 0),
    };
  }),

  crash: () => section('2. Crash and resume (SIGKILL)', async () => {
    const seeds = [1, 2, 3, 4, 5, 6];
    // Even seeds: deletions as tombstones, and a destination that deletes rows by tombstones only.
    const results = await inPool(seeds, 3, (seed) => runCrashScenario({ seed, contacts: 400, pageSize: 40, kills: 6, killsPerSync: 3, latencyMs: 20, tombstones: seed % 2 === 0 }));
    const at = (r: (typeof results)[number], k: string): number => r.positions[k] ?? 0;
    table(['seed', 'tombstones', 'kills', 'inside a page', 'between pages', 'before any record', 'syncs', 'runs', 'records lost', 'time'],
      results.map((r) => [r.seed, r.tombstones ? 'yes' : 'no', r.kills, at(r, 'inside a page'), at(r, 'between pages'), at(r, 'before any record'), r.syncs, r.runs, r.lost + r.extra, seconds(r.ms)]));
    for (const r of results) problems.push(...r.problems);
    const kills = sum(results.map((r) => r.kills));
    const lost = sum(results.map((r) => r.lost + r.extra));
    const pos = (k: string): number => sum(results.map((r) => at(r, k)));
    return {
      area: `Crash and resume: SIGKILL at random points (${seeds.length} seeds), restart from the last STATE`,
      figures: `${kills} kills (${pos('inside a page')} inside a page, ${pos('between pages')} between pages, ${pos('before any record')} before any record), ${sum(results.map((r) => r.syncs))} syncs completed exactly`,
      lost: String(lost),
      ok: lost === 0 && kills >= 30 && results.every((r) => r.problems.length === 0),
    };
  }),

  rates: () => section('3. Rate limits', async () => {
    const minute = await runPerMinute({ contacts: 120, pageSize: 20, perMinute: 6, windowMs: 1000, seed: 31 });
    const dayQuota = await runPerDay({ variant: 'quota', contacts: 80, pageSize: 25, perDay: 14, maxWaitSeconds: 2, seed: 32 });
    const day429 = await runPerDay({ variant: 'retry_after', contacts: 80, pageSize: 25, perDay: 6, maxWaitSeconds: 2, seed: 33 });
    const conc = await inPool([
      { maxConcurrent: 2 },
      { maxConcurrent: 4 },
      { maxConcurrent: 4, slowEvery: 4 },
      { maxConcurrent: 4, serviceLimit: 2 },
    ], 4, (c) => runConcurrency({ contacts: 120, pageSize: 20, latencyMs: 40, seed: 34, ...c }));
    table(['limit', 'result'], [
      ['per minute (6 per 1 s window)', `${minute.requests} requests, ${minute.throttled} × 429, ${minute.waits} paced waits, ${minute.rateLimitedStatuses} RUNNING/RATE_LIMITED statuses (${minute.streamsInformed} streams), ${minute.lost} lost`],
      ['per day: the key\'s count runs out', `stopped ${Math.round(dayQuota.stopMs)} ms after (max_wait_seconds ${dayQuota.maxWaitSeconds}); ${dayQuota.rateLimitedStatuses} RATE_LIMITED statuses before; completed by ${dayQuota.runsToComplete} runs after the reset; ${dayQuota.lost} lost`],
      ['per day: 429 with a day-long Retry-After', `stopped ${Math.round(day429.stopMs)} ms after; completed by ${day429.runsToComplete} runs after the reset; ${day429.lost} lost`],
      ...conc.map((c) => [
        `simultaneous: max_concurrent_requests ${c.maxConcurrent}, service limit ${c.serviceLimit}${c.faults > 0 ? `, ${c.faults} abandoned slow requests` : ''}`,
        `max in flight ${c.maxInFlight} ≤ ${c.maxConcurrent}; ${c.throttled} × 429${c.serviceLimit < c.maxConcurrent ? ' (waited out)' : ''}; ${c.requests} requests; ${c.lost} lost`,
      ]),
    ]);
    say(`Quota message: "${dayQuota.message}"`);
    say();
    for (const r of [minute, dayQuota, day429, ...conc]) problems.push(...r.problems);
    const lost = minute.lost + dayQuota.lost + day429.lost + sum(conc.map((c) => c.lost));
    const ok = [minute, dayQuota, day429, ...conc].every((r) => r.problems.length === 0) && lost === 0;
    return {
      area: 'Rate limits: per minute, per day, simultaneous requests',
      figures: `per minute: ${minute.throttled} × 429 in ${minute.requests} requests, ${minute.rateLimitedStatuses} RATE_LIMITED statuses; per day: stops ${Math.round(Math.max(dayQuota.stopMs, day429.stopMs))} ms after (limit ${dayQuota.maxWaitSeconds} s), names the reset, resumes; in flight ≤ ${conc.map((c) => `${c.maxInFlight}/${c.maxConcurrent}`).join(', ')}`,
      lost: String(lost),
      ok,
    };
  }),

  slow: () => section('4. A slow reader', async () => {
    const r = await runSlowReader({ contacts: 20_000, pageSize: 200, trickleBytes: 32_768, everyMs: 10, seed: 41 });
    table(['output', 'read at', 'fast run', 'slow run', 'peak RSS fast', 'peak RSS slow', 'RSS growth (¼ → end)', 'reordered', 'lost'], [[
      `${(r.outputBytes / 1048576).toFixed(1)} MB, ${r.records} records`, `${(r.readRateKBs / 1024).toFixed(1)} MB/s`, seconds(r.fastMs), seconds(r.slowMs),
      `${r.fastPeakRssMb.toFixed(0)} MB`, `${r.slowPeakRssMb.toFixed(0)} MB`, `${r.slowGrowthMb.toFixed(1)} MB`, r.reordered, r.lost,
    ]]);
    const gone = await runClosedReader({ contacts: 3000, closeAfterBytes: 200_000, seed: 42 });
    say(`The reader goes away (stdout closed after 200 KB): exit ${String(gone.code)} ${Math.round(gone.exitAfterCloseMs)} ms later, ${gone.requestsAfterClose} requests after; stderr: "${gone.message.replace(/^\S+ /, '')}"`);
    say();
    problems.push(...r.problems, ...gone.problems);
    return {
      area: 'A slow reader: stdout consumed at a trickle',
      figures: `${(r.outputBytes / 1048576).toFixed(0)} MB read at ${(r.readRateKBs / 1024).toFixed(1)} MB/s; peak RSS (VmHWM) ${r.slowPeakRssMb.toFixed(0)} MB vs ${r.fastPeakRssMb.toFixed(0)} MB read fast; ${r.reordered} streams reordered`,
      lost: String(r.lost),
      ok: r.problems.length === 0 && gone.problems.length === 0,
    };
  }),

  contract: () => section('5. A service that breaks its contract', async () => {
    const results = await runContractCases(CONTRACT_CASES, 51, 4);
    table(['the service', 'outcome', 'time', 'message'], results.map((r) => [r.name, r.outcome, seconds(r.ms), r.message.replaceAll('|', '\\|')]));
    for (const r of results) problems.push(...r.problems);
    const lost = sum(results.map((r) => r.lost));
    return {
      area: 'A service that breaks its contract',
      figures: `${results.length} breaches: ${results.filter((r) => r.outcome === 'system_error').length} system_error naming the breach, ${results.filter((r) => r.outcome === 'none').length} reported once (unknown object_type); longest ${seconds(Math.max(...results.map((r) => r.ms)))}; no state past unread data`,
      lost: String(lost),
      ok: lost === 0 && results.every((r) => r.problems.length === 0),
    };
  }),

  input: () => section('6. Bad input from the user', async () => {
    const results = await runBadInput(BAD_INPUT_CASES, 4);
    table(['case', 'kind', 'message (read)'], results.map((r) => [r.name, r.kind, r.readMessage.replaceAll('|', '\\|')]));
    for (const r of results) problems.push(...r.problems);
    const config = results.filter((r) => r.kind === 'config').length;
    return {
      area: 'Bad input: config, catalog and state',
      figures: `${results.length} cases (${config} config, ${results.filter((r) => r.kind === 'catalog').length} catalog, ${results.filter((r) => r.kind === 'state').length} state): one message naming the field; check FAILED, read config_error exit 78; no stack trace on stdout`,
      lost: '–',
      ok: results.every((r) => r.problems.length === 0),
    };
  }),

  secrets: () => section('7. Secrets (hostile echoing service)', async () => {
    const r = await runSecrets(4);
    table(['hostile answers', 'runs', 'ended in a clear error', 'leaks'], [[r.cases, r.runs, r.failedCleanly, leakWatch.leaks.length]]);
    problems.push(...r.problems);
    return {
      area: 'Secrets: a canary key in every run',
      figures: `${r.cases} answers echoing the request (${r.runs} runs)`,
      lost: '–',
      ok: r.problems.length === 0,
    };
  }),

  emulator: () => section('8. The emulator as a server', async () => {
    const checks = await runEmulatorSecurity();
    table(['check', 'result'], checks.map((c) => [c.name, c.ok ? 'pass' : `FAIL (${c.detail})`]));
    for (const c of checks) if (!c.ok) problems.push(`emulator: ${c.name}: ${c.detail}`);
    return {
      area: 'Emulator security',
      figures: `${checks.filter((c) => c.ok).length}/${checks.length} checks: cursors not forgeable or replayable across accounts/lists, tenancy, control token, 127.0.0.1`,
      lost: '–',
      ok: checks.every((c) => c.ok),
    };
  }),
};

async function main(): Promise<number> {
  const at = process.argv.indexOf('--only');
  const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length) ?? (at >= 0 ? process.argv[at + 1] : undefined);
  const wanted = only === undefined ? Object.keys(SECTIONS) : only.split(',');
  const unknown = wanted.filter((name) => !(name in SECTIONS));
  if (unknown.length > 0) {
    process.stderr.write(`reliability: unknown section ${unknown.join(', ')} (sections: ${Object.keys(SECTIONS).join(', ')})\n`);
    return 2;
  }
  const started = performance.now();
  say('# Reliability and security suite');
  say();
  for (const name of wanted) await SECTIONS[name]?.();
  say('## Summary');
  say();
  summaries.push({
    area: 'Secrets: every run above searched for its canary key',
    figures: `${leakWatch.runs} runs, ${(leakWatch.bytes / 1048576).toFixed(1)} MB of stdout and stderr, ${leakWatch.leaks.length} occurrences of a key`,
    lost: '–',
    ok: leakWatch.leaks.length === 0,
  });
  table(['', 'figures', 'records lost', 'result'], summaries.map((s) => [s.area, s.figures, s.lost, s.ok ? 'pass' : 'FAIL']));
  say(`Total time: ${seconds(performance.now() - started)}`);
  const all = [...problems, ...leakWatch.leaks];
  if (all.length > 0) {
    say();
    say(`## Problems (${all.length})`);
    for (const p of all.slice(0, 100)) say(`- ${p}`);
  }
  return all.length === 0 && summaries.every((s) => s.ok) ? 0 : 1;
}

process.exitCode = await main();
