/**
 * A DuckDB store as a `replicate` run opens it: the file opened for writing
 * (connection.ts: DuckDB's file lock is the one-writer rule, a second run
 * exits 75), a store of a later format or built with other treatments
 * refused before anything changes, the schema and bookkeeping tables
 * created if missing, each stream's table made or changed (tables.ts), the
 * treatments of a new store recorded. Then checkpoints, in groups
 * (group-writer.ts, writer.ts); `close` commits what is gathered,
 * checkpoints DuckDB's WAL into the file and lets it go.
 */
import { statSync } from 'node:fs';
import { ConnectorError } from '../../errors.js';
import { quoteIdent, type StoreKind } from '../columns.js';
import { openStoreTables, putFactSql, type StoreOpenOptions } from '../metadata.js';
import type { DriftLog, OpenedTables } from '../notes.js';
import type { StoreNote } from '../store.js';
import type { DuckdbTarget } from '../target.js';
import { closeDuckdb, duckdbWords, noRoomError, openDuckdb, type DuckdbConnection, type DuckdbFiles } from './connection.js';
import { DUCKDB_NAMING, DUCKDB_TYPES, isoText, openTables, rowsOf, storeExists } from './tables.js';
import { DuckdbSql, type DuckdbStaged } from './writer.js';
import { GroupStore } from '../group-store.js';
import { GroupWriter } from '../group-writer.js';

/**
 * DuckDB's threads for copying its WAL into the file at close, once the run's
 * rows are committed, when the WAL holds at least PARALLEL_COPY_WAL_BYTES:
 * with the read over, a second one no longer competes with the connector's
 * thread. In the bench the copy of 200k contacts (a WAL of hundreds of MB)
 * took about a quarter less time (0.70 s to 0.53 s), the peak RSS of 1M
 * the same.
 */
const CLOSING_THREADS = 2;
/**
 * The WAL below which the copy at close keeps the run's one thread: the WAL
 * of a run with little to write (most scheduled runs, and every one that
 * read nothing new) is a row group or so per table, nothing for a second
 * thread to share, and starting one for it cost more CPU and more time than
 * it saved, on a busy machine most. A larger WAL takes two, as the
 * bench's copy of 200k contacts does.
 */
const PARALLEL_COPY_WAL_BYTES = 64 * 1024 * 1024;

export class DuckdbStore extends GroupStore<DuckdbStaged> {
  readonly target: DuckdbTarget;
  private readonly files: DuckdbFiles;
  private readonly connection: DuckdbConnection;

  private constructor(target: DuckdbTarget, files: DuckdbFiles, writer: GroupWriter<DuckdbStaged>, opened: OpenedTables, notes: readonly StoreNote[], log: DriftLog | undefined) {
    super(target.display, writer, opened, notes, log, DUCKDB_TYPES);
    this.target = target;
    this.files = files;
    this.connection = files.connection;
  }

  static async open(target: DuckdbTarget, options: StoreOpenOptions = {}): Promise<DuckdbStore> {
    const { duckdb, ...files } = await openDuckdb(target);
    const { connection } = files;
    try {
      const schema = target.schema;
      const session = {
        exists: () => storeExists(connection, schema),
        makeSchema: async () => void (await connection.run(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`)),
        run: async (sql: string, params?: string[]) => void (await connection.run(sql, params)),
        rows: (sql: string) => rowsOf(connection, sql),
        types: DUCKDB_TYPES,
        naming: DUCKDB_NAMING,
      };
      const { opened, notes } = await openStoreTables(session, target.display, schema, options, (specs, stored, changes) => openTables(connection, schema, specs, stored, changes));
      const writer = new GroupWriter(new DuckdbSql(connection, duckdb, target), target.schema, opened.specs, options.groups);
      return new DuckdbStore(target, files, writer, opened, notes, options.log);
    } catch (err) {
      closeDuckdb(files);
      if (err instanceof ConnectorError) throw err;
      throw noRoomError(err, target) ?? new ConnectorError('system_error', `Cannot open the DuckDB store "${target.path}": ${duckdbWords(err)}`, { cause: err });
    }
  }

  protected rows(sql: string, params?: readonly string[]): Promise<Record<string, unknown>[]> {
    return rowsOf(this.connection, sql, params === undefined ? undefined : [...params]);
  }

  /** Booleans and doubles as DuckDB gives them (a double's text in DuckDB's form, `1.5e+20`, would not read back exactly). */
  protected readBack(kind: StoreKind | undefined, column: string): string {
    if (kind === 'timestamp') return isoText(column);
    if (kind === 'boolean' || kind === 'number') return column;
    return `CAST(${column} AS VARCHAR)`;
  }

  async setMetadata(key: string, value: string): Promise<void> {
    await this.connection.run(putFactSql(this.target.schema), [key, value]);
  }

  /** The connection, for what a caller must do on it (tests, checks). */
  get session(): DuckdbConnection {
    return this.connection;
  }

  /** Copy DuckDB's WAL into the file and let the file go (its lock with it). */
  protected async release(): Promise<void> {
    try {
      // The read is over and the connector's thread waits: a large copy takes a second thread (CLOSING_THREADS).
      if (walBytes(this.files.wal) >= PARALLEL_COPY_WAL_BYTES) await this.connection.run(`SET threads = ${CLOSING_THREADS}`);
      await this.connection.run('CHECKPOINT');
    } catch {
      // the next open replays the WAL
    }
    closeDuckdb(this.files);
  }
}

/** The bytes of the WAL at `path`; 0 when there is none (DuckDB removed it at its last checkpoint, or ':memory:'). */
function walBytes(path: string | undefined): number {
  return path === undefined ? 0 : (statSync(path, { throwIfNoEntry: false })?.size ?? 0);
}
