/**
 * What the PostgreSQL and DuckDB stores say and read back alike: the
 * changes opening made to the tables (schema drift), one line each, and the
 * widenings the database refused; a value a run met that did not fit its
 * column, once per field; and the states saved in the store, checked as a
 * state file's are.
 */
import { ConfigError } from '../errors.js';
import { parseStreamState, type StreamState } from '../engine/state.js';
import type { LogLevel } from '../engine/sync-sink.js';
import { describeChange, widen, withoutWidenings, type ColumnChange, type StoreKind, type StoreLayout } from './columns.js';
import type { StoreTableSpec } from './checkpoint.js';
import type { SchemaChange, StoreNote } from './store.js';

/** A widening the database refuses because something depends on the column: the change in words, and what the database said. */
interface BlockedNote {
  readonly change: string;
  readonly why: string;
}

/**
 * A widening (ALTER COLUMN ... TYPE) the database refuses because something a
 * user made depends on the column or its table (a dashboard team's view, an
 * index): dropping it is not the run's to do, so the column keeps its type and
 * the values that do not fit stay in `_extra`. `why`: the database's words.
 */
export class RefusedWidening extends Error {
  readonly field: string;
  readonly why: string;
  constructor(field: string, why: string) {
    super(why);
    this.field = field;
    this.why = why;
  }
}

/** What opening made of the tables. */
export interface OpenedTables {
  /** The layout each table is written with now. */
  readonly specs: StoreTableSpec[];
  /** The changes made, in words (`contacts.score: bigint -> numeric`). */
  readonly changes: string[];
  /** Changes left for the next run (PostgreSQL: a table lock not had in time), in words. */
  readonly postponed: string[];
  /** Widenings the database refuses, in words, with its reason. */
  readonly blocked: BlockedNote[];
  /** The changes made, for the run summary. */
  readonly applied: ColumnChange[];
  /** Streams whose table, or a column of it, was missing (dropped by hand) and was made again: each is read again from the start. */
  readonly remade: string[];
}

/** One table to open: `mine`, the changes `asked` of it but the widenings `refused` so far, make it `layout` (from `before`, none for a new table). */
interface TableToOpen {
  readonly spec: StoreTableSpec;
  readonly before: StoreLayout | undefined;
  readonly asked: readonly ColumnChange[];
  readonly mine: readonly ColumnChange[];
  readonly layout: StoreLayout;
  readonly refused: ReadonlyMap<string, StoreKind>;
  /** To call, in the table's transaction, when the table or a column of it was missing and is made again: forgets its stream's state. */
  readonly remade: () => Promise<void>;
}

/**
 * Make each stream's table, or change it to `specs`' layout (from the one
 * `stored`): `open` does one table in a transaction it rolls back when it
 * fails, and gives back nothing once made, or the layout the table keeps when
 * it leaves the changes for the next run; `forget` forgets a remade table's
 * stream's state (forgetStream). A RefusedWidening it throws is
 * noted (in the words `why` gives) and the table opened again without that
 * widening, its other changes made: the column keeps its type, and the next
 * run asks again.
 */
export async function openEachTable(
  specs: readonly StoreTableSpec[],
  stored: ReadonlyMap<string, StoreLayout>,
  changes: readonly ColumnChange[],
  types: Readonly<Record<StoreKind, string>>,
  forget: (stream: string) => Promise<void>,
  open: (table: TableToOpen) => Promise<StoreLayout | undefined>,
  why: (err: RefusedWidening, spec: StoreTableSpec) => Promise<string> = async (err) => err.why,
): Promise<OpenedTables> {
  const opened: OpenedTables = { specs: [], changes: [], postponed: [], blocked: [], applied: [], remade: [] };
  const describe = (c: ColumnChange): string => describeChange(c, (k) => types[k]);
  for (const spec of specs) {
    const before = stored.get(spec.layout.stream);
    const asked = changes.filter((c) => c.stream === spec.layout.stream);
    const refused = new Map<string, StoreKind>();
    for (;;) {
      const mine = asked.filter((c) => !refused.has(c.field));
      const layout = before === undefined ? spec.layout : withoutWidenings(spec.layout, before, refused);
      try {
        const remade = async (): Promise<void> => {
          await forget(spec.layout.stream);
          if (!opened.remade.includes(spec.layout.stream)) opened.remade.push(spec.layout.stream);
        };
        const kept = await open({ spec, before, asked, mine, layout, refused, remade });
        opened.specs.push({ ...spec, layout: kept ?? layout });
        (kept === undefined ? opened.changes : opened.postponed).push(...mine.map(describe));
        if (kept === undefined) opened.applied.push(...mine);
        break;
      } catch (err) {
        if (!(err instanceof RefusedWidening)) throw err;
        // The table's transaction is undone: make it again without this widening.
        const change = asked.find((c) => c.field === err.field) as ColumnChange;
        refused.set(change.field, change.to);
        opened.blocked.push({ change: describe(change), why: await why(err, spec) });
      }
    }
  }
  return opened;
}

/** The WARN for a stream whose table (or column) was missing and made again, `missing` saying what was missing where (every store's). */
export function remadeNote(stream: string, missing: string): StoreNote {
  return { level: 'WARN', message: `${stream}: ${missing} (dropped by hand?): made again, and the stream is read again from the start.` };
}

/**
 * One WARN per stream whose table or column was made again (read again
 * from the start), one INFO per table change made (`contacts.score: bigint -> numeric`), one
 * WARN per change left for the next run, and one per widening something
 * else in the database refuses (a view over the column): the run cannot
 * drop what a user made, so it says what to do, at every run until then.
 */
export function changeNotes(display: string, changes: readonly string[], postponed: readonly string[], blocked: readonly BlockedNote[] = [], remade: readonly string[] = []): StoreNote[] {
  return [
    ...remade.map((stream) => remadeNote(stream, `its table or a column of it was missing in ${display}`)),
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

/** The states a store holds (JSON text by stream), as the engine reads them; a broken one is a config_error that names the store (every store: SQLite's too). */
export function parseSavedStates(display: string, saved: ReadonlyMap<string, string>): Map<string, StreamState> {
  const out = new Map<string, StreamState>();
  for (const [stream, text] of saved) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ConfigError(`The state of stream "${stream}" in ${display} is not JSON: replicate into another schema or file to start over.`, {
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
