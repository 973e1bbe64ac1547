/**
 * The treatments a replica remembers: recorded once under the writer lock,
 * and checked again there, so a run that passed the first check before
 * another one recorded other treatments (a lock taken over) is refused too.
 * The key's fingerprint: scrypt with a random salt and its parameters; the
 * older 64-bit HMAC form still accepted, and replaced in the first save.
 */
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { ReplicaStore } from '../../src/replica/store.js';
import { HashKeyCheck, recordTreatments, runTreatments, treatmentDifferences, type RunTreatments } from '../../src/replica/treatments.js';
import { treatmentPlan } from '../../src/personal-data/treatments.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { contact, iso } from '../helpers/fake-api.js';
import { withTempDatabases } from '../helpers/suite.js';

const newDb = withTempDatabases('replica-treatments-');
const contacts = findStream('contacts') as StreamDefinition;
const KEY = 'replica-test-key-0123456789abcdef';
const OTHER_KEY = 'another-test-key-0123456789abcdef';
const hashing = (key: string): RunTreatments => runTreatments(treatmentPlan({ personal_data: 'keep', field_treatments: [{ stream: 'contacts', field: 'email', treatment: 'hash' }] }), key);
const KEPT: RunTreatments = { record: {}, key: undefined };
const SCRYPT_FORM = /^\$scrypt\$ln=14,r=8,p=2\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/;
/** The fingerprint as replicas written before the scrypt form hold it: 16 hex of an HMAC of a fixed label. */
const oldFingerprint = (key: string): string => createHmac('sha256', key).update('source-data-read hash_key fingerprint').digest('hex').slice(0, 16);

const stored = (path: string): Record<string, string> => {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return JSON.parse(String(db.prepare('SELECT treatments FROM _replica_personal_data').get()?.treatments)) as Record<string, string>;
  } finally {
    db.close();
  }
};

/** A replica as a run with `key` leaves it, its fingerprint then replaced by `fingerprint`. */
function replicaWith(fingerprint: (key: string) => string, key = KEY): string {
  const path = newDb();
  const store = new ReplicaStore(path, undefined, { treatments: hashing(key) });
  store.commit(contacts, [contact('c1', 1)], { sync_watermark: iso(1) });
  store.db.prepare('UPDATE _replica_personal_data SET treatments = ?').run(JSON.stringify({ 'contacts.email': 'hash', '(hash_key)': fingerprint(key) }));
  store.close();
  return path;
}

describe("a replica's treatments", () => {
  it('recorded once; other treatments found under the lock are refused and the record stays', () => {
    const path = newDb();
    new ReplicaStore(path, undefined, { treatments: hashing(KEY) }).close();
    const first = stored(path);
    expect(first).toEqual({ 'contacts.email': 'hash', '(hash_key)': expect.stringMatching(SCRYPT_FORM) });
    const db = new DatabaseSync(path);
    try {
      expect(() => recordTreatments(db, path, KEPT)).toThrow(/was built with other personal-data treatments than this config's \(contacts\.email: hash then, keep now; hash_key: one used then, none now\)/);
      expect(recordTreatments(db, path, hashing(KEY))).toBeUndefined();
    } finally {
      db.close();
    }
    expect(stored(path)).toEqual(first);
  });

  it('names each change, and another key without printing either', () => {
    const path = newDb();
    new ReplicaStore(path, undefined, { treatments: hashing(KEY) }).close();
    const bytes = readFileSync(path);
    expect(bytes.includes(KEY)).toBe(false);
    expect(treatmentDifferences(stored(path), hashing(OTHER_KEY))).toEqual(['hash_key (another key: its tokens would not join the stored ones)']);
    expect(treatmentDifferences({}, hashing(KEY))).toEqual(['contacts.email: keep then, hash now', 'hash_key: none used then, one now']);
    let message = '';
    try {
      new ReplicaStore(path, undefined, { treatments: hashing(OTHER_KEY) });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/another key: its tokens would not join/);
    expect(message).not.toContain(KEY);
    expect(message).not.toContain(OTHER_KEY);
    // Refused before the file was opened for writing: not a byte changed.
    expect(readFileSync(path).equals(bytes)).toBe(true);
  });
});

describe("the hash key's fingerprint", () => {
  it('scrypt with a random 16-byte salt and its parameters: two files of one key differ, both check', () => {
    const a = new HashKeyCheck(KEY).fingerprint();
    const b = new HashKeyCheck(KEY).fingerprint();
    expect(a).toMatch(SCRYPT_FORM);
    expect(b).toMatch(SCRYPT_FORM);
    expect(a).not.toBe(b);
    const check = new HashKeyCheck(KEY);
    expect([check.matches(a), check.matches(b)]).toEqual([true, true]);
    expect(new HashKeyCheck(OTHER_KEY).matches(a)).toBe(false);
    // Made once per run: asked again, the same.
    expect(check.fingerprint()).toBe(check.fingerprint());
  });

  it('one in a form it cannot read, or asking for more work than any it writes, is not checked: refused as such', () => {
    const check = new HashKeyCheck(KEY);
    const fingerprint = check.fingerprint();
    for (const odd of ['not-a-fingerprint', fingerprint.replace('ln=14', 'ln=30'), fingerprint.replace('p=2', 'p=99'), '$scrypt$ln=14,r=8,p=2$c2FsdA$aGFzaA', '0123456789ABCDEF']) {
      expect(check.matches(odd)).toBeUndefined();
      expect(treatmentDifferences({ 'contacts.email': 'hash', '(hash_key)': odd }, hashing(KEY))).toEqual([
        "hash_key (the file's fingerprint of its key is in a form this version cannot check)",
      ]);
    }
  });

  it('a replica with the old 64-bit HMAC form: the right key is accepted, and the first save replaces it by the scrypt form', () => {
    const path = replicaWith(oldFingerprint);
    expect(stored(path)['(hash_key)']).toBe(oldFingerprint(KEY));
    const store = new ReplicaStore(path, undefined, { treatments: hashing(KEY) });
    // Opening writes nothing: a run that saves nothing leaves the file as it was.
    expect(stored(path)['(hash_key)']).toBe(oldFingerprint(KEY));
    store.commit(contacts, [contact('c2', 2)], { sync_watermark: iso(2) });
    const upgraded = stored(path);
    expect(upgraded).toEqual({ 'contacts.email': 'hash', '(hash_key)': expect.stringMatching(SCRYPT_FORM) });
    store.commit(contacts, [contact('c3', 3)], { sync_watermark: iso(3) });
    store.close();
    expect(stored(path)).toEqual(upgraded);
    // The next run checks the new form.
    new ReplicaStore(path, undefined, { treatments: hashing(KEY) }).close();
    expect(() => new ReplicaStore(path, undefined, { treatments: hashing(OTHER_KEY) })).toThrow(/another key/);
  });

  it('the old form with another key is refused, the file untouched', () => {
    const path = replicaWith(oldFingerprint);
    const bytes = readFileSync(path);
    expect(() => new ReplicaStore(path, undefined, { treatments: hashing(OTHER_KEY) })).toThrow(/another key: its tokens would not join/);
    expect(readFileSync(path).equals(bytes)).toBe(true);
  });

  it('the upgrade is part of the save: a save rolled back leaves the old form, the next run upgrades it', () => {
    const path = replicaWith(oldFingerprint);
    const store = new ReplicaStore(path, undefined, { treatments: hashing(KEY) });
    store.db.exec("CREATE TRIGGER refuse BEFORE INSERT ON contacts WHEN NEW.id = 'c9' BEGIN SELECT RAISE(ABORT, 'refused'); END");
    expect(() => store.commit(contacts, [contact('c8', 8), contact('c9', 9)], { sync_watermark: iso(9) })).toThrow(/refused/);
    store.db.exec('DROP TRIGGER refuse');
    store.close();
    expect(stored(path)['(hash_key)']).toBe(oldFingerprint(KEY));
    const again = new ReplicaStore(path, undefined, { treatments: hashing(KEY) });
    again.commit(contacts, [contact('c8', 8)], { sync_watermark: iso(8) });
    again.close();
    expect(stored(path)['(hash_key)']).toMatch(SCRYPT_FORM);
  });
});
