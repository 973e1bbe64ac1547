/**
 * The stream reader: pages one list operation from a saved state to
 * `has_more: false`, checks each page against the API contract, hands records
 * to the sink and checkpoints only what is safe.
 *
 * State rules (connector contract, "State"):
 * - `sync_watermark` moves only when a read reaches `has_more: false`, and
 *   then to the watermark that read reported, even an earlier one (the
 *   service's clock went back: keeping the later one would skip for good what
 *   the service stamps in between), with a WARN naming both instants;
 * - inside a read, checkpoints carry `resume: {cursor, sync_watermark}`;
 * - a resume cursor the service rejects (400) restarts the read from the last
 *   complete watermark: nothing is lost, duplicates are allowed.
 */
import { ApiError, type DataReadApi, type ListQuery, type RawPage } from '../client/types.js';
import { ContractError } from '../errors.js';
import type { StreamDefinition } from '../streams.js';
import type { Data, SyncSink } from './events.js';
import { watermarkWentBack, type StreamState } from './state.js';

export interface ReadOptions {
  readonly client: DataReadApi;
  readonly sink: SyncSink;
  readonly pageSize: number;
  /** Where a stream without state starts (start_date); undefined reads the full history. */
  readonly startDate: string | undefined;
  /** Saved state (already empty for full refresh). */
  readonly state: StreamState;
  /** Called with each page's records after the sink took them (tombstones, counters). */
  readonly onPage?: (records: readonly Data[]) => void | Promise<void>;
}

export type ReadOutcome = { readonly kind: 'complete'; readonly state: StreamState } | { readonly kind: 'skipped' };

function checkRecords(stream: StreamDefinition, data: readonly unknown[]): Data[] {
  for (let i = 0; i < data.length; i++) {
    const rec = data[i];
    if (typeof rec !== 'object' || rec === null || Array.isArray(rec)) {
      throw new ContractError(`${stream.path} returned an item that is not an object at data[${i}].`);
    }
    const id = (rec as Data)[stream.primaryKey];
    if (typeof id !== 'string' || id.length === 0) {
      throw new ContractError(`${stream.path} returned a record without "${stream.primaryKey}" at data[${i}].`);
    }
  }
  return data as Data[];
}

/** Start a request now and keep its failure until someone awaits it (no unhandled rejection). */
function prefetch(client: DataReadApi, path: string, query: ListQuery): Promise<RawPage> {
  const pending = client.list(path, query);
  pending.catch(() => undefined);
  return pending;
}

export async function readStream(stream: StreamDefinition, options: ReadOptions): Promise<ReadOutcome> {
  const { client, sink, pageSize } = options;
  const complete = options.state.sync_watermark;
  let resume = options.state.resume;

  // Each pass is one read; a second pass happens only when a resume cursor is rejected.
  for (;;) {
    // A stream without a cursor (pipeline_stages) takes no time filter: the service refuses one (400).
    const first: ListQuery = resume
      ? { cursor: resume.cursor, limit: pageSize }
      : { updated_since: stream.cursorField === null ? undefined : (complete ?? options.startDate), limit: pageSize };
    let expectedWatermark = resume?.sync_watermark;
    const seenCursors = new Set<string>(resume ? [resume.cursor] : []);
    let pending = prefetch(client, stream.path, first);
    let firstPage = true;

    for (;;) {
      let page: RawPage;
      try {
        page = await pending;
      } catch (err) {
        if (firstPage && resume && err instanceof ApiError && err.code === 'bad_request') {
          await sink.log(
            'WARN',
            `${stream.name}: the service rejected the saved resume cursor (${err.message}); ` +
              `restarting the read from ${complete ? `the last complete watermark ${complete}` : 'the start'}. ` +
              'Records may repeat; none are lost.',
          );
          resume = undefined;
          break;
        }
        if (firstPage && stream.optional && err instanceof ApiError && err.code === 'not_found') {
          await sink.log('WARN', `${stream.name}: the service does not offer ${stream.path} (404); stream skipped.`);
          return { kind: 'skipped' };
        }
        throw err;
      }

      if (expectedWatermark === undefined) expectedWatermark = page.sync_watermark;
      else if (page.sync_watermark !== expectedWatermark) {
        throw new ContractError(
          `${stream.path} changed sync_watermark within one read (${expectedWatermark} then ${page.sync_watermark}); ` +
            'the state was not moved.',
        );
      }
      const next = page.next_cursor;
      if (page.has_more) {
        if (typeof next !== 'string' || next.length === 0) {
          throw new ContractError(`${stream.path} answered has_more: true without a next_cursor; the state was not moved.`);
        }
        if (seenCursors.has(next)) {
          throw new ContractError(`${stream.path} returned a next_cursor it had already returned in this read (a loop); the state was not moved.`);
        }
        seenCursors.add(next);
      }
      const records = checkRecords(stream, page.data);
      // Ask for the next page while this one is written out.
      if (page.has_more && next) pending = prefetch(client, stream.path, { cursor: next, limit: pageSize });

      if (firstPage) await sink.streamRunning(stream);
      firstPage = false;
      if (records.length > 0) {
        await sink.records(stream, records, Date.now());
        if (options.onPage) await options.onPage(records);
      }

      if (page.has_more && next) {
        const checkpoint: StreamState = { resume: { cursor: next, sync_watermark: expectedWatermark } };
        if (complete !== undefined) checkpoint.sync_watermark = complete;
        await sink.state(stream, checkpoint);
        continue;
      }
      const done: StreamState = { sync_watermark: expectedWatermark };
      const back = watermarkWentBack(stream.name, complete, expectedWatermark);
      if (back) await sink.log('WARN', back);
      await sink.state(stream, done);
      return { kind: 'complete', state: done };
    }
  }
}
