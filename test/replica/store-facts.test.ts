/**
 * The replica's facts as a PostgreSQL or DuckDB store checks them at open:
 * the account (another refused, a rename confirmed, an old store bound) and
 * the treatments (others refused, a new store's recorded with the key's
 * fingerprint, never the key).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { accountFact, replicaFacts, TREATMENTS_FACT } from '../../src/replica/store-facts.js';
import { runTreatments } from '../../src/replica/treatments.js';
import { treatmentPlan } from '../../src/personal-data/treatments.js';

const acme = { name: 'Acme', base_url: 'https://api.example.com' };
const keep = runTreatments(treatmentPlan({ personal_data: 'keep', field_treatments: [] }), undefined);
const KEY = 'a-long-enough-hash-key-for-the-test-0123456789';
const hashed = runTreatments(treatmentPlan({ personal_data: 'hash', field_treatments: [], hash_key: KEY }), KEY);

const stored = (entries: Record<string, string>): Map<string, string> => new Map(Object.entries(entries));
const boundTo = (name: string): string => JSON.stringify({ account_name: name, base_url: acme.base_url, bound_at: '2026-01-01T00:00:00.000Z' });

describe('the account', () => {
  it('a new store records the account and the treatments, and says nothing', () => {
    const { record, notes } = replicaFacts('"x"', keep, { account: acme }).check(new Map(), false);
    expect(JSON.parse(record.get(accountFact()) ?? '{}')).toMatchObject({ account_name: 'Acme', base_url: acme.base_url });
    expect(JSON.parse(record.get(TREATMENTS_FACT) ?? '{}')).toEqual(keep.record);
    expect(notes).toEqual([]);
  });

  it('the same account records nothing again', () => {
    const { record } = replicaFacts('"x"', keep, { account: acme }).check(stored({ [accountFact()]: boundTo('Acme'), [TREATMENTS_FACT]: JSON.stringify(keep.record) }), true);
    expect([...record.keys()]).toEqual([]);
  });

  it('another account is refused, naming both', () => {
    const check = (): unknown => replicaFacts('"pg"', keep, { account: acme }).check(stored({ [accountFact()]: boundTo('Other Co') }), true);
    expect(check).toThrow(ConfigError);
    expect(check).toThrow(/"Other Co".*"Acme"|"Acme".*"Other Co"/s);
  });

  it('a rename account_renamed_from confirms binds the new name, with a note', () => {
    const { record, notes } = replicaFacts('"pg"', keep, { account: acme, renamedFrom: 'Acme Old' }).check(stored({ [accountFact()]: boundTo('Acme Old') }), true);
    expect(JSON.parse(record.get(accountFact()) ?? '{}')).toMatchObject({ account_name: 'Acme' });
    expect(notes.map((n) => n.message).join()).toMatch(/belonged to account "Acme Old".*now belongs to "Acme"/);
  });

  it('a store with tables but no account is bound to this one, with a note', () => {
    const { record, notes } = replicaFacts('"pg"', keep, { account: acme }).check(new Map(), true);
    expect(record.has(accountFact())).toBe(true);
    expect(notes.map((n) => n.message).join()).toMatch(/recorded no account: it now belongs to account "Acme"/);
  });
});

describe('the treatments', () => {
  it('hashing: a fingerprint of the key is recorded, never the key', () => {
    const { record } = replicaFacts('"x"', hashed).check(new Map(), false);
    const text = record.get(TREATMENTS_FACT) ?? '';
    expect(text).toMatch(/\$scrypt\$/);
    expect(text).not.toContain(KEY);
  });

  it('other treatments than the store was built with are refused, naming the change', () => {
    const built = replicaFacts('"x"', hashed).check(new Map(), false).record;
    expect(() => replicaFacts('"x"', keep).check(built, true)).toThrow(/other personal-data treatments.*hash then, keep now/);
    const otherKey = runTreatments(treatmentPlan({ personal_data: 'hash', field_treatments: [], hash_key: `${KEY}-other` }), `${KEY}-other`);
    expect(() => replicaFacts('"x"', otherKey).check(built, true)).toThrow(/another key/);
    expect(() => replicaFacts('"x"', hashed).check(built, true)).not.toThrow();
  });

  it('a store with tables but no treatments recorded counts as all kept', () => {
    expect(() => replicaFacts('"x"', hashed).check(new Map(), true)).toThrow(/keep then, hash now/);
    expect(replicaFacts('"x"', keep).check(new Map(), true).record.has(TREATMENTS_FACT)).toBe(true);
  });
});
