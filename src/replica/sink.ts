/**
 * The replica's emitter: the record pipeline's pages become checkpoints of a
 * store. A stream's records, as the pipeline gives them (selected, treated,
 * checked), are held until the engine's next checkpoint for that stream
 * (one page), then handed with the checkpoint's state to the store, which
 * writes them whole or not at all: their rows, the deletions they carry
 * (the deletion log's records, applied as they came), the state. A
 * checkpoint that cannot be written fails its stream there. The emitter
 * keeps the replica's own bookkeeping: what each stream wrote (tallies),
 * full reads (of full-refresh streams, the heal's: heal.ts, and the one
 * after a watermark gone back: rereadInFull), unknown
 * deletion types.
 */
import type { Data, LogLevel, SyncSink } from '../engine/sync-sink.js';
import type { StreamState } from '../engine/state.js';
import type { ConnectorError } from '../errors.js';
import { deletionTargets, findDeletionLog, type StreamDefinition } from '../streams.js';

export type { CommitResult, Store, StoreCheckpoint } from '../stores/store.js';
import type { CommitResult, Store, StoreCheckpoint } from '../stores/store.js';

/** What a stream's committed checkpoints did (the records received are the pipeline's count). */
export interface StreamTally {
  /** Rows written (received minus skipped). */
  upserted: number;
  /** Upserts skipped: the object was deleted at or after that version. */
  skippedDeleted: number;
  /** Rows deleted by this stream's deletion records. */
  deletedRows: number;
  /** Rows removed because a full read that heals a gap in the deletion log, or follows a watermark gone back, did not return them. */
  sweptRows: number;
  /** The sync_watermark of the last checkpoint committed with a watermark this run; undefined while none was. */
  savedWatermark?: string | undefined;
}

type ReplicaLog = (level: LogLevel, message: string) => void;

export class ReplicaSink implements SyncSink {
  private readonly store: Store;
  private readonly logger: ReplicaLog;
  private readonly pending = new Map<string, Data[]>();
  /**
   * Streams read in full to remove the rows the read does not return (fullRead, rereadInFull), whether their first
   * checkpoint was written, and whether the read is the one after a watermark gone back (`reread`).
   */
  private readonly fullReads = new Map<string, { started: boolean; reread?: boolean }>();
  /** object_type (JSON text) -> ids of the deletion records carrying it (a record read twice counts once). */
  private readonly unknownTypes = new Map<string, Set<string>>();
  readonly tallies = new Map<string, StreamTally>();
  /** Streams a checkpoint of which the store refused when handed it (the engine was told: the write rejected). */
  private readonly refused = new Set<string>();
  /** Streams the store stopped after taking their checkpoints (their group refused): told by the store, not by a write. */
  private readonly lost = new Map<string, ConnectorError>();

  /** The entry whose records this sink writes, in a replica of many accounts (one sink per account); undefined for one account. */
  private readonly account: string | undefined;

  constructor(store: Store, log: ReplicaLog, account?: string) {
    this.store = store;
    this.logger = log;
    this.account = account;
  }

  private tally(stream: StreamDefinition): StreamTally {
    let t = this.tallies.get(stream.name);
    if (!t) this.tallies.set(stream.name, (t = { upserted: 0, skippedDeleted: 0, deletedRows: 0, sweptRows: 0 }));
    return t;
  }

  streamStarted(stream: StreamDefinition): void {
    this.pending.set(stream.name, []);
    // A full-refresh stream replaces its table when its read completes, not at its first page: a read that
    // fails part-way leaves the table it had, not that page alone.
    if (stream.cursorField === null) this.fullReads.set(stream.name, { started: false });
    this.tally(stream);
  }

  /** Waits are the progress line's (the pipeline's observer). */
  streamRunning(): void {}

  records(stream: StreamDefinition, records: readonly Data[]): void {
    let buffer = this.pending.get(stream.name);
    if (!buffer) this.pending.set(stream.name, (buffer = []));
    for (const record of records) buffer.push(record);
  }

  /**
   * The next read of each of `streams` is a full one whose completion removes
   * the rows it did not return (a gap in the deletion log: heal.ts); its
   * checkpoints mark the ids they write, its last one removes the others.
   * `continued`: the streams whose read continues one a stopped run began
   * (its marks committed): their first checkpoint here is not the read's;
   * the reader reads again from the read's watermark after its end, so that
   * the rows changed between the runs are marked too (reader.ts). `reread`:
   * the reads are the full reads after a watermark gone back (rereadInFull),
   * whose end says how many rows went.
   */
  fullRead(streams: readonly StreamDefinition[], continued: ReadonlySet<string> = new Set(), reread = false): void {
    // A read continued from a saved resume cursor keeps the marks its earlier checkpoints committed.
    for (const stream of streams) this.fullReads.set(stream.name, { started: continued.has(stream.name), ...(reread ? { reread } : {}) });
  }

  /**
   * The stream is read again in full after its watermark went back (reader.ts): for a stream the deletion log
   * deletes from, a full read whose last checkpoint removes the rows it did not return (a deletion the service
   * stamped on its clock gone back may be earlier than the row's last change, which then outlives it: time.ts,
   * changedAfterDeletion). Its catch-up reads are part of it: its last checkpoint is the one without a resume cursor.
   */
  rereadInFull(stream: StreamDefinition): void {
    if (deletionTargets().some((s) => s.name === stream.name)) this.fullReads.set(stream.name, { started: false, reread: true });
  }

  /** The read starts over (its saved resume cursor was refused): a full read under way clears its marks at its next checkpoint. */
  readRestarted(stream: StreamDefinition): void {
    const full = this.fullReads.get(stream.name);
    if (full) full.started = false;
  }

  state(stream: StreamDefinition, state: StreamState): void | Promise<void> {
    const records = this.pending.get(stream.name) ?? [];
    this.pending.set(stream.name, []);
    const full = this.fullReads.get(stream.name);
    // In a replica of many accounts the state holds every account's: this sink's read, and the state it saves, are its account's.
    const own = this.account === undefined ? state : state.accounts?.[this.account];
    if (own === undefined) throw new Error(`a state of ${stream.name} holds no state of account "${this.account ?? ''}", whose checkpoint it is`);
    const fullRead = full ? { first: !full.started, last: own.resume === undefined } : undefined;
    const checkpoint: StoreCheckpoint = { stream: stream.name, ...(this.account === undefined ? {} : { account: this.account }), records, state: JSON.stringify(own), fullRead };
    // What the checkpoint did counts once it is committed: a group whose commit fails is not in the file.
    const reread = full?.reread === true && fullRead?.last === true;
    const written = this.store.write(checkpoint, (result) => {
      this.count(stream, result, state.sync_watermark);
      if (!reread) return;
      // A WARN for rows gone; a read that found every row of the store at the service says so without one.
      if (result.sweptRows > 0) this.logger('WARN', `${stream.name}: the full read after the watermark went back removed ${result.sweptRows} row(s) the service no longer has.`);
      else this.logger('INFO', `${stream.name}: the full read after the watermark went back found every row of the store at the service; none removed.`);
    });
    if (written instanceof Promise) written.catch(() => this.refused.add(stream.name));
    if (full) full.started = true;
    if (fullRead?.last) this.fullReads.delete(stream.name);
    return written;
  }

  private count(stream: StreamDefinition, result: CommitResult, watermark: string | undefined): void {
    const t = this.tally(stream);
    t.savedWatermark = watermark ?? t.savedWatermark;
    t.upserted += result.upserted;
    t.skippedDeleted += result.skippedDeleted;
    t.deletedRows += result.deletedRows;
    t.sweptRows += result.sweptRows;
    for (const [type, id] of result.unknownTypes) {
      let ids = this.unknownTypes.get(type);
      if (!ids) this.unknownTypes.set(type, (ids = new Set()));
      ids.add(id);
    }
  }

  /** The store stopped `stream` after taking its checkpoints (its group was refused): nothing of them was committed. */
  storeFailed(stream: string, error: ConnectorError): void {
    if (!this.lost.has(stream)) this.lost.set(stream, error);
  }

  /** The streams the store stopped that no refused write told the engine of, with why. */
  untold(): [string, ConnectorError][] {
    return [...this.lost].filter(([stream]) => !this.refused.has(stream));
  }

  streamComplete(): void {}

  streamIncomplete(stream: StreamDefinition, error: ConnectorError): void {
    this.streamStopped(stream);
    this.logger('ERROR', `${stream.name}: ${error.message}`);
  }

  streamStopped(stream: StreamDefinition): void {
    // Records after the last checkpoint are dropped: the state did not move, the next run reads them again.
    this.pending.set(stream.name, []);
  }

  /** The run's failure is said once, by the replicate command's final line. */
  runFailed(): void {}

  log(level: LogLevel, message: string): void {
    this.logger(level, message);
  }

  /** One warning for every deletion record whose object_type names no replicated stream; undefined when none. */
  unknownTypesWarning(): string | undefined {
    if (this.unknownTypes.size === 0) return undefined;
    const total = [...this.unknownTypes.values()].reduce((n, ids) => n + ids.size, 0);
    const values = [...this.unknownTypes].map(([type, ids]) => `${type}: ${ids.size}`).join(', ');
    const log = findDeletionLog();
    return (
      `${total} deletion record(s) had an ${log?.deletionLog.objectTypeField ?? 'object type'} the replica does not know (${values}); ` +
      `they are kept in the ${log?.name ?? 'deletion log'} table but deleted no row.`
    );
  }
}
