/**
 * How the PostgreSQL and DuckDB stores write checkpoints: gathered into
 * groups, each group written in ONE transaction with the states of the
 * checkpoints it holds, so that whatever is committed is whole checkpoints
 * (a run killed at any moment leaves every stream at a checkpoint it had
 * reached, and the next run resumes from there), while the statements and
 * the commit are paid once per group instead of once per page: a page of
 * 200 records costs a PostgreSQL round trip or a DuckDB index merge of its
 * own, and those dominate when each page is its own transaction
 * (bench/stores.ts).
 *
 * A group is written while the next one gathers (the read goes on
 * meanwhile); `write` waits only when a full group is waiting behind the
 * one being written (backpressure: at most two groups of records in
 * memory). A group is written as soon as the writer is idle and it is
 * GROUP_MS old, or it holds MAX_GROUP_ROWS rows or MAX_GROUP_PARTS parts,
 * or `flush` is called.
 *
 * A checkpoint's records are encoded into the store's staged rows when it
 * is taken (values.ts, then the store's own form of the checkpoint's rows:
 * PostgreSQL's COPY text as bytes, DuckDB's CSV appended to a file of the
 * group's), and the records let go:
 * the garbage collector would otherwise trace them again and again while
 * the group gathers and is written.
 *
 * A group holds one row per id of a stream: a checkpoint that holds an id
 * the group's part of its stream holds already (a record that changed
 * during the read and came again) starts the next group, so the later row
 * replaces the earlier one as upserts in order would. The group's
 * statements run in this order, whose result is the same as the
 * checkpoints' one by one (the deletion guard and the deletion rule
 * commute: a row goes iff it did not change after a known deletion of its
 * object, its cursor later than `deleted_at` by more than the service's
 * look-back (changedAfterDeletion in time.ts), whichever came first):
 *  1. `DELETE FROM` each table a full-refresh stream replaces (DELETE, not
 *     TRUNCATE: readers keep reading the old rows until the commit);
 *  2. each stream's rows into its staging table (PostgreSQL's COPY,
 *     DuckDB's CSV reader);
 *  3. the deletion log's rows merged, then its records delete the rows
 *     they name unless the row changed after the deletion;
 *  4. every other stream: the guard drops staged rows that did not change
 *     after a known deletion of their object, then the staged rows replace
 *     those of the same id (the store's upsertSql); a full read's ids
 *     marked, and at its last checkpoint the rows it did not return swept;
 *  5. the drift the rows asked for (applied at the next open), each
 *     part's last state; COMMIT.
 * A checkpoint that starts a full refresh or a full read starts a new group
 * when the group holds its stream already, and the last checkpoint of a
 * full read ends its group: a stream's rows in a group are then all of one
 * kind, and a sweep never meets rows of a later read.
 *
 * Failures: a record without its key refuses its checkpoint at once
 * (nothing of it is written) and its stream stops. A group the store
 * refuses (a statement failed: a trigger, a constraint someone added) is
 * rolled back; its failing stream stops (its later checkpoints are
 * refused, so its state never moves past lost rows) and the rest of the
 * group is written again without it. In a store of many accounts what stops
 * is that stream of that account (a part): the other accounts' parts of the
 * stream go on, and the failed account's state row stays as last committed
 * (each account's state is a row of its own, STATE_TABLE), so that its next
 * run reads again what was not written. A lost connection (or a DuckDB
 * database invalidated) stops everything: what was not committed is read
 * again by the next run.
 */
import { ConnectorError } from '../errors.js';
import { LOOK_BACK_MS } from '../time.js';
import { ACCOUNT_COLUMN, keyColumns, qualified, quoteIdent, storeColumnNames, widen, withPending, type StoreKind, type StoreLayout } from './columns.js';
import { FULL_READ_TABLE, STATE_TABLE, fullReadKey, TABLES_TABLE, PartFailures, lastPerKey, partKey, partName, unknownDeletionTypes, type StoreCheckpoint, type StoreCommitResult, type StoreTableSpec } from './checkpoint.js';
import { encodeRow, type Cell, type Data, type StoreDialect } from './values.js';

/** How long a group gathers checkpoints at least, when the writer is idle. */
const GROUP_MS = 250;
/** Rows after which a group is written without waiting. */
export const MAX_GROUP_ROWS = 20_000;
/**
 * Parts (a stream's checkpoints, of one account in a store of many) after
 * which a group is written without waiting. Each part is staged in a table
 * of its own, made again for it, and DuckDB keeps every table a transaction
 * replaced until its commit, in the store's 64 MB of buffers: a group of
 * some sixty parts of contacts ran out of them, and every account of the
 * group failed. With many accounts that have little to read each, the
 * reading outruns the writing and a group would gather a part for each
 * account read meanwhile (hundreds); few parts per group cost a commit
 * more now and then, not a statement more.
 */
export const MAX_GROUP_PARTS = 16;

/** A stream's staging table, as a store makes and fills it. */
export interface StageTable {
  /** Its name (a temporary table of the session, unqualified). */
  readonly name: string;
  /** How statements name it: in the session's temporary schema (StoreSql.tempSchema), whatever the search_path lists before it. */
  readonly ref: string;
  readonly layout: StoreLayout;
  /** The staged columns: the layout's, then `_extra` and `_absent` (not `_synced_at`). */
  readonly columns: readonly string[];
}

/** What the group writer needs of a store: its SQL, its staging, its faults; `C` is a checkpoint's staged rows in the store's own form. */
export interface StoreSql<C> {
  /** The store's values and SQL expressions. */
  readonly dialect: StoreDialect;
  /** The schema that names the session's temporary tables (PostgreSQL's pg_temp); none: their plain names. */
  readonly tempSchema?: string;
  /** Run a statement ($1... parameters); the rows it changed. */
  run(sql: string, params?: readonly (string | null)[]): Promise<number>;
  /** Whether a query returns a row. */
  any(sql: string): Promise<boolean>;
  /**
   * Whether a group's states go into the store in one statement: where no
   * state row can be refused alone (DuckDB has no triggers), and a
   * statement costs far more than a row. Otherwise a statement per part,
   * so that a refused state row stops its own part (PostgreSQL: a trigger).
   */
  readonly statesAtOnce?: boolean;
  /**
   * The statements that put the staged rows into the table, replacing the
   * rows of the same key (`table` and `stage` quoted, `columns` the staged
   * ones quoted, `keys` the primary key's columns quoted: the id, or the
   * account then the id); the last one's changed rows are the rows written.
   */
  upsertSql(table: string, stage: string, columns: readonly string[], keys: readonly string[]): string[];
  /**
   * Run first in each group's transaction (when the store has it): throws
   * when the transaction would not be the writer's (its session does not
   * hold the store's writer lock), and nothing of the group is written.
   */
  checkWriter?(): Promise<void>;
  /**
   * Make the staging table of `stage`, replacing one of that name the
   * session holds (once per session, in the first group's transaction, after
   * checkWriter: where the group is written).
   */
  createStage(stage: StageTable): Promise<void>;
  /** A part's staged rows, none yet (a part of a group: one stream's checkpoints, of one account's). */
  newStaged(): C;
  /** A checkpoint's rows (each its cells, in `stage`'s columns' order) added to a part's staged rows. */
  stageRows(staged: C, rows: Cell[][], stage: StageTable): void;
  /**
   * Empty `stage` and fill it with the rows of `staged`: each store empties
   * its staging its own way (a stage is filled once per part, so several
   * times in one transaction with many accounts; a part again when its
   * group is written again without a refused part).
   */
  fillStage(stage: StageTable, staged: C): Promise<void>;
  /** Let a part's staged rows go, once its group is over (committed, refused, dropped); more than once does nothing. */
  dropStaged(staged: C): void;
  /** Whether the store must stop after this error (the connection lost, the database invalidated). */
  isFatal(err: unknown): boolean;
  /** The error as the run reports it (a message with the store's display form). */
  error(err: unknown): ConnectorError;
}

interface Table {
  spec: StoreTableSpec;
  readonly stage: StageTable;
  readonly kinds: ReadonlyMap<string, StoreKind>;
}

/** The checkpoints of one stream in a group (of one account's, in a store of many accounts). */
interface StreamPart<C> {
  readonly stream: string;
  /** The entry whose rows these are, in a store of many accounts. */
  readonly account: string | undefined;
  /** The keys of its rows: a group holds one row per key (a checkpoint that repeats one starts the next group). */
  readonly ids: Set<string>;
  /** Its checkpoints' rows, encoded (the store's own form). */
  readonly staged: C;
  rows: number;
  /** What its rows asked of their columns (values.ts). */
  readonly drift: Map<string, StoreKind>;
  /** The records themselves, of the deletion log only (its unknown object types are told). */
  readonly records: Data[];
  fullRead: { first: boolean; last: boolean } | undefined;
  /** The state its last checkpoint gave (its account's alone, in a store of many accounts), as JSON text. */
  state: string;
  /** Each checkpoint's callback, told once the group is committed. */
  readonly committed: ((result: StoreCommitResult) => void)[];
}

interface Group<C> {
  /** By stream, or by stream and account in a store of many accounts (partKey). */
  readonly parts: Map<string, StreamPart<C>>;
  rows: number;
  /** Ends after its last checkpoint (a full read's last). */
  closed: boolean;
  /** When it opened, on the monotonic clock (performance.now()): a step of the wall clock neither holds nor hurries it. */
  readonly openedAt: number;
  /** Its place in the writing order, once queued (1, 2, ...). */
  seq: number;
}

const ZERO: StoreCommitResult = { upserted: 0, skippedDeleted: 0, deletedRows: 0, unknownTypes: [], sweptRows: 0, drift: [] };

export interface GroupOptions {
  readonly groupMs?: number;
  readonly maxGroupRows?: number;
}

export class GroupWriter<C> {
  private readonly sql: StoreSql<C>;
  private readonly schema: string;
  private readonly tables = new Map<string, Table>();
  private readonly targets = new Map<string, Table>();
  private readonly log: Table | undefined;
  private readonly groupMs: number;
  private readonly maxGroupRows: number;
  private prepared = false;
  /** The staging tables are made (by a committed transaction). */
  private staged = false;
  private deletionsKnown = false;
  private gathering: Group<C> | undefined;
  /** The group being written, and the groups waiting (closed, or full). */
  private writing: Promise<void> | undefined;
  private readonly waiting: Group<C>[] = [];
  /** The last group queued, and the last one written (or dropped): groups are written in the order they are queued. */
  private queued = 0;
  private done = 0;
  /** Tasks of `between`, each run before the next group. */
  private readonly tasks: { run: () => Promise<void>; fail: (error: ConnectorError) => void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly failures = new PartFailures();
  private broken: ConnectorError | undefined;
  /**
   * Told of a stream that failed once its checkpoints were taken (its group
   * refused): of `account` alone in a store of many accounts, of every
   * account when `account` is undefined. Its later checkpoints are refused.
   */
  onStreamFailed: ((stream: string, error: ConnectorError, account: string | undefined) => void) | undefined;

  /** `schema`: where the store's tables live. */
  constructor(sql: StoreSql<C>, schema: string, specs: readonly StoreTableSpec[], options: GroupOptions = {}) {
    this.sql = sql;
    this.schema = schema;
    this.groupMs = options.groupMs ?? GROUP_MS;
    this.maxGroupRows = options.maxGroupRows ?? MAX_GROUP_ROWS;
    let n = 0;
    let log: Table | undefined;
    for (const spec of specs) {
      const name = `_replica_stage_${n++}`;
      const ref = sql.tempSchema === undefined ? name : `${sql.tempSchema}.${name}`;
      const stage: StageTable = { name, ref, layout: spec.layout, columns: storeColumnNames(spec.layout).slice(0, -1) };
      const table: Table = { spec, stage, kinds: new Map(spec.layout.columns.map((c) => [c.field, c.kind])) };
      this.tables.set(spec.layout.stream, table);
      if (spec.deletedAs !== null) this.targets.set(spec.deletedAs, table);
      if (spec.deletionLog) log = table;
    }
    this.log = log;
  }

  /** A table of the store's schema, quoted. */
  private qualified(table: string): string {
    return qualified(this.schema, table);
  }

  layoutOf(stream: string): StoreLayout {
    const table = this.tables.get(stream);
    if (!table) throw new Error(`the store has no table for stream "${stream}"`);
    return table.spec.layout;
  }

  /** Every table's layout now (with the drift its commits met, pending for the next run). */
  layouts(): StoreLayout[] {
    return [...this.tables.values()].map((t) => t.spec.layout);
  }

  /** Why nothing more is written (the store was lost). */
  get lost(): ConnectorError | undefined {
    return this.broken;
  }

  /**
   * Take one checkpoint into the gathering group; `committed` is told its
   * stream's result once the group holding it is committed. Resolves once
   * the checkpoint is taken (it waits while a full group waits to be
   * written); rejects at once for a checkpoint refused (no key, its stream
   * failed before, the store lost).
   */
  async write(checkpoint: StoreCheckpoint, committed?: (result: StoreCommitResult) => void): Promise<void> {
    if (this.broken) throw this.broken;
    const table = this.tables.get(checkpoint.stream);
    if (!table) throw new Error(`the store has no table for stream "${checkpoint.stream}"`);
    // In a store of many accounts, a part is one account's rows (its full table, its full read); the records carry that account.
    const manyAccounts = table.spec.layout.accountKey === true;
    const account = manyAccounts ? checkpoint.account : undefined;
    if (manyAccounts && account === undefined) throw new Error(`a checkpoint of ${checkpoint.stream} names no account, and the store keeps many`);
    const earlier = this.failures.of(checkpoint.stream, account);
    if (earlier !== undefined) {
      throw new ConnectorError(
        this.failures.failureOf(checkpoint.stream, account),
        `An earlier checkpoint of ${partName(checkpoint.stream, account)} could not be written (${earlier}), so later ones are not either.`,
      );
    }
    const { records, keys: ids, keyless } = lastPerKey(checkpoint.records, table.spec.layout.primaryKey);
    const otherAccount = account === undefined ? -1 : records.findIndex((r) => r[ACCOUNT_COLUMN] !== account);
    if (keyless >= 0 || otherAccount >= 0) {
      const cause =
        keyless >= 0
          ? `record ${keyless + 1} of the checkpoint has no ${table.spec.layout.primaryKey}`
          : `a record of the checkpoint of account "${account}" has ${ACCOUNT_COLUMN} ${JSON.stringify(records[otherAccount]?.[ACCOUNT_COLUMN] ?? null)}`;
      this.failures.add(checkpoint.stream, account, cause);
      throw new ConnectorError('system_error', `${cause}, so nothing of that checkpoint is written.`);
    }
    while (this.waiting.length > 0 && this.writing) {
      await this.writing;
      if (this.broken) throw this.broken;
    }
    const { layout, deletionLog } = table.spec;
    let group = this.gathering;
    const startsOver = checkpoint.fullRead?.first === true;
    const key = partKey(checkpoint.stream, account);
    const held = group?.parts.get(key);
    if (group && (group.closed || (startsOver && held) || (held && ids.some((id) => held.ids.has(id))))) {
      this.enqueue(group);
      group = undefined;
    }
    if (!group) {
      group = { parts: new Map(), rows: 0, closed: false, openedAt: performance.now(), seq: 0 };
      this.gathering = group;
    }
    let part = group.parts.get(key);
    if (!part) {
      part = { stream: checkpoint.stream, account, ids: new Set(), staged: this.sql.newStaged(), rows: 0, drift: new Map(), records: [], fullRead: undefined, state: checkpoint.state, committed: [] };
      group.parts.set(key, part);
    }
    if (checkpoint.fullRead) {
      part.fullRead = { first: (part.fullRead?.first ?? false) || checkpoint.fullRead.first, last: checkpoint.fullRead.last };
      if (checkpoint.fullRead.last) group.closed = true;
    }
    if (records.length > 0) {
      const rows = new Array<Cell[]>(records.length);
      for (let i = 0; i < records.length; i++) {
        const { cells, drift } = encodeRow(layout, records[i] as Data, this.sql.dialect);
        rows[i] = cells;
        if (drift) for (const [field, kind] of drift) part.drift.set(field, widen(part.drift.get(field) ?? kind, kind));
        part.ids.add(ids[i] as string);
      }
      try {
        this.sql.stageRows(part.staged, rows, table.stage);
      } catch (err) {
        // Its rows are not in the group, and its part (made for it, with its state) may be: the stream fails here, so
        // that neither its part nor a later checkpoint commits a state past rows never written.
        const error = this.sql.error(err);
        this.failures.add(checkpoint.stream, account, error.message, error.failureType);
        throw error;
      }
      part.rows += records.length;
      group.rows += records.length;
      if (deletionLog) part.records.push(...records);
    }
    part.state = checkpoint.state;
    if (committed) part.committed.push(committed);
    if (group.closed || group.rows >= this.maxGroupRows || group.parts.size >= MAX_GROUP_PARTS) this.enqueue(group);
    this.pump();
  }

  /**
   * Write everything taken so far and wait for its commit; rejects with the
   * store's loss. Waits for the groups holding what was taken before the
   * call, not for the writer to be idle: with many accounts the other
   * accounts' checkpoints keep filling groups (a full one always waiting
   * behind the one written), and a flush waiting for idleness would wait for
   * every other account to end.
   */
  async flush(): Promise<void> {
    if (this.gathering) this.enqueue(this.gathering);
    const upTo = this.queued;
    this.pump();
    while (this.done < upTo && !this.broken) {
      if (!this.writing) this.pump();
      if (!this.writing) break;
      await this.writing;
    }
    if (this.broken) throw this.broken;
  }

  /** Write one checkpoint and wait for its commit (with whatever was gathered before it): its result. */
  async commit(checkpoint: StoreCheckpoint): Promise<StoreCommitResult> {
    let result: StoreCommitResult | undefined;
    await this.write(checkpoint, (r) => {
      result = r;
    });
    await this.flush();
    if (result === undefined) {
      const account = this.tables.get(checkpoint.stream)?.spec.layout.accountKey === true ? checkpoint.account : undefined;
      const failed = this.failures.of(checkpoint.stream, account);
      throw (
        this.broken ??
        new ConnectorError(this.failures.failureOf(checkpoint.stream, account), `The checkpoint of ${partName(checkpoint.stream, account)} could not be written: ${failed ?? 'its group was refused'}.`)
      );
    }
    return result;
  }

  /**
   * Run `task` on the store's session between two groups (none is written
   * meanwhile): a statement of its own never lands inside a group's
   * transaction, nor runs beside it on the same connection.
   */
  async between<T>(task: () => Promise<T>): Promise<T> {
    if (this.broken) throw this.broken;
    // Queued before the groups waiting: run as soon as the group being written ends, even while other accounts keep feeding groups.
    return new Promise<T>((resolve, reject) => {
      this.tasks.push({
        run: () => Promise.resolve().then(task).then(resolve, reject),
        fail: reject,
      });
      this.pump();
    });
  }

  /** Stop: what is not committed is dropped (a run that stops early). */
  abandon(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const group of [...this.waiting.splice(0), ...(this.gathering ? [this.gathering] : [])]) this.dropStaged(group);
    this.gathering = undefined;
    this.done = this.queued;
  }

  /** Let the group's staged rows go (a store may hold them in files: DuckDB's). */
  private dropStaged(group: Group<C>): void {
    for (const part of group.parts.values()) this.sql.dropStaged(part.staged);
  }

  private enqueue(group: Group<C>): void {
    if (this.gathering === group) this.gathering = undefined;
    if (group.parts.size === 0) return;
    group.seq = ++this.queued;
    this.waiting.push(group);
  }

  /** Start writing the next group if the writer is idle: a waiting one, or the gathering one once GROUP_MS old. */
  private pump(): void {
    if (this.writing) return;
    if (this.broken) {
      for (const task of this.tasks.splice(0)) task.fail(this.broken);
      // Never written now: their staged rows go (DuckDB's files of rows, personal data, not left until the process exits).
      for (const group of [...this.waiting.splice(0), ...(this.gathering ? [this.gathering] : [])]) this.dropStaged(group);
      this.gathering = undefined;
      return;
    }
    const task = this.tasks.shift();
    if (task) {
      this.writing = task.run().finally(() => {
        this.writing = undefined;
        this.pump();
      });
      return;
    }
    if (this.waiting.length === 0 && this.gathering) {
      const age = performance.now() - this.gathering.openedAt;
      if (age < this.groupMs) {
        this.timer ??= setTimeout(() => {
          this.timer = undefined;
          this.pump();
        }, this.groupMs - age);
        return;
      }
      this.enqueue(this.gathering);
    }
    const group = this.waiting.shift();
    if (!group) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.writing = this.writeGroup(group).finally(() => {
      this.dropStaged(group);
      this.done = group.seq;
      this.writing = undefined;
      this.pump();
    });
  }

  private async prepare(): Promise<void> {
    if (this.prepared) return;
    if (this.log) this.deletionsKnown = await this.sql.any(`SELECT 1 FROM ${this.qualified(this.log.spec.layout.table)} LIMIT 1`);
    this.prepared = true;
  }

  /**
   * Write a group; on a refusal, again without the failing part (which stops), as many times as parts are refused:
   * each try has one part fewer, and two streams whose rows the server refuses (a trigger) stop those two, not the
   * store. A transient failure on a try after the first (a full disk, a second lock held) is the store's: it stops the
   * run, which the next one resumes.
   */
  private async writeGroup(group: Group<C>): Promise<void> {
    let parts = [...group.parts.values()].filter((p) => this.failures.of(p.stream, p.account) === undefined);
    for (let attempt = 0; parts.length > 0; attempt++) {
      let failing: { stream: string; account: string | undefined } | undefined;
      try {
        await this.prepare();
        const results = await this.transaction(parts, (stream, account) => {
          failing = { stream, account };
        });
        for (const part of parts) {
          const result = results.get(part) ?? ZERO;
          part.committed.forEach((tell, i) => tell(i === part.committed.length - 1 ? result : ZERO));
        }
        return;
      } catch (err) {
        const error = this.sql.error(err);
        if (this.sql.isFatal(err) || failing === undefined || (attempt > 0 && error.failureType === 'transient_error')) {
          this.broken ??= error;
          return;
        }
        const { stream, account } = failing;
        this.failures.add(stream, account, error.message, error.failureType);
        this.onStreamFailed?.(stream, error, account);
        parts = parts.filter((p) => this.failures.of(p.stream, p.account) === undefined);
      }
    }
  }

  /** One transaction for `parts`; `at` is told the part each step works on (the one to blame if it fails: a stream alone, its drift, is every account's). */
  private async transaction(
    parts: readonly StreamPart<C>[],
    at: (stream: string, account: string | undefined) => void,
  ): Promise<Map<StreamPart<C>, StoreCommitResult>> {
    const sql = this.sql;
    const results = new Map<StreamPart<C>, StoreCommitResult>();
    // The deletion log first: its records are known to the guard of every other stream of the group.
    const ordered = [...parts].sort((a, b) => Number(this.tables.get(b.stream)?.spec.deletionLog != null) - Number(this.tables.get(a.stream)?.spec.deletionLog != null));
    // The guard is needed once the log holds a record: from before, or of this group (written first).
    const logRows = ordered.some((p) => this.tables.get(p.stream)?.spec.deletionLog != null && p.rows > 0);
    const guard = this.deletionsKnown || logRows;
    await sql.run('BEGIN');
    try {
      await sql.checkWriter?.();
      // In the transaction, so on the session that writes it (a pooler may run statements outside one elsewhere);
      // undone with it, then made again by the next.
      if (!this.staged) for (const table of this.tables.values()) await sql.createStage(table.stage);
      const drifts = new Map<string, Map<string, StoreKind>>();
      for (const part of ordered) {
        at(part.stream, part.account);
        const table = this.tables.get(part.stream) as Table;
        results.set(part, await this.writePart(table, part, guard));
        const all = drifts.get(part.stream) ?? new Map<string, StoreKind>();
        for (const [field, kind] of part.drift) all.set(field, widen(all.get(field) ?? kind, kind));
        drifts.set(part.stream, all);
      }
      // The drift each stream's rows asked for, once, after its rows: of every account, in a store of many.
      for (const [stream, drift] of drifts) {
        const pending = drift.size > 0 ? withPending((this.tables.get(stream) as Table).spec.layout, drift) : undefined;
        if (pending === undefined) continue;
        at(stream, undefined);
        await sql.run(`UPDATE ${this.qualified(TABLES_TABLE)} SET layout = $2 WHERE stream = $1`, [stream, JSON.stringify(pending)]);
      }
      // Each part's last state: a row per stream, or per stream and account in a store of many (only the accounts of this group).
      // In one statement where the store says so (statesAtOnce), whose failure, then the store's, is told as its first part's.
      for (const states of sql.statesAtOnce === true ? [ordered] : ordered.map((part) => [part])) {
        const [first] = states as [StreamPart<C>];
        at(first.stream, first.account);
        await sql.run(
          `INSERT INTO ${this.qualified(STATE_TABLE)} (stream, state, committed_at) VALUES ${states.map((_, i) => `($${2 * i + 1}, $${2 * i + 2}, now())`).join(', ')} ` +
            'ON CONFLICT (stream) DO UPDATE SET state = EXCLUDED.state, committed_at = EXCLUDED.committed_at',
          states.flatMap((part) => [partKey(part.stream, part.account), part.state]),
        );
      }
      await sql.run('COMMIT');
      this.staged = true;
      if (logRows) this.deletionsKnown = true;
    } catch (err) {
      await sql.run('ROLLBACK').catch(() => 0);
      throw err;
    }
    for (const part of ordered) {
      const table = this.tables.get(part.stream) as Table;
      const pending = part.drift.size > 0 ? withPending(table.spec.layout, part.drift) : undefined;
      if (pending) table.spec = { ...table.spec, layout: pending };
    }
    return results;
  }

  private async writePart(table: Table, part: StreamPart<C>, guard: boolean): Promise<StoreCommitResult> {
    const sql = this.sql;
    const { layout } = table.spec;
    const name = this.qualified(layout.table);
    const key = quoteIdent(layout.primaryKey);
    // In a store of many accounts every statement keeps to the part's account: its full read, its deletions.
    // They run once per part, where the stage, the guard, the upsert and the deletions could run once per stream for all
    // the group's accounts (each joins on the account): kept per part because each account's result (rows written,
    // skipped, deleted: its own tally) and a refusal (which stops that account alone) are the part's. A group holds parts of
    // the accounts read while it gathered (max_concurrent_accounts at a time), so few more statements than for one account.
    const account = part.account;
    const sameAccount = (a: string, b: string): string => (layout.accountKey === true ? ` AND ${a}.${quoteIdent(ACCOUNT_COLUMN)} = ${b}.${quoteIdent(ACCOUNT_COLUMN)}` : '');
    // A stage holds one part's rows (the store empties it as it fills it).
    await sql.fillStage(table.stage, part.staged);
    const rows = part.rows;
    const stage = table.stage.ref;

    let skippedDeleted = 0;
    const log = this.log;
    if (guard && log && log !== table && table.spec.deletedAs !== null && layout.cursorField !== null && rows > 0) {
      const fields = log.spec.deletionLog as NonNullable<StoreTableSpec['deletionLog']>;
      const k = log.kinds;
      skippedDeleted = await sql.run(
        `DELETE FROM ${stage} s USING ${this.qualified(log.spec.layout.table)} d
          WHERE ${sql.dialect.textOf(k.get(fields.objectTypeField) ?? 'text', `d.${quoteIdent(fields.objectTypeField)}`)} = $1
            AND ${sql.dialect.textOf(k.get(fields.objectIdField) ?? 'text', `d.${quoteIdent(fields.objectIdField)}`)} = s.${key}${sameAccount('d', 's')}
            AND ${notChangedAfter(sql.dialect.instantOf(table.kinds.get(layout.cursorField) ?? 'text', `s.${quoteIdent(layout.cursorField)}`), sql.dialect.instantOf(k.get(fields.deletedAtField) ?? 'text', `d.${quoteIdent(fields.deletedAtField)}`))}`,
        [table.spec.deletedAs],
      );
    }

    let upserted = 0;
    if (rows > 0) {
      for (const statement of sql.upsertSql(name, stage, table.stage.columns.map(quoteIdent), keyColumns(layout).map(quoteIdent))) upserted = await sql.run(statement);
    }

    let sweptRows = 0;
    if (part.fullRead) {
      const marks = this.qualified(FULL_READ_TABLE);
      const read = fullReadKey(part.stream, account);
      // A full read whole in this part (from its first checkpoint to its last: a small stream's, read at every run) keeps
      // the rows its stage holds; its ids are marked only for the parts that follow.
      const whole = part.fullRead.first && part.fullRead.last;
      if (part.fullRead.first) await sql.run(`DELETE FROM ${marks} WHERE stream = $1`, [read]);
      if (rows > 0 && !whole) await sql.run(`INSERT INTO ${marks} (stream, id) SELECT $1, ${key} FROM ${stage} ON CONFLICT DO NOTHING`, [read]);
      if (part.fullRead.last) {
        const params = whole ? [] : [read];
        const kept = whole ? `SELECT 1 FROM ${stage} s WHERE s.${key} = t.${key}` : `SELECT 1 FROM ${marks} m WHERE m.stream = $1 AND m.id = t.${key}`;
        if (account !== undefined) params.push(account);
        sweptRows = await sql.run(
          `DELETE FROM ${name} t WHERE NOT EXISTS (${kept})${account === undefined ? '' : ` AND t.${quoteIdent(ACCOUNT_COLUMN)} = $${params.length}`}`,
          params,
        );
        if (!whole) await sql.run(`DELETE FROM ${marks} WHERE stream = $1`, [read]);
      }
    }

    let deletedRows = 0;
    let unknownTypes: [string, string][] = [];
    const fields = table.spec.deletionLog;
    if (fields && rows > 0) {
      unknownTypes = unknownDeletionTypes(part.records, table.spec, new Set(this.targets.keys()));
      for (const [type, target] of this.targets) {
        const cursor = target.spec.layout.cursorField;
        if (cursor === null) continue;
        deletedRows += await sql.run(
          `DELETE FROM ${this.qualified(target.spec.layout.table)} t USING ${stage} s
            WHERE ${sql.dialect.textOf(table.kinds.get(fields.objectTypeField) ?? 'text', `s.${quoteIdent(fields.objectTypeField)}`)} = $1
              AND t.${quoteIdent(target.spec.layout.primaryKey)} = ${sql.dialect.textOf(table.kinds.get(fields.objectIdField) ?? 'text', `s.${quoteIdent(fields.objectIdField)}`)}${sameAccount('t', 's')}
              AND ${notChangedAfter(sql.dialect.instantOf(target.kinds.get(cursor) ?? 'text', `t.${quoteIdent(cursor)}`), sql.dialect.instantOf(table.kinds.get(fields.deletedAtField) ?? 'text', `s.${quoteIdent(fields.deletedAtField)}`))}`,
          [type],
        );
      }
    }
    return { upserted, skippedDeleted, deletedRows, unknownTypes, sweptRows, drift: [...part.drift.keys()] };
  }
}

/**
 * SQL: whether a row whose cursor is the instant `cursor` did not change after
 * the deletion at the instant `deletedAt` (the negation of
 * changedAfterDeletion in time.ts: its cursor is not later by more than the
 * service's look-back); true also when either is NULL (not an instant).
 */
function notChangedAfter(cursor: string, deletedAt: string): string {
  return `(${cursor} > ${deletedAt} + INTERVAL '${LOOK_BACK_MS} milliseconds') IS NOT TRUE`;
}
