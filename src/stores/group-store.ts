/**
 * What the PostgreSQL and DuckDB stores share: checkpoints taken by their
 * group writer (group-writer.ts), the drift a commit met told once per field,
 * the states, facts and rows read back from the store's tables. Each store
 * adds how it opens, queries, writes a fact and lets go.
 */
import type { ConnectorError } from '../errors.js';
import type { StreamState } from '../engine/state.js';
import { keyColumns, qualified, quoteIdent, storeColumnNames, type ColumnChange, type StoreKind, type StoreLayout } from './columns.js';
import { FULL_READ_TABLE, METADATA_TABLE, STATE_TABLE, fullReadKey, joinSavedStates, type StoreCheckpoint, type StoreCommitResult, type StoreTableSpec } from './checkpoint.js';
import type { GroupWriter } from './group-writer.js';
import { DriftTeller, changeNotes, parseSavedStates, schemaChanges, type DriftLog, type OpenedTables } from './notes.js';
import { checkFacts } from './metadata.js';
import type { SchemaChange, Store, StoreFacts, StoreNote } from './store.js';
import { decodeRow, type Data, type ReadCell } from './values.js';

export abstract class GroupStore<C> implements Store {
  /** What opening did that the run says (the facts' notes, the tables changed). */
  readonly notes: readonly StoreNote[];
  /** The stream tables, as opening made them. */
  readonly tables: readonly StoreTableSpec[];
  /** What opening changed in the tables (new columns, widened types), in words, for the run summary. */
  readonly changes: readonly string[];
  protected readonly writer: GroupWriter<C>;
  readonly #display: string;
  readonly #drift: DriftTeller;
  readonly #made: readonly ColumnChange[];
  readonly #types: Readonly<Record<StoreKind, string>>;

  /** `notes`: the facts' notes (the tables' changes follow them); `types`: the store's SQL type of each kind. */
  protected constructor(
    display: string,
    writer: GroupWriter<C>,
    opened: OpenedTables,
    notes: readonly StoreNote[],
    log: DriftLog | undefined,
    types: Readonly<Record<StoreKind, string>>,
  ) {
    this.#display = display;
    this.writer = writer;
    this.notes = [...notes, ...changeNotes(display, opened.changes, opened.postponed, opened.blocked, opened.remade)];
    this.tables = opened.specs;
    this.changes = opened.changes;
    this.#drift = new DriftTeller(display, log);
    this.#made = opened.applied;
    this.#types = types;
  }

  /** The column changes opening made, then those left for the next run (postponed, or met by this run's commits). */
  schemaChanges(): SchemaChange[] {
    return schemaChanges(this.#made, this.writer.layouts(), this.#types);
  }

  layoutOf(stream: string): StoreLayout {
    return this.writer.layoutOf(stream);
  }

  /**
   * Take one checkpoint; it is committed with its group (group-writer.ts),
   * and `committed` told its stream's result then. Resolves once taken
   * (backpressure); rejects for a checkpoint refused or a store lost.
   */
  write(checkpoint: StoreCheckpoint, committed?: (result: StoreCommitResult) => void): Promise<void> {
    // The callback waits for the group's commit: it keeps the stream's name, not the checkpoint and its records.
    const { stream } = checkpoint;
    return this.writer.write(checkpoint, (result) => {
      this.#drift.tell(stream, result.drift);
      committed?.(result);
    });
  }

  /** Commit everything taken so far. */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  /** Write one checkpoint and wait for its commit: its result (tests, small scripts). */
  async commit(checkpoint: StoreCheckpoint): Promise<StoreCommitResult> {
    const result = await this.writer.commit(checkpoint);
    this.#drift.tell(checkpoint.stream, result.drift);
    return result;
  }

  /** A stream failed once its checkpoints were taken (its later checkpoints are refused): of one account in a store of many (`account`), of every account when undefined. */
  set onStreamFailed(listener: ((stream: string, error: ConnectorError, account: string | undefined) => void) | undefined) {
    this.writer.onStreamFailed = listener;
  }

  /** The state saved by each stream's last committed checkpoint (a state the store holds that is not one is a config_error naming it). */
  async loadStates(): Promise<Map<string, StreamState>> {
    // Between two groups: with many accounts, another account's group may be open on the store's session.
    return parseSavedStates(this.#display, await this.writer.between(() => this.savedStates()));
  }

  /** Whether marks of a full read of `stream` (of `account`) not yet ended are committed. */
  async fullReadMarked(stream: string, account: string | undefined): Promise<boolean> {
    const sql = `SELECT 1 AS x FROM ${this.#table(FULL_READ_TABLE)} WHERE stream = $1 LIMIT 1`;
    return (await this.writer.between(() => this.rows(sql, [fullReadKey(stream, account)]))).length > 0;
  }

  /** Where the store's tables live. */
  abstract readonly target: { readonly schema: string };

  /** A query's rows on the store's session (column name -> value as the driver gives it); a failure as the store reports it. */
  protected abstract rows(sql: string, params?: readonly string[]): Promise<Record<string, unknown>[]>;

  /** The expression that reads a column of `kind` back as a ReadCell (undefined: `_extra`, `_absent`). */
  protected abstract readBack(kind: StoreKind | undefined, column: string): string;

  #table(name: string): string {
    return qualified(this.target.schema, name);
  }

  /** The state (JSON text) saved by each stream's last committed checkpoint (in a store of many accounts, its accounts' joined). */
  async savedStates(): Promise<Map<string, string>> {
    const rows = await this.rows(`SELECT stream, state FROM ${this.#table(STATE_TABLE)} ORDER BY stream`);
    return joinSavedStates(rows.map((r) => [String(r.stream), String(r.state)]));
  }

  /** Every fact the store holds (its metadata table). */
  async allMetadata(): Promise<Map<string, string>> {
    const rows = await this.rows(`SELECT key, value FROM ${this.#table(METADATA_TABLE)}`);
    return new Map(rows.map((r) => [String(r.key), String(r.value)]));
  }

  /** A fact of the store's (checkpoint.ts: ACCOUNT_KEY...); undefined when none is recorded. */
  async metadata(key: string): Promise<string | undefined> {
    const [row] = await this.rows(`SELECT value FROM ${this.#table(METADATA_TABLE)} WHERE key = $1`, [key]);
    return row === undefined ? undefined : String(row.value);
  }

  /** Rows in each stream's table. */
  async rowCounts(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const { layout } of this.tables) {
      const [row] = await this.rows(`SELECT count(*) AS n FROM ${this.#table(layout.table)}`);
      counts.set(layout.stream, Number(row?.n ?? 0));
    }
    return counts;
  }

  /** A stream's records back, ordered by primary key, as they were written (the layout's columns, `_extra`, `_absent`). */
  async readRecords(stream: string): Promise<Data[]> {
    const layout = this.layoutOf(stream);
    const kinds = new Map(layout.columns.map((c) => [c.field, c.kind]));
    const select = storeColumnNames(layout)
      .slice(0, -1) // not `_synced_at`
      .map((name) => `${this.readBack(kinds.get(name), quoteIdent(name))} AS ${quoteIdent(name)}`);
    const rows = await this.rows(`SELECT ${select.join(', ')} FROM ${this.#table(layout.table)} ORDER BY ${keyColumns(layout).map(quoteIdent).join(', ')}`);
    return rows.map((row) => decodeRow(layout, row as Record<string, ReadCell>));
  }

  /** The run is done: commit what is gathered; the rows in each stream's table. */
  async finish(): Promise<Map<string, number>> {
    await this.writer.flush();
    return this.rowCounts();
  }

  /** Record a fact of the store's (under the writer lock). */
  abstract setMetadata(key: string, value: string): Promise<void>;

  /**
   * Check facts learnt during the run against those the store holds, and
   * record them (an entry's account, in a store of many accounts, once its
   * /v1/me answered): throws (a ConfigError) to refuse, with nothing
   * recorded; otherwise what to say. The store holds tables by then.
   */
  recordFacts(facts: StoreFacts): Promise<readonly StoreNote[]> {
    // Between two groups: on the writer's own session, never inside (or beside) a group's transaction.
    return this.writer.between(async () => {
      const held = await this.allMetadata();
      const checked = checkFacts(facts, held, true);
      for (const [key, value] of checked.record) if (held.get(key) !== value) await this.setMetadata(key, value);
      return checked.notes;
    });
  }

  #closed = false;

  /**
   * Commit what is gathered, then let the store go (release). Rejects with
   * the loss the commit meets, unless a write was already told it; the store
   * is let go either way. Once: a second close does nothing.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const reported = this.writer.lost;
    let lost: unknown;
    try {
      await this.writer.flush();
    } catch (err) {
      if (err !== reported) lost = err;
    }
    await this.release();
    if (lost !== undefined) throw lost;
  }

  /** Let the store go once its last group is committed or lost. */
  protected abstract release(): Promise<void>;
}
