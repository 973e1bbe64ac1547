/**
 * The DuckDB side of the group writer (group-writer.ts says what a group's
 * transaction does): its statements on the store's connection, its staging
 * tables (TEMPORARY) filled inside the connection's open transaction (a
 * rollback takes the staged rows with it). A checkpoint's rows are encoded
 * as CSV bytes when it is taken (stageRows) and appended at once to a
 * private file of its part in the store's temporary folder, which DuckDB's
 * own CSV reader loads when the group is written: the parsing is then
 * DuckDB's, off the thread that reads the service, where the appender took
 * a call per cell on that thread (about a quarter of the run), and a
 * gathering group holds neither cells for the garbage collector to trace
 * nor bytes in the process's memory. A row too long for the reader's lines
 * goes through the appender. DuckDB merges a staged group
 * into a table with a primary key at a cost per statement far above
 * PostgreSQL's, which is why checkpoints are grouped; and the merge is a
 * DELETE then an INSERT (upsertSql says why).
 */
import { closeSync, ftruncateSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ConnectorError, messageOf } from '../../errors.js';
import { quoteIdent, quoteLiteral, type StoreKind } from '../columns.js';
import type { StageTable, StoreSql } from '../group-writer.js';
import { lineBytes } from '../line-bytes.js';
import { STORE_FILE_MODE } from '../store.js';
import type { DuckdbTarget } from '../target.js';
import { isoMillis, isoShaped, type Cell } from '../values.js';
import { STAGE_FILE_PREFIX, duckdbWords, memoryLimitFor, noRoomError, makePrivateFolder, tempFolderOf, type DuckdbConnection, type DuckdbModule } from './connection.js';
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

/** An instant's microseconds since the epoch as text DuckDB reads exactly: UTC, six digits of fraction. */
function microsText(micros: bigint): string {
  const ms = micros >= 0n ? micros / 1000n : -((-micros + 999n) / 1000n);
  const iso = new Date(Number(ms)).toISOString();
  return `${iso.slice(0, 23)}${String(micros - ms * 1000n).padStart(3, '0')}Z`;
}

/** What makes a text cell quoted in CSV: a delimiter, a quote, a line's end. */
const NEEDS_QUOTES = /[",\n\r]/;

/**
 * One cell in CSV: NULL as nothing, the empty string quoted (the reader is
 * told that no quoted field is NULL), a text with a delimiter, a quote or a
 * line's end quoted with its quotes doubled, any other text as it is (the
 * reader keeps its spaces; most cells, and no string made for quoting);
 * numbers, booleans and instants as they are. An instant in toISOString's form (the
 * service's) goes as its text, which the reader takes in the column's type
 * (its Z makes it UTC, whatever the session's TimeZone); any other form as
 * its microseconds, in UTC.
 */
function csvCell(kind: StoreKind, cell: Cell | undefined): string {
  if (cell === null || cell === undefined) return '';
  if (typeof cell === 'boolean') return cell ? 'true' : 'false';
  switch (kind) {
    case 'int64':
    case 'int128':
    case 'number':
      return cell;
    case 'timestamp':
      return isoShaped(cell) ? cell : microsText(instantMicros(cell));
    default:
      if (cell.length > 0 && !NEEDS_QUOTES.test(cell)) return cell;
      return `"${cell.includes('"') ? cell.replaceAll('"', '""') : cell}"`;
  }
}

/**
 * The bytes of a staged row past which it goes through the appender:
 * DuckDB's CSV reader refuses a line longer than its max_line_size (2 MB by
 * default), and a larger one would have it keep larger buffers.
 */
const CSV_LINE_BYTES = 1024 * 1024;
/**
 * Rows (cells of columns of `kinds`, then JSON) as CSV, a line each, in
 * bytes (lineBytes); undefined when a row is longer than CSV_LINE_BYTES.
 */
export function csvBytes(rows: readonly (readonly Cell[])[], kinds: readonly StoreKind[]): Buffer | undefined {
  const line = (row: readonly Cell[]): string => {
    const cells = new Array<string>(row.length);
    for (let j = 0; j < row.length; j++) cells[j] = csvCell(j < kinds.length ? (kinds[j] as StoreKind) : 'json', row[j]);
    return cells.join(',');
  };
  return lineBytes(rows, line, CSV_LINE_BYTES);
}

/**
 * How DuckDB reads csvBytes' text: no guessing, empty unquoted fields NULL,
 * quoted ones text; its buffers (32 MB by default, within DuckDB's 64 MB:
 * a run of 1M contacts ran out of memory) as small as its lines allow.
 */
const CSV_OPTIONS = `FORMAT csv, HEADER false, DELIMITER ',', QUOTE '"', ESCAPE '"', NULLSTR '', ALLOW_QUOTED_NULLS false, AUTO_DETECT false, MAX_LINE_SIZE ${2 * CSV_LINE_BYTES}, BUFFER_SIZE ${4 * CSV_LINE_BYTES}`;

/**
 * A part's staged rows: its checkpoints' CSV bytes appended, as each is
 * taken, to a file of the store's temporary folder (made at the first,
 * 0600, its name new: a file there is never followed nor overwritten), and
 * the cells of rows too long for a CSV line. A gathering group then holds
 * no bytes of rows in memory, and DuckDB's reader starts on a file written
 * already when the group is written. The file is removed once the group is
 * over (dropStaged: after its commit, or its last refusal, or a run that
 * stops early), not once loaded: a group refused is written again without
 * its failing part, from the same files. A run killed meanwhile
 * leaves it to the next run of the store, which removes it
 * (connection.ts), or to the removal of the folder as the process exits.
 */
export interface DuckdbStaged {
  path: string | undefined;
  /** Open while checkpoints are added; closed before DuckDB reads the file. */
  fd: number | undefined;
  bytes: number;
  readonly cells: Cell[][][];
}

/** The rows of one of DuckDB's vectors, which it reads, writes and keeps in memory together (makeRoom). */
const VECTOR_ROWS = 2048;
/**
 * The UTF-8 bytes past which a text counts as long (makeRoom): DuckDB keeps a text of more than 4 KB apart
 * from its row's other cells (an "overflow string"). Under the usual limit 5,000 rows of 20 KB in a row (40 MB of them
 * in 2,048 rows) were written, 2,500 of 40 KB were not, and 2,500 of 40 KB among 97,500 short ones were.
 */
const LONG_TEXT_BYTES = 4096;

/** The long texts' bytes of a table's last VECTOR_ROWS rows staged, a row each, in a ring; `at` the oldest. */
interface RecentRows {
  readonly bytes: Float64Array;
  at: number;
}

/** Files of staged rows made by this process, for their names. */
let stageFiles = 0;

export class DuckdbSql implements StoreSql<DuckdbStaged> {
  readonly dialect = DUCKDB_DIALECT;
  /** A group's states in one statement: each of the five of a small run's group took about 10 ms, the five together 3. */
  readonly statesAtOnce = true;
  private readonly connection: DuckdbConnection;
  private readonly duckdb: DuckdbModule;
  private readonly target: DuckdbTarget;
  /** The long texts' bytes (UTF-8) DuckDB's memory limit was raised for (memoryLimitFor); 0 while it was not. */
  private roomFor = 0;
  /** By staging table (a table of the store each): the long texts' bytes of its last VECTOR_ROWS rows staged (countLongTexts). */
  private readonly recent = new Map<string, RecentRows>();
  /** The sum of them over the tables, and its largest yet: what the memory limit must leave room for (makeRoom). */
  private recentBytes = 0;
  private needed = 0;

  constructor(connection: DuckdbConnection, duckdb: DuckdbModule, target: DuckdbTarget) {
    this.connection = connection;
    this.duckdb = duckdb;
    this.target = target;
  }

  async run(sql: string, params?: readonly (string | null)[]): Promise<number> {
    const result = await this.connection.run(sql, params === undefined ? undefined : [...params]);
    await this.giveBack();
    return Number(result.rowsChanged);
  }

  /**
   * The memory DuckDB freed during the last statement given back to the system. DuckDB allocates through an
   * allocator of its own (jemalloc, in its binary), which keeps the pages a thread freed in that thread's arena until
   * it allocates there again; with no worker thread of DuckDB's (DUCKDB_THREADS) nothing else gives them back. The
   * driver runs each statement on one of libuv's threads, whichever is free, each with its arena: a run's statements
   * left freed pages in several arenas at once, a larger share of its peak RSS the longer it ran (docs/performance.md
   * gives the figures). Setting the memory limit (to the one it is) makes DuckDB flush its allocator, every arena's
   * freed pages and the system heap's (malloc_trim), at once: DuckDB has no statement that does only that.
   */
  private async giveBack(): Promise<void> {
    try {
      await this.connection.run(`SET memory_limit = ${quoteLiteral(memoryLimitFor(this.roomFor))}`);
    } catch {
      // Only memory not given back yet: the next statement says what is wrong, if anything is.
    }
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

  newStaged(): DuckdbStaged {
    return { path: undefined, fd: undefined, bytes: 0, cells: [] };
  }

  /**
   * A checkpoint's rows as CSV bytes, appended to the part's file (made at
   * its first rows); as their cells when a row is too long for a CSV line.
   * Written at once, on this thread (a few hundred kilobytes into the
   * system's cache): the checkpoint's bytes then go with it.
   */
  stageRows(staged: DuckdbStaged, rows: Cell[][], stage: StageTable): void {
    this.countLongTexts(rows, stage);
    const csv = csvBytes(rows, stage.layout.columns.map((c) => c.kind));
    if (csv === undefined) {
      staged.cells.push(rows);
      return;
    }
    try {
      if (staged.path === undefined) {
        const folder = tempFolderOf(this.target);
        makePrivateFolder(folder);
        const path = join(folder, `${STAGE_FILE_PREFIX}${process.pid}_${++stageFiles}.csv`);
        staged.fd = openSync(path, 'wx', STORE_FILE_MODE);
        staged.path = path;
      }
      if (staged.fd === undefined) throw new Error('the staged rows of this group were loaded already');
      for (let at = 0; at < csv.length; ) at += writeSync(staged.fd, csv, at, csv.length - at, staged.bytes + at);
      staged.bytes += csv.length;
    } catch (err) {
      // What a failed write left of this checkpoint is cut off: the file holds whole checkpoints only.
      try {
        if (staged.fd !== undefined) ftruncateSync(staged.fd, staged.bytes);
      } catch {
        // the group's COPY then refuses the file, and the group is not committed
      }
      throw this.error(err);
    }
  }

  async fillStage(stage: StageTable, staged: DuckdbStaged): Promise<void> {
    // Made again rather than emptied, at every fill (each part's, several in a transaction with many accounts): DuckDB's
    // DELETE only marks rows, and a staging table emptied group after group kept every group's rows in the run's memory
    // (or its temporary folder).
    await this.createStage(stage);
    if (staged.fd !== undefined) {
      closeSync(staged.fd);
      staged.fd = undefined;
    }
    await this.makeRoom();
    if (staged.path !== undefined) await this.connection.run(`COPY ${stage.name} FROM ${quoteLiteral(staged.path)} (${CSV_OPTIONS})`);
    if (staged.cells.length > 0) await this.appendCells(stage, staged.cells);
    await this.giveBack();
  }

  /**
   * The long texts of rows staged for `stage`, counted into the ring of its last VECTOR_ROWS rows (a row's: the bytes
   * of its texts of more than LONG_TEXT_BYTES), and the largest sum of the rings yet.
   */
  private countLongTexts(rows: readonly Cell[][], stage: StageTable): void {
    let recent = this.recent.get(stage.name);
    if (recent === undefined) {
      recent = { bytes: new Float64Array(VECTOR_ROWS), at: 0 };
      this.recent.set(stage.name, recent);
    }
    for (const row of rows) {
      let bytes = 0;
      for (const cell of row) {
        // A text of fewer UTF-16 units than a third of LONG_TEXT_BYTES is never longer in UTF-8: most cells, uncounted.
        if (typeof cell === 'string' && cell.length * 3 > LONG_TEXT_BYTES) {
          const size = Buffer.byteLength(cell);
          if (size > LONG_TEXT_BYTES) bytes += size;
        }
      }
      this.recentBytes += bytes - (recent.bytes[recent.at] as number);
      recent.bytes[recent.at] = bytes;
      recent.at = (recent.at + 1) % VECTOR_ROWS;
      if (this.recentBytes > this.needed) this.needed = this.recentBytes;
    }
  }

  /**
   * Raise DuckDB's memory limit, for the rest of the run, to hold the long texts of VECTOR_ROWS rows in a row
   * (memoryLimitFor), as many as the run staged yet: DuckDB keeps the long texts of the rows of a vector of a table
   * in memory together, beyond the reach of its temporary folder, from their insert until they are in the file (and
   * again as it copies them there, at the store's close), and holds them more than once as it appends and inserts
   * them. Under the usual limit one text of some 28 MB, or 500 rows of 100 KB in a row (50 MB), failed the write
   * at every run ("failed to pin block"). Rows of ordinary texts (none longer than LONG_TEXT_BYTES) leave it as it is.
   */
  private async makeRoom(): Promise<void> {
    if (this.needed <= this.roomFor) return;
    await this.connection.run(`SET memory_limit = ${quoteLiteral(memoryLimitFor(this.needed))}`);
    this.roomFor = this.needed;
  }

  dropStaged(staged: DuckdbStaged): void {
    try {
      if (staged.fd !== undefined) closeSync(staged.fd);
    } catch {
      // closed already
    }
    staged.fd = undefined;
    if (staged.path !== undefined) rmSync(staged.path, { force: true });
    staged.path = undefined;
    staged.cells.length = 0;
  }

  private async appendCells(stage: StageTable, chunks: readonly Cell[][][]): Promise<void> {
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
    return noRoomError(err, this.target) ?? new ConnectorError('system_error', `Cannot write the DuckDB store "${this.target.path}": ${duckdbWords(err)}`, { cause: err });
  }
}
