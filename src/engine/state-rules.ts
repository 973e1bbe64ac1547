/**
 * What state a read may write, and when (connector contract, "State"; the
 * state page, docs/state.md):
 * - a read starts from the saved resume cursor, else from the last complete
 *   watermark (`updated_since`), else from start_date; a stream without a
 *   cursor takes no time filter (the service refuses one);
 * - inside a read, each checkpoint is `resume: {cursor, sync_watermark}` and
 *   keeps the last complete watermark as it was;
 * - only a read that reached `has_more: false` moves the watermark: to the
 *   watermark that read reported. When that one is earlier than the saved
 *   one (the service's clock went back, or a state edited by hand), a WARN
 *   names both instants and the reader reads the stream again in full in the
 *   same sync (reader.ts), saving that read's watermark: records stamped
 *   between the two lie behind both, and neither watermark would reach them;
 * - a resume cursor the service rejects restarts the read from the last
 *   complete watermark: records may repeat, none are lost.
 */
import type { StreamDefinition } from '../streams.js';
import type { PageStart } from './paginator.js';
import { watermarkWentBack, type StreamState } from './state.js';

export class StateRules {
  readonly #stream: Pick<StreamDefinition, 'name' | 'cursorField'>;
  /** The watermark of the last complete read, as saved. */
  readonly #complete: string | undefined;
  readonly #resume: StreamState['resume'];
  readonly #startDate: string | undefined;

  /** @param startDate where a stream without a saved watermark starts (start_date); undefined: the full history */
  constructor(stream: Pick<StreamDefinition, 'name' | 'cursorField'>, saved: StreamState, startDate: string | undefined) {
    this.#stream = stream;
    this.#complete = saved.sync_watermark;
    this.#resume = saved.resume;
    this.#startDate = startDate;
  }

  /** Where the read starts. */
  start(): PageStart {
    return this.#resume ? { cursor: this.#resume.cursor, watermark: this.#resume.sync_watermark } : this.#fromWatermark();
  }

  /**
   * The saved resume cursor cannot be followed (`reason`: the service rejected it, or
   * `cause` says why): where the read starts again, and the warning that says so.
   */
  restart(reason: string, cause = 'the service rejected the saved resume cursor'): { start: PageStart; warning: string } {
    return {
      start: this.#fromWatermark(),
      warning:
        `${this.#stream.name}: ${cause} (${reason}); ` +
        `restarting the read from ${this.#complete ? `the last complete watermark ${this.#complete}` : 'the start'}. ` +
        'Records may repeat; none are lost.',
    };
  }

  /** The checkpoint after a page with more to come: resume at `cursor` of the read whose watermark is `watermark`. */
  midRead(cursor: string, watermark: string): StreamState {
    const checkpoint: StreamState = { resume: { cursor, sync_watermark: watermark } };
    if (this.#complete !== undefined) checkpoint.sync_watermark = this.#complete;
    return checkpoint;
  }

  /** The state after the last page of a read whose watermark is `watermark`, and the WARN when it is earlier than the saved one. */
  complete(watermark: string): { state: StreamState; warning?: string } {
    // A stream without a cursor is read in full every time: an earlier watermark leaves nothing behind.
    const warning = this.#stream.cursorField === null ? undefined : watermarkWentBack(this.#stream.name, this.#complete, watermark, this.#startDate);
    return { state: { sync_watermark: watermark }, ...(warning === undefined ? {} : { warning }) };
  }

  #fromWatermark(): PageStart {
    return { updatedSince: this.#stream.cursorField === null ? undefined : (this.#complete ?? this.#startDate) };
  }
}
