/**
 * The treatments a replica remembers: recorded once under the writer lock,
 * and checked again there, so a run that passed the first check before
 * another one recorded other treatments (a lock taken over) is refused too.
 */
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { ReplicaStore } from '../../src/faces/replica/store.js';
import { recordTreatments } from '../../src/faces/replica/treatments.js';
import { withTempDatabases } from '../helpers/suite.js';

const newDb = withTempDatabases('replica-treatments-');
const HASHED = { 'contacts.email': 'hash', '(hash_key)': '0123456789abcdef' };

const stored = (path: string): unknown => {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return JSON.parse(String(db.prepare('SELECT treatments FROM _replica_personal_data').get()?.treatments));
  } finally {
    db.close();
  }
};

describe("a replica's treatments", () => {
  it('recorded once; other treatments found under the lock are refused and the record stays', () => {
    const path = newDb();
    new ReplicaStore(path, undefined, { treatments: HASHED }).close();
    expect(stored(path)).toEqual(HASHED);
    const db = new DatabaseSync(path);
    try {
      expect(() => recordTreatments(db, path, {})).toThrow(/was built with other personal-data treatments than this config's \(contacts\.email: hash then, keep now; hash_key: one used then, none now\)/);
      recordTreatments(db, path, HASHED);
    } finally {
      db.close();
    }
    expect(stored(path)).toEqual(HASHED);
  });
});
