/**
 * A destination in memory, the one the tests and the reliability suite
 * compare with the emulator's dump. It applies protocol output the way a
 * warehouse in append+dedup mode does:
 * - a stream's records are committed when a STATE that covers them follows
 *   (Airbyte: a STATE of that stream; Singer: any STATE); records after the
 *   last STATE of a dead run are dropped, so a resume that skips anything
 *   shows up as a lost record;
 * - committed records are upserted on the stream's primary key; a record
 *   whose deleted-at column is set (a tombstone) deletes its row instead;
 * - a full-refresh stream's first commit of a run replaces its table;
 * - with `deletes: 'deletions'` (the default) the records of the deletion log
 *   also delete the rows they name (a destination that applies the log
 *   itself); with 'tombstones' only tombstones delete.
 */
import type { Dump } from 'data-read-emulator';
import { AIRBYTE_DELETED_AT } from '../../src/protocols/airbyte/protocol.js';
import { SINGER_DELETED_AT } from '../../src/protocols/singer/protocol.js';
import { STREAMS, findDeletionLog, findDeletionTarget, findStream } from '../../src/streams.js';
import { parseLines } from './cli.js';

export type Row = Record<string, unknown>;
/** The last state of each stream (Airbyte's stream_state), for the next run's --state. */
export type StreamStates = Map<string, unknown>;

export interface SingerStateValue {
  bookmarks: Record<string, Record<string, unknown>>;
  currently_syncing: string | null;
}

export interface Diff {
  /** Records of the dump absent from the destination. */
  readonly missing: number;
  /** Records present with other content than the dump's. */
  readonly stale: number;
  /** Records in the destination that the dump does not have (a deletion not applied). */
  readonly extra: number;
  readonly examples: string[];
}

export const lostOf = (d: Diff): number => d.missing + d.stale;

interface Message {
  readonly type: string;
  readonly [field: string]: unknown;
}

const byId = (a: Row, b: Row): number => (String(a.id) < String(b.id) ? -1 : String(a.id) > String(b.id) ? 1 : 0);

export class MemoryDestination {
  readonly tables = new Map<string, Map<string, Row>>(STREAMS.map((s) => [s.name, new Map<string, Row>()]));
  /** Airbyte: the last committed state of each stream. */
  readonly states: StreamStates = new Map();
  readonly deletes: 'deletions' | 'tombstones';
  /** Records committed, and records dropped because no STATE followed them. */
  committed = 0;
  dropped = 0;

  constructor(deletes: 'deletions' | 'tombstones' = 'deletions') {
    this.deletes = deletes;
  }

  /** Apply one run of Airbyte `read` output (stdout, or its parsed messages); returns every stream's last state. */
  applyAirbyte(output: string | readonly Message[]): StreamStates {
    const messages = typeof output === 'string' ? (parseLines(output) as Message[]) : output;
    const run = new Run(this, AIRBYTE_DELETED_AT);
    for (const m of messages) {
      if (m.type === 'RECORD') {
        const r = m.record as { stream: string; data: Row };
        run.hold(r.stream, r.data);
      } else if (m.type === 'STATE') {
        const s = (m.state as { stream: { stream_descriptor: { name: string }; stream_state: unknown } }).stream;
        run.commit([s.stream_descriptor.name]);
        this.states.set(s.stream_descriptor.name, s.stream_state);
      }
    }
    run.end();
    return this.states;
  }

  /** Apply one run of a Singer tap's stdout; returns the value of its last STATE. */
  applySinger(stdout: string): SingerStateValue | undefined {
    const run = new Run(this, SINGER_DELETED_AT);
    let state: SingerStateValue | undefined;
    for (const m of parseLines(stdout) as Message[]) {
      if (m.type === 'RECORD') run.hold(String(m.stream), m.record as Row);
      else if (m.type === 'STATE') {
        run.commit(run.pendingStreams());
        state = m.value as SingerStateValue;
      }
    }
    run.end();
    return state;
  }

  table(name: string): Map<string, Row> {
    const t = this.tables.get(name);
    if (t === undefined) throw new Error(`no stream ${name}`);
    return t;
  }

  /** A stream's rows sorted by id, as the emulator's dump lists them. */
  rows(stream: string): Row[] {
    return [...this.table(stream).values()].sort(byId);
  }

  /** Every stream's rows, in the shape of `normalizeDump`. */
  toDump(): Record<string, Row[]> {
    return Object.fromEntries(STREAMS.map((s) => [s.name, this.rows(s.name)]));
  }

  /** Compare with the emulator's dump; `ignore` skips records (stream, id) a test tampered with. */
  diff(dump: Dump, ignore: (stream: string, id: string) => boolean = () => false): Diff {
    let missing = 0;
    let stale = 0;
    let extra = 0;
    const examples: string[] = [];
    const note = (text: string): void => {
      if (examples.length < 5) examples.push(text);
    };
    const want = normalizeDump(dump);
    for (const s of STREAMS) {
      const have = this.table(s.name);
      const ids = new Set<string>();
      for (const row of want[s.name] ?? []) {
        const id = String(row[s.primaryKey]);
        ids.add(id);
        if (ignore(s.name, id)) continue;
        const got = have.get(id);
        if (got === undefined) {
          missing += 1;
          note(`${s.name} ${id} missing`);
        } else if (JSON.stringify(got) !== JSON.stringify(row)) {
          stale += 1;
          note(`${s.name} ${id} differs`);
        }
      }
      for (const id of have.keys()) {
        if (!ids.has(id) && !ignore(s.name, id)) {
          extra += 1;
          note(`${s.name} ${id} should not be there`);
        }
      }
    }
    return { missing, stale, extra, examples };
  }

  /** Delete the rows the deletion log names (its row in the streams table says which fields name them). */
  applyDeletionLog(): void {
    const log = findDeletionLog();
    if (log === undefined) throw new Error('the streams table has no deletion log');
    const { objectTypeField, objectIdField } = log.deletionLog;
    for (const deletion of this.table(log.name).values()) {
      const target = findDeletionTarget(deletion[objectTypeField]);
      if (target !== undefined) this.table(target.name).delete(String(deletion[objectIdField]));
    }
  }
}

/** One run's records held until a STATE commits them. */
class Run {
  private readonly pending = new Map<string, Row[]>();
  private readonly replaced = new Set<string>();

  private readonly destination: MemoryDestination;
  private readonly deletedAt: string;

  constructor(destination: MemoryDestination, deletedAt: string) {
    this.destination = destination;
    this.deletedAt = deletedAt;
  }

  hold(stream: string, record: Row): void {
    let list = this.pending.get(stream);
    if (list === undefined) this.pending.set(stream, (list = []));
    list.push(record);
  }

  pendingStreams(): string[] {
    return [...this.pending.keys()];
  }

  commit(streams: readonly string[]): void {
    for (const name of streams) {
      const records = this.pending.get(name);
      if (records === undefined) continue;
      this.pending.delete(name);
      const definition = findStream(name);
      if (definition === undefined) throw new Error(`record of unknown stream ${name}`);
      const table = this.destination.table(name);
      if (!definition.syncModes.includes('incremental') && !this.replaced.has(name)) {
        table.clear(); // a full refresh: the run's copy replaces the table
        this.replaced.add(name);
      }
      for (const row of records) {
        this.destination.committed += 1;
        const key = String(row[definition.primaryKey]);
        if (row[this.deletedAt] !== undefined && row[this.deletedAt] !== null) table.delete(key);
        else table.set(key, row);
      }
    }
  }

  end(): void {
    for (const rows of this.pending.values()) this.destination.dropped += rows.length;
    if (this.destination.deletes === 'deletions') this.destination.applyDeletionLog();
  }
}

/** Airbyte --state content from the last state of each stream. */
export function airbyteStateFile(states: StreamStates): unknown[] {
  return [...states].map(([name, stream_state]) => ({ type: 'STREAM', stream: { stream_descriptor: { name }, stream_state } }));
}

/** The dump in the destination's shape (every stream, rows sorted by id). */
export function normalizeDump(dump: Dump): Record<string, Row[]> {
  const lists = dump as unknown as Record<string, Row[] | undefined>;
  return Object.fromEntries(STREAMS.map((s) => [s.name, [...(lists[s.name] ?? [])].sort(byId)]));
}
