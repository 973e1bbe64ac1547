/**
 * A service that breaks its own contract. Each breach must end the stream in
 * one clear system_error naming what the service did (how long it took is a
 * figure of `npm run reliability`, not a check),
 * with no state moved past unread data: after the breach is gone, the next run
 * from the states written must make the replica equal the dump. An unknown
 * object_type in deletions (with tombstones on) is not an error: it is reported
 * once and no tombstone is guessed for it.
 */
import type { FaultRule } from 'data-read-emulator';
import { Lab, airbyteCheck, errorTraces, inPool, logs, protocolProblems, streamStatuses } from './harness.js';
import { MemoryDestination, lostOf } from '../test/helpers/destination.js';

export interface ContractCase {
  /** What the service does. */
  readonly name: string;
  readonly rule: FaultRule;
  /** The error message must match (it names what the service did); undefined: no error expected. */
  readonly error?: RegExp;
  readonly tombstones?: boolean;
}

const CONTACTS = ['/v1/contacts'];

export const CONTRACT_CASES: readonly ContractCase[] = [
  { name: 'has_more true with a null cursor', rule: { kind: 'null_cursor', every: 2, times: 1, paths: CONTACTS }, error: /answered has_more: true without a next_cursor/ },
  { name: 'a watermark that changes within a read', rule: { kind: 'watermark_shift', every: 2, times: 1, paths: CONTACTS }, error: /changed sync_watermark within one read \(\S+ then \S+\)/ },
  { name: 'a cursor that repeats (a loop)', rule: { kind: 'cursor_loop', every: 2, times: 1, paths: CONTACTS }, error: /returned a next_cursor it had already returned in this read \(a loop\)/ },
  { name: 'a page that is not JSON after every retry', rule: { kind: 'not_json', probability: 1, paths: CONTACTS }, error: /GET \/v1\/contacts answered HTTP 200 with a body that is not the JSON promised.*content-type application\/json/ },
  { name: 'records without id', rule: { kind: 'missing_id', every: 2, times: 1, paths: CONTACTS }, error: /returned a record without "id" at data\[0\]/ },
  { name: 'a 200 with an HTML body', rule: { kind: 'html', probability: 1, paths: CONTACTS }, error: /HTTP 200 with a body that is not the JSON promised.*content-type text\/html.*beginning "<!DOCTYPE html>/ },
  { name: 'an unknown object_type in deletions (tombstones on)', rule: { kind: 'unknown_object_type', every: 1, times: 1, paths: ['/v1/deletions'] }, tombstones: true },
];

export interface ContractResult {
  readonly name: string;
  /** failure_type of the error, or 'none'. */
  readonly outcome: string;
  readonly message: string;
  readonly ms: number;
  readonly faults: number;
  /** Streams other than the broken one that still completed. */
  readonly othersComplete: boolean;
  readonly lost: number;
  readonly problems: string[];
}

export async function runContractCase(c: ContractCase, seed: number): Promise<ContractResult> {
  const lab = await Lab.start({ seed });
  const problems: string[] = [];
  const label = `contract: ${c.name}`;
  try {
    const acc = lab.account({ contacts: 80 });
    if (c.tombstones === true) lab.emu.control.mutate(acc.id, { op: 'delete_contacts', count: 3 });
    lab.emu.control.setFaults([c.rule]);
    // No case is about slowness: a timeout long enough that a busy machine does not turn a slow answer into a retry
    // (which would move the breach to another request, or spend the one retry).
    const config = { page_size: 20, max_retries: 1, request_timeout_seconds: 15, deletions_as_tombstones: c.tombstones === true };
    const run = await lab.read(acc, config, { label });
    const faults = lab.emu.control.faults().injected.total;
    if (faults === 0) problems.push(`${label}: the emulator injected nothing`);
    problems.push(...protocolProblems(run, label), ...(await airbyteCheck(run.stdout, label)));
    if (/^\s+at /m.test(run.stdout.split('\n').filter((l) => !l.includes('"stack_trace"')).join('\n'))) problems.push(`${label}: a stack trace outside TRACE stack_trace`);
    const replica = new MemoryDestination();
    replica.applyAirbyte(run.messages);
    const errors = errorTraces(run.messages);
    const final = new Map(streamStatuses(run.messages).map((s) => [s.stream, s.status]));
    const broken = c.rule.paths?.[0]?.replace('/v1/', '') ?? '';
    const othersComplete = [...final].every(([stream, status]) => stream === broken || status === 'COMPLETE');
    if (!othersComplete) problems.push(`${label}: other streams did not complete: ${JSON.stringify([...final])}`);
    let message = '';
    let tampered: { id: string; objectId: string } | undefined;
    if (c.error !== undefined) {
      const e = errors[0];
      if (run.code !== 70 || errors.length !== 1 || e === undefined) problems.push(`${label}: exit ${String(run.code)} with ${errors.length} error traces (one expected)`);
      else {
        message = e.message;
        if (e.failureType !== 'system_error') problems.push(`${label}: ${e.failureType}, not system_error`);
        if (e.stream !== broken) problems.push(`${label}: the error names stream ${String(e.stream)}`);
        if (!/^The Data-Read service broke its API contract: /.test(e.message) || !c.error.test(e.message)) problems.push(`${label}: unclear message: ${e.message}`);
      }
      // The watermark of the broken stream must not have moved (this is its first sync).
      const state = replica.states.get(broken) as { sync_watermark?: string } | undefined;
      if (state?.sync_watermark !== undefined) problems.push(`${label}: the state of ${broken} moved to ${state.sync_watermark}`);
    } else {
      if (run.code !== 0 || errors.length > 0) problems.push(`${label}: exit ${String(run.code)}, errors: ${errors.map((e) => e.message).join(' | ')}`);
      const unknown = run.messages.filter((m) => m.type === 'RECORD' && (m.record as { stream: string; data: { object_type?: unknown } }).stream === 'deletions')
        .map((m) => (m.record as { data: { id: string; object_type?: unknown; object_id: string } }).data)
        .filter((d) => d.object_type === 'widget');
      const warnings = logs(run.messages, 'WARN').filter((w) => w.includes('"widget"'));
      message = warnings[0] ?? '';
      if (unknown.length !== 1) problems.push(`${label}: ${unknown.length} deletion records with the unknown type`);
      if (warnings.length !== 1) problems.push(`${label}: ${warnings.length} warnings name the unknown type (one expected)`);
      const first = unknown[0];
      if (first !== undefined) {
        tampered = { id: first.id, objectId: first.object_id };
        const guessed = run.messages.some((m) => m.type === 'RECORD' && ['contacts', 'conversations'].includes((m.record as { stream: string }).stream) &&
          (m.record as { data: { id: string; _ab_cdc_deleted_at?: unknown } }).data.id === first.object_id);
        if (guessed) problems.push(`${label}: a tombstone was guessed for the unknown type`);
      }
    }
    // The breach is gone: the next run continues from the states written and must complete exactly.
    lab.emu.control.clearFaults();
    const next = await lab.read(acc, config, { states: replica.states, label: `${label}, next run` });
    problems.push(...protocolProblems(next, `${label}, next run`));
    if (next.code !== 0) problems.push(`${label}, next run: exit ${String(next.code)}`);
    replica.applyAirbyte(next.messages);
    const diff = replica.diff(lab.dump(acc.id), (stream, id) => tampered !== undefined && stream === 'deletions' && id === tampered.id);
    if (lostOf(diff) + diff.extra > 0) problems.push(`${label}: replica differs after the next run: ${diff.examples.join('; ')}`);
    return {
      name: c.name,
      outcome: errors[0]?.failureType ?? 'none',
      message,
      ms: run.ms,
      faults,
      othersComplete,
      lost: lostOf(diff),
      problems,
    };
  } finally {
    await lab.close();
  }
}

export function runContractCases(cases: readonly ContractCase[], seed: number, parallel: number): Promise<ContractResult[]> {
  return inPool(cases, parallel, (c, i) => runContractCase(c, seed + i));
}
