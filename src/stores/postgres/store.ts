/**
 * A PostgreSQL store as a `replicate` run opens it, in this order:
 * connect (connection.ts), take the schema's writer lock (lock.ts; a second
 * run is refused at once, exit 75), refuse a store of a later format or
 * built with other treatments (nothing changed then), create the schema and
 * the bookkeeping tables if missing, make or change each stream's table
 * (tables.ts: drift is applied here, before any write), and record the
 * treatments of a new store. Then the run writes its checkpoints in
 * groups (group-writer.ts, writer.ts) and reads back its states; `close`
 * writes what is gathered, gives the lock back and ends the session.
 *
 * The bookkeeping tables live in the store's schema beside the stream
 * tables: `_replica_state`, `_replica_tables`, `_replica_metadata`,
 * `_replica_full_read` (checkpoint.ts).
 */
import type { Client } from 'pg';
import { ConfigError } from '../../errors.js';
import { qualified, type StoreKind } from '../columns.js';
import { openStoreTables, putFactSql, type StoreOpenOptions } from '../metadata.js';
import type { DriftLog, OpenedTables } from '../notes.js';
import type { StoreNote } from '../store.js';
import type { PostgresTarget } from '../target.js';
import { connectPostgres, loadPgDriver, type PgDriver } from './connection.js';
import { LOCK_NOT_AVAILABLE, postgresError } from './faults.js';
import { releaseWriterLock, takeWriterLock } from './lock.js';
import { PG_NAMING, PG_TYPES, isoText, makeSchema, openTables, storeExists } from './tables.js';
import { PostgresSql } from './writer.js';
import { GroupStore } from '../group-store.js';
import { GroupWriter, type GroupOptions } from '../group-writer.js';

interface PostgresStoreOptions extends StoreOpenOptions {
  /** Take the writer lock (default true: every writing run does). */
  readonly lock?: boolean;
  /** How long a write waits for a lock another session holds (WRITE_LOCK_WAIT_MS). */
  readonly lockWaitMs?: number;
}

/**
 * How long the run's writes wait for a lock another session holds before
 * the stream stops with a transient error (75) naming that session. Readers
 * never hold one the writes wait for (they take ACCESS SHARE, the writes
 * ROW EXCLUSIVE and row locks); a session that locked the table or some of
 * its rows (LOCK TABLE, SELECT ... FOR UPDATE, an UPDATE, a CREATE INDEX)
 * does, and one left idle in its transaction would hold the run for ever.
 */
const WRITE_LOCK_WAIT_MS = 60_000;

/**
 * How long the run's closing count of a table's rows waits for its lock. The
 * count only feeds the last log line; a session that held a write off the
 * table (LOCK TABLE) would hold the count as long again.
 */
const COUNT_LOCK_WAIT_MS = 1_000;

/**
 * Refuse a database whose encoding is not UTF8 before anything is made in
 * it: LATIN1 and the like cannot hold every character the service sends (an
 * emoji in a contact's name), and the row that carries one would be refused,
 * stopping its stream at every run from then on; SQL_ASCII checks nothing.
 */
async function refuseOtherEncoding(client: Client, target: PostgresTarget): Promise<void> {
  const { rows } = await client.query<{ encoding: string }>("SELECT current_setting('server_encoding') AS encoding");
  const encoding = rows[0]?.encoding ?? '';
  if (encoding === 'UTF8') return;
  throw new ConfigError(
    `The PostgreSQL database ${target.display} has the encoding ${encoding}, which cannot hold every character the service sends (an emoji in a name): ` +
      `its rows would be refused. Nothing was changed in it. Replicate into a database created with ENCODING 'UTF8' ` +
      `(CREATE DATABASE name ENCODING 'UTF8' TEMPLATE template0, with a UTF-8 locale).`,
    { field: '--db' },
  );
}

export class PostgresStore extends GroupStore<Buffer[]> {
  readonly target: PostgresTarget;
  private readonly client: Client;
  /** Changes left for the next run because a reader held a table (in words). */
  readonly postponed: readonly string[];
  private locked: boolean;

  /** `lockedOn`: the server pid of the session that took the writer lock, undefined when not taken. */
  private constructor(
    target: PostgresTarget,
    client: Client,
    driver: PgDriver,
    opened: OpenedTables,
    lockedOn: string | undefined,
    groups: GroupOptions | undefined,
    notes: readonly StoreNote[],
    log: DriftLog | undefined,
  ) {
    super(target.display, new GroupWriter(new PostgresSql(client, driver, target, lockedOn), target.schema, opened.specs, groups), opened, notes, log, PG_TYPES);
    this.target = target;
    this.client = client;
    this.postponed = opened.postponed;
    this.locked = lockedOn !== undefined;
  }

  /** Open (creating what is missing) the store of `target`; faults as faults.ts says, the lock as lock.ts. */
  static async open(target: PostgresTarget, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const driver = await loadPgDriver();
    const client = await connectPostgres(target);
    let lockedOn: string | undefined;
    try {
      await refuseOtherEncoding(client, target);
      if (options.lock ?? true) lockedOn = await takeWriterLock(client, target);
      // For the whole session (opening's table changes wait less: tables.ts), whatever the role or database sets.
      await client.query(`SET lock_timeout = ${Math.max(1, Math.round(options.lockWaitMs ?? WRITE_LOCK_WAIT_MS))}`);
      const schema = target.schema;
      const session = {
        exists: () => storeExists(client, schema),
        makeSchema: () => makeSchema(client, schema),
        run: async (sql: string, params?: string[]) => void (await client.query(sql, params)),
        rows: async (sql: string) => (await client.query<Record<string, unknown>>(sql)).rows,
        types: PG_TYPES,
        naming: PG_NAMING,
      };
      const { opened, notes } = await openStoreTables(session, target.display, schema, options, (specs, stored, changes) => openTables(client, driver, schema, specs, stored, changes));
      return new PostgresStore(target, client, driver, opened, lockedOn, options.groups, notes, options.log);
    } catch (err) {
      await client.end().catch(() => {});
      throw postgresError(err, target, 'opening');
    }
  }

  /** Rows in each stream's table; a table another session keeps locked is left out (COUNT_LOCK_WAIT_MS). */
  override async rowCounts(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    try {
      // The writes are done (finish() flushed them): the session's lock_timeout is the count's alone from here.
      await this.client.query(`SET lock_timeout = ${COUNT_LOCK_WAIT_MS}`);
      for (const { layout } of this.tables) {
        try {
          const { rows } = await this.client.query<{ n: string }>(`SELECT count(*) AS n FROM ${qualified(this.target.schema, layout.table)}`);
          counts.set(layout.stream, Number(rows[0]?.n ?? 0));
        } catch (err) {
          if ((err as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw err;
        }
      }
    } catch (err) {
      throw postgresError(err, this.target, 'reading');
    }
    return counts;
  }

  protected async rows(sql: string, params?: readonly string[]): Promise<Record<string, unknown>[]> {
    try {
      return (await this.client.query<Record<string, unknown>>(sql, params === undefined ? undefined : [...params])).rows;
    } catch (err) {
      throw postgresError(err, this.target, 'reading');
    }
  }

  protected readBack(kind: StoreKind | undefined, column: string): string {
    return kind === 'timestamp' ? isoText(column) : `${column}::text`;
  }

  /** Record a fact of the store's (under the writer lock). */
  async setMetadata(key: string, value: string): Promise<void> {
    try {
      await this.client.query(putFactSql(this.target.schema), [key, value]);
    } catch (err) {
      throw postgresError(err, this.target, 'writing to');
    }
  }

  /** The driver's session, for what a caller must do on it (tests, checks). */
  get session(): Client {
    return this.client;
  }

  /** Give the lock back and end the session (a lost session already freed its lock). */
  protected async release(): Promise<void> {
    try {
      if (this.locked && !this.writer.lost) await releaseWriterLock(this.client, this.target);
    } catch {
      // the session ends below, which frees the lock anyway
    }
    this.locked = false;
    await this.client.end().catch(() => {});
  }
}
