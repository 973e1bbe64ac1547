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
import { bindingOf, otherAccountError } from '../engine/account.js';
import type { StateAccount } from '../engine/state.js';
import { ConfigError } from '../errors.js';
import type { StoreFacts, StoreNote } from '../stores/store.js';
import { SINGLE_ACCOUNT_ENTRY, type ReplicaAccount } from './account.js';
import { recordedForm, treatmentDifferences, type RunTreatments } from './treatments.js';

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
  const current = run.account;
  const binding = bindingOf(bound?.name, current, run.renamedFrom);
  if (bound !== undefined && binding === 'other') {
    throw otherAccountError(
      {
        subject: `The store ${display}`,
        consequence: `Replicating "${current.name}" into it would mix both accounts' rows and read "${current.name}" from the watermarks of "${bound.name}". Nothing was changed in it.`,
        remedy: `Replicate "${current.name}" into a store of its own (another --schema, or another --db), or use the API key of "${bound.name}"`,
        field: 'api_key',
      },
      bound,
      current,
      run.renamedFrom,
    );
  }
  if (bound?.name === current.name && bound.base_url === current.base_url) return;
  record.set(accountFact(run.entry), JSON.stringify({ account_name: current.name, base_url: current.base_url, bound_at: new Date().toISOString() }));
  // An entry of a store of many accounts is recorded by its first run: there is no store of entries from before the rule.
  if (bound === undefined && written && (run.entry ?? SINGLE_ACCOUNT_ENTRY) === SINGLE_ACCOUNT_ENTRY) {
    notes.push({ level: 'INFO', message: `The store ${display} recorded no account: it now belongs to account "${current.name}".` });
  } else if (binding === 'renamed' && bound !== undefined) {
    notes.push({ level: 'INFO', message: `The store ${display} belonged to account "${bound.name}", which account_renamed_from confirms is now "${current.name}": it now belongs to "${current.name}".` });
  }
}

function checkTreatments(display: string, stored: string | undefined, written: boolean, treatments: RunTreatments, record: Map<string, string>): void {
  const was = stored === undefined ? (written ? {} : undefined) : (parsedObject(stored) as Record<string, string>);
  if (was === undefined) {
    record.set(TREATMENTS_FACT, JSON.stringify(recordedForm(treatments)));
    return;
  }
  const differences = treatmentDifferences(was, treatments);
  if (differences.length === 0) {
    if (stored === undefined) record.set(TREATMENTS_FACT, JSON.stringify(recordedForm(treatments)));
    return;
  }
  throw new ConfigError(
    `The store ${display} was built with other personal-data treatments than this config's (${differences.join('; ')}). ` +
      'Its rows would mix values treated both ways. Nothing was changed in it. ' +
      'Restore the treatments it was built with, or replicate into another store (another --schema, or another --db).',
    { field: 'field_treatments' },
  );
}

/**
 * The account of one entry of a config with `accounts`, checked and
 * recorded once the entry's /v1/me answered (GroupStore.recordFacts): the
 * entry stays the service account it was first bound to.
 */
export function entryFacts(display: string, account: ReplicaAccount): StoreFacts {
  return {
    check(stored, written) {
      const record = new Map<string, string>();
      const notes: StoreNote[] = [];
      checkAccount(display, stored.get(accountFact(account.entry)), written, account, record, notes);
      return { record, notes };
    },
  };
}

/** The facts of a run: its treatments, and its account when the run knows it (undefined: not checked). */
export function replicaFacts(display: string, treatments: RunTreatments, account?: ReplicaAccount): StoreFacts {
  return {
    check(stored, written) {
      const record = new Map<string, string>();
      const notes: StoreNote[] = [];
      if (account !== undefined) checkAccount(display, stored.get(accountFact(account.entry)), written, account, record, notes);
      checkTreatments(display, stored.get(TREATMENTS_FACT), written, treatments, record);
      return { record, notes };
    },
  };
}
