/**
 * The personal-data treatments a replica was built with, kept in the file
 * (`_replica_personal_data`: one row, the treatments as JSON, with a
 * fingerprint of the hash key, never the key). A run with other treatments is
 * refused before anything in the file changes: rows written under the old
 * ones would otherwise sit beside new ones unnoticed (raw e-mails beside
 * tokens, or tokens of two keys that never join).
 */
import type { DatabaseSync } from 'node:sqlite';
import { ConfigError } from '../../errors.js';
import { treatmentDifferences } from '../../personal-data/treatments.js';
import { peekReadOnly, tableExists, writtenBefore } from './database.js';

const TREATMENTS_TABLE = '_replica_personal_data';

/** The treatments stored in the file; undefined for a new file; `{}` (all kept) for one written before they were recorded. */
function storedTreatments(db: DatabaseSync): Record<string, string> | undefined {
  if (tableExists(db, TREATMENTS_TABLE)) {
    const row = db.prepare(`SELECT treatments FROM ${TREATMENTS_TABLE} WHERE id = 1`).get();
    if (row !== undefined) {
      const parsed: unknown = JSON.parse(String(row.treatments));
      if (typeof parsed === 'object' && parsed !== null) return parsed as Record<string, string>;
    }
  }
  return writtenBefore(db) ? {} : undefined;
}

/**
 * Refuse a file built with other treatments: a ConfigError naming the change.
 * The file is read on a read-only connection, before anything opens it for
 * writing, so a refused file is left byte for byte as it was.
 */
export function refuseOtherTreatments(path: string, treatments: Readonly<Record<string, string>>): void {
  refuseIfOther(path, peekReadOnly(path, storedTreatments), treatments);
}

/** The refusal of a file whose `stored` treatments differ from this run's (none when they are the same, or the file is new). */
function refuseIfOther(path: string, stored: Readonly<Record<string, string>> | undefined, treatments: Readonly<Record<string, string>>): void {
  if (stored === undefined) return;
  const differences = treatmentDifferences(stored, treatments);
  if (differences.length === 0) return;
  throw new ConfigError(
    `The replica "${path}" was built with other personal-data treatments than this config's (${differences.join('; ')}). ` +
      'Its rows would mix values treated both ways. Nothing was changed in it. ' +
      'Restore the treatments it was built with, or replicate into a new file (--db with another path, or delete this one to start over).',
    { field: 'field_treatments' },
  );
}

/**
 * Record the treatments a file is written with, under the writer lock. Read
 * again there: another run may have written the file since
 * refuseOtherTreatments looked (a lock taken over from it), and treatments
 * once recorded are never replaced.
 */
export function recordTreatments(db: DatabaseSync, path: string, treatments: Readonly<Record<string, string>>): void {
  refuseIfOther(path, storedTreatments(db), treatments);
  db.exec(`CREATE TABLE IF NOT EXISTS ${TREATMENTS_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), treatments TEXT NOT NULL)`);
  // Written when new only: an ordinary run adds no page to the WAL.
  db.prepare(`INSERT INTO ${TREATMENTS_TABLE} (id, treatments) VALUES (1, ?) ON CONFLICT (id) DO NOTHING`).run(JSON.stringify(treatments));
}
