/**
 * Personal data treated in the engine, before any face sees a record: a sink
 * in front of the face's that treats each page of records (those read and the
 * tombstones made from deletions) in place, by the plan of the config's
 * treatments and the face's field selection. Streams with nothing to do pass
 * through untouched; with nothing to do at all, there is no such sink.
 */
import type { Config } from '../config/config.js';
import { recordTreater, treatmentPlan, type RecordTreater } from '../personal-data/treatments.js';
import type { StreamDefinition } from '../streams.js';
import { ForwardingSink, type Data, type SyncSink } from './events.js';

class TreatingSink extends ForwardingSink {
  readonly #treaters: ReadonlyMap<string, RecordTreater>;

  constructor(sink: SyncSink, treaters: ReadonlyMap<string, RecordTreater>) {
    super(sink);
    this.#treaters = treaters;
  }

  override records(stream: StreamDefinition, records: readonly Data[], extractedAt: number): void | Promise<void> {
    this.#treaters.get(stream.name)?.(records);
    return this.inner.records(stream, records, extractedAt);
  }
}

/** What the treatments need of a selected stream (sync.ts's SelectedStream has it). */
export interface FieldSelection {
  readonly stream: StreamDefinition;
  /** The fields the face selects; undefined: every field. */
  readonly fields?: ReadonlySet<string> | undefined;
}

/**
 * `sink` behind the treatments of `config` and the field selection of
 * `streams`; `sink` itself when no stream has anything to treat.
 */
export function treatingSink(sink: SyncSink, config: Config, streams: readonly FieldSelection[]): SyncSink {
  const plan = treatmentPlan(config, streams.map((s) => s.stream));
  const treaters = new Map<string, RecordTreater>();
  for (const { stream, fields } of streams) {
    const treater = recordTreater(stream, plan.get(stream.name), config.hash_key, fields);
    if (treater) treaters.set(stream.name, treater);
  }
  return treaters.size === 0 ? sink : new TreatingSink(sink, treaters);
}
