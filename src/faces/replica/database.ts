/**
 * The replica database file: opening it (WAL), its bookkeeping tables, and
 * one table per stream created from (or migrated to) the stream's layout.
 *
 * Bookkeeping tables:
 *   _replica_tables (stream, layout)   the layout each stream table was written with
 *   _replica_state  (stream, state, committed_at)  the engine's state, committed
 *                   in the same transaction as the rows it covers
 */
import { existsSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { ConfigError } from '../../errors.js';
import { ABSENT_COLUMN, EXTRA_COLUMN, SQL_TYPES, SYNCED_AT_COLUMN, ident, parseLayout, type TableLayout } from './layout.js';
import { recordToRow, rowToRecord } from './rows.js';
import { assertWritable, sideFilesGuard } from './writable.js';

export const TABLES_TABLE = '_replica_tables';
export const STATE_TABLE = '_replica_state';

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Open (creating if needed) a replica database for writing. */
export function openForWrite(path: string): DatabaseSync {
  assertWritable(path);
  const removeSideFiles = sideFilesGuard(path);
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path, { timeout: 5000 });
  } catch (err) {
    removeSideFiles();
    throw new ConfigError(`Cannot open the replica database "${path}": ${describe(err)}.`, { field: 'db' });
  }
  try {
    db.exec('PRAGMA journal_mode = WAL');
    // WAL + NORMAL: a commit survives a killed process; after a power cut the
    // database is still consistent, at worst a few checkpoints back.
    db.exec('PRAGMA synchronous = NORMAL');
    db.exec(`CREATE TABLE IF NOT EXISTS ${TABLES_TABLE} (stream TEXT PRIMARY KEY, layout TEXT NOT NULL)`);
    db.exec(
      `CREATE TABLE IF NOT EXISTS ${STATE_TABLE} (stream TEXT PRIMARY KEY, state TEXT NOT NULL, committed_at TEXT NOT NULL)`,
    );
  } catch (err) {
    db.close();
    removeSideFiles();
    throw new ConfigError(`"${path}" cannot be used as a replica database: ${describe(err)}.`, { field: 'db' });
  }
  return db;
}

/** Open an existing replica database for reading only. */
export function openForRead(path: string): DatabaseSync {
  if (!existsSync(path)) throw new ConfigError(`No replica database at "${path}".`, { field: 'db' });
  try {
    return new DatabaseSync(path, { readOnly: true, timeout: 5000 });
  } catch (err) {
    throw new ConfigError(`Cannot open the replica database "${path}": ${describe(err)}.`, { field: 'db' });
  }
}

function createTable(db: DatabaseSync, layout: TableLayout): void {
  const columns = layout.columns.map(
    (c) => `${ident(c.field)} ${SQL_TYPES[c.kind]}${c.field === layout.primaryKey ? ' PRIMARY KEY NOT NULL' : ''}`,
  );
  columns.push(`${ident(EXTRA_COLUMN)} TEXT`, `${ident(ABSENT_COLUMN)} TEXT`, `${ident(SYNCED_AT_COLUMN)} TEXT NOT NULL`);
  db.exec(`CREATE TABLE ${ident(layout.table)} (\n  ${columns.join(',\n  ')}\n) WITHOUT ROWID`);
}

/** The layouts stored in the database, by stream name. */
export function storedLayouts(db: DatabaseSync): Map<string, TableLayout> {
  const out = new Map<string, TableLayout>();
  for (const row of db.prepare(`SELECT stream, layout FROM ${TABLES_TABLE}`).all()) {
    const layout = parseLayout(String(row.layout));
    if (layout) out.set(String(row.stream), layout);
  }
  return out;
}

export function insertSql(layout: TableLayout): string {
  const names = [...layout.columns.map((c) => c.field), EXTRA_COLUMN, ABSENT_COLUMN, SYNCED_AT_COLUMN];
  const updates = names.filter((n) => n !== layout.primaryKey).map((n) => `${ident(n)} = excluded.${ident(n)}`);
  return (
    `INSERT INTO ${ident(layout.table)} (${names.map(ident).join(', ')}) VALUES (${names.map(() => '?').join(', ')}) ` +
    `ON CONFLICT (${ident(layout.primaryKey)}) DO UPDATE SET ${updates.join(', ')}`
  );
}

/**
 * Make sure the stream's table exists with `layout`. A table written with
 * another layout (an older connector version) is rewritten record by record
 * in one transaction, so nothing is lost or changed.
 * Returns true when a table was migrated.
 */
export function ensureTable(db: DatabaseSync, layout: TableLayout, stored: TableLayout | undefined): boolean {
  const text = JSON.stringify(layout);
  if (stored && JSON.stringify(stored) === text) return false;
  db.exec('BEGIN IMMEDIATE');
  try {
    let migrated = false;
    if (stored) {
      const select = db.prepare(`SELECT * FROM ${ident(stored.table)}`);
      select.setReadBigInts(true); // integers beyond 2^53 move exact
      const rows = select.all();
      db.exec(`DROP TABLE ${ident(stored.table)}`);
      createTable(db, layout);
      const insert = db.prepare(insertSql(layout));
      for (const row of rows) {
        insert.run(...recordToRow(layout, rowToRecord(stored, row)), String(row[SYNCED_AT_COLUMN] ?? new Date().toISOString()));
      }
      migrated = true;
    } else {
      const existing = db.prepare("SELECT 1 FROM sqlite_schema WHERE name = ? AND type IN ('table', 'view')").get(layout.table);
      if (existing) {
        throw new ConfigError(
          `The database already has a table "${layout.table}" that the replica did not create; ` +
            'pass --db a new file or one written by replicate.',
          { field: 'db' },
        );
      }
      createTable(db, layout);
    }
    db.prepare(`INSERT OR REPLACE INTO ${TABLES_TABLE} (stream, layout) VALUES (?, ?)`).run(layout.stream, text);
    db.exec('COMMIT');
    return migrated;
  } catch (err) {
    db.exec('ROLLBACK');
    throw err;
  }
}
