/**
 * Writing checkpoints into the replica: each engine checkpoint (the rows of
 * the page(s) it covers, the deletions they carry, and the stream's state
 * row) is written whole or not at all. A transaction may hold several
 * checkpoints (ReplicaWriter commits a group of them at a time); whatever is
 * committed is always whole checkpoints, so a process killed at any point
 * leaves the database at a checkpoint of every stream, and the next run
 * continues from exactly there.
 *
 * A checkpoint that fails halfway:
 * - when the file holds something that can refuse a row (refusers.ts: a
 *   trigger, a CHECK constraint... someone added), each checkpoint is written
 *   inside a SAVEPOINT, and a failing one is undone alone: its stream fails,
 *   the others go on in the same transaction;
 * - otherwise no row can be refused once its primary key is known not NULL,
 *   which is checked before anything of the checkpoint is written; what can
 *   still fail (a full disk, an I/O error) takes the transaction with it:
 *   it is rolled back, and the writer stops. No savepoint then: SQLite would
 *   copy every page a checkpoint changes that was already in the file (a
 *   primary-key index page for each new row) to the savepoint's journal.
 *
 * Deletions: a record of the deletion log deletes the row it names, unless
 * that row changed after the deletion: its cursor later than `deleted_at` by
 * more than the service's look-back (changedAfterDeletion; applied from the
 * records as they came, besides the log's own rows). Streams are read
 * concurrently, so an upsert can arrive after the deletion of its object: an
 * upsert that did not change after a known deletion of the same object is
 * skipped (a deleted row is never resurrected).
 *
 * A full read that heals a gap in the deletion log (heal.ts), or follows a
 * watermark gone back (ReplicaSink.rereadInFull): each of its
 * checkpoints marks the ids it wrote in FULL_READ_TABLE, in the same file and
 * transaction as the rows (ids only, never another value); its last
 * checkpoint removes the table's rows that were not marked, in the
 * transaction that saves the state of the completed read, and clears the
 * marks. A run killed before that leaves the old rows and the old state, and
 * marks that the next heal keeps when it continues that read from its saved
 * resume cursor (heal.ts), or clears with its first checkpoint when it reads
 * again from the start.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { Data } from '../engine/sync-sink.js';
import { messageOf } from '../errors.js';
import { changedAfterDeletion } from '../time.js';
import { deletionIndexName, insertSql } from './database.js';
import { ACCOUNT_COLUMN, storeColumnNames, quoteIdent, keyColumns, type TableLayout } from './layout.js';
import { STATE_WRITTEN, rowRefusers, streamTable } from './refusers.js';
import type { RowValues } from './rows.js';
import type { CommitResult, StoreCheckpoint } from './sink.js';
import { FULL_READ_TABLE, PartFailures, STATE_TABLE, fullReadKey, partKey, partName, unknownDeletionTypes, type TableSpec as StoreTableSpecOf } from '../stores/checkpoint.js';

/** A stream's table, as the writer needs to know it. */
export type TableSpec = StoreTableSpecOf<TableLayout>;

/** One engine checkpoint of one stream, as the writer takes it: the records as rows of the stream's table. */
export interface Checkpoint extends Omit<StoreCheckpoint, 'records'> {
  /** Rows in `storeColumnNames(layout)` order, without the `_synced_at` value (the writer adds it). */
  readonly rows: readonly RowValues[];
  /** The deletion log's checkpoint: its records as they came, applied to the tables they delete from. */
  readonly deletions?: readonly Data[] | undefined;
}

interface Table {
  readonly spec: TableSpec;
  readonly upsert: StatementSync;
  /** Position of the primary key and of the cursor in a row (-1: no cursor). */
  readonly keyAt: number;
  /** Position of the account in a row of a replica of many accounts; -1 in a replica of one account. */
  readonly accountAt: number;
  readonly cursorAt: number;
  /** For tables that deletions apply to: the row's cursor, and its delete. */
  readonly cursorOf?: StatementSync;
  readonly remove?: StatementSync;
}

export class TableWriter {
  private readonly db: DatabaseSync;
  private readonly tables = new Map<string, Table>();
  /** The tables the deletion log's records delete from, by object type. */
  private readonly targets = new Map<string, Table>();
  private readonly deletionsOf: StatementSync | undefined;
  /** Whether the deletion log may hold a record (false: no upsert can be a deleted object's, the guard is skipped). */
  private deletionsKnown: boolean;
  private readonly writeState: StatementSync;
  private openedAt: number | undefined;
  /** Streams (of an account, in a replica of many) a checkpoint of which could not be written. */
  private readonly failures = new PartFailures();
  /** Set when a transaction holding earlier checkpoints was lost: nothing more is written. */
  private broken: Error | undefined;
  /** What in the file could refuse a row (refusers.ts); when anything, each checkpoint is written in a savepoint. */
  readonly refusers: readonly string[];
  /** Written in each transaction this writer begins until one commits (ReplicaStore.inFirstSave). */
  private inFirstSave: (() => void) | undefined;

  constructor(db: DatabaseSync, specs: readonly TableSpec[], inFirstSave?: () => void) {
    this.db = db;
    this.inFirstSave = inFirstSave;
    let log: Table | undefined;
    for (const spec of specs) {
      const { layout } = spec;
      const names = storeColumnNames(layout);
      // In a replica of many accounts a row is the account's: (account, id).
      const byKey = keyColumns(layout)
        .map((k) => `${quoteIdent(k)} = ?`)
        .join(' AND ');
      const table: Table = {
        spec,
        upsert: db.prepare(insertSql(layout)),
        keyAt: names.indexOf(layout.primaryKey),
        accountAt: layout.accountKey === true ? names.indexOf(ACCOUNT_COLUMN) : -1,
        cursorAt: layout.cursorField === null ? -1 : names.indexOf(layout.cursorField),
        ...(spec.deletedAs !== null && layout.cursorField !== null
          ? {
              cursorOf: db.prepare(`SELECT ${quoteIdent(layout.cursorField)} AS c FROM ${quoteIdent(layout.table)} WHERE ${byKey}`),
              remove: db.prepare(`DELETE FROM ${quoteIdent(layout.table)} WHERE ${byKey}`),
            }
          : {}),
      };
      this.tables.set(layout.stream, table);
      if (spec.deletedAs !== null) this.targets.set(spec.deletedAs, table);
      if (spec.deletionLog) log = table;
    }
    const fields = log?.spec.deletionLog;
    this.deletionsOf =
      log && fields
        ? db.prepare(
            `SELECT ${quoteIdent(fields.deletedAtField)} AS d FROM ${quoteIdent(log.spec.layout.table)} ` +
              `WHERE ${quoteIdent(fields.objectIdField)} = ? AND ${quoteIdent(fields.objectTypeField)} = ?` +
              (log.spec.layout.accountKey === true ? ` AND ${quoteIdent(ACCOUNT_COLUMN)} = ?` : ''),
          )
        : undefined;
    this.deletionsKnown = log ? db.prepare(`SELECT 1 AS x FROM ${quoteIdent(log.spec.layout.table)} LIMIT 1`).get() !== undefined : false;
    this.writeState = db.prepare(`INSERT OR REPLACE INTO ${STATE_TABLE} (stream, state, committed_at) VALUES (?, ?, ?)`);
    const written = specs.map(({ layout, deletionLog }) =>
      streamTable(layout.table, keyColumns(layout), deletionLog ? [deletionIndexName(layout.table)] : []),
    );
    this.refusers = rowRefusers(db, [...written, STATE_WRITTEN]);
  }

  /** Whether each checkpoint is written in its own savepoint (something in the file can refuse a row). */
  get isolatesCheckpoints(): boolean {
    return this.refusers.length > 0;
  }

  /** Why nothing more is written: the transaction holding the last checkpoints was lost. */
  get lostTransaction(): Error | undefined {
    return this.broken;
  }

  /** When the open transaction began (epoch ms); undefined when none is open. */
  get transactionStartedAt(): number | undefined {
    return this.openedAt;
  }

  /**
   * Write one checkpoint into the open transaction (beginning one if needed).
   * On an error nothing of this checkpoint stays. Earlier ones of the
   * transaction do when checkpoints are isolated (or the checkpoint was
   * refused before anything was written); otherwise the transaction is
   * rolled back and nothing more is written (lostTransaction).
   */
  write(checkpoint: Checkpoint): CommitResult {
    if (this.broken) throw this.broken;
    const table = this.tables.get(checkpoint.stream);
    if (!table) throw new Error(`the replica has no table for stream "${checkpoint.stream}"`);
    const part = table.accountAt >= 0 ? checkpoint.account : undefined;
    const failed = (cause: string): void => this.failures.add(checkpoint.stream, part, cause);
    const earlier = this.failures.of(checkpoint.stream, part);
    if (earlier !== undefined) {
      throw new Error(`an earlier checkpoint of ${partName(checkpoint.stream, part)} could not be written (${earlier}), so later ones are not either`);
    }
    const lacks = (row: RowValues, at: number): boolean => at >= 0 && (row[at] === null || row[at] === undefined);
    const keyless = checkpoint.rows.findIndex((row) => lacks(row, table.keyAt) || lacks(row, table.accountAt));
    if (keyless >= 0) {
      const cause = `record ${keyless + 1} of the checkpoint has no ${keyColumns(table.spec.layout).join(' or ')}`;
      failed(cause);
      throw new Error(`${cause}, so nothing of that checkpoint is written`);
    }
    // In a replica of many accounts, a full table and a full read are the checkpoint's account's rows alone: every row is that account's.
    const account = table.accountAt >= 0 ? checkpoint.account : undefined;
    if (table.accountAt >= 0 && account === undefined) throw new Error(`a checkpoint of ${checkpoint.stream} names no account, and the replica keeps many`);
    const otherAccount = account === undefined ? -1 : checkpoint.rows.findIndex((row) => row[table.accountAt] !== account);
    if (otherAccount >= 0) {
      const cause = `a record of the checkpoint of account "${account}" has ${ACCOUNT_COLUMN} ${JSON.stringify(checkpoint.rows[otherAccount]?.[table.accountAt] ?? null)}`;
      failed(cause);
      throw new Error(`${cause}, so nothing of that checkpoint is written`);
    }
    if (this.openedAt === undefined) {
      try {
        this.db.exec('BEGIN IMMEDIATE');
      } catch (err) {
        failed(messageOf(err));
        throw err;
      }
      this.openedAt = Date.now();
      try {
        this.inFirstSave?.();
      } catch (err) {
        failed(messageOf(err));
        this.stop(err);
        throw err;
      }
    }
    const syncedAt = new Date().toISOString();
    let upserted = 0;
    let skippedDeleted = 0;
    let deletedRows = 0;
    let sweptRows = 0;
    let unknownTypes: [string, string][] = [];
    const isolated = this.isolatesCheckpoints;
    const fullRead = checkpoint.fullRead;
    try {
      if (isolated) this.db.exec('SAVEPOINT checkpoint');
      const readKey = fullReadKey(checkpoint.stream, account);
      const mark = fullRead ? this.marker(readKey, fullRead.first) : undefined;
      const guard = this.deletionsKnown && table.spec.deletedAs !== null && table.cursorAt >= 0 ? table.spec.deletedAs : undefined;
      for (const row of checkpoint.rows) {
        if (guard !== undefined && this.deletedSince(guard, row[table.keyAt], row[table.cursorAt], account)) {
          skippedDeleted++;
          continue;
        }
        table.upsert.run(...row, syncedAt);
        mark?.run(readKey, row[table.keyAt] as string);
        upserted++;
      }
      if (fullRead?.last) sweptRows = this.sweep(table, readKey, account);
      const fields = table.spec.deletionLog;
      if (fields) {
        if (checkpoint.rows.length > 0) this.deletionsKnown = true;
        const deletions = checkpoint.deletions ?? [];
        for (const deletion of deletions) if (this.applyDeletion(deletion, fields)) deletedRows++;
        unknownTypes = unknownDeletionTypes(deletions, table.spec, new Set(this.targets.keys()));
      }
      // The account's own row, in a replica of many (STATE_TABLE): the others' stay as they are, a failed one's as last committed.
      this.writeState.run(partKey(checkpoint.stream, account), checkpoint.state, syncedAt);
      if (isolated) this.db.exec('RELEASE checkpoint');
    } catch (err) {
      failed(messageOf(err));
      if (isolated) this.undoCheckpoint(err);
      else this.stop(err);
      throw err;
    }
    return { upserted, skippedDeleted, deletedRows, unknownTypes, sweptRows };
  }

  /** The statement that marks an id as returned by the stream's full read; `first`: the read begins, earlier marks go. */
  private marker(stream: string, first: boolean): StatementSync {
    // Created by every checkpoint: another stream's read, ending, drops it when it holds no mark.
    this.db.exec(`CREATE TABLE IF NOT EXISTS ${FULL_READ_TABLE} (stream TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (stream, id)) WITHOUT ROWID`);
    if (first) this.db.prepare(`DELETE FROM ${FULL_READ_TABLE} WHERE stream = ?`).run(stream);
    return this.db.prepare(`INSERT OR IGNORE INTO ${FULL_READ_TABLE} (stream, id) VALUES (?, ?)`);
  }

  /** Remove the rows of `table` the stream's full read did not mark, then its marks (the table too once no read is under way). */
  private sweep(table: Table, stream: string, account: string | undefined): number {
    const { table: name, primaryKey } = table.spec.layout;
    const unmarked = `NOT EXISTS (SELECT 1 FROM ${FULL_READ_TABLE} m WHERE m.stream = ? AND m.id = ${quoteIdent(name)}.${quoteIdent(primaryKey)})`;
    const removed =
      account === undefined
        ? this.db.prepare(`DELETE FROM ${quoteIdent(name)} WHERE ${unmarked}`).run(stream)
        : this.db.prepare(`DELETE FROM ${quoteIdent(name)} WHERE ${quoteIdent(ACCOUNT_COLUMN)} = ? AND ${unmarked}`).run(account, stream);
    this.db.prepare(`DELETE FROM ${FULL_READ_TABLE} WHERE stream = ?`).run(stream);
    if (this.db.prepare(`SELECT 1 AS x FROM ${FULL_READ_TABLE} LIMIT 1`).get() === undefined) this.db.exec(`DROP TABLE ${FULL_READ_TABLE}`);
    return Number(removed.changes);
  }

  /**
   * Undo the failed checkpoint only. Some errors (a full disk, an I/O error)
   * make SQLite roll back the whole transaction: then earlier checkpoints of
   * it are lost too, and the writer stops.
   */
  private undoCheckpoint(cause: unknown): void {
    try {
      if (!this.db.isTransaction) throw cause;
      this.db.exec('ROLLBACK TO checkpoint');
      this.db.exec('RELEASE checkpoint');
    } catch (err) {
      this.stop(err);
    }
  }

  private stop(err: unknown): void {
    this.broken = new Error(`the transaction holding the last checkpoints was lost: ${messageOf(err)}`, { cause: err });
    this.rollback();
  }

  /** Commit the open transaction, if any. On an error it is rolled back, the writer stops, and the error is thrown. */
  commit(): void {
    if (this.openedAt === undefined) return;
    this.openedAt = undefined;
    try {
      this.db.exec('COMMIT');
      this.inFirstSave = undefined;
    } catch (err) {
      this.stop(err);
      throw err;
    }
  }

  /** Drop the open transaction, if any. */
  rollback(): void {
    this.openedAt = undefined;
    try {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
    } catch {
      // nothing left to undo
    }
  }

  /** Whether `objectType` `id` has a deletion the replica knows of that a row of cursor `cursor` did not change after. */
  private deletedSince(objectType: string, id: unknown, cursor: unknown, account: string | undefined): boolean {
    if (typeof id !== 'string' || !this.deletionsOf) return false;
    for (const row of this.deletionsOf.all(id, objectType, ...(account === undefined ? [] : [account]))) {
      // A record whose cursor cannot be read did not change after the deletion.
      if (!changedAfterDeletion(cursor, row.d)) return true;
    }
    return false;
  }

  /** Whether the deletion removed a row (a deletion of an unknown type removes none: unknownDeletionTypes tells it). */
  private applyDeletion(deletion: Data, fields: NonNullable<TableSpec['deletionLog']>): boolean {
    const type = deletion[fields.objectTypeField];
    const target = typeof type === 'string' ? this.targets.get(type) : undefined;
    const id = deletion[fields.objectIdField];
    if (!target?.cursorOf || !target.remove || typeof id !== 'string') return false;
    // A deletion of one account removes that account's row only.
    const account = deletion[ACCOUNT_COLUMN];
    if (target.accountAt >= 0 && typeof account !== 'string') return false;
    const key = target.accountAt >= 0 ? [account as string, id] : [id];
    const row = target.cursorOf.get(...key);
    // Keep only a row known to have changed after the deletion (the object came back).
    if (!row || changedAfterDeletion(row.c, deletion[fields.deletedAtField])) return false;
    target.remove.run(...key);
    return true;
  }
}
