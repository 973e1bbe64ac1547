/**
 * A replica written by the current release (0.1.0: WITHOUT ROWID tables) is
 * migrated in place by the next run, exactly: the file is made with 0.1.0's
 * schema verbatim (fixtures/replica-0.1.0-schema.sql) and rows in its
 * encoding, from the emulator's dump; after the upgrade it reads back equal
 * to the dump, and the next run continues from the states it kept.
 */
import { describe, expect, it } from 'vitest';
import { withEmulatorAccount } from '../../helpers/suite.js';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { insertSql } from '../../../src/replica/database.js';
import { parseLayout } from '../../../src/replica/layout.js';
import { recordToRow } from '../../../src/replica/rows.js';
import { ReplicaStore } from '../../../src/replica/store.js';
import { LISTS, changeRound, dumpLists, replicaAsDump, replicate, type Account } from '../../helpers/emulator-runs.js';
import { readDatabase } from '../../helpers/sqlite.js';

const SCHEMA_010 = readFileSync(join(import.meta.dirname, 'fixtures', 'replica-0.1.0-schema.sql'), 'utf8');
const SYNCED_AT = '2026-01-01T00:00:00.000Z';

/** A replica file as 0.1.0 writes it: its schema, every record of `lists` in its row encoding, and `states`. */
function writeReplica010(path: string, lists: Record<string, unknown[]>, states: readonly { stream: string; state: string }[]): void {
  const db = new DatabaseSync(path);
  try {
    db.exec('PRAGMA journal_mode = WAL');
    db.exec(SCHEMA_010);
    db.exec('BEGIN');
    for (const row of db.prepare('SELECT stream, layout FROM _replica_tables').all()) {
      const layout = parseLayout(String(row.layout));
      if (!layout) throw new Error(`fixture layout of ${String(row.stream)} does not parse`);
      expect(layout.storage).toBe('without_rowid');
      const insert = db.prepare(insertSql(layout));
      for (const record of lists[layout.stream] ?? []) insert.run(...recordToRow(layout, record as Record<string, unknown>), SYNCED_AT);
    }
    const save = db.prepare('INSERT INTO _replica_state (stream, state, committed_at) VALUES (?, ?, ?)');
    for (const { stream, state } of states) save.run(stream, state, SYNCED_AT);
    db.exec('COMMIT');
  } finally {
    db.close();
  }
}

function inspect(path: string) {
  return readDatabase(path, (db) => {
    return {
      integrity: db.prepare('PRAGMA integrity_check').get()?.integrity_check,
      withoutRowid: db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE '%WITHOUT ROWID%'").all().map((r) => r.name),
      storages: db.prepare('SELECT stream, layout FROM _replica_tables ORDER BY stream').all().map((r) => [r.stream, parseLayout(String(r.layout))?.storage]),
      indexes: db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL").all().map((r) => r.name),
      states: db.prepare('SELECT stream, state FROM _replica_state ORDER BY stream').all().map((r) => ({ stream: String(r.stream), state: String(r.state) })),
      leftovers: db.prepare("SELECT name FROM sqlite_schema WHERE name LIKE '_replica_migrating_%'").all(),
    };
  });
}

describe('a replica written by 0.1.0', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('replica-migration-', { contacts: 300, seed: 31 }, (s) => ({ account, dir } = s));

  it('is migrated in place on the next run, exactly, and that run continues from its saved state', { timeout: 120_000 }, async () => {
    const config = account.config(dir);
    // The states a 0.1.0 run leaves (states do not depend on the layout): those of a complete run now.
    const scratch = join(dir, 'scratch.db');
    expect((await replicate(config, scratch)).code).toBe(0);
    const states = inspect(scratch).states;
    expect(states.map((s) => s.stream)).toEqual(['contacts', 'conversations', 'deletions', 'pipeline_stages', 'stage_events']);

    const dump = dumpLists(account.dump());
    const old = join(dir, 'old.db');
    writeReplica010(old, dump, states);
    const before = inspect(old);
    expect(before.withoutRowid).toEqual([...LISTS]);
    expect(replicaAsDump(old)).toStrictEqual(dump);

    // Opening migrates every table, in place; every record reads back the same, the states are kept.
    const copy = join(dir, 'old-copy.db');
    copyFileSync(old, copy);
    const store = new ReplicaStore(copy);
    expect(store.migrated).toEqual([...LISTS]);
    expect(store.migrations.every((m) => m.change.startsWith('moved to a rowid table'))).toBe(true);
    store.close();
    const after = inspect(copy);
    expect(after.integrity).toBe('ok');
    expect(after.withoutRowid).toEqual([]);
    expect(after.storages.every(([, storage]) => storage === 'rowid')).toBe(true);
    expect(after.indexes).toEqual(['_replica_deletions_object']);
    expect(after.leftovers).toEqual([]);
    expect(after.states).toEqual(states);
    expect(replicaAsDump(copy)).toStrictEqual(dump);
    // A second opening changes nothing.
    const again = new ReplicaStore(copy);
    expect(again.migrated).toEqual([]);
    again.close();

    // The run itself: it says what it migrated, reads incrementally from the kept state, and ends equal to the service.
    changeRound(account);
    const run = await replicate(config, old);
    expect(run.code, run.stderr).toBe(0);
    for (const list of LISTS) expect(run.stderr).toContain(`${list}: table migrated in place (moved to a rowid table`);
    expect(run.stderr).toContain('continuing from its saved state');
    expect(inspect(old).integrity).toBe('ok');
    expect(replicaAsDump(old)).toStrictEqual(dumpLists(account.dump()));
  });
});
