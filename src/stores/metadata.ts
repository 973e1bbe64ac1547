/**
 * The store's own facts, kept in its metadata table beside the tables: the
 * format version of its layout (checkpoint.ts), and the run's facts
 * (store.ts, StoreFacts: the account, the personal-data treatments).
 * Checked when the store opens, under the writer lock, before anything in
 * it changes.
 */
import { ConfigError } from '../errors.js';
import { FORMAT_KEY, STORE_FORMAT_VERSION } from './checkpoint.js';
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
