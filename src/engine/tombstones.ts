/**
 * Deletions as tombstones: each record of the deletion log becomes a record
 * of the deleted object's own stream (its primary key and its cursor set from
 * the deletion, the deleted-at column set, every other field null), so that
 * destinations which deduplicate on the primary key delete the row.
 *
 * A deletion record whose object type names no stream is never guessed at:
 * it is counted and reported once, at the end of the sync. So is one that
 * lacks the object id or deletion time a tombstone needs. Which fields those
 * are is the log's row in the streams table.
 */
import { STREAMS, findDeletionTarget, type DeletionLogStream, type StreamDefinition } from '../streams.js';
import type { Data } from './sync-sink.js';
import type { RecordPipeline } from './pipeline.js';
import type { ReadPosition, StreamState } from './state.js';

/** The saved checkpoint of a tombstone target stream, re-emitted after its tombstones (see emit). */
type CheckpointOf = (stream: StreamDefinition) => StreamState | undefined;

export class TombstoneEmitter {
  private readonly log: DeletionLogStream;
  private readonly targets: Map<string, { stream: StreamDefinition; template: Data }>;
  /** object_type (as JSON text) -> deletion records with that unknown type. */
  private readonly unknownTypes = new Map<string, number>();
  /** Deletion records of a known type without a string object_id or deleted_at. */
  private incomplete = 0;
  private readonly column: string;
  private readonly checkpointOf: CheckpointOf | undefined;

  /**
   * @param log the deletion log stream whose records become tombstones
   * @param selected streams the run emits; tombstones go only to those
   * @param column the deleted-at column (`_ab_cdc_deleted_at` or `_sdc_deleted_at`)
   * @param properties the declared properties of a stream, all set null in a tombstone
   * @param checkpointOf when given, each batch of tombstones is followed by a
   *   checkpoint of its target stream carrying that stream's saved state (the
   *   state it had before this run: tombstones are emitted before the target
   *   stream is read). Destinations commit a stream's records at that
   *   stream's checkpoints, so tombstones are committed before the deletions
   *   checkpoint that moves past them, even if the target stream then fails.
   *   The checkpoint adds `tombstones_through`, the deletion log's position
   *   after the page (see emit), so that no two of them are the same.
   */
  constructor(
    log: DeletionLogStream,
    selected: ReadonlySet<string>,
    column: string,
    properties: (stream: StreamDefinition) => readonly string[],
    checkpointOf?: CheckpointOf,
  ) {
    this.log = log;
    this.column = column;
    this.checkpointOf = checkpointOf;
    this.targets = new Map();
    for (const stream of STREAMS) {
      if (stream.tombstoneObjectType && stream.cursorField && selected.has(stream.name)) {
        const template: Data = {};
        for (const prop of properties(stream)) template[prop] = null;
        this.targets.set(stream.tombstoneObjectType, { stream, template });
      }
    }
  }

  /**
   * Emit the tombstones for one page of deletion records; `through` is the
   * deletion log's position after that page (its next cursor, or on its last
   * page its watermark alone): where the log's checkpoint that follows these
   * tombstones resumes from.
   */
  async emit(sink: Pick<RecordPipeline, 'tombstones' | 'state'>, deletions: readonly Data[], extractedAt: number, through: ReadPosition): Promise<void> {
    const batches = new Map<StreamDefinition, Data[]>();
    const { objectTypeField, objectIdField } = this.log.deletionLog;
    for (const deletion of deletions) {
      const type = deletion[objectTypeField];
      const objectId = deletion[objectIdField];
      const deletedAt = deletion[this.log.cursorField];
      const target = typeof type === 'string' ? this.targets.get(type) : undefined;
      if (!target) {
        // (Streams without tombstones have tombstoneObjectType null: a null object type is unknown, not theirs.)
        if (findDeletionTarget(type) === undefined) {
          // JSON text keeps null, numbers and a missing field apart from strings.
          const key = type === undefined ? '(missing)' : JSON.stringify(type);
          this.unknownTypes.set(key, (this.unknownTypes.get(key) ?? 0) + 1);
        }
        continue; // a known type whose stream is not selected: nothing to emit
      }
      if (typeof objectId !== 'string' || objectId === '' || typeof deletedAt !== 'string') {
        this.incomplete++;
        continue;
      }
      const { stream } = target;
      const tombstone: Data = { ...target.template, [stream.primaryKey]: objectId, [stream.cursorField as string]: deletedAt, [this.column]: deletedAt };
      let batch = batches.get(stream);
      if (!batch) batches.set(stream, (batch = []));
      batch.push(tombstone);
    }
    for (const [stream, batch] of batches) {
      await sink.tombstones(stream, batch, extractedAt);
      const saved = this.checkpointOf?.(stream);
      // The saved state alone would be the same after every page, with this stream's tombstones between: two
      // identical STATEs of a stream with records between them, which the Airbyte protocol forbids (the platform
      // tells states apart by their hash). The log's position after the page differs from page to page (the
      // paginator fails a read whose cursor repeats, and only the last page has no cursor), and says how far the
      // tombstones committed with this checkpoint reach. It is written only: the state reader drops it.
      if (saved !== undefined) await sink.state(stream, { ...saved, tombstones_through: through });
    }
  }

  /** One warning for all deletion records no tombstone could be made of; undefined when none. */
  unknownTypesWarning(): string | undefined {
    const { objectTypeField, objectIdField } = this.log.deletionLog;
    const parts: string[] = [];
    if (this.unknownTypes.size > 0) {
      const total = [...this.unknownTypes.values()].reduce((a, b) => a + b, 0);
      const values = [...this.unknownTypes.entries()].map(([v, n]) => `${v}: ${n}`).join(', ');
      parts.push(`${total} deletion record(s) had an ${objectTypeField} the connector does not know (${values})`);
    }
    if (this.incomplete > 0) parts.push(`${this.incomplete} deletion record(s) lacked ${objectIdField} or ${this.log.cursorField}`);
    if (parts.length === 0) return undefined;
    return `${parts.join('; ')}: they are kept in the ${this.log.name} stream but no tombstone was emitted for them.`;
  }
}
