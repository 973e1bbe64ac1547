/**
 * The PostgreSQL side of the group writer (group-writer.ts says what a
 * group's transaction does): its statements on the store's session, its
 * staging tables (TEMPORARY: the session's own, no WAL, invisible to
 * others) filled with COPY, and its faults. Readers see each stream as of
 * its last commit: the statements take row locks only (ROW EXCLUSIVE on the
 * tables), never a table lock that blocks a SELECT.
 */
import type { Client } from 'pg';
import { messageOf, type ConnectorError } from '../../errors.js';
import { quoteIdent } from '../columns.js';
import type { StageTable, StoreSql } from '../group-writer.js';
import type { PostgresTarget } from '../target.js';
import type { Cell } from '../values.js';
import type { PgDriver } from './connection.js';
import { copyChunks, copyText } from './copy.js';
import { LOCK_NOT_AVAILABLE, postgresError } from './faults.js';
import { checkWriterLock } from './lock.js';
import { PG_DIALECT, PG_TYPES } from './tables.js';

interface LockHolder {
  readonly pid: string;
  readonly application_name: string | null;
  readonly state: string | null;
  readonly since: string | null;
  readonly locks: string;
}

/**
 * The other sessions holding a lock stronger than ACCESS SHARE on a table of
 * the schema, oldest transaction first: of this database only (a database
 * copied from it as a template has the same tables under the same oids).
 */
const LOCK_HOLDERS_SQL = `
  SELECT l.pid::text AS pid, a.application_name, a.state, a.xact_start::text AS since,
         string_agg(DISTINCT l.mode || ' on ' || c.relname, ', ') AS locks
    FROM pg_locks l
    JOIN pg_class c ON c.oid = l.relation
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_stat_activity a ON a.pid = l.pid
   WHERE l.granted AND n.nspname = $1 AND c.relkind IN ('r', 'p') AND l.pid <> pg_backend_pid() AND l.mode <> 'AccessShareLock'
     AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
   GROUP BY l.pid, a.application_name, a.state, a.xact_start
   ORDER BY a.xact_start NULLS LAST
   LIMIT 5`;

function describeLockHolder(h: LockHolder): string {
  const name = h.application_name ? `"${h.application_name}" ` : '';
  const state = h.state ? `, ${h.state}` : '';
  const since = h.since ? ` since ${h.since}` : '';
  return `${name}server pid ${h.pid}${state}${since}, holding ${h.locks}`;
}

/** Whether an error left the connection unusable (the server or the network failed, not a statement). */
function connectionLost(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && (code.startsWith('08') || code.startsWith('57P') || /^E[A-Z]+$/.test(code))) return true;
  return /Connection terminated|not queryable|Client was closed|Connection ended/i.test(messageOf(err));
}

export class PostgresSql implements StoreSql<Buffer[]> {
  readonly dialect = PG_DIALECT;
  /** Temporary tables named by it: a role's or database's search_path may list pg_temp after a schema holding a table of that name. */
  readonly tempSchema = 'pg_temp';
  private readonly client: Client;
  private readonly driver: PgDriver;
  private readonly target: PostgresTarget;
  /** The server pid of the session that took the writer lock; undefined when the store was opened without it. */
  private readonly lockedOn: string | undefined;

  constructor(client: Client, driver: PgDriver, target: PostgresTarget, lockedOn: string | undefined) {
    this.client = client;
    this.driver = driver;
    this.target = target;
    this.lockedOn = lockedOn;
  }

  /** A group's transaction runs where the writer lock is held, or nothing of it is written (lock.ts: a pooler). */
  async checkWriter(): Promise<void> {
    if (this.lockedOn !== undefined) await checkWriterLock(this.client, this.target, this.lockedOn);
  }

  async run(sql: string, params?: readonly (string | null)[]): Promise<number> {
    try {
      const result = await this.client.query(sql, params === undefined ? undefined : [...params]);
      return result.rowCount ?? 0;
    } catch (err) {
      if ((err as { code?: unknown }).code === LOCK_NOT_AVAILABLE) await this.nameLockHolders(err as Error);
      throw err;
    }
  }

  /**
   * A write waited past lock_timeout: say who holds locks on the schema's
   * tables (beyond a reader's ACCESS SHARE), so that the message names the
   * session to end or wait for. The transaction is lost anyway; it is rolled
   * back here, as the server answers nothing else inside it.
   */
  private async nameLockHolders(err: Error): Promise<void> {
    try {
      await this.client.query('ROLLBACK');
      const { rows } = await this.client.query<LockHolder>(LOCK_HOLDERS_SQL, [this.target.schema]);
      if (rows.length > 0) Object.assign(err, { lockHolders: rows.map(describeLockHolder).join('; ') });
    } catch {
      // the message says a lock was not had, without naming its holder
    }
  }

  async any(sql: string): Promise<boolean> {
    return (await this.client.query(sql)).rows.length > 0;
  }

  /** `INSERT ... ON CONFLICT DO UPDATE`: one statement (a MERGE is slower on PostgreSQL for this). */
  upsertSql(table: string, stage: string, columns: readonly string[], keys: readonly string[]): string[] {
    const updates = [...columns, '"_synced_at"'].filter((n) => !keys.includes(n)).map((n) => `${n} = EXCLUDED.${n}`);
    return [`INSERT INTO ${table} (${columns.join(', ')}, "_synced_at") SELECT ${columns.join(', ')}, now() FROM ${stage} ON CONFLICT (${keys.join(', ')}) DO UPDATE SET ${updates.join(', ')}`];
  }

  async createStage(stage: StageTable): Promise<void> {
    const columns = stage.layout.columns.map((c) => `${quoteIdent(c.field)} ${PG_TYPES[c.kind]}`);
    columns.push('"_extra" json', '"_absent" jsonb');
    // One of that name may be there, of another layout: an earlier run's on a pooler's server session, which nothing reset.
    await this.client.query(`DROP TABLE IF EXISTS ${stage.ref}`);
    await this.client.query(`CREATE TEMP TABLE ${stage.name} (${columns.join(', ')}) ON COMMIT DELETE ROWS`);
  }

  newStaged(): Buffer[] {
    return [];
  }

  /** A checkpoint's rows as their COPY text, in bytes: the group holds them outside the JavaScript heap until its COPY. */
  stageRows(staged: Buffer[], rows: Cell[][]): void {
    staged.push(copyText(rows));
  }

  dropStaged(staged: Buffer[]): void {
    staged.length = 0;
  }

  async fillStage(stage: StageTable, chunks: Buffer[]): Promise<void> {
    // Emptied at every commit (ON COMMIT DELETE ROWS), and first here: a stage may be filled again in one transaction
    // (another account's part of the stream, in a store of many accounts). A DELETE, which a temporary table's TRUNCATE
    // would cost more than (a new file each time); on a stage already empty it finds nothing.
    await this.client.query(`DELETE FROM ${stage.ref}`);
    await copyChunks(this.client, this.driver, stage.ref, stage.columns, chunks);
  }

  isFatal(err: unknown): boolean {
    return connectionLost(err);
  }

  error(err: unknown): ConnectorError {
    return postgresError(err, this.target, 'writing to');
  }
}
