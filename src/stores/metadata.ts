/**
 * The store's own facts, kept in its metadata table beside the tables
 * (checkpoint.ts names the keys): the format version of its layout, the
 * personal-data treatments it was built with, the account it was built
 * from. Checked when the store opens, under the writer lock, before
 * anything in it changes.
 */
import { ConfigError } from '../errors.js';
import { treatmentDifferences } from '../personal-data/treatments.js';
import { STORE_FORMAT_VERSION } from './checkpoint.js';

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

/**
 * The refusal of a store built with other personal-data treatments than this
 * run's: rows treated both ways would sit side by side unnoticed (raw
 * e-mails beside tokens, or tokens of two keys that never join). `stored`:
 * the store's treatments (JSON text); undefined for a new store, and a
 * store with tables but none recorded counts as all kept.
 */
export function refuseOtherTreatments(display: string, stored: string | undefined, treatments: Readonly<Record<string, string>>, hasTables: boolean): void {
  let was: Record<string, string> | undefined;
  if (stored !== undefined) {
    const parsed: unknown = JSON.parse(stored);
    was = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, string>) : {};
  } else if (hasTables) was = {};
  if (was === undefined) return;
  const differences = treatmentDifferences(was, treatments);
  if (differences.length === 0) return;
  throw new ConfigError(
    `The store ${display} was built with other personal-data treatments than this config's (${differences.join('; ')}). ` +
      'Its rows would mix values treated both ways. Nothing was changed in it. ' +
      'Restore the treatments it was built with, or replicate into another schema or file (--schema, --db).',
    { field: 'field_treatments' },
  );
}
