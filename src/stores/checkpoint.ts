/**
 * What the PostgreSQL and DuckDB stores write, the same for both, with the
 * SQLite replica's meaning (src/replica/table-writer.ts): one engine
 * checkpoint of one stream (its records, the state that covers them, and
 * how they change the table) is written whole or not at all, in one
 * transaction with the stream's state row; the bookkeeping tables sit in the
 * same schema as the stream tables.
 */
import { ConfigError, type FailureType } from '../errors.js';
import type { JsonSchema, StreamSchemas } from '../schemas/json-schema.js';
import { STREAMS, findDeletionLog, type StreamDefinition } from '../streams.js';
import { evolveLayout, qualified, storeLayoutFor, type ColumnChange, type ColumnNaming, type StoreLayout } from './columns.js';
import type { CommitResult } from './store.js';
import type { Data } from './values.js';

export type { StoreCheckpoint } from './store.js';

/** The layout each stream table was written with (and the drift a run saw): `stream`, `layout` (JSON). */
export const TABLES_TABLE = '_replica_tables';
/**
 * Each stream's state, committed with the rows it covers: `stream`, `state` (JSON text), `committed_at`. In a store of
 * many accounts a row per stream and account (`stream` is `stream/account`, partKey) holds that account's state alone,
 * written with that account's checkpoints: a commit writes the states of its own accounts, however many the store
 * keeps (joinSavedStates reads them back as one state per stream).
 */
export const STATE_TABLE = '_replica_state';
/** The ids a full read returned so far (only while one is under way): `stream` (`stream/account` in a store of many accounts), `id`. */
export const FULL_READ_TABLE = '_replica_full_read';

/** Whose marks a row of FULL_READ_TABLE is: the stream's read, or in a store of many accounts one account's read of it. */
export const fullReadKey = (stream: string, account: string | undefined): string => (account === undefined ? stream : `${stream}/${account}`);
/** The store's own facts: `key`, `value` (FORMAT_KEY, and the run's facts: store.ts, StoreFacts). */
export const METADATA_TABLE = '_replica_metadata';

/**
 * The statements that make the bookkeeping tables where they are missing
 * (PostgreSQL, DuckDB), in `types`' text and instant types; the schema is
 * made first, by each store (its makeSchema).
 */
export function bookkeepingSql(schema: string, types: { readonly text: string; readonly timestamp: string }): string[] {
  const { text, timestamp } = types;
  return [
    `CREATE TABLE IF NOT EXISTS ${qualified(schema, TABLES_TABLE)} (stream ${text} PRIMARY KEY, layout ${text} NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS ${qualified(schema, STATE_TABLE)} (stream ${text} PRIMARY KEY, state ${text} NOT NULL, committed_at ${timestamp} NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS ${qualified(schema, METADATA_TABLE)} (key ${text} PRIMARY KEY, value ${text} NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS ${qualified(schema, FULL_READ_TABLE)} (stream ${text} NOT NULL, id ${text} NOT NULL, PRIMARY KEY (stream, id))`,
  ];
}

/**
 * Forget a stream's saved state and the marks of a full read under way (its own, or in a store of many accounts each
 * account's: the rows keyed `stream/account`), through `run` (PostgreSQL, DuckDB): its table, or a column of it, was
 * dropped by hand and made again. The state covers rows the table no longer holds: going on from it would leave them
 * out for good, so the stream is read again from the start.
 */
export async function forgetStream(run: (sql: string, params: string[]) => Promise<unknown>, schema: string, stream: string): Promise<void> {
  for (const table of [STATE_TABLE, FULL_READ_TABLE]) await run(`DELETE FROM ${qualified(schema, table)} WHERE stream = $1 OR left(stream, length($1) + 1) = $1 || '/'`, [stream]);
}

/** The version of the tables' layout; a store written by a later version is refused. 2: a state row per stream and account. */
export const FORMAT_KEY = 'format_version';
export const STORE_FORMAT_VERSION = 2;

/** A stream's table, as a writer needs to know it, laid out as `L` (a store's layout, or the SQLite replica's). */
export interface TableSpec<L> {
  readonly layout: L;
  /** The object type of deletion records that delete rows of this table ('contact'); null when none do. */
  readonly deletedAs: string | null;
  /** When this table is the deletion log: the fields its records name the deleted objects by. */
  readonly deletionLog: { readonly objectTypeField: string; readonly objectIdField: string; readonly deletedAtField: string } | null;
}

export type StoreTableSpec = TableSpec<StoreLayout>;

/** The tables of `streams` and of the deletion log (always kept), each laid out by `layoutOf` (every store: SQLite's too). */
export function tableSpecs<L>(streams: readonly StreamDefinition[], layoutOf: (stream: StreamDefinition) => L): TableSpec<L>[] {
  const log = findDeletionLog();
  if (!log) throw new Error('the streams table has no deletion log');
  const all = streams.some((s) => s.name === log.name) ? streams : [...streams, log];
  return all.map((stream) => ({
    layout: layoutOf(stream),
    deletedAs: stream.tombstoneObjectType,
    deletionLog:
      stream.name === log.name ? { objectTypeField: log.deletionLog.objectTypeField, objectIdField: log.deletionLog.objectIdField, deletedAtField: log.cursorField } : null,
  }));
}

/** What a committed checkpoint did, with what the PostgreSQL and DuckDB stores add. */
export interface StoreCommitResult extends CommitResult {
  /** Fields whose values did not fit their columns in this checkpoint (kept in `_extra`; their columns change at the next open). */
  readonly drift: readonly string[];
}

/**
 * The tables of every stream, the deletion log's included: each stream's
 * columns from its schema (`schemas`, else the built-in one), evolved from
 * the layout stored (columns only added or widened), with the changes that
 * makes.
 */
export function storeTableSpecs(
  naming: ColumnNaming,
  schemas: StreamSchemas | undefined,
  stored: ReadonlyMap<string, StoreLayout>,
  accountKey: boolean,
): { specs: StoreTableSpec[]; changes: ColumnChange[] } {
  const changes: ColumnChange[] = [];
  const specs = tableSpecs(STREAMS, (stream) => {
    const schema: JsonSchema | undefined = schemas?.get(stream.name);
    const evolved = evolveLayout(storeLayoutFor(stream, naming, schema, accountKey), stored.get(stream.name), naming);
    changes.push(...evolved.changes);
    return evolved.layout;
  });
  return { specs, changes };
}

/**
 * Refuse a store built for the other kind of config, before anything in it
 * changes: one built with `api_key` (tables keyed by id) given a config
 * with `accounts` (tables keyed by account and id), or the reverse. Its rows
 * cannot be told apart by account.
 */
export function refuseOtherShape(display: string, stored: ReadonlyMap<string, StoreLayout>, accountKey: boolean): void {
  const layouts = [...stored.values()];
  if (layouts.length === 0) return;
  const keyed = layouts.some((l) => l.accountKey === true);
  if (keyed === accountKey) return;
  throw otherShapeError({ store: `The store ${display}`, elsewhere: 'another store (another --schema, or another --db)', old: "the old store's rows" }, keyed);
}

/** How the refusal of a store built for the other kind of config names the store, where else to replicate, and its rows. */
interface ShapeWords {
  /** "The store X", "The replica "FILE"". */
  readonly store: string;
  /** "another store (...)", "a new file (...)". */
  readonly elsewhere: string;
  /** "the old store's rows". */
  readonly old: string;
}

/** The refusal of a store whose tables are keyed by account (`keyed`) given a config of one api_key, or the reverse (every store: SQLite's too). */
export function otherShapeError(words: ShapeWords, keyed: boolean): ConfigError {
  return new ConfigError(
    keyed
      ? `${words.store} was built from a config with "accounts" (its tables are keyed by account and id), but this config gives one api_key. ` +
          `Nothing was changed in it. Replicate this account into ${words.elsewhere}, or use the config with "accounts" (this key as one of its entries).`
      : `${words.store} was built from a config with one api_key (its tables are keyed by id alone), but this config lists "accounts": ` +
          `its rows cannot be told apart by account. Nothing was changed in it. Replicate the accounts into ${words.elsewhere}; ${words.old} stay readable as they are.`,
    { field: keyed ? 'api_key' : 'accounts' },
  );
}

/** Deletion records whose object type names none of `known`: [the type as JSON text, or `(missing)`; the record's id]. */
export function unknownDeletionTypes(records: readonly Data[], spec: TableSpec<{ readonly primaryKey: string }>, known: ReadonlySet<string>): [string, string][] {
  const fields = spec.deletionLog;
  if (!fields) return [];
  const out: [string, string][] = [];
  for (const record of records) {
    const type = record[fields.objectTypeField];
    if (typeof type === 'string' && known.has(type)) continue;
    out.push([type === undefined ? '(missing)' : JSON.stringify(type), String(record[spec.layout.primaryKey])]);
  }
  return out;
}

/**
 * The records of a checkpoint with one per primary key (the last one wins,
 * as upserts in order would) and their keys as text, in the same order; or
 * the position of the first without a key.
 */
export function lastPerKey(records: readonly Data[], key: string): { records: Data[]; keys: string[]; keyless: number } {
  const byKey = new Map<string, Data>();
  for (let i = 0; i < records.length; i++) {
    const record = records[i] as Data;
    const id = record[key];
    if (id === null || id === undefined) return { records: [], keys: [], keyless: i };
    const k = typeof id === 'string' ? id : JSON.stringify(id);
    if (byKey.has(k)) byKey.delete(k);
    byKey.set(k, record);
  }
  return { records: [...byKey.values()], keys: [...byKey.keys()], keyless: -1 };
}

/** A stream's part of one account (a store of many accounts), as a key. */
export const partKey = (stream: string, account: string | undefined): string => (account === undefined ? stream : `${stream}/${account}`);

/** A part as messages name it. */
export const partName = (stream: string, account: string | undefined): string => (account === undefined ? stream : `${stream} of account "${account}"`);

/**
 * The parts whose checkpoints could not be written, and why: their later
 * checkpoints are refused, so that a state never moves past lost rows. A
 * stream's failure (no account) stops every account's part of it; an
 * account's stops its part alone, its state row kept as last committed.
 */
export class PartFailures {
  readonly #causes = new Map<string, { readonly cause: string; readonly failure: FailureType }>();

  #entry(stream: string, account: string | undefined): { readonly cause: string; readonly failure: FailureType } | undefined {
    return this.#causes.get(partKey(stream, account)) ?? this.#causes.get(stream);
  }

  /** Why the part stopped (its own failure, or its stream's); undefined while it goes on. */
  of(stream: string, account: string | undefined): string | undefined {
    return this.#entry(stream, account)?.cause;
  }

  /** The kind of the failure that stopped the part, for its later checkpoints' refusals (the run's exit status). */
  failureOf(stream: string, account: string | undefined): FailureType {
    return this.#entry(stream, account)?.failure ?? 'system_error';
  }

  add(stream: string, account: string | undefined, cause: string, failure: FailureType = 'system_error'): void {
    this.#causes.set(partKey(stream, account), { cause, failure });
  }
}

/**
 * Each stream's saved state (JSON text) from the rows of STATE_TABLE: in a
 * store of many accounts, the rows of its accounts joined as one state of
 * many accounts, `{"accounts": {"<entry>": <its state>, ...}}`.
 */
export function joinSavedStates(rows: Iterable<readonly [key: string, state: string]>): Map<string, string> {
  const out = new Map<string, string>();
  const accounts = new Map<string, string[]>();
  for (const [key, state] of rows) {
    const at = key.indexOf('/');
    if (at < 0) {
      out.set(key, state);
      continue;
    }
    const stream = key.slice(0, at);
    let members = accounts.get(stream);
    if (members === undefined) accounts.set(stream, (members = []));
    // The row's text as it is: one that is not JSON makes the stream's state fail to load, naming the stream.
    members.push(`${JSON.stringify(key.slice(at + 1))}:${state}`);
  }
  for (const [stream, members] of accounts) out.set(stream, `{"accounts":{${members.join(',')}}}`);
  return out;
}

/**
 * The rows of STATE_TABLE that a store of many accounts written by an
 * earlier version holds (one per stream, every account's state in it), with
 * the rows of each account that replace them. A row that is no state of
 * many accounts is left as it is (loading names one that is not JSON).
 */
export function splitJoinedStates(rows: Iterable<readonly [key: string, state: string]>): { key: string; accounts: [key: string, state: string][] }[] {
  const out: { key: string; accounts: [string, string][] }[] = [];
  for (const [key, state] of rows) {
    if (key.includes('/')) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(state);
    } catch {
      continue;
    }
    const accounts = (parsed as { accounts?: unknown } | null)?.accounts;
    if (typeof accounts !== 'object' || accounts === null || Array.isArray(accounts)) continue;
    out.push({ key, accounts: Object.entries(accounts).map(([account, own]) => [partKey(key, account), JSON.stringify(own)]) });
  }
  return out;
}
