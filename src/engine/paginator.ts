/**
 * Following one list operation's cursors, page by page, and holding each page
 * to the API's contract before anything of it is passed on: records are
 * objects with their primary key; `has_more: true` comes with a cursor never
 * seen before in this read, and the read makes progress (no loop, see
 * ReadProgress); one read has one `sync_watermark`. The next page is requested
 * while the caller writes the current one out.
 */
import { createHash } from 'node:crypto';
import type { DataReadApi, ListQuery, RawPage } from '../client/types.js';
import { ContractError } from '../errors.js';
import { isRawNumber } from '../exact-json.js';
import type { StreamDefinition } from '../streams.js';
import { parseInstant } from '../time.js';
import type { Data } from './sync-sink.js';

/**
 * The first page of a resumed read reports another instant than the
 * sync_watermark the state saved with its cursor (a state edited, or written
 * in another form): the pages before the cursor cannot be known to belong to
 * that read, so the read starts again instead (reader.ts).
 */
export class ResumeMismatch extends Error {
  constructor(saved: string, reported: string) {
    super(`the state saved it with sync_watermark ${saved}, the service's read reports ${reported}`);
    this.name = 'ResumeMismatch';
  }
}

/** Where a read starts: a resume cursor (with the watermark of the read it belongs to), or a time filter. */
export type PageStart =
  | { readonly cursor: string; readonly watermark: string }
  | { readonly cursor?: undefined; readonly updatedSince: string | undefined };

export interface Page {
  readonly records: readonly Data[];
  /** The cursor of the next page; null on the last page (`has_more: false`). */
  readonly next: string | null;
  /** The read's sync_watermark (the same on every page). */
  readonly watermark: string;
}

function checkRecords(stream: StreamDefinition, data: readonly unknown[]): Data[] {
  for (let i = 0; i < data.length; i++) {
    const rec = data[i];
    if (typeof rec !== 'object' || rec === null || Array.isArray(rec)) {
      throw new ContractError(`${stream.path} returned an item that is not an object at data[${i}].`);
    }
    const id = (rec as Data)[stream.primaryKey];
    if (typeof id !== 'string' || id.length === 0) {
      throw new ContractError(`${stream.path} returned ${keyFault(stream.primaryKey, rec, id)} at data[${i}].`);
    }
  }
  return data as Data[];
}

/** What is wrong with a record's key, in words: absent, empty, or of another type than the string every identifier is (its value not shown). */
function keyFault(key: string, record: object, id: unknown): string {
  if (!Object.hasOwn(record, key)) return `a record without "${key}"`;
  if (id === '') return `a record whose "${key}" is an empty string`;
  const kind = id === null ? 'null' : isRawNumber(id) ? 'a number' : Array.isArray(id) ? 'an array' : typeof id === 'object' ? 'an object' : `a ${typeof id}`;
  return `a record whose "${key}" is ${kind}, not a string,`;
}

/** Start a request now and keep its failure until someone awaits it (no unhandled rejection). */
function prefetch(client: DataReadApi, path: string, query: ListQuery): Promise<RawPage> {
  const pending = client.list(path, query);
  pending.catch(() => undefined);
  return pending;
}

/**
 * Pages in a row without records and with `has_more: true` that end a read
 * as a loop. A few are normal (a page whose records were all filtered out,
 * such as the test environment's contacts); a thousand in a row (200,000
 * records' worth at the default page size) is a service that never ends the
 * read. The checkpoint before them keeps the last cursor: the next sync
 * goes on from there.
 */
export const EMPTY_PAGES_LIMIT = 1000;

/**
 * Whether a read moves on. New cursors alone do not show it: a service may
 * serve the same records under a fresh cursor on every page. A page moves on
 * when it holds records and is not a page already passed on in this read (the
 * same ids with the same cursor values: a record that changed during the read
 * may come back, with its cursor value moved, and then it is new). One page
 * served again is let through (the records repeat, destinations upsert on
 * id); two in a row are a loop, and so are EMPTY_PAGES_LIMIT empty ones.
 */
class ReadProgress {
  readonly #stream: StreamDefinition;
  /** A digest of each page passed on in this read (ids and cursor values): about 30 bytes a page. */
  readonly #pages = new Set<string>();
  /** Pages in a row that brought nothing new (empty, or served again). */
  #stalled = 0;
  /** Of those, the pages served again. */
  #repeated = 0;

  constructor(stream: StreamDefinition) {
    this.#stream = stream;
  }

  /** A page with `has_more: true`; throws a ContractError when the read is going round. */
  check(records: readonly Data[]): void {
    if (records.length > 0) {
      const key = this.#digest(records);
      if (!this.#pages.has(key)) {
        this.#pages.add(key);
        this.#stalled = 0;
        this.#repeated = 0;
        return;
      }
      this.#repeated += 1;
    }
    this.#stalled += 1;
    const path = this.#stream.path;
    if (this.#repeated >= 2) {
      throw new ContractError(`${path} returned the records of an earlier page of this read again, under a new next_cursor, twice in a row (a loop); the state was not moved.`);
    }
    if (this.#stalled >= EMPTY_PAGES_LIMIT) {
      throw new ContractError(
        `${path} answered ${EMPTY_PAGES_LIMIT} pages in a row without records and with has_more: true (the read never ends); ` +
          'the state was not moved past the last cursor, which the next sync continues from.',
      );
    }
  }

  #digest(records: readonly Data[]): string {
    const { primaryKey, cursorField } = this.#stream;
    let text = '';
    for (const record of records) {
      const at = cursorField === null ? undefined : record[cursorField];
      text += `${String(record[primaryKey])}\u0000${typeof at === 'string' ? at : (JSON.stringify(at) ?? '')}\u0001`;
    }
    return createHash('sha1').update(text).digest('base64');
  }
}

export class Paginator {
  readonly #client: DataReadApi;
  readonly #stream: StreamDefinition;
  readonly #pageSize: number;
  readonly #seenCursors = new Set<string>();
  readonly #progress: ReadProgress;
  #watermark: string | undefined;
  /** The sync_watermark saved with the resume cursor the read starts from, until the first page is checked against it. */
  #resumed: string | undefined;
  #pending: Promise<RawPage> | undefined;

  /** Sends the first request at once. */
  constructor(client: DataReadApi, stream: StreamDefinition, start: PageStart, pageSize: number) {
    this.#client = client;
    this.#stream = stream;
    this.#pageSize = pageSize;
    this.#progress = new ReadProgress(stream);
    if (start.cursor !== undefined) {
      this.#seenCursors.add(start.cursor);
      this.#resumed = start.watermark;
    }
    const query: ListQuery = start.cursor !== undefined ? { cursor: start.cursor, limit: pageSize } : { updated_since: start.updatedSince, limit: pageSize };
    this.#pending = prefetch(client, stream.path, query);
  }

  /** The next page, checked; throws the client's error or a ContractError. Not to be called after the last page. */
  async next(): Promise<Page> {
    const pending = this.#pending;
    if (pending === undefined) throw new Error(`${this.#stream.name}: read past the last page`);
    this.#pending = undefined;
    const page = await pending;
    const resumed = this.#resumed;
    this.#resumed = undefined;
    // The same instant in another form continues the read; another instant is not the read the state saved.
    if (resumed !== undefined && parseInstant(page.sync_watermark) !== parseInstant(resumed)) throw new ResumeMismatch(resumed, page.sync_watermark);
    const watermark = this.#sameWatermark(page.sync_watermark);
    const next = this.#nextCursor(page);
    const records = checkRecords(this.#stream, page.data);
    if (next !== null) this.#progress.check(records);
    // Ask for the next page while this one is written out. The request takes several steps (gate, pacer,
    // pool) before it leaves, and undici reuses a kept-alive connection only a full turn of the event loop
    // after its response ended (the one this page came on): two turns let it go before the caller treats and
    // writes this page, which would otherwise hold it back by as long as that takes (test/engine/paginator).
    if (next !== null) {
      this.#pending = prefetch(this.#client, this.#stream.path, { cursor: next, limit: this.#pageSize });
      for (let turn = 0; turn < 2; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return { records, next, watermark };
  }

  #sameWatermark(watermark: string): string {
    if (this.#watermark === undefined) this.#watermark = watermark;
    else if (watermark !== this.#watermark) {
      throw new ContractError(
        `${this.#stream.path} changed sync_watermark within one read (${this.#watermark} then ${watermark}); the state was not moved.`,
      );
    }
    return watermark;
  }

  #nextCursor(page: RawPage): string | null {
    const next = page.next_cursor;
    if (!page.has_more) {
      // Pages may be behind that cursor: taking the page as the last would save the watermark past them.
      if (typeof next === 'string' && next.length > 0) {
        throw new ContractError(`${this.#stream.path} answered has_more: false with a next_cursor; the state was not moved.`);
      }
      return null;
    }
    if (typeof next !== 'string' || next.length === 0) {
      throw new ContractError(`${this.#stream.path} answered has_more: true without a next_cursor; the state was not moved.`);
    }
    if (this.#seenCursors.has(next)) {
      throw new ContractError(`${this.#stream.path} returned a next_cursor it had already returned in this read (a loop); the state was not moved.`);
    }
    this.#seenCursors.add(next);
    return next;
  }
}
