/**
 * What in a replica file could refuse one row the writer writes, beside the
 * replica's own schema (table-writer.ts keeps each checkpoint in a
 * savepoint only when something can).
 *
 * The replica's own tables refuse a row for one reason only: a NULL primary
 * key, which the writer checks before it writes anything of a checkpoint
 * (the other NOT NULL columns, `_synced_at` and the state's, it always
 * fills). A person may add more to the file: a trigger that raises, a CHECK
 * constraint, a foreign key, a UNIQUE, partial or expression index, a NOT
 * NULL or generated column. Each of those can refuse a row in the middle of
 * a checkpoint; a plain index on columns cannot, nor can a nullable column.
 */
import type { DatabaseSync } from 'node:sqlite';
import { STATE_TABLE } from '../stores/checkpoint.js';
import { SYNCED_AT_COLUMN, quoteIdent } from './layout.js';

/** A table the writer writes, with the NOT NULL columns it always fills and the indexes it made itself. */
interface WrittenTable {
  readonly table: string;
  readonly filledNotNull: readonly string[];
  readonly ownIndexes: readonly string[];
}

/** The stream tables' entry: the primary key (checked before writing) and `_synced_at` are never NULL. */
export function streamTable(table: string, keys: readonly string[], ownIndexes: readonly string[] = []): WrittenTable {
  return { table, filledNotNull: [...keys, SYNCED_AT_COLUMN], ownIndexes };
}

/** The state table's entry: every checkpoint fills its state and commit time. */
export const STATE_WRITTEN: WrittenTable = { table: STATE_TABLE, filledNotNull: ['state', 'committed_at'], ownIndexes: [] };

/** The SQL text without its quoted names and literals: what is left are keywords and punctuation. */
function keywordsOf(sql: string): string {
  return sql.replace(/"(?:[^"]|"")*"|'(?:[^']|'')*'|`(?:[^`]|``)*`|\[[^\]]*\]/g, ' ');
}

/** Each thing in the file that could refuse a row written to `tables`, said in a few words; empty when none. */
export function rowRefusers(db: DatabaseSync, tables: readonly WrittenTable[]): string[] {
  const found: string[] = [];
  // A trigger keeps its table's name as its CREATE TRIGGER spelled it (ON CONTACTS); SQLite's names ignore case.
  const triggers = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE");
  const tableSql = db.prepare("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?");
  for (const { table, filledNotNull, ownIndexes } of tables) {
    const name = quoteIdent(table);
    for (const t of triggers.all(table)) found.push(`trigger ${quoteIdent(String(t.name))} on ${name}`);
    if (db.prepare(`PRAGMA foreign_key_list(${name})`).all().length > 0) found.push(`a foreign key of ${name}`);
    if (/\bCHECK\b/i.test(keywordsOf(String(tableSql.get(table)?.sql ?? '')))) found.push(`a CHECK constraint of ${name}`);
    for (const column of db.prepare(`PRAGMA table_xinfo(${name})`).all()) {
      const columnName = String(column.name);
      if (Number(column.hidden) !== 0) found.push(`generated column ${name}.${quoteIdent(columnName)}`);
      else if (Number(column.notnull) === 1 && !filledNotNull.includes(columnName)) found.push(`NOT NULL column ${name}.${quoteIdent(columnName)}`);
    }
    for (const index of db.prepare(`PRAGMA index_list(${name})`).all()) {
      const indexName = String(index.name);
      if (index.origin === 'pk' || ownIndexes.includes(indexName)) continue;
      const expression = db.prepare(`PRAGMA index_info(${quoteIdent(indexName)})`).all().some((c) => Number(c.cid) < 0);
      if (Number(index.unique) === 1 || Number(index.partial) === 1 || expression) found.push(`index ${quoteIdent(indexName)} on ${name}`);
    }
  }
  return found;
}
