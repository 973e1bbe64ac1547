/**
 * Writing checkpoints into a PostgreSQL store, with the SQLite replica's
 * meaning (src/faces/replica/table-writer.ts), each in ONE transaction with
 * the stream's state row, so that whatever is committed is whole
 * checkpoints and a run killed at any moment (or a connection lost) leaves
 * every stream at its last checkpoint, which the next run resumes from:
 *
 * 1. `DELETE FROM` the table for a full-refresh stream's first checkpoint
 *    (DELETE, not TRUNCATE: TRUNCATE's ACCESS EXCLUSIVE lock would block the
 *    dashboards; DELETE lets them read the old rows until the commit);
 * 2. the records, one per id (the last wins), into a per-run staging table
 *    (TEMPORARY: the session's own, no WAL) with COPY;
 * 3. the deletion guard, set-based: staged rows whose object the deletion
 *    log deleted at or after the row's cursor are dropped (a deleted row is
 *    never resurrected by an upsert read before the deletion was);
 * 4. `INSERT ... SELECT ... ON CONFLICT (id) DO UPDATE` from the staging
 *    table (a MERGE is slower on PostgreSQL for this);
 * 5. a full read's marks, and at its last checkpoint the sweep of the rows
 *    it did not return (heal.ts of the replica);
 * 6. for the deletion log's checkpoints: its records delete the rows they
 *    name, unless the row changed after the deletion;
 * 7. the drift the rows asked for, saved with them (tables.ts applies it at
 *    the next open), and the state row; COMMIT.
 *
 * Readers see each stream as of its last commit: row locks only (ROW
 * EXCLUSIVE on the tables), never a table lock that blocks a SELECT.
 *
 * A failed checkpoint is rolled back whole. When the connection is still
 * sound (the server refused something in the rows) only its stream stops:
 * its later checkpoints are refused, so its state never moves past rows
 * that were lost. When the connection is gone, nothing more is written.
 */
import type { Client } from 'pg';
import { ConnectorError } from '../../errors.js';
import { quoteIdent, storeColumnNames, widen, withPending, type StoreKind, type StoreLayout } from '../columns.js';
import { FULL_READ_TABLE, STATE_TABLE, TABLES_TABLE, lastPerKey, unknownDeletionTypes, type StoreCheckpoint, type StoreCommitResult, type StoreTableSpec } from '../checkpoint.js';
import { encodeRow, type Cell } from '../values.js';
import type { PostgresTarget } from '../target.js';
import type { PgDriver } from './connection.js';
import { copyRows } from './copy.js';
import { postgresError } from './faults.js';
import { PG_DIALECT, PG_TYPES, instantOf, qualified, textOf } from './tables.js';

interface Table {
  spec: StoreTableSpec;
  readonly stage: string;
  /** The staged columns: the layout's, `_extra`, `_absent` (not `_synced_at`). */
  readonly staged: readonly string[];
  readonly kinds: ReadonlyMap<string, StoreKind>;
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Whether an error left the connection unusable (the server or the network failed, not a statement). */
function connectionLost(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && (code.startsWith('08') || code.startsWith('57P') || /^E[A-Z]+$/.test(code))) return true;
  return /Connection terminated|not queryable|Client was closed|Connection ended/i.test(messageOf(err));
}

export class PostgresTableWriter {
  private readonly client: Client;
  private readonly driver: PgDriver;
  private readonly target: PostgresTarget;
  private readonly tables = new Map<string, Table>();
  /** Tables deletion records delete from, by object type. */
  private readonly targets = new Map<string, Table>();
  private readonly log: Table | undefined;
  /** Whether the deletion log may hold a record (false: the guard is skipped). */
  private deletionsKnown = false;
  private readonly failedStreams = new Map<string, string>();
  private broken: ConnectorError | undefined;
  private prepared = false;

  constructor(client: Client, driver: PgDriver, target: PostgresTarget, specs: readonly StoreTableSpec[]) {
    this.client = client;
    this.driver = driver;
    this.target = target;
    let n = 0;
    let log: Table | undefined;
    for (const spec of specs) {
      const table: Table = {
        spec,
        stage: `_replica_stage_${n++}`,
        staged: storeColumnNames(spec.layout).slice(0, -1),
        kinds: new Map(spec.layout.columns.map((c) => [c.field, c.kind])),
      };
      this.tables.set(spec.layout.stream, table);
      if (spec.deletedAs !== null) this.targets.set(spec.deletedAs, table);
      if (spec.deletionLog) log = table;
    }
    this.log = log;
  }

  /** The layout a stream is written with (its pending drift included). */
  layoutOf(stream: string): StoreLayout {
    const table = this.tables.get(stream);
    if (!table) throw new Error(`the store has no table for stream "${stream}"`);
    return table.spec.layout;
  }

  /** Why nothing more is written (the connection was lost mid-checkpoint). */
  get lostConnection(): ConnectorError | undefined {
    return this.broken;
  }

  /** The staging tables (temporary, this session's), and whether the deletion log has rows. */
  private async prepare(): Promise<void> {
    if (this.prepared) return;
    const schema = this.target.schema;
    for (const table of this.tables.values()) {
      const columns = table.spec.layout.columns.map((c) => `${quoteIdent(c.field)} ${PG_TYPES[c.kind]}`);
      columns.push('"_extra" json', '"_absent" jsonb');
      await this.client.query(`CREATE TEMP TABLE IF NOT EXISTS ${table.stage} (${columns.join(', ')}) ON COMMIT DELETE ROWS`);
    }
    if (this.log) {
      const { rows } = await this.client.query(`SELECT 1 AS x FROM ${qualified(schema, this.log.spec.layout.table)} LIMIT 1`);
      this.deletionsKnown = rows.length > 0;
    }
    this.prepared = true;
  }

  /** Write one checkpoint in its own transaction; on an error nothing of it stays (see the module's comment). */
  async write(checkpoint: StoreCheckpoint): Promise<StoreCommitResult> {
    if (this.broken) throw this.broken;
    const earlier = this.failedStreams.get(checkpoint.stream);
    if (earlier !== undefined) {
      throw new ConnectorError('system_error', `An earlier checkpoint of ${checkpoint.stream} could not be written to ${this.target.display} (${earlier}), so later ones are not either.`);
    }
    const table = this.tables.get(checkpoint.stream);
    if (!table) throw new Error(`the store has no table for stream "${checkpoint.stream}"`);
    const { layout } = table.spec;
    const { records, keyless } = lastPerKey(checkpoint.records, layout.primaryKey);
    if (keyless >= 0) {
      const cause = `record ${keyless + 1} of the checkpoint has no ${layout.primaryKey}`;
      this.failedStreams.set(checkpoint.stream, cause);
      throw new ConnectorError('system_error', `${cause}, so nothing of that checkpoint is written.`);
    }
    const cells: Cell[][] = [];
    const drift = new Map<string, StoreKind>();
    for (const record of records) {
      const row = encodeRow(layout, record, PG_DIALECT);
      cells.push(row.cells);
      if (row.drift) for (const [field, kind] of row.drift) drift.set(field, widen(drift.get(field) ?? kind, kind));
    }
    try {
      await this.prepare();
      await this.client.query('BEGIN');
      const result = await this.writeInTransaction(table, checkpoint, cells, drift);
      await this.client.query('COMMIT');
      if (table.spec.deletionLog && records.length > 0) this.deletionsKnown = true;
      return result;
    } catch (err) {
      await this.client.query('ROLLBACK').catch(() => {});
      const error = postgresError(err, this.target, 'writing to');
      if (connectionLost(err)) this.broken ??= error;
      else this.failedStreams.set(checkpoint.stream, error.message);
      throw error;
    }
  }

  private async writeInTransaction(
    table: Table,
    checkpoint: StoreCheckpoint,
    cells: readonly Cell[][],
    drift: ReadonlyMap<string, StoreKind>,
  ): Promise<StoreCommitResult> {
    const schema = this.target.schema;
    const { layout } = table.spec;
    const name = qualified(schema, layout.table);
    const key = quoteIdent(layout.primaryKey);
    if (checkpoint.replaceAll) await this.client.query(`DELETE FROM ${name}`);
    await copyRows(this.client, this.driver, table.stage, table.staged, cells);

    let skippedDeleted = 0;
    if (this.deletionsKnown && this.log && table.spec.deletedAs !== null && layout.cursorField !== null && cells.length > 0) {
      const fields = this.log.spec.deletionLog as NonNullable<StoreTableSpec['deletionLog']>;
      const k = this.log.kinds;
      const cursorKind = table.kinds.get(layout.cursorField) ?? 'text';
      const guard = await this.client.query(
        `DELETE FROM ${table.stage} s USING ${qualified(schema, this.log.spec.layout.table)} d
          WHERE ${textOf(k.get(fields.objectTypeField) ?? 'text', `d.${quoteIdent(fields.objectTypeField)}`)} = $1
            AND ${textOf(k.get(fields.objectIdField) ?? 'text', `d.${quoteIdent(fields.objectIdField)}`)} = s.${key}
            AND (${instantOf(cursorKind, `s.${quoteIdent(layout.cursorField)}`)} > ${instantOf(k.get(fields.deletedAtField) ?? 'text', `d.${quoteIdent(fields.deletedAtField)}`)}) IS NOT TRUE`,
        [table.spec.deletedAs],
      );
      skippedDeleted = guard.rowCount ?? 0;
    }

    const names = table.staged.map(quoteIdent);
    const updates = [...table.staged, '_synced_at'].filter((n) => n !== layout.primaryKey).map((n) => `${quoteIdent(n)} = EXCLUDED.${quoteIdent(n)}`);
    const upsert = await this.client.query(
      `INSERT INTO ${name} (${names.join(', ')}, "_synced_at") SELECT ${names.join(', ')}, now() FROM ${table.stage} ` +
        `ON CONFLICT (${key}) DO UPDATE SET ${updates.join(', ')}`,
    );
    const upserted = upsert.rowCount ?? 0;

    let sweptRows = 0;
    const fullRead = checkpoint.fullRead;
    if (fullRead) {
      const marks = qualified(schema, FULL_READ_TABLE);
      if (fullRead.first) await this.client.query(`DELETE FROM ${marks} WHERE stream = $1`, [checkpoint.stream]);
      await this.client.query(`INSERT INTO ${marks} (stream, id) SELECT $1, ${key} FROM ${table.stage} ON CONFLICT DO NOTHING`, [checkpoint.stream]);
      if (fullRead.last) {
        const swept = await this.client.query(
          `DELETE FROM ${name} t WHERE NOT EXISTS (SELECT 1 FROM ${marks} m WHERE m.stream = $1 AND m.id = t.${key})`,
          [checkpoint.stream],
        );
        sweptRows = swept.rowCount ?? 0;
        await this.client.query(`DELETE FROM ${marks} WHERE stream = $1`, [checkpoint.stream]);
      }
    }

    let deletedRows = 0;
    let unknownTypes: [string, string][] = [];
    const fields = table.spec.deletionLog;
    if (fields && cells.length > 0) {
      unknownTypes = unknownDeletionTypes(checkpoint.records, table.spec, new Set(this.targets.keys()));
      for (const [type, target] of this.targets) {
        const cursor = target.spec.layout.cursorField;
        if (cursor === null) continue;
        const deleted = await this.client.query(
          `DELETE FROM ${qualified(schema, target.spec.layout.table)} t USING ${table.stage} s
            WHERE ${textOf(table.kinds.get(fields.objectTypeField) ?? 'text', `s.${quoteIdent(fields.objectTypeField)}`)} = $1
              AND t.${quoteIdent(target.spec.layout.primaryKey)} = ${textOf(table.kinds.get(fields.objectIdField) ?? 'text', `s.${quoteIdent(fields.objectIdField)}`)}
              AND (${instantOf(target.kinds.get(cursor) ?? 'text', `t.${quoteIdent(cursor)}`)} > ${instantOf(table.kinds.get(fields.deletedAtField) ?? 'text', `s.${quoteIdent(fields.deletedAtField)}`)}) IS NOT TRUE`,
          [type],
        );
        deletedRows += deleted.rowCount ?? 0;
      }
    }

    const pending = drift.size > 0 ? withPending(layout, drift) : undefined;
    if (pending) {
      await this.client.query(`UPDATE ${qualified(schema, TABLES_TABLE)} SET layout = $2 WHERE stream = $1`, [layout.stream, JSON.stringify(pending)]);
    }
    await this.client.query(
      `INSERT INTO ${qualified(schema, STATE_TABLE)} (stream, state, committed_at) VALUES ($1, $2, now()) ` +
        'ON CONFLICT (stream) DO UPDATE SET state = EXCLUDED.state, committed_at = EXCLUDED.committed_at',
      [checkpoint.stream, checkpoint.state],
    );
    if (pending) table.spec = { ...table.spec, layout: pending };
    return { upserted, skippedDeleted, deletedRows, unknownTypes, sweptRows, drift: [...drift.keys()] };
  }
}
