/**
 * Bringing a stream's table to this version's layout, in place and exactly:
 * every record reads back the same after a migration as before it. One
 * transaction per table, so a killed migration leaves the old table intact.
 * Rows are streamed, never all held in memory.
 *
 * From the stored layout (what the file was written with) to the wanted one:
 * - same columns, other storage (0.1.0 wrote WITHOUT ROWID tables): the rows
 *   are copied by SQL into a table of the new storage, value for value;
 * - columns added (a newer schema declares more fields): ALTER TABLE ADD
 *   COLUMN, then the rows are brought to what the new layout would have
 *   written: a value that waited in `_extra` moves into its column when it
 *   fits, and a record that lacked the field gets it listed in `_absent`;
 * - anything else (a column dropped or retyped, another primary key): the
 *   table is rewritten record by record (row -> record -> row).
 * A layout stored before REAL columns held the nearest double of a number
 * kept in `_extra` (rows.ts) has the rows with such a number re-converted,
 * so that the column holds it for SQL too.
 */
import type { DatabaseSync, SQLOutputValue } from 'node:sqlite';
import { ConfigError } from '../errors.js';
import { createTableSql, insertSql, saveLayout } from './database.js';
import { ABSENT_COLUMN, BOOKKEEPING_COLUMNS, EXTRA_COLUMN, SQL_TYPES, SYNCED_AT_COLUMN, quoteIdent, keyColumns, sameLayout, type ColumnSpec, type TableLayout } from './layout.js';
import { recordToRow, rowToRecord } from './rows.js';
import type { SchemaChange } from '../stores/store.js';

export interface Migration {
  readonly stream: string;
  /** What was done, for a log line. */
  readonly change: string;
  /** The columns added or retyped, for the run summary. */
  readonly columns: readonly SchemaChange[];
}

/** The columns `wanted` adds to `stored` or gives another SQL type. */
function columnChanges(stored: TableLayout, wanted: TableLayout): SchemaChange[] {
  const before = new Map(stored.columns.map((c) => [c.field, SQL_TYPES[c.kind]]));
  const out: SchemaChange[] = [];
  for (const c of wanted.columns) {
    const from = before.get(c.field);
    const to = SQL_TYPES[c.kind];
    if (from === to) continue;
    // TEXT holds whatever a column held, REAL every INTEGER: those widen; a newer version's layout may change a type otherwise.
    const change = from === undefined ? 'added' : to === 'TEXT' || (from === 'INTEGER' && to === 'REAL') ? 'widened' : 'retyped';
    out.push({ stream: wanted.stream, column: c.field, change, from: from ?? null, to });
  }
  return out;
}

/** Rows re-converted per query when added columns are filled. */
const FILL_BATCH = 500;
/** Field names that can be written in a JSON path as they are. */
const PLAIN_FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Make sure the stream's table exists with `layout`; `stored` is the layout
 * the database says it was written with (undefined: no table yet).
 * `created` runs in the transaction that creates the table.
 * Returns what was migrated, undefined when the table was created or already current.
 */
export function ensureTable(db: DatabaseSync, layout: TableLayout, stored: TableLayout | undefined, created?: () => void): Migration | undefined {
  if (stored && sameLayout(stored, layout)) return undefined;
  db.exec('BEGIN IMMEDIATE');
  try {
    let migration: Migration | undefined;
    if (stored) {
      const change = migrate(db, stored, layout);
      const columns = columnChanges(stored, layout);
      if (change !== '' || columns.length > 0) migration = { stream: layout.stream, change, columns };
    } else {
      const existing = db.prepare("SELECT 1 FROM sqlite_schema WHERE name = ? AND type IN ('table', 'view')").get(layout.table);
      if (existing) {
        throw new ConfigError(
          `The database already has a table "${layout.table}" that the replica did not create; ` +
            'pass --db a new file or one written by replicate.',
          { field: 'db' },
        );
      }
      db.exec(createTableSql(layout));
      created?.();
    }
    saveLayout(db, layout);
    db.exec('COMMIT');
    return migration;
  } catch (err) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw err;
  }
}

function migrate(db: DatabaseSync, stored: TableLayout, wanted: TableLayout): string {
  const wantedKinds = new Map(wanted.columns.map((c) => [c.field, c.kind]));
  const storedFields = new Set(stored.columns.map((c) => c.field));
  const added = wanted.columns.filter((c) => !storedFields.has(c.field));
  const reals = stored.realNearest || !wanted.realNearest ? [] : wanted.columns.filter((c) => c.kind === 'real' && storedFields.has(c.field));
  const keepsColumns =
    stored.table === wanted.table &&
    stored.primaryKey === wanted.primaryKey &&
    stored.accountKey === wanted.accountKey &&
    stored.columns.every((c) => wantedKinds.get(c.field) === c.kind) &&
    [...added, ...reals].every((c) => PLAIN_FIELD.test(c.field));
  if (!keepsColumns) {
    rebuild(db, stored, wanted);
    return 'rewritten record by record to the current column layout';
  }
  const changes: string[] = [];
  if (stored.storage !== wanted.storage) {
    copyToStorage(db, stored, wanted);
    changes.push(`moved to ${wanted.storage === 'rowid' ? 'a rowid table, faster to write' : 'a WITHOUT ROWID table'}`);
  } else {
    for (const c of added) db.exec(`ALTER TABLE ${quoteIdent(wanted.table)} ADD COLUMN ${quoteIdent(c.field)} ${SQL_TYPES[c.kind]}`);
  }
  if (added.length > 0) {
    fillAddedColumns(db, wanted, added);
    changes.push(`new column${added.length > 1 ? 's' : ''} ${added.map((c) => c.field).join(', ')}`);
  }
  if (reals.length > 0) {
    const filled = reconvertCarrying(db, wanted, reals, ['integer', 'real']);
    if (filled > 0) changes.push(`REAL column${reals.length > 1 ? 's' : ''} ${reals.map((c) => c.field).join(', ')} filled from _extra in ${filled} row${filled > 1 ? 's' : ''}`);
  }
  if (changes.length > 0) return changes.join('; ');
  // Only the layout's record of REAL columns changed: nothing to tell.
  return sameLayout({ ...stored, realNearest: wanted.realNearest }, wanted) ? '' : 'column order recorded';
}

function temporaryName(layout: TableLayout): string {
  return `_replica_migrating_${layout.table}`;
}

/**
 * Replace the stored table by `temp` under the wanted name, with the indexes
 * and triggers someone made on it (made again, as written). A view someone
 * made over the table (a dashboard's) names the table, and reads the new one
 * once it has the name: SQLite's RENAME would check every view first, and
 * refuse ("error in view v: no such table") while the table is gone, so the
 * rename is made as SQLite's legacy one, which checks nothing beyond itself.
 */
function swap(db: DatabaseSync, stored: TableLayout, temp: string, wanted: TableLayout): void {
  // The indexes and triggers someone made on the table (a dashboard's index) go with it: made again on the new one.
  const theirs = db
    .prepare("SELECT sql FROM sqlite_schema WHERE type IN ('index', 'trigger') AND tbl_name = ? COLLATE NOCASE AND sql IS NOT NULL ORDER BY type, name")
    .all(stored.table)
    .map((r) => String(r.sql));
  db.exec(`DROP TABLE ${quoteIdent(stored.table)}`);
  db.exec('PRAGMA legacy_alter_table = ON');
  try {
    db.exec(`ALTER TABLE ${quoteIdent(temp)} RENAME TO ${quoteIdent(wanted.table)}`);
  } finally {
    db.exec('PRAGMA legacy_alter_table = OFF');
  }
  for (const sql of theirs) db.exec(sql);
}

/** Same columns, other storage: copy the values by SQL (each keeps its storage class). */
function copyToStorage(db: DatabaseSync, stored: TableLayout, wanted: TableLayout): void {
  const temp = temporaryName(wanted);
  db.exec(createTableSql(wanted, temp));
  const names = [...stored.columns.map((c) => c.field), ...BOOKKEEPING_COLUMNS].map(quoteIdent).join(', ');
  db.exec(`INSERT INTO ${quoteIdent(temp)} (${names}) SELECT ${names} FROM ${quoteIdent(stored.table)}`);
  swap(db, stored, temp, wanted);
}

/** Rows of a table that has just gained `added` columns (all NULL), made what `layout` would have written. */
function fillAddedColumns(db: DatabaseSync, layout: TableLayout, added: readonly ColumnSpec[]): void {
  const table = quoteIdent(layout.table);
  const extra = quoteIdent(EXTRA_COLUMN);
  const paths = added.map((c) => `$."${c.field}"`);
  // A record written before the column existed that did not carry the field: absent, not null.
  const markAbsent = db.prepare(
    `UPDATE ${table} SET ${quoteIdent(ABSENT_COLUMN)} = json_insert(coalesce(${quoteIdent(ABSENT_COLUMN)}, '[]'), '$[#]', ?) ` +
      `WHERE ${extra} IS NULL OR json_type(${extra}, ?) IS NULL`,
  );
  added.forEach((c, i) => markAbsent.run(c.field, paths[i] ?? ''));
  // A record that carried it: its value waited in _extra.
  reconvertCarrying(db, layout, added);
}

/**
 * Re-convert (row -> record -> row) the rows whose `_extra` holds a value of
 * one of `columns` (of one of SQLite's JSON `types` when given); returns how
 * many of them had one of those columns NULL and now filled.
 */
function reconvertCarrying(db: DatabaseSync, layout: TableLayout, columns: readonly ColumnSpec[], types?: readonly string[]): number {
  const table = quoteIdent(layout.table);
  const extra = quoteIdent(EXTRA_COLUMN);
  const paths = columns.map((c) => `$."${c.field}"`);
  const keys = keyColumns(layout);
  const pk = keys.map(quoteIdent).join(', ');
  const held = types === undefined ? 'IS NOT NULL' : `IN (${types.map((t) => `'${t}'`).join(', ')})`;
  const carried = paths.map(() => `json_type(${extra}, ?) ${held}`).join(' OR ');
  const next = db.prepare(
    `SELECT * FROM ${table} WHERE ${extra} IS NOT NULL AND (${carried}) AND (${pk}) > (${keys.map(() => '?').join(', ')}) ORDER BY ${pk} LIMIT ${FILL_BATCH}`,
  );
  const first = db.prepare(`SELECT * FROM ${table} WHERE ${extra} IS NOT NULL AND (${carried}) ORDER BY ${pk} LIMIT ${FILL_BATCH}`);
  // Integers beyond 2^53 move exact (rows.ts).
  next.setReadBigInts(true);
  first.setReadBigInts(true);
  const upsert = db.prepare(insertSql(layout));
  const at = columns.map((c) => layout.columns.findIndex((l) => l.field === c.field));
  let after: SQLOutputValue[] | undefined;
  let filled = 0;
  for (;;) {
    const rows = after === undefined ? first.all(...paths) : next.all(...paths, ...after);
    for (const row of rows) {
      const values = recordToRow(layout, rowToRecord(layout, row));
      if (at.some((i) => values[i] !== null && row[layout.columns[i]?.field ?? ''] === null)) filled++;
      upsert.run(...values, row[SYNCED_AT_COLUMN] ?? null);
    }
    if (rows.length < FILL_BATCH) return filled;
    const last = rows.at(-1);
    after = keys.map((k) => last?.[k] ?? null);
  }
}

/** Anything else: a new table, written record by record. */
function rebuild(db: DatabaseSync, stored: TableLayout, wanted: TableLayout): void {
  const temp = temporaryName(wanted);
  db.exec(createTableSql(wanted, temp));
  const insert = db.prepare(insertSql({ ...wanted, table: temp }));
  const now = new Date().toISOString();
  const rows = db.prepare(`SELECT * FROM ${quoteIdent(stored.table)}`);
  rows.setReadBigInts(true); // integers beyond 2^53 move exact (rows.ts)
  for (const row of rows.iterate()) {
    insert.run(...recordToRow(wanted, rowToRecord(stored, row)), String(row[SYNCED_AT_COLUMN] ?? now));
  }
  swap(db, stored, temp, wanted);
}
