/**
 * The stream reader: one list operation read from a saved state to
 * `has_more: false`. The paginator follows the cursors and checks each page
 * against the API contract; the state rules (state-rules.ts) say what state may be written
 * when; this function hands pages to the sink in between and does with a
 * failed first answer what the failure policy's row says (client/policy.ts:
 * a rejected resume cursor restarts the read, an optional path the service
 * does not offer is skipped). A read of a stream with a cursor that completes
 * with a watermark earlier than the saved one (the service's clock went back,
 * or a state edited by hand) is followed, in the same sync, by a full read of
 * the stream, whose watermark (its last catch-up read's) is the one saved:
 * records stamped between the two instants may lie behind both, and a later
 * read from the earlier one would never return those stamped more than the
 * look-back before it. The sink is told (rereadInFull): that read returns
 * every record the service has.
 */
import { ApiError } from '../client/api-error.js';
import { readAction } from '../client/policy.js';
import type { DataReadApi } from '../client/types.js';
import type { StreamDefinition } from '../streams.js';
import { LOOK_BACK_MS, isLaterInstant, parseInstant } from '../time.js';
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
   * The stream is read in full (a full refresh, or a first read, of a stream with a cursor; the
   * full read after a watermark gone back is taken as one whatever this says). A
   * record changed while such a read pages through leaves the pages still to
   * come for a time after the read's watermark, so the read never returns it:
   * a copy made of that read alone lacks it (a Singer target's
   * ACTIVATE_VERSION even drops its row). After the last page the stream is
   * read again from the watermark, passing on only the records changed after
   * it and, of those the service's look-back of 5 minutes brings again, the
   * ones the read before did not bring as they are (a change stamped before
   * the watermark, made after that read passed its record: the state moves
   * past it for good), until a read passes none (nothing moved during the
   * read before it: the look-back may still fill pages with records read
   * already, after a bulk load; past WINDOW_KEPT records in the look-back it
   * passes them all on, and only those changed after the watermark count), a
   * read takes one page (a page is served at once: nothing moves out of it
   * while it is read), CATCH_UP_READS such reads were made (the next sync
   * then brings the rest, as it brings any later change), or a read's
   * watermark is earlier than the one it read from (the clock went back:
   * what follows a watermark gone back follows). A read continued from a
   * saved resume cursor takes the first of them whatever it read in this
   * sync: what changed since a stopped sync began it has moved past its end
   * too.
   */
  readonly catchUp?: boolean;
}

/** Reads again from the watermark after a full read (ReadOptions.catchUp), at most. */
export const CATCH_UP_READS = 3;

/** Records of a read's look-back window remembered at most (about 100 bytes each); past it, a catch-up read passes on every record of the window. */
const WINDOW_KEPT = 20_000;

/**
 * The records a read brought whose cursor lies within the service's
 * look-back before its watermark, by id and cursor value: the catch-up read
 * from that watermark brings them again.
 */
class LookBackWindow {
  /** The watermark, and the instant the window starts (epoch ms). */
  readonly watermark: string;
  readonly from: number;
  /** `from` as the service writes instants (UTC, ms, Z), which compare as text: no parse per record of a long read. */
  readonly #fromText: string;
  readonly #stream: StreamDefinition;
  readonly #held = new Set<string>();
  #overflow = false;

  constructor(stream: StreamDefinition, watermark: string) {
    this.#stream = stream;
    this.watermark = watermark;
    this.from = parseInstant(watermark) - LOOK_BACK_MS;
    this.#fromText = Number.isNaN(this.from) ? '' : new Date(this.from).toISOString();
  }

  /** Remember the records of a page of the read that fall in the window. */
  note(records: readonly Data[]): void {
    for (const record of records) {
      if (this.#overflow) return;
      const key = this.#key(record);
      if (key === undefined) continue;
      if (this.#held.size >= WINDOW_KEPT) this.#overflow = true;
      else this.#held.add(key);
    }
  }

  /** Whether the window holds fewer records than were in it (WINDOW_KEPT): it cannot tell which records the read brought. */
  get overflowed(): boolean {
    return this.#overflow;
  }

  /** Whether the read brought this record as it is (false when it cannot tell: too many were in the window). */
  holds(record: Data): boolean {
    if (this.#overflow) return false;
    const key = this.#key(record);
    return key !== undefined && this.#held.has(key);
  }

  #key(record: Data): string | undefined {
    const at = record[this.#stream.cursorField as string];
    if (typeof at !== 'string') return undefined;
    const inWindow = at.length === 24 && at.endsWith('Z') ? at >= this.#fromText : parseInstant(at) >= this.from;
    return inWindow ? `${String(record[this.#stream.primaryKey])}\u0000${at}` : undefined;
  }
}

/**
 * The records of a catch-up read to pass on: those changed after the
 * watermark of the read before it (`before`), and those of its look-back that
 * it did not bring as they are (a change stamped before that watermark, made
 * after that read had passed its record). A record whose cursor is not an
 * instant is kept (at least once). `moved` counts the records passed on that
 * show a change made during the read before; a record of an overflowed window
 * is passed on without showing one (the window cannot tell whether that read
 * brought it), so a bulk change inside the look-back is read twice, not up
 * to CATCH_UP_READS + 1 times.
 */
function changedAfter(stream: StreamDefinition, records: readonly Data[], before: LookBackWindow): { readonly pass: readonly Data[]; readonly moved: number } {
  const field = stream.cursorField;
  if (field === null) return { pass: records, moved: records.length };
  let moved = 0;
  const pass = records.filter((record) => {
    const at = record[field];
    if (typeof at !== 'string' || Number.isNaN(parseInstant(at)) || isLaterInstant(at, before.watermark)) {
      moved += 1;
      return true;
    }
    if (parseInstant(at) < before.from || before.holds(record)) return false;
    if (!before.overflowed) moved += 1;
    return true;
  });
  return { pass, moved };
}

type ReadOutcome = { readonly kind: 'complete'; readonly state: StreamState } | { readonly kind: 'skipped' };

export async function readStream(stream: StreamDefinition, options: ReadOptions): Promise<ReadOutcome> {
  const { client, sink, pageSize } = options;
  let rules = new StateRules(stream, options.state, options.startDate);
  /** The rules of the read in progress, or of the full read whose catch-up reads are under way: they write its checkpoints. */
  let outer = rules;
  let start = rules.start();
  let catchUps = 0;
  /** In a catch-up read (ReadOptions.catchUp): what the read before it brought within the look-back of its watermark. */
  let after: LookBackWindow | undefined;
  /** The stream was told running (and onWatermark called): once per stream, whatever reads follow. */
  let begun = false;
  /** The read in progress is the full read that follows a watermark gone back (at most one per stream and sync). */
  let rereading = false;
  /** The read in progress continues one a stopped sync began, from its saved resume cursor. */
  let resumed = start.cursor !== undefined;

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
        resumed = false;
        continue;
      }
      if (action === 'ignore') {
        await sink.log('WARN', `${stream.name}: the service does not offer ${stream.path} (404); stream skipped.`);
        return { kind: 'skipped' };
      }
      throw err;
    }

    if (!begun) {
      begun = true;
      await sink.streamRunning(stream);
      await sink.readWatermark?.(stream, page.watermark);
      if (options.onWatermark) await options.onWatermark(page.watermark, start.cursor !== undefined);
    }
    // The full read after a watermark gone back takes the catch-up reads a first read takes: it returns every record
    // the service has, and the replica removes the rows it did not return (sink.rereadInFull). Those reads hold the
    // watermark they read from, later than the one that went back: a catch-up read whose watermark is earlier
    // still (the clock went back again) saves it with the WARN, and starts no second full read (`rereading`).
    const window = (options.catchUp === true || rereading) && stream.cursorField !== null ? new LookBackWindow(stream, page.watermark) : undefined;
    /** Records passed on that show a change made while the read before this one paged (all of a first read's). */
    let moved = 0;
    for (let pagesRead = 1; ; pagesRead++) {
      const { pass: records, moved: movedHere } = after === undefined ? { pass: page.records, moved: page.records.length } : changedAfter(stream, page.records, after);
      window?.note(page.records);
      moved += movedHere;
      if (records.length > 0) {
        await sink.records(stream, records, Date.now());
        if (options.onPage) {
          await options.onPage(records, page.next === null ? { sync_watermark: page.watermark } : { cursor: page.next, sync_watermark: page.watermark });
        }
      }
      if (page.next === null) {
        // The read reached has_more: false: its watermark is saved, or a catch-up read follows. Not when that watermark is
        // earlier than the one it read from (the clock went back): a change made since lies behind both, maybe more than
        // the look-back before any later read's; the went-back rules below then apply.
        const { state, warning } = rules.complete(page.watermark);
        if (warning === undefined && window !== undefined && ((pagesRead > 1 && moved > 0) || resumed) && catchUps < CATCH_UP_READS) {
          // Records that moved past this read's end while it paged are after its watermark: read from there. A read
          // continued from a saved resume cursor paged across the syncs in between, whatever it read in this one.
          catchUps += 1;
          resumed = false;
          after = window;
          rules = new StateRules(stream, { sync_watermark: page.watermark }, options.startDate);
          start = rules.start();
          continue read;
        }
        if (warning !== undefined && rereading) {
          // A catch-up read of the full read: the clock went back again while it paged.
          await sink.log(
            'WARN',
            `${stream.name}: the service reported sync_watermark ${page.watermark}, earlier than ${after?.watermark ?? 'the watermark'} it read from after the stream's full read: ` +
              'its clock went back again. That watermark is saved; the stream is not read in full a second time in this sync.',
          );
        } else if (warning) await sink.log('WARN', warning);
        if (warning !== undefined && !rereading) {
          // Its watermark is earlier than the saved one: what the service stamped between the two lies behind both,
          // and neither this read (from the saved one) nor any later one (from its own) returns it. The stream is
          // read again in full, now, as a new read; its checkpoints carry no complete watermark until it ends.
          rereading = true;
          resumed = false;
          after = undefined;
          rules = new StateRules(stream, {}, options.startDate);
          outer = rules;
          start = rules.start();
          catchUps = 0;
          await sink.rereadInFull?.(stream);
          continue read;
        }
        await sink.state(stream, state);
        return { kind: 'complete', state };
      }
      // Inside the read: a checkpoint to resume from, the complete watermark untouched. A catch-up read checkpoints
      // only the pages it passed records of (most of its pages pass none: one STATE each would say nothing new), as part
      // of its full read: with that read's rules (no complete watermark), so that a sync stopped in it leaves a full
      // read under way, which the next continues as one (reading again from the watermark after its end; a replica's
      // sweep follows). Not when its watermark is earlier than the one it reads from (the clock went back in between):
      // its checkpoints keep that one, which the next sync, continuing it, finds later than the read's at its end.
      const part = after !== undefined && !(parseInstant(page.watermark) < parseInstant(after.watermark)) ? outer : rules;
      if (after === undefined || records.length > 0) await sink.state(stream, part.midRead(page.next, page.watermark));
      page = await pages.next();
    }
  }
}
