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
import { StateRules } from './state-rules.js';
import type { Data, SyncSink } from './sync-sink.js';
import { Paginator, ResumeMismatch, type Page } from './paginator.js';
import type { ReadPosition, StreamState } from './state.js';

export interface ReadOptions {
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
}

export type ReadOutcome = { readonly kind: 'complete'; readonly state: StreamState } | { readonly kind: 'skipped' };

export async function readStream(stream: StreamDefinition, options: ReadOptions): Promise<ReadOutcome> {
  const { client, sink, pageSize } = options;
  const rules = new StateRules(stream, options.state, options.startDate);
  let start = rules.start();

  for (;;) {
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

    await sink.streamRunning(stream);
    if (options.onWatermark) await options.onWatermark(page.watermark, start.cursor !== undefined);
    for (;;) {
      if (page.records.length > 0) {
        await sink.records(stream, page.records, Date.now());
        if (options.onPage) {
          await options.onPage(page.records, page.next === null ? { sync_watermark: page.watermark } : { cursor: page.next, sync_watermark: page.watermark });
        }
      }
      if (page.next === null) {
        // The read reached has_more: false: its watermark is saved.
        const { state, warning } = rules.complete(page.watermark);
        if (warning) await sink.log('WARN', warning);
        await sink.state(stream, state);
        return { kind: 'complete', state };
      }
      // Inside the read: a checkpoint to resume from, the complete watermark untouched.
      await sink.state(stream, rules.midRead(page.next, page.watermark));
      page = await pages.next();
    }
  }
}
