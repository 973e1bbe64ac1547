/**
 * The stream reader: one list operation read from a saved state to
 * `has_more: false`. The paginator follows the cursors and checks each page
 * against the API contract; the state rules (state-rules.ts) say what state may be written
 * when; this function hands pages to the sink in between and does with a
 * failed first answer what the failure policy's row says (client/policy.ts:
 * a rejected resume cursor restarts the read, an optional path the service
 * does not offer is skipped).
 */
import { ApiError } from '../client/api-error.js';
import { readAction } from '../client/policy.js';
import type { DataReadApi } from '../client/types.js';
import type { StreamDefinition } from '../streams.js';
import { isLaterInstant, parseInstant } from '../time.js';
import { StateRules } from './state-rules.js';
import type { Data, SyncSink } from './sync-sink.js';
import { Paginator, ResumeMismatch, type Page } from './paginator.js';
import type { ReadPosition, StreamState } from './state.js';

interface ReadOptions {
  readonly client: DataReadApi;
  /** Where pages and checkpoints go: the record pipeline (pipeline.ts). */
  readonly sink: SyncSink;
  readonly pageSize: number;
  /** Where a stream without state starts (start_date); undefined reads the full history. */
  readonly startDate: string | undefined;
  /** Saved state (already empty for full refresh). */
  readonly state: StreamState;
  /**
   * Called with each page's records after the sink took them, before the
   * page's checkpoint (the deletion log's tombstones); `through` is where the
   * read goes on from once that checkpoint is saved.
   */
  readonly onPage?: (records: readonly Data[], through: ReadPosition) => void | Promise<void>;
  /**
   * Called with the read's sync_watermark before its first records reach the
   * sink; `resumed` when the read continues a saved one from its cursor (the
   * watermark is then that older read's, not the service's now).
   */
  readonly onWatermark?: (watermark: string, resumed: boolean) => void | Promise<void>;
  /**
   * The stream is read in full (a full refresh, or a first read, of a stream with a cursor). A
   * record changed while such a read pages through leaves the pages still to
   * come for a time after the read's watermark, so the read never returns it:
   * a copy made of that read alone lacks it (a Singer target's
   * ACTIVATE_VERSION even drops its row). After the last page the stream is
   * read again from the watermark, passing on only the records changed after
   * it, until a read passes none (nothing moved during the read before it:
   * the service's look-back of 5 minutes may still fill pages with records
   * read already, after a bulk load), a read takes one page (a page is served
   * at once: nothing moves out of it while it is read), or CATCH_UP_READS such
   * reads were made (the next sync then brings the rest, as it brings any
   * later change).
   */
  readonly catchUp?: boolean;
}

/** Reads again from the watermark after a full read (ReadOptions.catchUp), at most. */
export const CATCH_UP_READS = 3;

/** The records whose cursor is later than `after`; a record whose cursor is not an instant is kept (at least once). */
function changedAfter(stream: StreamDefinition, records: readonly Data[], after: string): readonly Data[] {
  const field = stream.cursorField;
  if (field === null) return records;
  return records.filter((record) => {
    const at = record[field];
    return !(typeof at === 'string' && !Number.isNaN(parseInstant(at)) && !isLaterInstant(at, after));
  });
}

type ReadOutcome = { readonly kind: 'complete'; readonly state: StreamState } | { readonly kind: 'skipped' };

export async function readStream(stream: StreamDefinition, options: ReadOptions): Promise<ReadOutcome> {
  const { client, sink, pageSize } = options;
  let rules = new StateRules(stream, options.state, options.startDate);
  let start = rules.start();
  let catchUps = 0;
  /** In a catch-up read (ReadOptions.catchUp): the watermark of the read before it, which returned everything up to it. */
  let after: string | undefined;

  read: for (;;) {
    const pages = new Paginator(client, stream, start, pageSize);
    let page: Page;
    try {
      page = await pages.next();
    } catch (err) {
      if (!(err instanceof ResumeMismatch || err instanceof ApiError)) throw err;
      // A saved resume cursor that is not the read its state names restarts the read; a service's error does what
      // the failure policy says a read does with it (client/policy.ts): restart, ignore, or fail.
      const mismatch = err instanceof ResumeMismatch;
      const action = mismatch ? 'restart' : readAction(err.code, { resumeCursor: start.cursor !== undefined, optionalStream: stream.optional });
      if (action === 'restart') {
        // Nothing of the read was passed on yet: it starts again from the last complete watermark.
        const restart = mismatch ? rules.restart(err.message, 'the saved resume cursor is not the read its state names') : rules.restart(err.message);
        await sink.log('WARN', restart.warning);
        await sink.readRestarted?.(stream);
        start = restart.start;
        continue;
      }
      if (action === 'ignore') {
        await sink.log('WARN', `${stream.name}: the service does not offer ${stream.path} (404); stream skipped.`);
        return { kind: 'skipped' };
      }
      throw err;
    }

    if (after === undefined) {
      await sink.streamRunning(stream);
      if (options.onWatermark) await options.onWatermark(page.watermark, start.cursor !== undefined);
    }
    let passed = 0;
    for (let pagesRead = 1; ; pagesRead++) {
      const records = after === undefined ? page.records : changedAfter(stream, page.records, after);
      passed += records.length;
      if (records.length > 0) {
        await sink.records(stream, records, Date.now());
        if (options.onPage) {
          await options.onPage(records, page.next === null ? { sync_watermark: page.watermark } : { cursor: page.next, sync_watermark: page.watermark });
        }
      }
      if (page.next === null) {
        if (options.catchUp === true && stream.cursorField !== null && pagesRead > 1 && passed > 0 && catchUps < CATCH_UP_READS) {
          // Records that moved past this read's end while it paged are after its watermark: read from there.
          catchUps += 1;
          after = page.watermark;
          rules = new StateRules(stream, { sync_watermark: page.watermark }, options.startDate);
          start = rules.start();
          continue read;
        }
        // The read reached has_more: false: its watermark is saved.
        const { state, warning } = rules.complete(page.watermark);
        if (warning) await sink.log('WARN', warning);
        await sink.state(stream, state);
        return { kind: 'complete', state };
      }
      // Inside the read: a checkpoint to resume from, the complete watermark untouched. A catch-up read checkpoints
      // only the pages it passed records of (most of its pages pass none: one STATE each would say nothing new).
      if (after === undefined || records.length > 0) await sink.state(stream, rules.midRead(page.next, page.watermark));
      page = await pages.next();
    }
  }
}
