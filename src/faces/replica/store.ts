/**
 * The replica's writes. Every engine checkpoint becomes one transaction: the
 * rows of the page(s) it covers, the deletions they carry, and the stream's
 * state row, committed together. A process killed at any point leaves the
 * database at a checkpoint, and the next run continues from exactly there.
 *
 * Deletions: a record of the deletion log (the stream the streams table marks
 * so) deletes the row of the object it names, unless that row changed after
 * the deletion. Streams
 * are read concurrently, so an upsert can arrive after the deletion of its
 * object: an upsert whose cursor is not later than a known deletion of the
 * same object is skipped (a deleted row is never resurrected).
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { parseInstant } from '../../config.js';
import type { Data } from '../../engine/events.js';
import { parseStreamState, type StreamState } from '../../engine/state.js';
import { ConnectorError } from '../../errors.js';
import { STREAMS, findDeletionLog, type DeletionLogStream, type StreamDefinition } from '../../streams.js';
import { STATE_TABLE, ensureTable, insertSql, openForWrite, storedLayouts } from './database.js';
import { ident, layoutFor, type TableLayout } from './layout.js';
import { acquireLock, releaseLock } from './lock.js';
import { recordToRow } from './rows.js';

interface TableHandle {
  readonly layout: TableLayout;
  readonly upsert: StatementSync;
  /** For streams that deletions apply to: the row's cursor, and its delete. */
  readonly cursorOf?: StatementSync;
  readonly remove?: StatementSync;
}

export interface CommitResult {
  /** Rows written. */
  readonly upserted: number;
  /** Upserts skipped because the object was deleted at or after the record's cursor. */
  readonly skippedDeleted: number;
  /** Rows deleted by deletion records. */
  readonly deletedRows: number;
  /** Deletion records whose object_type names no replicated stream: [object_type as JSON text, deletion id]. */
  readonly unknownTypes: readonly (readonly [string, string])[];
}

function dbError(path: string, err: unknown): ConnectorError {
  const message = err instanceof Error ? err.message : String(err);
  return new ConnectorError('system_error', `Cannot write the replica database "${path}": ${message}.`, { cause: err });
}

export class ReplicaStore {
  readonly path: string;
  readonly db: DatabaseSync;
  /** Streams whose tables were rewritten to a new layout when opening. */
  readonly migrated: readonly string[];
  private readonly tables = new Map<string, TableHandle>();
  private readonly deletionTargets = new Map<string, string>();
  /** The deletion log: its table is kept (and indexed by object) whatever streams are replicated. */
  private readonly log: DeletionLogStream;
  private readonly writeState: StatementSync;
  private readonly deletionsOf: StatementSync;
  private locked = false;

  /**
   * Open or create the database at `path` with a table per stream.
   * `lock`: take the writer lock (one replicate run per file at a time).
   */
  constructor(path: string, streams: readonly StreamDefinition[] = STREAMS, options: { lock?: boolean } = {}) {
    this.path = path;
    const log = findDeletionLog();
    if (!log) throw new Error('the streams table has no deletion log');
    this.log = log;
    this.db = openForWrite(path);
    try {
      if (options.lock) {
        acquireLock(this.db, path);
        this.locked = true;
      }
      const stored = storedLayouts(this.db);
      const migrated: string[] = [];
      for (const stream of streams) {
        const layout = layoutFor(stream);
        if (ensureTable(this.db, layout, stored.get(stream.name))) migrated.push(stream.name);
        const handle: TableHandle =
          stream.tombstoneObjectType && layout.cursorField
            ? {
                layout,
                upsert: this.db.prepare(insertSql(layout)),
                cursorOf: this.db.prepare(`SELECT ${ident(layout.cursorField)} AS c FROM ${ident(layout.table)} WHERE ${ident(layout.primaryKey)} = ?`),
                remove: this.db.prepare(`DELETE FROM ${ident(layout.table)} WHERE ${ident(layout.primaryKey)} = ?`),
              }
            : { layout, upsert: this.db.prepare(insertSql(layout)) };
        this.tables.set(stream.name, handle);
        if (stream.tombstoneObjectType) this.deletionTargets.set(stream.tombstoneObjectType, stream.name);
      }
      this.migrated = migrated;
      if (!this.tables.has(log.name)) this.tables.set(log.name, this.openDeletionLog());
      const { objectIdField, objectTypeField } = log.deletionLog;
      this.db.exec(`CREATE INDEX IF NOT EXISTS ${ident(`_replica_${log.name}_object`)} ON ${ident(log.name)} (${ident(objectIdField)})`);
      this.deletionsOf = this.db.prepare(
        `SELECT ${ident(log.cursorField)} AS d FROM ${ident(log.name)} WHERE ${ident(objectIdField)} = ? AND ${ident(objectTypeField)} = ?`,
      );
      this.writeState = this.db.prepare(`INSERT OR REPLACE INTO ${STATE_TABLE} (stream, state, committed_at) VALUES (?, ?, ?)`);
    } catch (err) {
      this.close();
      throw err instanceof ConnectorError ? err : dbError(path, err);
    }
  }

  private openDeletionLog(): TableHandle {
    const layout = layoutFor(this.log);
    ensureTable(this.db, layout, storedLayouts(this.db).get(this.log.name));
    return { layout, upsert: this.db.prepare(insertSql(layout)) };
  }

  /** The state saved by the last committed checkpoint of each stream. */
  loadStates(): Map<string, StreamState> {
    const states = new Map<string, StreamState>();
    for (const row of this.db.prepare(`SELECT stream, state FROM ${STATE_TABLE}`).all()) {
      const stream = String(row.stream);
      let raw: unknown;
      try {
        raw = JSON.parse(String(row.state));
      } catch {
        raw = String(row.state);
      }
      states.set(stream, parseStreamState(stream, raw));
    }
    return states;
  }

  /**
   * One checkpoint, in one transaction: upsert `records` into the stream's
   * table (after emptying it when `replaceAll`), apply deletion records, and
   * save `state`.
   */
  commit(stream: StreamDefinition, records: readonly Data[], state: StreamState, replaceAll = false): CommitResult {
    const handle = this.tables.get(stream.name);
    if (!handle) throw new Error(`the replica has no table for stream "${stream.name}"`);
    const syncedAt = new Date().toISOString();
    let upserted = 0;
    let skippedDeleted = 0;
    let deletedRows = 0;
    const unknownTypes: [string, string][] = [];
    try {
      this.db.exec('BEGIN IMMEDIATE');
      if (replaceAll) this.db.exec(`DELETE FROM ${ident(handle.layout.table)}`);
      const guard = stream.tombstoneObjectType;
      for (const record of records) {
        if (guard && handle.layout.cursorField && this.deletedSince(guard, record[handle.layout.primaryKey], record[handle.layout.cursorField])) {
          skippedDeleted++;
          continue;
        }
        handle.upsert.run(...recordToRow(handle.layout, record), syncedAt);
        upserted++;
      }
      if (stream.name === this.log.name) {
        const typeField = this.log.deletionLog.objectTypeField;
        for (const deletion of records) {
          const outcome = this.applyDeletion(deletion);
          if (outcome === 'deleted') deletedRows++;
          else if (outcome === 'unknown_type') {
            const type = deletion[typeField] === undefined ? '(missing)' : JSON.stringify(deletion[typeField]);
            unknownTypes.push([type, String(deletion[this.log.primaryKey])]);
          }
        }
      }
      this.writeState.run(stream.name, JSON.stringify(state), syncedAt);
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      throw dbError(this.path, err);
    }
    return { upserted, skippedDeleted, deletedRows, unknownTypes };
  }

  /** Whether `objectType` `id` was deleted at or after `cursor` (a deletion the replica knows of). */
  private deletedSince(objectType: string, id: unknown, cursor: unknown): boolean {
    if (typeof id !== 'string') return false;
    const at = typeof cursor === 'string' ? parseInstant(cursor) : Number.NaN;
    for (const row of this.deletionsOf.all(id, objectType)) {
      const deletedAt = typeof row.d === 'string' ? parseInstant(row.d) : Number.NaN;
      // A record whose cursor cannot be read is not later than the deletion.
      if (!(at > deletedAt)) return true;
    }
    return false;
  }

  private applyDeletion(deletion: Data): 'deleted' | 'kept' | 'unknown_type' {
    const { objectTypeField, objectIdField } = this.log.deletionLog;
    const type = deletion[objectTypeField];
    const targetName = typeof type === 'string' ? this.deletionTargets.get(type) : undefined;
    if (targetName === undefined) return 'unknown_type';
    const target = this.tables.get(targetName);
    const id = deletion[objectIdField];
    if (!target?.cursorOf || !target.remove || typeof id !== 'string') return 'kept';
    const row = target.cursorOf.get(id);
    if (!row) return 'kept';
    const at = deletion[this.log.cursorField];
    const deletedAt = typeof at === 'string' ? parseInstant(at) : Number.NaN;
    const cursor = typeof row.c === 'string' ? parseInstant(row.c) : Number.NaN;
    // Keep only a row known to have changed after the deletion (the object came back).
    if (cursor > deletedAt) return 'kept';
    target.remove.run(id);
    return 'deleted';
  }

  close(): void {
    if (!this.db.isOpen) return;
    if (this.locked) releaseLock(this.db);
    this.db.close();
  }
}
