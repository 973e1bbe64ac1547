/**
 * The store's own facts, kept in its metadata table beside the tables: the
 * format version of its layout (checkpoint.ts), and the run's facts
 * (store.ts, StoreFacts: the account, the personal-data treatments).
 * Checked when the store opens, under the writer lock, before anything in
 * it changes.
 */
import { ConfigError } from '../errors.js';
import type { StreamSchemas } from '../schemas/json-schema.js';
import { parseStoreLayout, qualified, type ColumnChange, type ColumnNaming, type StoreKind, type StoreLayout } from './columns.js';
import { FORMAT_KEY, METADATA_TABLE, STATE_TABLE, STORE_FORMAT_VERSION, TABLES_TABLE, bookkeepingSql, refuseOtherShape, splitJoinedStates, storeTableSpecs, type StoreTableSpec } from './checkpoint.js';
import type { GroupOptions } from './group-writer.js';
import type { DriftLog, OpenedTables } from './notes.js';
import type { StoreFacts, StoreNote } from './store.js';

/** The refusal of a store written by a later version of the connector (its tables may be laid out otherwise). */
export function refuseLaterFormat(display: string, stored: string | undefined): void {
  if (stored === undefined) return;
  const version = Number(stored);
  if (Number.isInteger(version) && version <= STORE_FORMAT_VERSION) return;
  throw new ConfigError(
    `The store ${display} was written by a later version of the connector (layout version ${stored}; this one writes version ${STORE_FORMAT_VERSION}). ` +
      'Nothing was changed in it. Upgrade the connector, or replicate into another schema or file.',
    { field: '--db' },
  );
}

/** The facts a run records in a store, and what to say, once `facts` accepted what the store holds (a new store holds none). */
export function checkFacts(facts: StoreFacts | undefined, stored: ReadonlyMap<string, string>, written: boolean): { record: ReadonlyMap<string, string>; notes: readonly StoreNote[] } {
  if (facts === undefined) return { record: new Map(), notes: [] };
  const { record, notes } = facts.check(new Map([...stored].filter(([key]) => key !== FORMAT_KEY)), written);
  if (record.has(FORMAT_KEY)) throw new Error(`${FORMAT_KEY} is the store's own fact`);
  return { record, notes };
}

/** How a PostgreSQL or DuckDB store is opened for a run. */
export interface StoreOpenOptions {
  /** Each stream's record schema (merged with the service's description); default: the built-in ones. */
  readonly schemas?: StreamSchemas;
  /** The run's facts (the account, the treatments), checked and recorded under the writer lock before anything changes. */
  readonly facts?: StoreFacts;
  /** A store of many accounts (a config with `accounts`): each table keyed by (account, id); a store of the other kind is refused. */
  readonly accountKey?: boolean;
  /** How checkpoints are grouped into transactions (group-writer.ts). */
  readonly groups?: GroupOptions;
  /** Told once per field when a committed value did not fit its column (its column changes at the next open). */
  readonly log?: DriftLog;
}

/** What opening asks of a store's session, and how the store writes (its SQL types, its column names). */
interface OpeningStore {
  /** Whether the schema holds the store's bookkeeping. */
  exists(): Promise<boolean>;
  /** Make the schema where it is missing. */
  makeSchema(): Promise<void>;
  run(sql: string, params?: string[]): Promise<void>;
  rows(sql: string): Promise<Record<string, unknown>[]>;
  readonly types: Readonly<Record<StoreKind, string>>;
  readonly naming: ColumnNaming;
}

/** The statement that records a fact of a store's ($1 key, $2 value), replacing the one of its key: PostgreSQL's and DuckDB's alike. */
export const putFactSql = (schema: string): string =>
  `INSERT INTO ${qualified(schema, METADATA_TABLE)} (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`;

/**
 * Open a store's tables, PostgreSQL's and DuckDB's alike: a store of a later
 * format, or whose facts (account, treatments) or shape refuse the run, is
 * refused before anything in it changes; the bookkeeping tables are made
 * where missing, each stream's table made or changed (`openTables`), then
 * the format and the run's facts recorded.
 */
export async function openStoreTables(
  store: OpeningStore,
  display: string,
  schema: string,
  options: StoreOpenOptions,
  openTables: (specs: StoreTableSpec[], stored: ReadonlyMap<string, StoreLayout>, changes: ColumnChange[]) => Promise<OpenedTables>,
): Promise<{ opened: OpenedTables; notes: readonly StoreNote[] }> {
  let held = new Map<string, string>();
  let written = false;
  if (await store.exists()) {
    held = new Map((await store.rows(`SELECT key, value FROM ${qualified(schema, METADATA_TABLE)}`)).map((r) => [String(r.key), String(r.value)]));
    refuseLaterFormat(display, held.get(FORMAT_KEY));
    written = (await store.rows(`SELECT 1 AS x FROM ${qualified(schema, TABLES_TABLE)} LIMIT 1`)).length > 0;
  }
  const facts = checkFacts(options.facts, held, written);
  await store.makeSchema();
  for (const sql of bookkeepingSql(schema, store.types)) await store.run(sql);
  const stored = new Map<string, StoreLayout>();
  for (const row of await store.rows(`SELECT stream, layout FROM ${qualified(schema, TABLES_TABLE)}`)) {
    const layout = parseStoreLayout(String(row.layout));
    if (layout) stored.set(String(row.stream), layout);
  }
  refuseOtherShape(display, stored, options.accountKey === true);
  const { specs, changes } = storeTableSpecs(store.naming, options.schemas, stored, options.accountKey === true);
  const opened = await openTables(specs, stored, changes);
  if (options.accountKey === true) await splitStates(store, schema);
  // Facts written only where they differ from the stored ones, the format's too: a store opened by every run of a schedule.
  const record = new Map([[FORMAT_KEY, String(STORE_FORMAT_VERSION)], ...facts.record]);
  for (const [key, value] of record) if (held.get(key) !== value) await store.run(putFactSql(schema), [key, value]);
  return { opened, notes: facts.notes };
}

/**
 * How many accounts' state rows one statement of splitStates inserts: a
 * DuckDB transaction keeps what each of its statements wrote in the store's
 * 64 MB of buffers until its commit (a statement per account ran out of
 * them at 150 accounts), and PostgreSQL takes at most 65,535 parameters.
 */
const SPLIT_ROWS_PER_STATEMENT = 500;

/**
 * A store of many accounts written before each account's state was a row
 * of its own (format 1): each stream's one state row becomes its accounts'
 * rows, in one transaction with the layout version that says so (a run
 * killed meanwhile finds the rows as they were, and an earlier build never
 * finds the new rows under the old version).
 */
async function splitStates(store: OpeningStore, schema: string): Promise<void> {
  const table = qualified(schema, STATE_TABLE);
  const joined = splitJoinedStates((await store.rows(`SELECT stream, state FROM ${table}`)).map((r) => [String(r.stream), String(r.state)]));
  if (joined.length === 0) return;
  const text = store.types.text;
  await store.run('BEGIN');
  try {
    for (const { key, accounts } of joined) {
      // Each account's row committed when the joined one was: a statement per batch of accounts, not one per account.
      for (let from = 0; from < accounts.length; from += SPLIT_ROWS_PER_STATEMENT) {
        const batch = accounts.slice(from, from + SPLIT_ROWS_PER_STATEMENT);
        const values = batch.map((_, i) => `(CAST($${2 * i + 2} AS ${text}), CAST($${2 * i + 3} AS ${text}))`).join(', ');
        await store.run(
          `INSERT INTO ${table} (stream, state, committed_at) SELECT v.stream, v.state, j.committed_at FROM (VALUES ${values}) AS v (stream, state), ${table} j WHERE j.stream = $1 ` +
            'ON CONFLICT (stream) DO UPDATE SET state = EXCLUDED.state, committed_at = EXCLUDED.committed_at',
          [key, ...batch.flat()],
        );
      }
      await store.run(`DELETE FROM ${table} WHERE stream = $1`, [key]);
    }
    await store.run(putFactSql(schema), [FORMAT_KEY, String(STORE_FORMAT_VERSION)]);
    await store.run('COMMIT');
  } catch (err) {
    await store.run('ROLLBACK').catch(() => {});
    throw err;
  }
}
