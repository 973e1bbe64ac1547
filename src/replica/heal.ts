/**
 * Healing the replica after a pause longer than the service keeps deletions
 * (connector contract, "Long pauses and full tables"). When the deletion
 * log's saved watermark is older than its retention on the service's clock,
 * or the log has no state while a stream it deletes from has some, the rows
 * deleted in the gap can only be found by reading those streams in full:
 * `replicate` does that first, and each read's last checkpoint removes the
 * rows it did not return, in the transaction that saves its state
 * (table-writer.ts). The deletion log is read only afterwards, so a run
 * stopped before the heal completed leaves its old state: the next run finds
 * the gap again and heals again.
 *
 * That next heal continues each read the stopped one left under way
 * (planHeal), from its resume cursor and keeping the ids its committed
 * checkpoints marked, so that a heal longer than the runs may last still
 * ends. A read is continued only when all of these hold: its saved state is
 * a full read under way (a resume cursor, no watermark: the heal reads from
 * no state; a read stopped in its catch-up read leaves that too, reader.ts);
 * the store holds its marks (a first read of a new replica, also stopped
 * with that state, has none: it is read again from the start); and the
 * watermark of its resume cursor (the one it began with; a catch-up read's,
 * later by the time the read before it took) is within the log's retention
 * on the service's clock, so that the log, read after the heal, still holds
 * every deletion since then (a row marked then deleted is removed by it).
 * The log is then held to that watermark (SyncRequest.deletionGapSince). The
 * rows changed since then have moved past the read's end: the continued read
 * reads again from that watermark after its end (reader.ts, catchUp), so
 * that they are marked before its sweep. A resume cursor the service
 * refuses restarts the read, whose marks then start over
 * (ReplicaSink.readRestarted).
 */
import { describeGap, gapOnServiceClock, gapWithoutLogState, logWatermark, type DeletionGap } from '../engine/deletion-gap.js';
import type { StreamState } from '../engine/state.js';
import { parseInstant } from '../time.js';
import { deletionTargets, findDeletionLog, type DeletionLogStream, type StreamDefinition } from '../streams.js';

interface Heal {
  readonly log: DeletionLogStream;
  readonly gap: DeletionGap;
  /** The streams read in full. */
  readonly streams: readonly StreamDefinition[];
}

/** Asks the service for its now (a one-record page of `stream` from `since`). */
type ServiceNow = (stream: StreamDefinition, since: string | undefined) => Promise<string>;

const hasState = (state: StreamState | undefined): boolean => state !== undefined && Object.keys(state).length > 0;

/**
 * The heal the saved states call for, or undefined. The service is asked for
 * its now (one request) only when the log and a stream it deletes from both
 * have state.
 */
export async function findHeal(states: ReadonlyMap<string, StreamState>, serviceNow: ServiceNow): Promise<Heal | undefined> {
  const log = findDeletionLog();
  if (!log) return undefined;
  const streams = deletionTargets();
  const withState = streams.filter((s) => hasState(states.get(s.name))).map((s) => s.name);
  if (withState.length === 0) return undefined;
  const logState = states.get(log.name) ?? {};
  const since = logWatermark(logState);
  const gap = gapWithoutLogState(log, logState, withState) ?? gapOnServiceClock(log, since, await serviceNow(log, since));
  return gap ? { log, gap, streams } : undefined;
}

/** How the heal reads its streams: each from no state, or continuing the read a stopped run left under way. */
interface HealPlan {
  /** The states the heal starts from: a continued read's saved state; none for the others. */
  readonly states: Map<string, StreamState>;
  /** The streams whose read is continued, with the watermark it began with. */
  readonly continued: ReadonlyMap<string, string>;
  /** Reads under way that are read again from the start (their watermark past the retention), with that watermark. */
  readonly tooOld: ReadonlyMap<string, string>;
  /** The earliest watermark of a continued read: the log must hold the deletions since then; undefined when none is continued. */
  readonly since: string | undefined;
}

/**
 * Which of the heal's reads continue (see the top of this file). `marked`
 * asks the store whether a stream's marks are there; `serviceNow` is asked
 * (one request) only when a read could continue and the gap did not measure
 * the service's now already.
 */
export async function planHeal(
  heal: Heal,
  states: ReadonlyMap<string, StreamState>,
  marked: (stream: string) => Promise<boolean>,
  serviceNow: ServiceNow,
): Promise<HealPlan> {
  const plan = { states: new Map<string, StreamState>(), continued: new Map<string, string>(), tooOld: new Map<string, string>() };
  let now = heal.gap.serviceNow;
  for (const stream of heal.streams) {
    const state = states.get(stream.name);
    const began = state?.resume?.sync_watermark;
    if (state === undefined || began === undefined || state.sync_watermark !== undefined || !(await marked(stream.name))) continue;
    now ??= await serviceNow(heal.log, began);
    if (gapOnServiceClock(heal.log, began, now) !== undefined) {
      plan.tooOld.set(stream.name, began);
      continue;
    }
    plan.states.set(stream.name, state);
    plan.continued.set(stream.name, began);
  }
  const since = [...plan.continued.values()].sort((a, b) => parseInstant(a) - parseInstant(b))[0];
  return { ...plan, since };
}

/** The INFO that announces the heal (and which reads it continues). */
export function healStarting(heal: Heal, plan?: HealPlan): string {
  const said = [`${describeGap(heal.log, heal.gap)} Reading ${names(heal.streams)} in full to remove the rows deleted meanwhile.`];
  for (const [stream, began] of plan?.continued ?? []) {
    said.push(`Continuing the full read of ${stream} that a stopped run began (watermark ${began}), keeping what it read.`);
  }
  for (const [stream, began] of plan?.tooOld ?? []) {
    said.push(
      `The full read of ${stream} that a stopped run began (watermark ${began}) is older than the service's ${heal.log.deletionLog.retentionDays}-day ` +
        'retention of deletions: read again from the start.',
    );
  }
  return said.join(' ');
}

/** The one WARN after the heal: the gap and how many rows went. */
export function healDone(heal: Heal, removed: ReadonlyMap<string, number>): string {
  const total = [...removed.values()].reduce((n, k) => n + k, 0);
  const each = heal.streams.map((s) => `${s.name} ${removed.get(s.name) ?? 0}`).join(', ');
  return (
    `${describeGap(heal.log, heal.gap)} The replica read ${names(heal.streams)} in full and removed ` +
    `${total} row(s) the service no longer has (${each}).`
  );
}

const names = (streams: readonly StreamDefinition[]): string => streams.map((s) => s.name).join(' and ');
