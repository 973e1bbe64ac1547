/**
 * The fault matrix: a full sync, then rounds of changes, deletions and
 * incremental syncs, while the emulator spoils a share of all requests with
 * one kind of transport fault. After every round the replica must equal the
 * emulator's dump; a run may instead stop with a clear transient error, and
 * then the next run, from the state it left, must complete the round.
 */
import type { FaultRule } from 'data-read-emulator';
import { Lab, airbyteCheck, errorTraces, protocolProblems, runSummary } from './harness.js';
import { MemoryDestination, lostOf } from '../test/helpers/destination.js';

export const TRANSPORT_KINDS = ['500', '503', '429', 'reset', 'slow', 'truncated'] as const;
export type TransportKind = (typeof TRANSPORT_KINDS)[number];

export interface FaultScenario {
  readonly kind: TransportKind;
  /** Share of requests spoiled: seeded probability, or every Nth request. */
  readonly rate: { readonly probability: number } | { readonly every: number };
  readonly contacts: number;
  readonly pageSize: number;
  /** Rounds of changes after the full sync. */
  readonly rounds: number;
  readonly maxRetries: number;
  /** Runs allowed per round beyond the first. */
  readonly maxReruns: number;
  readonly seed: number;
  /** deletions_as_tombstones on, and a destination that deletes rows by tombstones only. */
  readonly tombstones?: boolean;
}

export interface FaultResult {
  readonly kind: TransportKind;
  readonly rate: string;
  readonly tombstones: boolean;
  /** Connector runs. */
  readonly syncs: number;
  /** Runs that had to continue a round after a transient error. */
  readonly reruns: number;
  readonly requests: number;
  readonly faults: number;
  readonly retries: number;
  readonly lost: number;
  /** Rows the replica kept although the service deleted them. */
  readonly extra: number;
  readonly problems: string[];
  readonly ms: number;
}

export function rateLabel(rate: FaultScenario['rate']): string {
  return 'probability' in rate ? `${Math.round(rate.probability * 100)}%` : `every ${rate.every}`;
}

/** A transient error says what failed and that the next sync resumes. */
export const CLEAR_TRANSIENT = /(did not succeed in \d+ attempts.*last cause: .+|resets at \d{4}-\d\d-\d\dT[\d:.]+Z.*)the next sync resumes from the saved state/i;

export async function runFaultScenario(s: FaultScenario): Promise<FaultResult> {
  const started = performance.now();
  const label = `${s.kind} ${rateLabel(s.rate)}`;
  const lab = await Lab.start({ seed: s.seed });
  const problems: string[] = [];
  let syncs = 0;
  let reruns = 0;
  let requests = 0;
  let retries = 0;
  let lost = 0;
  let extra = 0;
  try {
    const acc = lab.account({ contacts: s.contacts });
    const rule: FaultRule = { kind: s.kind, ...s.rate, paths: ['/v1/*'], retryAfterSeconds: 1, slowMs: 1500 };
    lab.emu.control.setFaults([rule]);
    const config = { page_size: s.pageSize, request_timeout_seconds: 1, max_retries: s.maxRetries, max_wait_seconds: 30, deletions_as_tombstones: s.tombstones === true };
    const replica = new MemoryDestination(s.tombstones === true ? 'tombstones' : 'deletions');
    for (let round = 0; round <= s.rounds; round++) {
      if (round > 0) lab.change(acc.id);
      let complete = false;
      for (let attempt = 0; attempt <= s.maxReruns && !complete; attempt++) {
        const where = `${label}, round ${round}, run ${attempt + 1}`;
        const run = await lab.read(acc, config, { states: replica.states, label: where });
        syncs += 1;
        if (attempt > 0) reruns += 1;
        const summary = runSummary(run.messages);
        requests += summary?.requests ?? 0;
        retries += summary?.retries ?? 0;
        problems.push(...protocolProblems(run, where), ...(await airbyteCheck(run.stdout, where)));
        replica.applyAirbyte(run.messages);
        if (run.code === 0) {
          complete = true;
          continue;
        }
        const errors = errorTraces(run.messages);
        if (run.code !== 75 || errors.length === 0) {
          problems.push(`${where}: exit ${String(run.code)} with ${errors.length} error traces; stderr: ${run.stderr.slice(-300)}`);
        }
        for (const e of errors) {
          if (e.failureType !== 'transient_error' || !CLEAR_TRANSIENT.test(e.message)) {
            problems.push(`${where}: ${e.stream ?? '-'}: not a clear transient error: ${e.failureType}: ${e.message}`);
          }
        }
      }
      if (!complete) problems.push(`${label}, round ${round}: not complete after ${s.maxReruns + 1} runs`);
      const diff = replica.diff(lab.dump(acc.id));
      lost += lostOf(diff);
      extra += diff.extra;
      if (lostOf(diff) + diff.extra > 0) problems.push(`${label}, round ${round}: replica differs from the dump: ${diff.examples.join('; ')}`);
    }
    return {
      kind: s.kind, rate: rateLabel(s.rate), tombstones: s.tombstones === true, syncs, reruns, requests,
      faults: lab.emu.control.faults().injected.total,
      retries, lost, extra, problems, ms: performance.now() - started,
    };
  } finally {
    await lab.close();
  }
}
