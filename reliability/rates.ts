/**
 * Rate limits: the per-minute limit reached mid-sync (pacing on RateLimit-*
 * keeps 429s at or near zero, and the runner is told RATE_LIMITED while the
 * connector waits), the per-day limit reached (the sync stops at once with a
 * resumable state and a transient error naming when the quota resets; after
 * the reset the next run completes), and the simultaneous-request limit
 * (never exceeded).
 */
import { Lab, airbyteCheck, errorTraces, protocolProblems, runSummary, streamStatuses, type ConnectorRun } from './harness.js';
import { MemoryDestination, lostOf } from '../test/helpers/destination.js';

export interface PerMinuteResult {
  readonly requests: number;
  readonly throttled: number;
  readonly waits: number;
  /** STREAM_STATUS RUNNING messages with a RATE_LIMITED reason. */
  readonly rateLimitedStatuses: number;
  /** Streams that were told they wait. */
  readonly streamsInformed: number;
  readonly lost: number;
  readonly problems: string[];
  readonly ms: number;
}

export async function runPerMinute(o: { contacts: number; pageSize: number; perMinute: number; windowMs: number; seed: number }): Promise<PerMinuteResult> {
  const started = performance.now();
  const lab = await Lab.start({ seed: o.seed });
  const problems: string[] = [];
  try {
    const acc = lab.account({ contacts: o.contacts, limits: { perMinute: o.perMinute, windowMs: o.windowMs } });
    const runStart = Date.now();
    const run = await lab.read(acc, { page_size: o.pageSize, max_concurrent_requests: 2, max_wait_seconds: 30 }, { label: 'per-minute limit' });
    const runEnd = Date.now();
    problems.push(...protocolProblems(run, 'per-minute limit'), ...(await airbyteCheck(run.stdout, 'per-minute limit')));
    if (run.code !== 0) problems.push(`per-minute limit: exit ${String(run.code)}: ${errorTraces(run.messages).map((e) => e.message).join(' | ')}`);
    const replica = new MemoryDestination();
    replica.applyAirbyte(run.messages);
    const diff = replica.diff(lab.dump(acc.id));
    if (lostOf(diff) + diff.extra > 0) problems.push(`per-minute limit: replica differs: ${diff.examples.join('; ')}`);
    const limited = streamStatuses(run.messages).filter((s) => s.status === 'RUNNING' && s.quotaReset !== undefined);
    // quota_reset is the end of a window that was running during the sync: between its start and one window after its end.
    const plausible = (at: number): boolean => at >= runStart - o.windowMs && at <= runEnd + o.windowMs + 1_000;
    for (const s of limited) {
      if (!plausible(s.quotaReset ?? 0)) problems.push(`per-minute limit: quota_reset ${String(s.quotaReset)} is outside the sync (${runStart} to ${runEnd}, window ${o.windowMs} ms)`);
    }
    const stats = lab.emu.control.stats();
    const summary = runSummary(run.messages);
    if (limited.length === 0) problems.push('per-minute limit: the runner was never told RATE_LIMITED');
    return {
      requests: stats.total,
      throttled: stats.byStatus['429'] ?? 0,
      waits: summary?.rateLimitWaits ?? 0,
      rateLimitedStatuses: limited.length,
      streamsInformed: new Set(limited.map((s) => s.stream)).size,
      lost: lostOf(diff),
      problems,
      ms: performance.now() - started,
    };
  } finally {
    await lab.close();
  }
}

export interface PerDayResult {
  /** How the quota ran out: the key's daily count, or a 429 with a day-long Retry-After. */
  readonly variant: string;
  readonly requestsBeforeStop: number;
  /** From the quota running out to the connector's exit. */
  readonly stopMs: number;
  readonly maxWaitSeconds: number;
  readonly message: string;
  readonly rateLimitedStatuses: number;
  readonly runsToComplete: number;
  readonly lost: number;
  readonly problems: string[];
}

const RESETS_AT = /daily request quota is used up; it resets at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)/;

/**
 * variant 'quota': the key's per-day count runs out (the headers say so: the
 * connector must not even send the next request). variant 'retry_after': a 429
 * with a day-long Retry-After (another client used the quota up).
 */
export async function runPerDay(o: { variant: 'quota' | 'retry_after'; contacts: number; pageSize: number; perDay: number; maxWaitSeconds: number; seed: number }): Promise<PerDayResult> {
  const lab = await Lab.start({ seed: o.seed });
  const problems: string[] = [];
  const label = `per-day limit (${o.variant})`;
  try {
    const limits = o.variant === 'quota' ? { perMinute: 4, windowMs: 1000, perDay: o.perDay, dayWindowMs: 3_600_000 } : { perMinute: 4, windowMs: 1000 };
    const acc = lab.account({ contacts: o.contacts, limits });
    if (o.variant === 'retry_after') {
      lab.emu.control.setFaults([{ kind: '429', every: o.perDay, times: 1, retryAfterSeconds: 7200, paths: ['/v1/*'] }]);
    }
    const config = { page_size: o.pageSize, max_wait_seconds: o.maxWaitSeconds, max_concurrent_requests: 2 };
    // Note when the quota ran out (the perDay-th request), to time the stop.
    let outAt: number | undefined;
    const watch = setInterval(() => {
      if (outAt === undefined && lab.emu.control.stats().total >= o.perDay) outAt = performance.now();
    }, 10);
    let first: ConnectorRun;
    const readFrom = Date.now();
    try {
      first = await lab.read(acc, config, { label });
    } finally {
      clearInterval(watch);
    }
    const exitAt = performance.now();
    const readTo = Date.now();
    const stopMs = outAt === undefined ? Number.NaN : exitAt - outAt;
    problems.push(...protocolProblems(first, label), ...(await airbyteCheck(first.stdout, label)));
    const replica = new MemoryDestination();
    replica.applyAirbyte(first.messages);
    const errors = errorTraces(first.messages);
    if (first.code !== 75 || errors.length === 0) problems.push(`${label}: exit ${String(first.code)} with ${errors.length} error traces`);
    let message = '';
    for (const e of errors) {
      const m = RESETS_AT.exec(e.message);
      if (e.failureType !== 'transient_error' || m === null || !/next sync resumes from the saved state/.test(e.message)) {
        problems.push(`${label}: ${e.stream ?? '-'}: not a clear quota error: ${e.failureType}: ${e.message}`);
        continue;
      }
      message = e.message;
      const resetAt = Date.parse(m[1] ?? '');
      // The reset named must be the service's: an hour (quota) or two (Retry-After) after an answer given during the read
      // (whole seconds on the wire: a second of slack each side).
      const ahead = o.variant === 'quota' ? 3_600_000 : 7_200_000;
      if (resetAt < readFrom + ahead - 1_000 || resetAt > readTo + ahead + 1_000) problems.push(`${label}: reset time ${m[1] ?? ''} is not when the quota resets`);
    }
    // How soon it stopped (stopMs) is a figure of `npm run reliability`, not a check: a busy machine only makes it later.
    const requestsBeforeStop = lab.emu.control.stats().total;
    const limited = streamStatuses(first.messages).filter((s) => s.status === 'RUNNING' && s.quotaReset !== undefined).length;
    if (o.variant === 'quota' && limited === 0) problems.push(`${label}: the runner was never told RATE_LIMITED while the connector waited`);

    // The quota resets (the day window follows the emulator's clock); the next runs complete it.
    lab.emu.control.advanceClock(o.variant === 'quota' ? 3_600_000 : 7_200_000);
    lab.emu.control.clearFaults();
    let runs = 1;
    for (let code: number | null = first.code; code !== 0 && runs < 6; runs++) {
      const run = await lab.read(acc, config, { states: replica.states, label: `${label}, after the reset` });
      problems.push(...protocolProblems(run, `${label}, after the reset`));
      replica.applyAirbyte(run.messages);
      code = run.code;
      if (code !== 0) lab.emu.control.advanceClock(3_600_000);
    }
    const diff = replica.diff(lab.dump(acc.id));
    if (lostOf(diff) + diff.extra > 0) problems.push(`${label}: replica differs after the resume: ${diff.examples.join('; ')}`);
    return {
      variant: o.variant, requestsBeforeStop, stopMs, maxWaitSeconds: o.maxWaitSeconds, message,
      rateLimitedStatuses: limited, runsToComplete: runs, lost: lostOf(diff), problems,
    };
  } finally {
    await lab.close();
  }
}

export interface ConcurrencyResult {
  readonly maxConcurrent: number;
  /** The service's simultaneous-request limit of the key. */
  readonly serviceLimit: number;
  readonly maxInFlight: number;
  readonly requests: number;
  readonly throttled: number;
  readonly faults: number;
  readonly lost: number;
  readonly problems: string[];
}

/**
 * All streams at once, each response held `latencyMs`; optionally slow
 * responses that time out (abandoned requests), or a service whose limit is
 * below max_concurrent_requests (its 429s are waited out, nothing is lost).
 */
export async function runConcurrency(o: { contacts: number; pageSize: number; maxConcurrent: number; serviceLimit?: number; latencyMs: number; slowEvery?: number; seed: number }): Promise<ConcurrencyResult> {
  const lab = await Lab.start({ seed: o.seed, latencyMs: o.latencyMs });
  const problems: string[] = [];
  const serviceLimit = o.serviceLimit ?? o.maxConcurrent;
  const label = `concurrency ${o.maxConcurrent} (service limit ${serviceLimit})`;
  try {
    const acc = lab.account({ contacts: o.contacts, limits: { concurrency: serviceLimit } });
    if (o.slowEvery !== undefined) lab.emu.control.setFaults([{ kind: 'slow', every: o.slowEvery, slowMs: 1500, paths: ['/v1/*'] }]);
    const run = await lab.read(acc, { page_size: o.pageSize, max_concurrent_requests: o.maxConcurrent, request_timeout_seconds: 1 }, { label });
    problems.push(...protocolProblems(run, label), ...(await airbyteCheck(run.stdout, label)));
    if (run.code !== 0) problems.push(`${label}: exit ${String(run.code)}: ${errorTraces(run.messages).map((e) => e.message).join(' | ')}`);
    const replica = new MemoryDestination();
    replica.applyAirbyte(run.messages);
    const diff = replica.diff(lab.dump(acc.id));
    if (lostOf(diff) + diff.extra > 0) problems.push(`${label}: replica differs: ${diff.examples.join('; ')}`);
    const stats = lab.emu.control.stats();
    const maxInFlight = stats.maxInFlightByKey[acc.keyId] ?? 0;
    if (maxInFlight > o.maxConcurrent) problems.push(`${label}: ${maxInFlight} requests in flight at once`);
    const throttled = stats.byStatus['429'] ?? 0;
    if (throttled > 0 && serviceLimit >= o.maxConcurrent) problems.push(`${label}: ${throttled} responses 429 (simultaneous-request limit)`);
    return { maxConcurrent: o.maxConcurrent, serviceLimit, maxInFlight, requests: stats.total, throttled, faults: stats.faults.total, lost: lostOf(diff), problems };
  } finally {
    await lab.close();
  }
}
