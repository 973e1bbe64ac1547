/**
 * The DuckDB side of the group writer (group-writer.ts says what a group's
 * transaction does): its statements on the store's connection, its staging
 * tables (TEMPORARY) filled through the appender (typed values, no SQL text
 * to parse), which writes inside the connection's open transaction: a
 * rollback takes the staged rows with it. DuckDB merges a staged group
 * into a table with a primary key at a cost per statement far above
 * PostgreSQL's, which is why checkpoints are grouped; and the merge is a
 * DELETE then an INSERT (upsertSql says why).
 */
import { ConnectorError, messageOf } from '../../errors.js';
import { quoteIdent } from '../columns.js';
import type { StageTable, StoreSql } from '../group-writer.js';
import type { DuckdbTarget } from '../target.js';
import { isoMillis, isoShaped, type Cell } from '../values.js';
import { fullDiskError, type DuckdbConnection, type DuckdbModule } from './connection.js';
import { DUCKDB_DIALECT, DUCKDB_TYPES } from './tables.js';

const FRACTION = /:\d{2}\.(\d+)/;

/** Microseconds since the epoch of an instant's text (canonicalInstant has checked it). */
export function instantMicros(text: string): bigint {
  // toISOString's form (what the service sends): milliseconds only (one BigInt while the microseconds are a safe integer, to 2255).
  const isoMs = isoMillis(text);
  if (!Number.isNaN(isoMs)) return Number.isSafeInteger(isoMs * 1000) ? BigInt(isoMs * 1000) : BigInt(isoMs) * 1000n;
  const ms = Date.parse(text.replace(' ', 'T').replace(/(\.\d{3})\d+/, '$1'));
  const fraction = FRACTION.exec(text)?.[1] ?? '';
  const subMs = fraction.length > 3 ? Number(fraction.slice(3, 6).padEnd(3, '0')) : 0;
  return BigInt(ms) * 1000n + BigInt(subMs);
}

export class DuckdbSql implements StoreSql<Cell[][]> {
  readonly dialect = DUCKDB_DIALECT;
  private readonly connection: DuckdbConnection;
  private readonly duckdb: DuckdbModule;
  private readonly target: DuckdbTarget;

  constructor(connection: DuckdbConnection, duckdb: DuckdbModule, target: DuckdbTarget) {
    this.connection = connection;
    this.duckdb = duckdb;
    this.target = target;
  }

  async run(sql: string, params?: readonly (string | null)[]): Promise<number> {
    const result = await this.connection.run(sql, params === undefined ? undefined : [...params]);
    return Number(result.rowsChanged);
  }

  async text(sql: string, params?: readonly (string | null)[]): Promise<string | undefined> {
    const cell = (await this.connection.runAndReadAll(sql, params === undefined ? undefined : [...params])).getRowsJS()[0]?.[0];
    return cell === undefined || cell === null ? undefined : String(cell);
  }

  async any(sql: string): Promise<boolean> {
    return (await this.connection.runAndReadAll(sql)).currentRowCount > 0;
  }

  /**
   * The rows of the staged keys deleted, then the staged rows inserted. In
   * DuckDB an UPDATE of a row rewrites each of its columns' update chains:
   * for 20k changed contacts it was 5 to 7 times slower than DELETE then
   * INSERT, and INSERT ... ON CONFLICT DO UPDATE, INSERT OR REPLACE and MERGE
   * INTO all update (bench/stores.ts). New rows cost the same either way.
   * A key of two columns (account, id) is matched by a join.
   */
  upsertSql(table: string, stage: string, columns: readonly string[], keys: readonly string[]): string[] {
    const [key] = keys;
    return [
      keys.length === 1
        ? `DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM ${stage})`
        : `DELETE FROM ${table} t USING ${stage} s WHERE ${keys.map((k) => `t.${k} = s.${k}`).join(' AND ')}`,
      `INSERT INTO ${table} (${columns.join(', ')}, "_synced_at") SELECT ${columns.join(', ')}, now() FROM ${stage}`,
    ];
  }

  async createStage(stage: StageTable): Promise<void> {
    const columns = stage.layout.columns.map((c) => `${quoteIdent(c.field)} ${DUCKDB_TYPES[c.kind]}`);
    columns.push('"_extra" JSON', '"_absent" JSON');
    await this.connection.run(`CREATE OR REPLACE TEMP TABLE ${stage.name} (${columns.join(', ')})`);
  }

  /** A checkpoint's rows as their cells (the appender takes them typed when the stage is filled). */
  stageRows(rows: Cell[][]): Cell[][] {
    return rows;
  }

  async fillStage(stage: StageTable, chunks: readonly Cell[][][]): Promise<void> {
    // Made again rather than emptied, at every fill (each part's, several in a transaction with many accounts): DuckDB's
    // DELETE only marks rows, and a staging table emptied group after group kept every group's rows in the run's memory
    // (or its temporary folder).
    await this.createStage(stage);
    if (chunks.length === 0) return;
    const appender = await this.connection.createAppender(stage.name, 'main', 'temp');
    const kinds = stage.layout.columns.map((c) => c.kind);
    const { DuckDBTimestampValue } = this.duckdb;
    try {
      for (const row of chunks.flat()) {
        for (let i = 0; i < row.length; i++) {
          const cell = row[i];
          if (cell === null || cell === undefined) {
            appender.appendNull();
            continue;
          }
          switch (i < kinds.length ? kinds[i] : 'json') {
            case 'boolean':
              appender.appendBoolean(cell === true);
              break;
            case 'int64':
              appender.appendBigInt(BigInt(cell as string));
              break;
            case 'int128':
              appender.appendHugeInt(BigInt(cell as string));
              break;
            case 'number':
              appender.appendDouble(Number(cell));
              break;
            case 'timestamp':
              // An instant in toISOString's form (the service's; checked when encoded) goes as its text, which the
              // appender reads in the column's type: its Z makes it UTC whatever the session's TimeZone
              // (test/stores/duckdb), at about half the cost of microseconds computed here. Any other form goes as
              // its microseconds, into the TIMESTAMPTZ column as they are (appendTimestampTZ would build a DuckDB
              // value of each cell first).
              if (isoShaped(cell as string)) appender.appendVarchar(cell as string);
              else appender.appendTimestamp(new DuckDBTimestampValue(instantMicros(cell as string)));
              break;
            default:
              appender.appendVarchar(cell as string);
          }
        }
        appender.endRow();
      }
      appender.flushSync();
    } finally {
      appender.closeSync();
    }
  }

  isFatal(err: unknown): boolean {
    return /FATAL|database has been invalidated/i.test(messageOf(err));
  }

  error(err: unknown): ConnectorError {
    if (err instanceof ConnectorError) return err;
    return fullDiskError(err, this.target) ?? new ConnectorError('system_error', `Cannot write the DuckDB store "${this.target.path}": ${messageOf(err)}`, { cause: err });
  }
}
