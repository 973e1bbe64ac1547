import { describe, expect, it } from 'vitest';
import { withTempDatabases } from '../helpers/suite.js';
import { rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { DatabaseSync } from 'node:sqlite';
import { ReplicaStore } from '../../src/replica/store.js';
import { replicaRecords, replicaStates } from '../../src/replica/records.js';
import { layoutFor } from '../../src/replica/layout.js';
import { insertSql, openForWrite } from '../../src/replica/database.js';
import { ensureTable } from '../../src/replica/migrate.js';
import { recordToRow } from '../../src/replica/rows.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { contact, iso } from '../helpers/fake-api.js';

const contacts = findStream('contacts') as StreamDefinition;
const newDb = withTempDatabases('replica-store-');

describe('ReplicaStore', () => {
  it('a reader holding a read transaction on the file at rest when a run starts: transient (75) naming it, the file unchanged; then it opens', () => {
    const path = newDb();
    new ReplicaStore(path).close();
    // A dashboard's connection in the middle of a read: the file at rest is in rollback-journal mode, so turning WAL on needs it gone.
    const reader = new DatabaseSync(path, { readOnly: true });
    try {
      reader.exec('BEGIN');
      reader.prepare('SELECT count(*) FROM _replica_state').get();
      let thrown: unknown;
      try {
        new ReplicaStore(path).close();
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toMatchObject({ failureType: 'transient_error', message: expect.stringMatching(/another process is reading it.*run again/i) });
      reader.exec('COMMIT');
    } finally {
      reader.close();
    }
    const after = new DatabaseSync(path, { readOnly: true });
    expect(after.prepare('PRAGMA journal_mode').get()?.journal_mode).toBe('delete');
    after.close();
    new ReplicaStore(path).close();
  });

  it('uses WAL and keeps the state row in the same transaction as the rows', () => {
    const path = newDb();
    const store = new ReplicaStore(path);
    expect(store.db.prepare('PRAGMA journal_mode').get()?.journal_mode).toBe('wal');
    store.commit(contacts, [contact('c1', 1)], { resume: { cursor: 'k1', sync_watermark: iso(9) } });
    // A commit that fails half-way leaves neither its rows nor its state.
    store.db.exec('CREATE TRIGGER fail_c2 BEFORE INSERT ON contacts WHEN NEW.id = \'c3\' BEGIN SELECT RAISE(ABORT, \'disk on fire\'); END');
    expect(() => store.commit(contacts, [contact('c2', 2), contact('c3', 3)], { sync_watermark: iso(9) })).toThrow(/Cannot write the replica database.*disk on fire/);
    store.close();
    expect(replicaRecords(path).get('contacts')?.map((r) => r.id)).toEqual(['c1']);
    expect(replicaStates(path).get('contacts')).toEqual({ resume: { cursor: 'k1', sync_watermark: iso(9) } });
  });

  it('refuses a saved state that is not JSON as the stores do, naming the stream and the file (78)', () => {
    const path = newDb();
    const first = new ReplicaStore(path);
    first.commit(contacts, [contact('c1', 1)], { sync_watermark: iso(9) });
    first.db.exec("UPDATE _replica_state SET state = '{\"sync_watermark\": ' WHERE stream = 'contacts'");
    first.close();
    const store = new ReplicaStore(path);
    try {
      expect(() => store.loadStates()).toThrow(expect.objectContaining({ failureType: 'config_error', message: expect.stringMatching(new RegExp(`^The state of stream "contacts" in "${path}" is not JSON: replicate into another`)) }));
    } finally {
      store.close();
    }
  });

  it('rewrites a table written with an older column layout without changing any record', () => {
    const path = newDb();
    const records = [contact('c1', 1, { email: 'a@b.c', temperature: 'hot', custom: 1 }), contact('c2', 2, { email: null })];
    // An older version that knew neither email nor temperature wrote these rows.
    const current = layoutFor(contacts);
    const older = { ...current, columns: current.columns.filter((c) => c.field !== 'email' && c.field !== 'temperature') };
    const db = openForWrite(path);
    ensureTable(db, older, undefined);
    for (const r of records) db.prepare(insertSql(older)).run(...recordToRow(older, r), iso(0));
    expect(db.prepare('SELECT _extra FROM contacts WHERE id = ?').get('c1')?._extra).toBe('{"temperature":"hot","email":"a@b.c","custom":1}');
    db.close();

    const store = new ReplicaStore(path);
    expect(store.migrated).toEqual(['contacts']);
    expect(store.db.prepare('SELECT email, temperature, _extra FROM contacts WHERE id = ?').get('c1')).toEqual({ email: 'a@b.c', temperature: 'hot', _extra: '{"custom":1}' });
    store.close();
    expect(replicaRecords(path).get('contacts')).toStrictEqual(records);
    const again = new ReplicaStore(path);
    expect(again.migrated).toEqual([]);
    again.close();
  });

  it('moves a WITHOUT ROWID table (0.1.0) to a rowid table and adds the columns it lacked, in one migration', () => {
    const path = newDb();
    const records = [
      contact('c1', 1, { email: 'a@b.c', temperature: 'hot', custom: [1, { x: null }] }),
      contact('c2', 2, { email: null, temperature: 7 }), // a temperature of another type than declared stays in _extra
      contact('c3', 3),
    ];
    delete records[2]?.temperature;
    const current = layoutFor(contacts);
    const older = { ...current, storage: 'without_rowid' as const, columns: current.columns.filter((c) => c.field !== 'email' && c.field !== 'temperature') };
    const db = openForWrite(path);
    ensureTable(db, older, undefined);
    for (const r of records) db.prepare(insertSql(older)).run(...recordToRow(older, r), iso(0));
    db.close();
    expect(replicaRecords(path).get('contacts')).toStrictEqual(records);

    const store = new ReplicaStore(path);
    expect(store.migrations).toEqual([
      {
        stream: 'contacts',
        change: 'moved to a rowid table, faster to write; new columns email, temperature',
        columns: [
          { stream: 'contacts', column: 'email', change: 'added', from: null, to: 'TEXT' },
          { stream: 'contacts', column: 'temperature', change: 'added', from: null, to: 'TEXT' },
        ],
      },
    ]);
    expect(store.db.prepare("SELECT sql FROM sqlite_schema WHERE name = 'contacts'").get()?.sql).not.toMatch(/WITHOUT ROWID/);
    const rows = store.db.prepare('SELECT id, email, temperature, _extra, _absent, _synced_at FROM contacts ORDER BY id').all();
    expect(rows.map((r) => [r.id, r.email, r.temperature, r._extra === null ? null : JSON.parse(String(r._extra)), r._synced_at])).toEqual([
      ['c1', 'a@b.c', 'hot', { custom: [1, { x: null }] }, iso(0)],
      ['c2', null, null, { temperature: 7 }, iso(0)],
      ['c3', null, null, null, iso(0)],
    ]);
    expect(JSON.parse(String(rows[2]?._absent))).toContain('temperature');
    store.close();
    expect(replicaRecords(path).get('contacts')).toStrictEqual(records);
  });

  it('rewrites a table record by record when a column changes type, without changing any record', () => {
    const path = newDb();
    const records = [contact('c1', 1, { qualification_score: 42 }), contact('c2', 2, { qualification_score: 'n/a' })];
    const current = layoutFor(contacts);
    const older = { ...current, columns: current.columns.map((c) => (c.field === 'qualification_score' ? { ...c, kind: 'json' as const } : c)) };
    const db = openForWrite(path);
    ensureTable(db, older, undefined);
    for (const r of records) db.prepare(insertSql(older)).run(...recordToRow(older, r), iso(0));
    db.close();

    const store = new ReplicaStore(path);
    expect(store.migrations).toEqual([
      {
        stream: 'contacts',
        change: 'rewritten record by record to the current column layout',
        columns: [{ stream: 'contacts', column: 'qualification_score', change: 'retyped', from: 'TEXT', to: 'INTEGER' }],
      },
    ]);
    expect(store.db.prepare('SELECT id, qualification_score AS q, typeof(qualification_score) AS t FROM contacts ORDER BY id').all()).toEqual([
      { id: 'c1', q: 42, t: 'integer' },
      { id: 'c2', q: null, t: 'null' },
    ]);
    expect(store.db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE name LIKE '_replica_migrating_%'").get()?.n).toBe(0);
    store.close();
    expect(replicaRecords(path).get('contacts')).toStrictEqual(records);
  });

  it("rewrites a table a dashboard's view reads (a retyped column, a 0.1.0 table): the view kept, reading the new table", () => {
    for (const older of ['retyped', 'without_rowid'] as const) {
      const path = newDb();
      const records = [contact('c1', 1, { qualification_score: 42, temperature: 'hot' }), contact('c2', 2, { qualification_score: 7, temperature: 'cold' })];
      const current = layoutFor(contacts);
      const layout =
        older === 'retyped'
          ? { ...current, columns: current.columns.map((c) => (c.field === 'qualification_score' ? { ...c, kind: 'json' as const } : c)) }
          : { ...current, storage: 'without_rowid' as const };
      const db = openForWrite(path);
      ensureTable(db, layout, undefined);
      for (const r of records) db.prepare(insertSql(layout)).run(...recordToRow(layout, r), iso(0));
      db.exec("CREATE VIEW hot_contacts AS SELECT id, qualification_score FROM contacts WHERE temperature = 'hot'");
      db.close();

      const store = new ReplicaStore(path);
      expect(store.migrations.map((m) => m.stream), older).toEqual(['contacts']);
      expect(store.db.prepare('SELECT id, qualification_score AS q FROM hot_contacts').all(), older).toEqual([{ id: 'c1', q: 42 }]);
      store.close();
      expect(replicaRecords(path).get('contacts'), older).toStrictEqual(records);
    }
  });

  it("rewrites a table with a dashboard's index and someone's trigger on it: both made again on the new table", () => {
    const path = newDb();
    const records = [contact('c1', 1, { qualification_score: 42, temperature: 'hot' }), contact('c2', 2, { qualification_score: 7, temperature: 'cold' })];
    const current = layoutFor(contacts);
    const older = { ...current, columns: current.columns.map((c) => (c.field === 'qualification_score' ? { ...c, kind: 'json' as const } : c)) };
    const db = openForWrite(path);
    ensureTable(db, older, undefined);
    for (const r of records) db.prepare(insertSql(older)).run(...recordToRow(older, r), iso(0));
    db.exec('CREATE INDEX contacts_by_temperature ON contacts (temperature)');
    db.exec('CREATE TABLE audit (id TEXT)');
    db.exec('CREATE TRIGGER contacts_audit AFTER UPDATE ON contacts BEGIN INSERT INTO audit VALUES (new.id); END');
    db.close();

    const store = new ReplicaStore(path);
    expect(store.migrations.map((m) => m.stream)).toEqual(['contacts']);
    const made = store.db.prepare("SELECT type, name, tbl_name AS t FROM sqlite_schema WHERE type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY name").all();
    expect(made.map((r) => ({ ...r }))).toContainEqual({ type: 'index', name: 'contacts_by_temperature', t: 'contacts' });
    expect(made.map((r) => ({ ...r }))).toContainEqual({ type: 'trigger', name: 'contacts_audit', t: 'contacts' });
    expect(store.db.prepare("EXPLAIN QUERY PLAN SELECT id FROM contacts WHERE temperature = 'hot'").all().map((r) => String(r.detail)).join()).toContain('contacts_by_temperature');
    store.close();
    expect(replicaRecords(path).get('contacts')).toStrictEqual(records);
  });

  it('lets one replicate run write a file at a time, and takes over the lock of a killed one', () => {
    const path = newDb();
    const first = new ReplicaStore(path, undefined, { lock: true });
    first.close(); // released
    const held = new ReplicaStore(path);
    const now = new Date().toISOString();
    held.db.prepare('INSERT INTO _replica_lock (id, pid, host, started_at, renewed_at) VALUES (1, ?, ?, ?, ?)').run(process.ppid, hostname(), now, now);
    held.close();
    expect(() => new ReplicaStore(path, undefined, { lock: true })).toThrow(
      new RegExp(`Another replicate run is writing ".*r\\.db" \\(pid ${process.ppid} on .*, started .*, last renewed .*\\)\\. Run again once it has finished`),
    );
    const dead = new ReplicaStore(path);
    dead.db.prepare('UPDATE _replica_lock SET pid = ?').run(2 ** 22 + 12345); // above any pid_max: no such process
    dead.close();
    const next = new ReplicaStore(path, undefined, { lock: true });
    expect(next.db.prepare('SELECT pid FROM _replica_lock').get()?.pid).toBe(process.pid);
    next.close();
    const after = new ReplicaStore(path);
    expect(after.db.prepare('SELECT count(*) AS n FROM _replica_lock').get()?.n).toBe(0);
    after.close();
  });

  it('makes again a stream\'s table dropped by hand and forgets its state: the stream is read again from the start, not left without its rows', () => {
    const path = newDb();
    const store = new ReplicaStore(path);
    store.commit(contacts, [contact('c1', 1), contact('c2', 2)], { sync_watermark: iso(9) });
    store.close();
    const user = new DatabaseSync(path);
    user.exec('DROP TABLE contacts');
    user.close();
    // Before: "no such table: contacts" at every run, with the table's rows gone for good.
    const again = new ReplicaStore(path);
    expect(again.remade).toEqual(['contacts']);
    expect(again.migrated).toEqual([]);
    again.close();
    // Its state gone with its rows, the next sync reads contacts from start_date.
    expect(replicaStates(path).has('contacts')).toBe(false);
    expect(replicaRecords(path).get('contacts')).toEqual([]);
    const reopened = new ReplicaStore(path);
    expect(reopened.remade).toEqual([]);
    reopened.commit(contacts, [contact('c1', 1), contact('c2', 2)], { sync_watermark: iso(10) });
    reopened.close();
    expect(replicaRecords(path).get('contacts')?.map((r) => r.id)).toEqual(['c1', 'c2']);
  });

  it('refuses a database that has a table of the same name it did not create', () => {
    const path = newDb();
    const db = new DatabaseSync(path);
    db.exec('CREATE TABLE contacts (x)');
    db.close();
    expect(() => new ReplicaStore(path)).toThrow(/already has a table "contacts" that the replica did not create/);
  });

  it('names the file when it is not a database', () => {
    const path = newDb();
    rmSync(path, { force: true });
    writeFileSync(path, 'this is not sqlite, just text that is long enough to be read as a header................');
    expect(() => new ReplicaStore(path)).toThrow(/cannot be used as a replica database|Cannot open the replica database/);
  });
});
