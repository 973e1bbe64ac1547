/**
 * Checkpoints without savepoints: when nothing in the file can refuse a row
 * (refusers.ts), a checkpoint is written without a savepoint of its own; a
 * row that would be refused (no primary key) is found before anything of
 * the checkpoint is written, and anything else that fails takes the
 * transaction with it and stops the writer, loudly.
 */
import { describe, expect, it } from 'vitest';
import { withTempDatabases } from '../helpers/suite.js';
import { TableWriter } from '../../src/replica/table-writer.js';
import { replicaRecords, replicaStates } from '../../src/replica/records.js';
import { ReplicaStore } from '../../src/replica/store.js';
import { ReplicaWriter } from '../../src/replica/writer.js';
import { contact, conversation, iso } from '../helpers/fake-api.js';
import { checkpointsOf } from '../helpers/checkpoints.js';
import { thrown } from '../helpers/thrown.js';

const newDb = withTempDatabases('replica-refusers-');

function replica() {
  const path = newDb();
  const store = new ReplicaStore(path);
  return { path, store, checkpoint: checkpointsOf(store) };
}

describe('what can refuse a row', () => {
  it('nothing in a file replicate made: checkpoints are written without savepoints', () => {
    const { store } = replica();
    const writer = new TableWriter(store.db, store.tables);
    expect(writer.refusers).toEqual([]);
    expect(writer.isolatesCheckpoints).toBe(false);
    store.close();
  });

  it('a plain index, a nullable column (even one named "check") refuse nothing; triggers, constraints and unique, partial or expression indexes can', () => {
    const { store } = replica();
    const harmless = [
      'CREATE INDEX by_email ON contacts (email)',
      'ALTER TABLE contacts ADD COLUMN "check" TEXT',
      "ALTER TABLE conversations ADD COLUMN note TEXT DEFAULT 'CHECK (x)'",
    ];
    for (const sql of harmless) store.db.exec(sql);
    expect(new TableWriter(store.db, store.tables).refusers).toEqual([]);
    const cases: [string, RegExp][] = [
      ["CREATE TRIGGER no_x BEFORE INSERT ON contacts WHEN NEW.name = 'x' BEGIN SELECT RAISE(ABORT, 'no'); END", /^trigger "no_x" on "contacts"$/],
      ["CREATE TRIGGER no_y BEFORE UPDATE ON CONTACTS BEGIN SELECT RAISE(ABORT, 'no'); END", /^trigger "no_y" on "contacts"$/],
      ['ALTER TABLE contacts ADD COLUMN score2 INTEGER CHECK (score2 > 0)', /^a CHECK constraint of "contacts"$/],
      ['ALTER TABLE contacts ADD COLUMN owner TEXT REFERENCES contacts (id)', /^a foreign key of "contacts"$/],
      ['CREATE UNIQUE INDEX one_email ON contacts (email)', /^index "one_email" on "contacts"$/],
      ["CREATE INDEX won ON contacts (email) WHERE won_at IS NOT NULL", /^index "won" on "contacts"$/],
      ['CREATE INDEX lower_email ON contacts (lower(email))', /^index "lower_email" on "contacts"$/],
      ["ALTER TABLE contacts ADD COLUMN upper_name TEXT GENERATED ALWAYS AS (upper(name)) VIRTUAL", /^generated column "contacts"."upper_name"$/],
      ["CREATE TRIGGER no_state BEFORE INSERT ON _replica_state BEGIN SELECT RAISE(ABORT, 'no'); END", /^trigger "no_state" on "_replica_state"$/],
    ];
    for (const [sql, said] of cases) {
      store.db.exec('SAVEPOINT probe');
      store.db.exec(sql);
      const writer = new TableWriter(store.db, store.tables);
      expect(writer.refusers, sql).toEqual([expect.stringMatching(said)]);
      expect(writer.isolatesCheckpoints).toBe(true);
      store.db.exec('ROLLBACK TO probe');
      store.db.exec('RELEASE probe');
    }
    store.close();
  });
});

describe('checkpoints without savepoints', () => {
  it('a checkpoint with a row without primary key is refused before anything of it is written; the rest of the group stays', () => {
    const { path, store, checkpoint } = replica();
    const writer = new TableWriter(store.db, store.tables);
    expect(writer.isolatesCheckpoints).toBe(false);
    writer.write(checkpoint('contacts', [contact('c1', 1)], 1));
    const keyless = checkpoint('contacts', [contact('c2', 2), contact('c3', 2)], 2);
    const rows = keyless.rows.map((row, i) => (i === 1 ? row.map((v, at) => (at === 0 ? null : v)) : row));
    expect(() => writer.write({ ...keyless, rows })).toThrow(/^record 2 of the checkpoint has no id, so nothing of that checkpoint is written$/);
    expect(() => writer.write(checkpoint('contacts', [contact('c4', 3)], 3))).toThrow(/an earlier checkpoint of contacts could not be written \(record 2 of the checkpoint has no id\)/);
    writer.write(checkpoint('conversations', [conversation('v1', 4)], 4));
    writer.commit();
    store.close();
    expect(replicaRecords(path).get('contacts')?.map((r) => r.id)).toEqual(['c1']);
    expect(replicaStates(path).get('contacts')).toEqual({ resume: { cursor: 'contacts#1', sync_watermark: iso(1) } });
    expect(replicaRecords(path).get('conversations')?.map((r) => r.id)).toEqual(['v1']);
  });

  it('a row refused by something the check cannot see (a TEMP trigger of the connection) takes the whole group with it, and nothing more is written', async () => {
    const { path, store, checkpoint } = replica();
    const writer = new ReplicaWriter(store, { walThread: null, commitEveryMs: 3_600_000, shortGroupMs: 3_600_000 });
    store.db.exec("CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.contacts WHEN NEW.id = 'bad' BEGIN SELECT RAISE(ABORT, 'refused'); END");
    writer.write(checkpoint('contacts', [contact('c1', 1)], 1));
    writer.flush();
    writer.write(checkpoint('conversations', [conversation('v1', 2)], 2));
    expect(() => writer.write(checkpoint('contacts', [contact('c2', 3), contact('bad', 3)], 3))).toThrow(/^Cannot write the replica database ".*r\.db": refused\.$/);
    expect(() => writer.write(checkpoint('conversations', [conversation('v2', 4)], 4))).toThrow(/the transaction holding the last checkpoints was lost: refused\.$/);
    await expect(writer.close()).rejects.toThrow(/the transaction holding the last checkpoints was lost: refused/);
    store.close();
    expect(replicaRecords(path).get('contacts')?.map((r) => r.id)).toEqual(['c1']);
    expect(replicaRecords(path).get('conversations')).toEqual([]);
  });

  it('a write that fails halfway (the disk is full) rolls the group back and stops the writer; the run is told (transient: a full disk), and the committed checkpoints are intact', async () => {
    const { path, store, checkpoint } = replica();
    const writer = new ReplicaWriter(store, { walThread: null, commitEveryMs: 3_600_000, shortGroupMs: 3_600_000 });
    writer.write(checkpoint('contacts', [contact('c1', 1)], 1));
    writer.flush();
    writer.write(checkpoint('conversations', [conversation('v1', 2)], 2));
    // Room for a few more pages only: a checkpoint of large rows runs out of it halfway.
    const pages = Number(store.db.prepare('PRAGMA page_count').get()?.page_count);
    store.db.exec(`PRAGMA max_page_count = ${pages + 3}`);
    const large = Array.from({ length: 40 }, (_, i) => contact(`big${i}`, 3, { note: 'x'.repeat(2000) }));
    // A full disk is told as such, transient (75: run again once there is room), not as a bug (70).
    const full = /^The disk holding the replica database ".*r\.db" is full \(or the file reached a size limit\): database or disk is full\. What was committed before is kept\. Free some space there, then run replicate again/;
    expect(thrown(() => writer.write(checkpoint('contacts', large, 3)))).toMatchObject({ failureType: 'transient_error', message: expect.stringMatching(full) });
    // The group's other checkpoints went with the transaction: nothing more is written, and closing says so.
    expect(thrown(() => writer.write(checkpoint('conversations', [conversation('v2', 4)], 4)))).toMatchObject({ failureType: 'transient_error', message: expect.stringMatching(full) });
    await expect(writer.close()).rejects.toThrow(full);
    store.close();
    expect(replicaRecords(path).get('contacts')?.map((r) => r.id)).toEqual(['c1']);
    expect(replicaRecords(path).get('conversations')).toEqual([]);
    expect(replicaStates(path).get('contacts')).toEqual({ resume: { cursor: 'contacts#1', sync_watermark: iso(1) } });
    expect(replicaStates(path).has('conversations')).toBe(false);
  });
});
