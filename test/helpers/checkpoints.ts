/** Checkpoints for a replica store, as the engine would hand them over: a page of records and a resume state. */
import type { Checkpoint } from '../../src/replica/table-writer.js';
import { toRows, type ReplicaStore } from '../../src/replica/store.js';
import { iso, type Rec } from './fake-api.js';

/** A checkpoint of `stream`: `records` as rows of its table, and a state whose cursor and watermark name `minute`. */
export function checkpointsOf(store: ReplicaStore): (stream: string, records: Rec[], minute: number) => Checkpoint {
  return (stream, records, minute) => ({
    stream,
    rows: toRows(store.layoutOf(stream), records),
    state: JSON.stringify({ resume: { cursor: `${stream}#${minute}`, sync_watermark: iso(minute) } }),
  });
}
