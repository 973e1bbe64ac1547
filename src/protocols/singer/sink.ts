/**
 * The Singer face of a sync: engine events become SCHEMA, RECORD and STATE
 * messages on stdout; logs go to stderr.
 *
 * STATE holds every stream's bookmark (the engine's StreamState, verbatim),
 * starting from the `--state` file so that streams not synced keep theirs. A
 * STATE follows every engine checkpoint (the last one of a read is the STATE
 * of the completed stream); a stream that ends without a new checkpoint adds
 * one only if the bookmarks moved; `finish` writes the last line, a STATE.
 * An identical STATE right after another is not repeated.
 *
 * A FULL_TABLE stream with ACTIVATE_VERSION (StreamPlan.activateVersion)
 * carries the sync's table version on every RECORD: the service's now when
 * the stream's read began (its sync_watermark, epoch ms), on the service's
 * clock as the state's watermarks are, so that it grows from sync to sync
 * even when the machine's clock went back between them. An
 * ACTIVATE_VERSION follows its complete read (after the last RECORD, before
 * its STATE), so the target drops the rows of older versions: rows the source
 * no longer has. On the stream's first sync (no bookmark in --state) one is
 * sent before the first RECORD as well, so the table exists from the start.
 * A read that does not complete activates nothing.
 */
import type { ConnectorError } from '../../errors.js';
import type { Data, LogLevel, SyncSink } from '../../engine/sync-sink.js';
import type { StreamState } from '../../engine/state.js';
import { writeRecordLines, type LineWriter, type StderrLogger } from '../../runtime/output.js';
import { STREAMS, type StreamDefinition } from '../../streams.js';
import { parseInstant } from '../../time.js';
import * as msg from './protocol.js';
import type { StreamPlan } from './selection.js';
import { keyProperties } from './schema.js';

/** Singer (Python logging) level names. */
const LEVELS: Readonly<Record<LogLevel, string>> = { DEBUG: 'DEBUG', INFO: 'INFO', WARN: 'WARNING', ERROR: 'ERROR' };

/** Rate-limit waits at least this long are logged (shorter ones are routine pacing). */
const RATE_LIMIT_LOG_MS = 10_000;

interface StreamOutput {
  readonly plan: StreamPlan;
  /** The table version of the stream's RECORDs; undefined: no ACTIVATE_VERSION, or not known until its read begins (readWatermark). */
  version: number | undefined;
  /** The UTF-8 of its RECORD lines' start, up to the record. */
  readonly head: Uint8Array;
}

export class SingerSink implements SyncSink {
  private readonly out: LineWriter;
  private readonly logger: StderrLogger;
  private readonly streams = new Map<string, StreamOutput>();
  private readonly bookmarks: Map<string, StreamState>;
  private readonly inProgress = new Set<string>();
  private readonly failed: string[] = [];
  /** The last line written, when it was a STATE (to skip an identical one). */
  private lastState: string | undefined;
  /** The bookmarks of the last STATE written. */
  private lastBookmarks: string | undefined;

  /** Streams synced for the first time (no bookmark in --state). */
  private readonly firstSync = new Set<string>();
  /** With accounts: the names of the config's entries (bookmarks hold one state per account). */
  private readonly accounts: ReadonlySet<string> | undefined;

  /**
   * @param version the table version of FULL_TABLE streams with ACTIVATE_VERSION, the same for all (default: each stream's from its
   *   read's sync_watermark, which grows from sync to sync on the service's clock)
   * @param accounts with accounts in the config, the names of its entries: every account's RECORDs of a FULL_TABLE stream carry the
   *   same version, activated once every account read the stream to its end (engine/accounts.ts ends it then), so one account's
   *   version never removes another account's rows from the target
   */
  constructor(
    out: LineWriter,
    logger: StderrLogger,
    plans: readonly StreamPlan[],
    bookmarks: ReadonlyMap<string, StreamState>,
    version?: number,
    accounts?: readonly string[],
  ) {
    this.out = out;
    this.logger = logger;
    this.accounts = accounts === undefined ? undefined : new Set(accounts);
    this.bookmarks = new Map(bookmarks);
    for (const plan of plans) {
      const v = plan.activateVersion ? version : undefined;
      this.streams.set(plan.stream.name, { plan, version: v, head: Buffer.from(msg.recordHead(plan.stream.name), 'utf8') });
      if (!bookmarks.has(plan.stream.name)) this.firstSync.add(plan.stream.name);
    }
  }

  private writeLine(text: string | Uint8Array): Promise<void> {
    this.lastState = undefined;
    return this.out.write(text);
  }

  private currentlySyncing(): string | null {
    for (const name of this.streams.keys()) if (this.inProgress.has(name)) return name;
    return null;
  }

  /** The STATE value: bookmarks in the streams table's order. */
  value(currentlySyncing: string | null): msg.SingerState {
    const bookmarks: Record<string, StreamState> = {};
    for (const s of STREAMS) {
      const b = this.bookmarks.get(s.name);
      if (b !== undefined) bookmarks[s.name] = b;
    }
    return { bookmarks, currently_syncing: currentlySyncing };
  }

  /** A STATE, unless the last line is the same STATE (or, with `onlyIfMoved`, the bookmarks did not change). */
  private async writeState(currentlySyncing: string | null, onlyIfMoved = false): Promise<void> {
    const value = this.value(currentlySyncing);
    const bookmarks = JSON.stringify(value.bookmarks);
    if (onlyIfMoved && bookmarks === this.lastBookmarks) return;
    const text = msg.state(value);
    if (text === this.lastState) return;
    await this.out.write(text);
    this.lastState = text;
    this.lastBookmarks = bookmarks;
  }

  streamStarted(stream: StreamDefinition): Promise<void> {
    const output = this.streams.get(stream.name);
    if (!output) throw new Error(`stream ${stream.name} was not planned`);
    this.inProgress.add(stream.name);
    const { plan, version } = output;
    const schema = msg.schema(stream.name, plan.schema, keyProperties(stream, this.accounts !== undefined), plan.bookmarkProperties);
    const first = version !== undefined && this.firstSync.has(stream.name) ? msg.activateVersion(stream.name, version) : '';
    return this.writeLine(schema + first);
  }

  /**
   * The stream's table version, from the first read of it in this sync (with accounts, every account's RECORDs carry the
   * first account's), and on its first sync the ACTIVATE_VERSION that comes before its first RECORD. Past the bookmark's
   * sync_watermark (the last sync's version) even when the service's clock went back since: a lower version would leave
   * the last sync's rows in the target.
   */
  readWatermark(stream: StreamDefinition, watermark: string): Promise<void> | undefined {
    const output = this.streams.get(stream.name);
    if (output === undefined || !output.plan.activateVersion || output.version !== undefined) return undefined;
    const at = parseInstant(watermark);
    output.version = Math.max(Number.isNaN(at) ? Date.now() : at, lastVersion(this.bookmarks.get(stream.name)) + 1);
    return this.firstSync.has(stream.name) ? this.writeLine(msg.activateVersion(stream.name, output.version)) : undefined;
  }

  /** Singer has no stream status: a rate-limit wait of 10 s or more is logged instead. */
  streamRunning(stream: StreamDefinition, quotaReset?: number): void {
    if (quotaReset === undefined) return;
    const waitMs = quotaReset - Date.now();
    if (waitMs < RATE_LIMIT_LOG_MS) return;
    this.logger.log('INFO', `${stream.name}: rate limited; waiting ${Math.ceil(waitMs / 1000)} s (until ${new Date(quotaReset).toISOString()}).`);
  }

  records(stream: StreamDefinition, records: readonly Data[], extractedAt: number): Promise<void> {
    const output = this.streams.get(stream.name);
    if (!output) throw new Error(`records for stream ${stream.name}, which was not planned`);
    const tail = Buffer.from(msg.recordTail(new Date(extractedAt).toISOString(), output.version), 'utf8');
    return writeRecordLines((bytes) => this.writeLine(bytes), records, output.head, tail);
  }

  async state(stream: StreamDefinition, state: StreamState): Promise<void> {
    this.bookmarks.set(stream.name, state);
    // A checkpoint without a resume cursor ends the read: the stream is no longer being synced.
    // (With accounts, one account's checkpoint ends nothing: streamComplete says when every account's read ended.)
    if (state.resume === undefined && this.accounts === undefined) {
      this.inProgress.delete(stream.name);
      // The read is complete: its version becomes the table (before the STATE that says the read is done).
      const version = this.streams.get(stream.name)?.version;
      if (version !== undefined) await this.writeLine(msg.activateVersion(stream.name, version));
    }
    return this.writeState(this.currentlySyncing());
  }

  /** The stream's bookmark, for the next STATE (interruptedState's), without writing one. */
  bookmark(stream: StreamDefinition, state: StreamState): void {
    this.bookmarks.set(stream.name, state);
  }

    async streamComplete(stream: StreamDefinition, skipped?: boolean): Promise<void> {
    this.inProgress.delete(stream.name);
    if (this.accounts !== undefined && skipped !== true) await this.activateAccounts(stream);
    return this.writeState(this.currentlySyncing(), true);
  }

  /**
   * With accounts, a FULL_TABLE stream read to its end by every account: its
   * version becomes the table. Not when the bookmark holds an account no
   * longer in the config: its rows in the target carry an older version, and
   * activating would remove them (an account removed keeps its rows).
   */
  private async activateAccounts(stream: StreamDefinition): Promise<void> {
    const version = this.streams.get(stream.name)?.version;
    if (version === undefined) return;
    const held = Object.keys(this.bookmarks.get(stream.name)?.accounts ?? {});
    const removed = held.filter((name) => !this.accounts?.has(name));
    if (removed.length > 0) {
      this.logger.log(
        'WARNING',
        `${stream.name}: no ACTIVATE_VERSION: the bookmark holds ${removed.length === 1 ? 'an account' : 'accounts'} no longer in the config (${removed.join(', ')}), ` +
          'whose rows in the target activating this sync\'s version would remove. Rows the source removed stay in the target until then; ' +
          `to let them go, remove those accounts from the state's ${stream.name} bookmark (their rows then go at the next sync).`,
      );
      return;
    }
    await this.writeLine(msg.activateVersion(stream.name, version));
  }

  async streamIncomplete(stream: StreamDefinition, error: ConnectorError): Promise<void> {
    this.critical(error, stream.name);
    await this.streamStopped(stream);
  }

  async streamStopped(stream: StreamDefinition): Promise<void> {
    this.inProgress.delete(stream.name);
    this.failed.push(stream.name);
    await this.writeState(this.currentlySyncing(), true);
  }

  /** One CRITICAL line for the whole run (the streams it stopped keep their last bookmarks). */
  runFailed(error: ConnectorError): void {
    this.critical(error);
  }

  log(level: LogLevel, message: string): void {
    this.logger.log(LEVELS[level], message);
  }

  outputClosed(): boolean {
    return this.out.closed() !== undefined;
  }

  /** A CRITICAL log line naming the cause (and the stream), redacted by the logger. */
  critical(error: ConnectorError, stream?: string): void {
    // Once the reader of stdout went away, the run's end says so, once (commands.ts): what the streams meet then (the closed
    // pipe on their next write, the client closed under them as the run ends) is no news. An EPIPE of the API's own
    // connection, with stdout open, is said as any other fault.
    if (this.outputClosed()) return;
    // The run's own failure: should the reader go away before the run ends, the run's end (cli/run-end.ts) tells it again
    // on stderr and ends with its status, not 75 for the closed pipe.
    const of = stream ? `${stream}: ` : '';
    this.out.tellsFailure(error, this.logger.redact(`${of}${error.message}`));
    this.logger.log('CRITICAL', `${of}${error.message}`);
    if (error.internal) this.logger.log('DEBUG', `${of}${error.internal}`);
    const cause = error.cause;
    if (error.failureType === 'system_error' && cause instanceof Error && cause.stack) {
      // Its frames only: a stack starts with the fault's message, which may quote a record's value (errors.ts faultWords),
      // and the CRITICAL line above said of it what may be said.
      const frames = cause.stack.split('\n').filter((line) => /^\s*at /.test(line));
      if (frames.length > 0) this.logger.log('DEBUG', `${of}the fault's stack: ${frames.map((frame) => frame.trim()).join(' | ')}`);
    }
  }

  /**
   * The last line of a sync stopped by a signal: a STATE of the bookmarks
   * checkpointed so far (nothing later), naming the stream that was being
   * synced; nothing when the last line written is that same STATE.
   */
  interruptedState(): string | undefined {
    const text = msg.state(this.value(this.currentlySyncing()));
    return text === this.lastState ? undefined : text;
  }

  /** The final STATE, always the last line: in-progress streams are none; a failed one is named. */
  finish(): Promise<void> {
    return this.writeState(this.failed[0] ?? null);
  }
}

/**
 * The latest watermark of a bookmark (of every account's, with accounts), epoch ms; -Infinity without one: its
 * sync_watermark, or that of the read a stopped sync left under way (its records carried a version of that sync).
 */
function lastVersion(bookmark: StreamState | undefined): number {
  const states = bookmark === undefined ? [] : bookmark.accounts === undefined ? [bookmark] : Object.values(bookmark.accounts);
  const watermarks = states.flatMap((s) => [s.sync_watermark, s.resume?.sync_watermark]).filter((w) => w !== undefined);
  return Math.max(-Infinity, ...watermarks.map(parseInstant).filter((t) => !Number.isNaN(t)));
}
