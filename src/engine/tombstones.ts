/**
 * Deletions as tombstones: each deletion record becomes a record of the
 * deleted object's own stream, with the deleted-at column set, so that
 * destinations which deduplicate on the primary key delete the row.
 */
import { STREAMS, type StreamDefinition } from '../streams.js';
import type { Data, SyncSink } from './events.js';

export class TombstoneEmitter {
  private readonly targets: Map<string, { stream: StreamDefinition; template: Data }>;
  private readonly unknownTypes = new Map<string, number>();
  private readonly column: string;

  /**
   * @param selected streams the run emits; tombstones go only to those
   * @param column the deleted-at column (`_ab_cdc_deleted_at` or `_sdc_deleted_at`)
   * @param properties the declared properties of a stream, all set null in a tombstone
   */
  constructor(selected: ReadonlySet<string>, column: string, properties: (stream: StreamDefinition) => readonly string[]) {
    this.column = column;
    this.targets = new Map();
    for (const stream of STREAMS) {
      if (stream.tombstoneObjectType && selected.has(stream.name)) {
        const template: Data = {};
        for (const prop of properties(stream)) template[prop] = null;
        this.targets.set(stream.tombstoneObjectType, { stream, template });
      }
    }
  }

  get streams(): readonly StreamDefinition[] {
    return [...this.targets.values()].map((t) => t.stream);
  }

  /** Emit the tombstones for one page of deletion records. */
  async emit(sink: SyncSink, deletions: readonly Data[], extractedAt: number): Promise<void> {
    const batches = new Map<StreamDefinition, Data[]>();
    for (const deletion of deletions) {
      const type = deletion.object_type;
      const objectId = deletion.object_id;
      const deletedAt = deletion.deleted_at;
      const target = typeof type === 'string' ? this.targets.get(type) : undefined;
      if (!target) {
        const known = STREAMS.some((s) => s.tombstoneObjectType === type);
        if (!known) {
          const key = String(type);
          this.unknownTypes.set(key, (this.unknownTypes.get(key) ?? 0) + 1);
        }
        continue;
      }
      if (typeof objectId !== 'string' || typeof deletedAt !== 'string') continue;
      const tombstone: Data = { ...target.template, id: objectId, updated_at: deletedAt, [this.column]: deletedAt };
      let batch = batches.get(target.stream);
      if (!batch) batches.set(target.stream, (batch = []));
      batch.push(tombstone);
    }
    for (const [stream, batch] of batches) await sink.records(stream, batch, extractedAt);
  }

  /** One warning for all deletion records whose object_type was not recognised. */
  unknownTypesWarning(): string | undefined {
    if (this.unknownTypes.size === 0) return undefined;
    const total = [...this.unknownTypes.values()].reduce((a, b) => a + b, 0);
    const values = [...this.unknownTypes.keys()].map((v) => JSON.stringify(v)).join(', ');
    return (
      `${total} deletion record(s) had an object_type the connector does not know (${values}); ` +
      'they are kept in the deletions stream but no tombstone was emitted for them.'
    );
  }
}
