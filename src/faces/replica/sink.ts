/**
 * The replica face of a sync: engine events become checkpoints of the
 * replica. A stream's records are turned into rows as they come and held
 * until the engine's next checkpoint for that stream (one page), then handed
 * with the checkpoint's state to the writer, which writes them in one piece
 * (node:sqlite is synchronous: checkpoints of streams read side by side never
 * interleave). A checkpoint that cannot be written fails its stream there.
 */
import type { Data, LogLevel, SyncSink } from '../../engine/events.js';
import type { StreamState } from '../../engine/state.js';
import type { ConnectorError } from '../../errors.js';
import { findDeletionLog, type StreamDefinition } from '../../streams.js';
import type { Checkpoint, CommitResult } from './table-writer.js';
import type { TableLayout } from './layout.js';
import type { RowValues } from './rows.js';
import { toRows } from './store.js';

/** Where checkpoints go: the store itself (one transaction each) or a ReplicaWriter (in groups). */
export interface CheckpointTarget {
  layoutOf(stream: string): TableLayout;
  /**
   * Write one checkpoint whole, or throw and write nothing of it. `committed`
   * is told its result once it is committed: never when its transaction is
   * lost (a failed commit, a writer lock taken over).
   */
  write(checkpoint: Checkpoint, committed?: (result: CommitResult) => void): CommitResult;
}

export interface StreamTally {
  /** Records received from the service. */
  received: number;
  /** Rows written (received minus skipped). */
  upserted: number;
  /** Upserts skipped: the object was deleted at or after that version. */
  skippedDeleted: number;
  /** Rows deleted by this stream's deletion records. */
  deletedRows: number;
  /** Rows removed because a full read that heals a gap in the deletion log did not return them. */
  sweptRows: number;
  /** The sync_watermark of the last checkpoint committed with a watermark this run; undefined while none was. */
  savedWatermark?: string | undefined;
  status: 'waiting' | 'running' | 'rate_limited' | 'complete' | 'failed';
  /** When a rate-limit wait ends (epoch ms). */
  quotaReset?: number;
}

export interface ReplicaEvents {
  log(level: LogLevel, message: string): void;
  /** Something changed that progress shows. */
  changed(): void;
}

export class ReplicaSink implements SyncSink {
  private readonly target: CheckpointTarget;
  private readonly events: ReplicaEvents;
  private readonly pending = new Map<string, RowValues[]>();
  /** Full-refresh streams whose table is emptied by their first commit of this run. */
  private readonly replaceOnCommit = new Set<string>();
  /** Streams read in full to remove the rows the read does not return (fullRead), and whether their first checkpoint was written. */
  private readonly fullReads = new Map<string, { started: boolean }>();
  /** object_type (JSON text) -> ids of the deletion records carrying it (a record read twice counts once). */
  private readonly unknownTypes = new Map<string, Set<string>>();
  readonly tallies = new Map<string, StreamTally>();

  constructor(target: CheckpointTarget, events: ReplicaEvents) {
    this.target = target;
    this.events = events;
  }

  private tally(stream: StreamDefinition): StreamTally {
    let t = this.tallies.get(stream.name);
    if (!t) this.tallies.set(stream.name, (t = { received: 0, upserted: 0, skippedDeleted: 0, deletedRows: 0, sweptRows: 0, status: 'waiting' }));
    return t;
  }

  streamStarted(stream: StreamDefinition): void {
    this.pending.set(stream.name, []);
    if (stream.cursorField === null) this.replaceOnCommit.add(stream.name);
    this.tally(stream);
    this.events.changed();
  }

  streamRunning(stream: StreamDefinition, quotaReset?: number): void {
    const t = this.tally(stream);
    if (t.status === 'complete' || t.status === 'failed') return;
    t.status = quotaReset === undefined ? 'running' : 'rate_limited';
    t.quotaReset = quotaReset;
    this.events.changed();
  }

  records(stream: StreamDefinition, records: readonly Data[]): void {
    let buffer = this.pending.get(stream.name);
    if (!buffer) this.pending.set(stream.name, (buffer = []));
    for (const row of toRows(this.target.layoutOf(stream.name), records)) buffer.push(row);
    const t = this.tally(stream);
    t.received += records.length;
    if (t.status === 'rate_limited' || t.status === 'waiting') t.status = 'running';
    this.events.changed();
  }

  /**
   * The next read of each of `streams` is a full one whose completion removes
   * the rows it did not return (a gap in the deletion log: heal.ts); its
   * checkpoints mark the ids they write, its last one removes the others.
   */
  fullRead(streams: readonly StreamDefinition[]): void {
    for (const stream of streams) this.fullReads.set(stream.name, { started: false });
  }

  state(stream: StreamDefinition, state: StreamState): void {
    const rows = this.pending.get(stream.name) ?? [];
    this.pending.set(stream.name, []);
    const full = this.fullReads.get(stream.name);
    const fullRead = full ? { first: !full.started, last: state.resume === undefined } : undefined;
    const checkpoint: Checkpoint = { stream: stream.name, rows, state: JSON.stringify(state), replaceAll: this.replaceOnCommit.delete(stream.name), fullRead };
    // What the checkpoint did counts once it is committed: a group whose commit fails is not in the file.
    this.target.write(checkpoint, (result) => this.count(stream, result, state.sync_watermark));
    if (full) full.started = true;
    if (fullRead?.last) this.fullReads.delete(stream.name);
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
    this.events.changed();
  }

  streamComplete(stream: StreamDefinition): void {
    this.tally(stream).status = 'complete';
    this.events.changed();
  }

  streamIncomplete(stream: StreamDefinition, error: ConnectorError): void {
    this.streamStopped(stream);
    this.events.log('ERROR', `${stream.name}: ${error.message}`);
  }

  streamStopped(stream: StreamDefinition): void {
    // Records after the last checkpoint are dropped: the state did not move, the next run reads them again.
    this.pending.set(stream.name, []);
    this.tally(stream).status = 'failed';
    this.events.changed();
  }

  /** The run's failure is said once, by the replicate command's final line. */
  runFailed(): void {
    this.events.changed();
  }

  log(level: LogLevel, message: string): void {
    this.events.log(level, message);
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
