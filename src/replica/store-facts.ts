/**
 * The replica's promises about whom and how a PostgreSQL or DuckDB store
 * is written for, as the store checks them when it opens (stores/store.ts,
 * StoreFacts), under its writer lock and before anything in it changes:
 * the account it belongs to (engine/account.ts has the rule; the SQLite
 * file keeps it in account.ts) and the personal-data treatments it is
 * built with (treatments.ts). A store of another account, or built with
 * other treatments, is refused (78) as it was; a new store records both.
 */
import { isObject } from '../exact-json.js';
import type { StateAccount } from '../engine/state.js';
import type { StoreFacts, StoreNote } from '../stores/store.js';
import { SINGLE_ACCOUNT_ENTRY, checkBinding, type ReplicaAccount } from './account.js';
import { recordedForm, refuseIfOther, type RunTreatments } from './treatments.js';

/** The store's fact that holds the treatments it is built with (JSON, with the key's fingerprint when something is hashed). */
export const TREATMENTS_FACT = 'personal_data';

/** The store's fact that holds the account of an entry of the config (JSON: account_name, base_url, bound_at). */
export function accountFact(entry: string = SINGLE_ACCOUNT_ENTRY): string {
  return entry === SINGLE_ACCOUNT_ENTRY ? 'account' : `account:${entry}`;
}

function parsedObject(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (isObject(parsed)) return parsed;
  } catch {
    // refused below as what it is: not a record of this connector's
  }
  return {};
}

function checkAccount(display: string, stored: string | undefined, written: boolean, run: ReplicaAccount, record: Map<string, string>, notes: StoreNote[]): void {
  const fields = parsedObject(stored);
  const bound: StateAccount | undefined =
    fields === undefined || typeof fields.account_name !== 'string'
      ? undefined
      : { name: fields.account_name, ...(typeof fields.base_url === 'string' ? { base_url: fields.base_url } : {}) };
  const { record: changed, note } = checkBinding(
    { subject: `The store ${display}`, elsewhere: 'a store of its own (another --schema, or another --db)' },
    bound,
    run,
    () => written,
  );
  if (changed) record.set(accountFact(run.entry), JSON.stringify({ account_name: run.account.name, base_url: run.account.base_url, bound_at: new Date().toISOString() }));
  if (note !== undefined) notes.push({ level: 'INFO', message: note });
}

function checkTreatments(display: string, stored: string | undefined, written: boolean, treatments: RunTreatments, record: Map<string, string>): void {
  const was = stored === undefined ? (written ? {} : undefined) : (parsedObject(stored) as Record<string, string>);
  refuseIfOther({ subject: `The store ${display}`, elsewhere: 'another store (another --schema, or another --db)' }, was, treatments);
  if (stored === undefined) record.set(TREATMENTS_FACT, JSON.stringify(recordedForm(treatments)));
}

/** The facts of a run: its treatments (none: not checked), and its account when the run knows it (undefined: not checked). */
export function replicaFacts(display: string, treatments: RunTreatments | undefined, account?: ReplicaAccount): StoreFacts {
  return {
    check(stored, written) {
      const record = new Map<string, string>();
      const notes: StoreNote[] = [];
      if (account !== undefined) checkAccount(display, stored.get(accountFact(account.entry)), written, account, record, notes);
      if (treatments !== undefined) checkTreatments(display, stored.get(TREATMENTS_FACT), written, treatments, record);
      return { record, notes };
    },
  };
}

/**
 * The account of one entry of a config with `accounts`, checked and
 * recorded once the entry's /v1/me answered (GroupStore.recordFacts): the
 * entry stays the service account it was first bound to.
 */
export const entryFacts = (display: string, account: ReplicaAccount): StoreFacts => replicaFacts(display, undefined, account);
