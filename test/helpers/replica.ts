/**
 * A destination in memory: applies protocol output the way a warehouse would
 * (upsert on the primary key, deletions applied, full-refresh streams
 * replaced) so that tests can compare it with the emulator's dump.
 */
import type { Dump } from '../../src/emulator/index.js';
import { STREAMS } from '../../src/streams.js';
import { parseLines } from './cli.js';

type Row = Record<string, unknown>;
export type StreamStates = Map<string, unknown>;

export class MemoryReplica {
  readonly tables = new Map<string, Map<string, Row>>(STREAMS.map((s) => [s.name, new Map()]));

  /** Apply one sync's records (grouped by stream), then the deletions it carried. */
  applyRecords(records: readonly { stream: string; data: Row }[]): void {
    const replaced = new Set<string>();
    for (const { stream, data } of records) {
      const table = this.tables.get(stream);
      if (!table) throw new Error(`record for unknown stream ${stream}`);
      if (stream === 'pipeline_stages' && !replaced.has(stream)) {
        table.clear(); // full refresh: the sync's copy replaces the table
        replaced.add(stream);
      }
      table.set(String(data.id), data);
    }
    for (const deletion of this.tables.get('deletions')?.values() ?? []) {
      const target = deletion.object_type === 'contact' ? 'contacts' : deletion.object_type === 'conversation' ? 'conversations' : undefined;
      if (target) this.tables.get(target)?.delete(String(deletion.object_id));
    }
  }

  /** Apply Airbyte `read` output; returns the last state of each stream (for the next read). */
  applyAirbyte(stdout: string, states: StreamStates = new Map()): StreamStates {
    const records: { stream: string; data: Row }[] = [];
    for (const m of parseLines(stdout)) {
      if (m.type === 'RECORD') {
        const r = m.record as { stream: string; data: Row };
        records.push({ stream: r.stream, data: r.data });
      } else if (m.type === 'STATE') {
        const s = (m.state as { stream: { stream_descriptor: { name: string }; stream_state: unknown } }).stream;
        states.set(s.stream_descriptor.name, s.stream_state);
      }
    }
    this.applyRecords(records);
    return states;
  }

  /** The replica sorted like the emulator's dump. */
  toDump(): Record<string, Row[]> {
    const out: Record<string, Row[]> = {};
    for (const [name, table] of this.tables) out[name] = [...table.values()].sort((a, b) => (String(a.id) < String(b.id) ? -1 : 1));
    return out;
  }
}

/** Airbyte --state content from the last state of each stream. */
export function airbyteStateFile(states: StreamStates): unknown[] {
  return [...states].map(([name, stream_state]) => ({ type: 'STREAM', stream: { stream_descriptor: { name }, stream_state } }));
}

/** The dump in the replica's shape (same keys, same sort). */
export function normalizeDump(dump: Dump): Record<string, Row[]> {
  const out: Record<string, Row[]> = {};
  for (const s of STREAMS) out[s.name] = [...((dump as unknown as Record<string, Row[]>)[s.name] ?? [])].sort((a, b) => (String(a.id) < String(b.id) ? -1 : 1));
  return out;
}
