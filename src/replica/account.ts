/**
 * The account a replica belongs to, kept in the file (engine/account.ts has
 * the rule): `_replica_account`, one row per account of the config, keyed by
 * `entry` (the name of an `accounts` entry; '' for a config with `api_key`),
 * with the name /v1/me gave (`account_name`), the address it was read from
 * (`base_url`) and when it was bound (`bound_at`).
 *
 * A run whose key reads another account is refused before anything in the
 * file changes: the row is read on a read-only connection, before the file is
 * opened for writing. A replica written before the rule (no row) is bound by
 * the run that opens it; a rename that account_renamed_from confirms binds
 * the new name.
 */
import type { DatabaseSync } from 'node:sqlite';
import { bindingOf, otherAccountError, type RunAccount } from '../engine/account.js';
import type { StateAccount } from '../engine/state.js';
import { TABLES_TABLE, otherShapeError } from '../stores/checkpoint.js';
import { peekReadOnly, storedLayouts, tableExists, writtenBefore } from './database.js';

const ACCOUNT_TABLE = '_replica_account';

/** The entry of a config with `api_key` (no `accounts` list). */
export const SINGLE_ACCOUNT_ENTRY = '';

/** The account a run reads, as the replica checks it. */
export interface ReplicaAccount {
  readonly account: RunAccount;
  /** The config's account_renamed_from. */
  readonly renamedFrom?: string | undefined;
  readonly entry?: string;
}

/** The account recorded for `entry`; undefined when none is (a new file, or one written before replicas recorded theirs). */
function storedAccount(db: DatabaseSync, entry: string): StateAccount | undefined {
  if (!tableExists(db, ACCOUNT_TABLE)) return undefined;
  const row = db.prepare(`SELECT account_name, base_url FROM ${ACCOUNT_TABLE} WHERE entry = ?`).get(entry);
  return row === undefined ? undefined : { name: String(row.account_name), base_url: String(row.base_url) };
}

/** How the account check names a store (`The replica "r.db"`), where else an account goes, and (`unboundWhy`) why it recorded none. */
type AccountWords = { readonly subject: string; readonly elsewhere: string; readonly unboundWhy?: string };

/**
 * The account check of every store (the SQLite file, the PostgreSQL and
 * DuckDB stores' facts): throws the ConfigError that refuses a store bound
 * to another account; otherwise whether to record the run's account (a new
 * store, one written before the rule, a confirmed rename, a new address) and
 * what to say then. `written`: whether the store held rows already.
 */
export function checkBinding(words: AccountWords, stored: StateAccount | undefined, run: ReplicaAccount, written: () => boolean): { record: boolean; note?: string | undefined } {
  const current = run.account;
  const binding = bindingOf(stored?.name, current, run.renamedFrom);
  if (stored !== undefined && binding === 'other') {
    // An entry of a store of many accounts: its rows and state are kept under its name, beside the other entries'.
    const entry = run.entry === undefined || run.entry === SINGLE_ACCOUNT_ENTRY ? undefined : run.entry;
    throw otherAccountError(
      {
        subject: words.subject,
        consequence: `Replicating "${current.name}" into it would mix both accounts' rows and read "${current.name}" from the watermarks of "${stored.name}". Nothing was changed in it.`,
        remedy:
          entry === undefined
            ? `Replicate "${current.name}" into ${words.elsewhere}, or use the API key of "${stored.name}"`
            : `Give the accounts entry "${entry}" back the API key of "${stored.name}", or replicate "${current.name}" under an entry of a new name ` +
              `(read from start_date; the rows and state of "${entry}" stay: docs/many-accounts.md, "Renaming an entry")`,
        field: 'api_key',
        entry,
      },
      stored,
      current,
      run.renamedFrom,
    );
  }
  if (stored?.name === current.name && stored.base_url === current.base_url) return { record: false };
  if (stored === undefined) {
    // An entry of a store of many accounts is recorded by its first run: there is no store of entries from before the rule.
    const bound = (run.entry ?? SINGLE_ACCOUNT_ENTRY) === SINGLE_ACCOUNT_ENTRY && written();
    return { record: true, note: bound ? `${words.subject} recorded no account${words.unboundWhy ?? ''}: it now belongs to account "${current.name}".` : undefined };
  }
  const renamed = `${words.subject} belonged to account "${stored.name}", which account_renamed_from confirms is now "${current.name}": it now belongs to "${current.name}".`;
  if (binding === 'blank') {
    return { record: true, note: `${words.subject} belonged to an account of no name (${JSON.stringify(stored.name)}), which cannot be confirmed as renamed: it now belongs to "${current.name}".` };
  }
  return { record: true, note: binding === 'renamed' ? renamed : undefined };
}

const replicaWords = (path: string): AccountWords => ({ subject: `The replica "${path}"`, elsewhere: 'a file of its own (--db with another path)', unboundWhy: ' (it was written before replicas recorded theirs)' });

/**
 * Refuse a replica of another account: a ConfigError naming both. Read on a
 * read-only connection, before anything opens the file for writing, so a
 * refused file is left byte for byte as it was.
 */
export function refuseOtherAccount(path: string, run: ReplicaAccount): void {
  checkBinding(replicaWords(path), peekReadOnly(path, (db) => storedAccount(db, run.entry ?? SINGLE_ACCOUNT_ENTRY)), run, () => false);
}

/**
 * Record the account under the writer lock, read again there (another run
 * may have bound the file since refuseOtherAccount looked). Written only when
 * it changes (a new file, one written before the rule, a confirmed rename, a
 * new address): an ordinary run adds no page to the WAL. Returns what to log
 * when a file that held rows is bound to an account name for the first time.
 */
export function bindAccount(db: DatabaseSync, path: string, run: ReplicaAccount): string | undefined {
  const entry = run.entry ?? SINGLE_ACCOUNT_ENTRY;
  const { record, note } = checkBinding(replicaWords(path), storedAccount(db, entry), run, () => writtenBefore(db));
  if (!record) return undefined;
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${ACCOUNT_TABLE} (entry TEXT PRIMARY KEY NOT NULL, account_name TEXT NOT NULL, base_url TEXT NOT NULL, bound_at TEXT NOT NULL)`,
  );
  db.prepare(
    `INSERT INTO ${ACCOUNT_TABLE} (entry, account_name, base_url, bound_at) VALUES (?, ?, ?, ?) ` +
      'ON CONFLICT (entry) DO UPDATE SET account_name = excluded.account_name, base_url = excluded.base_url, bound_at = excluded.bound_at',
  ).run(entry, run.account.name, run.account.base_url, new Date().toISOString());
  return note;
}

/**
 * Refuse a replica built for the other kind of config, before anything
 * opens it for writing: one built with `api_key` (tables keyed by id) given
 * a config with `accounts` (tables keyed by account and id), or the
 * reverse. Its rows cannot be told apart by account, so it is left byte for
 * byte as it was and the user is told to replicate into a new file.
 */
export function refuseOtherShape(path: string, manyAccounts: boolean): void {
  const keyed = peekReadOnly(path, (db) => {
    if (!tableExists(db, TABLES_TABLE)) return undefined;
    const layouts = [...storedLayouts(db).values()];
    return layouts.length === 0 ? undefined : layouts.some((l) => l.accountKey === true);
  });
  if (keyed === undefined || keyed === manyAccounts) return;
  throw otherShapeError({ store: `The replica "${path}"`, elsewhere: 'a new file (--db with another path)', old: "the old file's rows" }, keyed);
}
