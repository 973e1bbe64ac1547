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
 */
import { describeGap, gapOnServiceClock, gapWithoutLogState, logWatermark, type DeletionGap } from '../engine/deletion-gap.js';
import type { StreamState } from '../engine/state.js';
import { deletionTargets, findDeletionLog, type DeletionLogStream, type StreamDefinition } from '../streams.js';

export interface Heal {
  readonly log: DeletionLogStream;
  readonly gap: DeletionGap;
  /** The streams read in full. */
  readonly streams: readonly StreamDefinition[];
}

/** Asks the service for its now (a one-record page of `stream` from `since`). */
export type ServiceNow = (stream: StreamDefinition, since: string | undefined) => Promise<string>;

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

/** The INFO that announces the heal. */
export function healStarting(heal: Heal): string {
  return `${describeGap(heal.log, heal.gap)} Reading ${names(heal.streams)} in full to remove the rows deleted meanwhile.`;
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
