/**
 * What the PostgreSQL and DuckDB stores say and read back alike: the
 * changes opening made to the tables (schema drift), one line each; a value
 * a run met that did not fit its column, once per field; and the states
 * saved in the store, checked as a state file's are.
 */
import { ConfigError } from '../errors.js';
import { parseStreamState, type StreamState } from '../engine/state.js';
import type { LogLevel } from '../engine/sync-sink.js';
import { widen, type ColumnChange, type StoreKind, type StoreLayout } from './columns.js';
import type { SchemaChange, StoreNote } from './store.js';

/** A widening the database refuses because something depends on the column: the change in words, and what the database said. */
export interface BlockedNote {
  readonly change: string;
  readonly why: string;
}

/**
 * One INFO per table change made (`contacts.score: bigint -> numeric`), one
 * WARN per change left for the next run, and one per widening something
 * else in the database refuses (a view over the column): the run cannot
 * drop what a user made, so it says what to do, at every run until then.
 */
export function changeNotes(display: string, changes: readonly string[], postponed: readonly string[], blocked: readonly BlockedNote[] = []): StoreNote[] {
  return [
    ...changes.map((change) => ({ level: 'INFO' as const, message: `Schema drift in ${display}: ${change}.` })),
    ...postponed.map((change) => ({
      level: 'WARN' as const,
      message: `Schema drift in ${display}: ${change} is left for the next run (a reader held the table); until then the values that do not fit are kept in _extra.`,
    })),
    ...blocked.map(({ change, why }) => ({
      level: 'WARN' as const,
      message:
        `Schema drift in ${display}: ${change} cannot be made (${why}). The column keeps its type, the values that do not fit it are kept in _extra, and every run tries again. ` +
        'To let it widen, drop what is named there, let a run widen the column, then create that again.',
    })),
  ];
}

/**
 * The run's schema changes as the summary lists them: those opening `made`,
 * then what each table's layout holds pending now (left for the next run,
 * which gives the column the join of its kind and the asked one). A change
 * whose SQL type stays the same (PostgreSQL's numeric for wide and
 * fractional numbers alike) is no change a reader sees, and is not listed.
 */
export function schemaChanges(made: readonly ColumnChange[], layouts: readonly StoreLayout[], types: Readonly<Record<StoreKind, string>>): SchemaChange[] {
  const out: SchemaChange[] = [];
  for (const c of made) {
    const from = c.from === undefined ? null : types[c.from];
    if (from === types[c.to]) continue;
    out.push({ stream: c.stream, column: c.field, change: from === null ? 'added' : 'widened', from, to: types[c.to] });
  }
  for (const layout of layouts) {
    for (const p of layout.pending) {
      const column = layout.columns.find((c) => c.field === p.field);
      const from = column === undefined ? null : types[column.kind];
      const to = types[column === undefined ? p.kind : widen(column.kind, p.kind)];
      if (from === to) continue;
      out.push({ stream: layout.stream, column: p.field, change: 'left_for_next_run', from, to });
    }
  }
  return out;
}

/** The states a store holds (JSON text by stream), as the engine reads them; a broken one is a config_error that names the store. */
export function parseSavedStates(display: string, saved: ReadonlyMap<string, string>): Map<string, StreamState> {
  const out = new Map<string, StreamState>();
  for (const [stream, text] of saved) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ConfigError(`The state of stream "${stream}" in ${display} is not JSON. Nothing was changed; replicate into another schema or file to start over.`, {
        field: '--db',
      });
    }
    out.set(stream, parseStreamState(stream, parsed));
  }
  return out;
}

export type DriftLog = (level: LogLevel, message: string) => void;

/** Tells `log`, once per field, that committed values did not fit their column: kept in `_extra` until the next run widens it. */
export class DriftTeller {
  private readonly told = new Set<string>();
  private readonly display: string;
  private readonly log: DriftLog | undefined;

  constructor(display: string, log: DriftLog | undefined) {
    this.display = display;
    this.log = log;
  }

  tell(stream: string, fields: readonly string[]): void {
    if (this.log === undefined) return;
    for (const field of fields) {
      const name = `${stream}.${field}`;
      if (this.told.has(name)) continue;
      this.told.add(name);
      this.log(
        'INFO',
        `Schema drift in ${this.display}: ${name} got values its column cannot hold (a new field, or a wider type); they are kept whole in _extra, and the next run adds or widens the column and moves them into it.`,
      );
    }
  }
}
