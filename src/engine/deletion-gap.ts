/**
 * A gap in the deletion log (connector contract, "Long pauses and full
 * tables"): the service keeps deletion records for a number of days only, so
 * when the log's saved watermark is older than that (syncs paused for months),
 * or the log has no state while a stream it deletes from has some, the rows
 * deleted meanwhile can only be found by reading those streams in full.
 *
 * The age is measured on the service's clock (a read's `sync_watermark`),
 * never the machine's: a machine whose clock differs from the service's
 * would see no gap, or one that is not there.
 */
import { andList } from '../errors.js';
import { LOOK_BACK_MS, parseInstant } from '../time.js';
import { deletionTargets, streamList, type DeletionLogStream } from '../streams.js';
import type { StreamState } from './state.js';

const DAY_MS = 24 * 3600 * 1000;
/**
 * How much shorter than its days times 24 hours the retention may be: days
 * counted in a time zone with daylight saving time lose an hour across a
 * change to summer time.
 */
const SHORT_DAY_MS = 3600 * 1000;

/**
 * The age of a saved watermark up to which the log surely still holds every
 * deletion a read from it takes (the retention, less the short day and the
 * look-back: a read takes deletions from LOOK_BACK_MS before the saved
 * watermark, and those must still be in the log too): older is a gap.
 */
function safeAgeMs(log: DeletionLogStream): number {
  return log.deletionLog.retentionDays * DAY_MS - SHORT_DAY_MS - LOOK_BACK_MS;
}

export interface DeletionGap {
  /** The deletion log's saved watermark; undefined when it has no state. */
  readonly since: string | undefined;
  /** The service's now that measured it (a read's sync_watermark); undefined when the log has no state. */
  readonly serviceNow: string | undefined;
  /** Streams the log deletes from whose state the gap concerns, when the log has no state. */
  readonly streamsWithState: readonly string[];
  readonly retentionDays: number;
}

/**
 * The gap when the deletion log has no state at all (neither a watermark nor
 * a read under way) while a stream it deletes from (`withState`: those that
 * have state) does; undefined otherwise.
 */
export function gapWithoutLogState(log: DeletionLogStream, logState: StreamState, withState: readonly string[]): DeletionGap | undefined {
  if (logState.sync_watermark !== undefined || logState.resume !== undefined || withState.length === 0) return undefined;
  return { since: undefined, serviceNow: undefined, streamsWithState: withState, retentionDays: log.deletionLog.retentionDays };
}

/** The log's saved watermark the gap is measured from: its last complete read's, or that of a first read under way. */
export function logWatermark(logState: StreamState): string | undefined {
  return logState.sync_watermark ?? logState.resume?.sync_watermark;
}

/**
 * The gap when the saved watermark `since` is older than the retention on the
 * service's clock (`serviceNow`), or so close to it that the deletions a read
 * from it takes (from 5 minutes before it) may be gone; undefined otherwise.
 */
export function gapOnServiceClock(log: DeletionLogStream, since: string | undefined, serviceNow: string): DeletionGap | undefined {
  if (since === undefined) return undefined;
  const age = parseInstant(serviceNow) - parseInstant(since);
  if (!(age > safeAgeMs(log))) return undefined;
  return { since, serviceNow, streamsWithState: [], retentionDays: log.deletionLog.retentionDays };
}

/** The gap in words: what is missing and why (without the advice). */
export function describeGap(log: DeletionLogStream, gap: DeletionGap): string {
  if (gap.since === undefined || gap.serviceNow === undefined) {
    return (
      `${log.name} has no saved state while ${andList(gap.streamsWithState)} ${gap.streamsWithState.length === 1 ? 'has' : 'have'}: ` +
      `the service keeps deletions for ${gap.retentionDays} days only, so objects deleted before that since their last sync cannot be told apart.`
    );
  }
  const age = parseInstant(gap.serviceNow) - parseInstant(gap.since);
  const days = Math.floor(age / DAY_MS);
  const retention = gap.retentionDays * DAY_MS;
  const kept = new Date(parseInstant(gap.serviceNow) - retention).toISOString();
  const said = `${log.name}: the saved watermark ${gap.since} is ${days} days old on the service's clock (its now: ${gap.serviceNow}), `;
  if (age > retention) return `${said}but the service keeps deletions for ${gap.retentionDays} days only: deletions between ${gap.since} and ${kept} are gone.`;
  return (
    `${said}at the edge of the ${gap.retentionDays} days the service keeps deletions: those a read takes from 5 minutes before the watermark ` +
    'may be gone already (its days may be counted in a time zone with daylight saving time, one of them an hour short).'
  );
}

/** The advice when a face says nothing of its own: a full refresh of the streams the log deletes from. */
export function defaultGapAdvice(): string {
  return `Run a full refresh of ${streamList(deletionTargets())} to drop rows deleted meanwhile.`;
}
