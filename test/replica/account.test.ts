/**
 * The account a replica belongs to (src/replica/account.ts): recorded
 * when the file is first written, a file of another account refused before
 * the file changes (byte for byte, no side file, no lock row), a file written
 * before the rule bound by the run that opens it, a confirmed rename rebinding
 * it, and the check made again under the writer lock.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { runAccount } from '../../src/engine/account.js';
import { bindAccount, checkBinding } from '../../src/replica/account.js';
import { ReplicaStore } from '../../src/replica/store.js';
import { ConfigError } from '../../src/errors.js';
import { STREAMS, findStream, type StreamDefinition } from '../../src/streams.js';
import { contact, iso } from '../helpers/fake-api.js';
import { readDatabase } from '../helpers/sqlite.js';
import { withTempDatabases } from '../helpers/suite.js';
import { thrown } from '../helpers/thrown.js';

const newDb = withTempDatabases('replica-account-');
const contacts = findStream('contacts') as StreamDefinition;
const URL = 'https://api.example.com';
const acme = { account: runAccount('Acme', URL) };
const globex = { account: runAccount('Globex', URL) };

const bound = (path: string): unknown[] =>
  readDatabase(path, (db) => db.prepare('SELECT entry, account_name, base_url FROM _replica_account').all().map((r) => ({ ...r })));
const sha256 = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

/** A replica of `account` holding one contact, closed (at rest: one file). */
function replicaOf(path: string, account: typeof acme | undefined): void {
  const store = new ReplicaStore(path, STREAMS, { lock: true, ...(account ? { account } : {}) });
  store.commit(contacts, [contact('c1', 1)], { sync_watermark: iso(1) });
  store.close();
}

describe("a replica's account", () => {
  it('is recorded by the run that creates the file, without a note', () => {
    const path = newDb();
    const store = new ReplicaStore(path, STREAMS, { lock: true, account: acme });
    expect(store.accountNote).toBeUndefined();
    store.close();
    expect(bound(path)).toEqual([{ entry: '', account_name: 'Acme', base_url: URL }]);
  });

  it("another account's run is refused naming both, before the file changes: same bytes, no -wal, -shm or -journal, no lock row", () => {
    const path = newDb();
    replicaOf(path, acme);
    const before = sha256(path);
    const error = thrown(() => new ReplicaStore(path, STREAMS, { lock: true, account: globex, treatments: { record: {}, key: undefined } }));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).fields).toEqual(['api_key']);
    expect((error as Error).message).toBe(
      `The replica "${path}" belongs to account "Acme", but this config's API key reads account "Globex". ` +
        'Replicating "Globex" into it would mix both accounts\' rows and read "Globex" from the watermarks of "Acme". Nothing was changed in it. ' +
        'Replicate "Globex" into a file of its own (--db with another path), or use the API key of "Acme"; ' +
        'if "Acme" is this same account, renamed "Globex" in Data-Read, confirm the rename with "account_renamed_from": "Acme" in the config.',
    );
    expect(sha256(path)).toBe(before);
    for (const side of ['-wal', '-shm', '-journal']) expect(existsSync(`${path}${side}`), side).toBe(false);
    expect(readDatabase(path, (db) => db.prepare('SELECT count(*) AS n FROM _replica_lock').get()?.n)).toBe(0);
  });

  it('of an accounts entry: says to put the key back or replicate under a new entry, and to confirm a rename inside the entry', () => {
    const words = { subject: 'The store s', elsewhere: 'another store' };
    const message = (thrown(() => checkBinding(words, { name: 'Acme', base_url: URL }, { ...globex, entry: 'acme-br' }, () => true)) as Error).message;
    expect(message).toBe(
      'The store s belongs to account "Acme", but this config\'s API key reads account "Globex". ' +
        'Replicating "Globex" into it would mix both accounts\' rows and read "Globex" from the watermarks of "Acme". Nothing was changed in it. ' +
        'Give the accounts entry "acme-br" back the API key of "Acme", or replicate "Globex" under an entry of a new name ' +
        '(read from start_date; the rows and state of "acme-br" stay: docs/many-accounts.md, "Renaming an entry"); ' +
        'if "Acme" is this same account, renamed "Globex" in Data-Read, confirm the rename with "account_renamed_from": "Acme" in the accounts entry "acme-br".',
    );
  });

  it('the address it was read from is named when it differs, and a new address of the same account is recorded', () => {
    const path = newDb();
    replicaOf(path, { account: runAccount('Acme', 'https://old.example.com') });
    expect(() => new ReplicaStore(path, STREAMS, { account: globex })).toThrow(/belongs to account "Acme" \(read from https:\/\/old\.example\.com\), but/);
    new ReplicaStore(path, STREAMS, { account: acme }).close();
    expect(bound(path)).toEqual([{ entry: '', account_name: 'Acme', base_url: URL }]);
  });

  it('a file written before replicas recorded their account is bound to the account of the run that opens it, with a note', () => {
    const path = newDb();
    replicaOf(path, undefined);
    const store = new ReplicaStore(path, STREAMS, { lock: true, account: globex });
    expect(store.accountNote).toBe(`The replica "${path}" recorded no account (it was written before replicas recorded theirs): it now belongs to account "Globex".`);
    store.close();
    expect(bound(path)).toEqual([{ entry: '', account_name: 'Globex', base_url: URL }]);
    expect(() => new ReplicaStore(path, STREAMS, { account: acme })).toThrow(/belongs to account "Globex"/);
  });

  it('a rename confirmed by account_renamed_from binds the new name; another former name is still refused', () => {
    const path = newDb();
    replicaOf(path, acme);
    const renamed = { account: runAccount('Acme Global', URL) };
    expect(() => new ReplicaStore(path, STREAMS, { account: { ...renamed, renamedFrom: 'Acne' } })).toThrow(/\(account_renamed_from is "Acne"\)\.$/);
    const store = new ReplicaStore(path, STREAMS, { lock: true, account: { ...renamed, renamedFrom: 'Acme' } });
    expect(store.accountNote).toBe(`The replica "${path}" belonged to account "Acme", which account_renamed_from confirms is now "Acme Global": it now belongs to "Acme Global".`);
    store.close();
    expect(bound(path)).toEqual([{ entry: '', account_name: 'Acme Global', base_url: URL }]);
    // The next run needs nothing more, and writes nothing when nothing changed.
    const again = new ReplicaStore(path, STREAMS, { account: renamed });
    expect(again.accountNote).toBeUndefined();
    again.close();
  });

  it('a replica of an account whose name was empty or spaces (no account_renamed_from can name it) binds the new name, with a note', () => {
    for (const former of ['', '  ']) {
      const path = newDb();
      replicaOf(path, { account: runAccount(former, URL) });
      const store = new ReplicaStore(path, STREAMS, { lock: true, account: globex });
      expect(store.accountNote).toBe(`The replica "${path}" belonged to an account of no name (${JSON.stringify(former)}), which cannot be confirmed as renamed: it now belongs to "Globex".`);
      store.close();
      expect(bound(path)).toEqual([{ entry: '', account_name: 'Globex', base_url: URL }]);
    }
  });

  it('is checked again under the writer lock: a binding recorded since the first look is refused, and stays', () => {
    const path = newDb();
    replicaOf(path, acme);
    const db = new DatabaseSync(path);
    try {
      expect(() => bindAccount(db, path, globex)).toThrow(ConfigError);
      expect(bindAccount(db, path, acme)).toBeUndefined();
    } finally {
      db.close();
    }
    expect(bound(path)).toEqual([{ entry: '', account_name: 'Acme', base_url: URL }]);
  });
});
