/**
 * The replica's columns follow the service's description: pipeline_stages'
 * fields are typed columns a dashboard joins on; a field the service adds
 * becomes a typed column at the next replicate, values exact; a file written
 * without them (pinned, or an older release) is migrated in place, the values
 * it kept in _extra moved into the new columns; a run that cannot read the
 * description (or is pinned) keeps every column it has.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withAccount, withTempDir } from '../../helpers/suite.js';
import type { ExtraField } from 'data-read-emulator';
import { dumpLists, replicaAsDump, replicate, type Account } from '../../helpers/emulator-runs.js';
import { readDatabase } from '../../helpers/sqlite.js';

const LIFETIME: ExtraField = { list: 'contacts', name: 'lifetime_value', type: 'integer' };
const SENTIMENT: ExtraField = { list: 'conversations', name: 'sentiment', type: 'number' };

/** A record as JSON text with its keys in order, so exact numbers (raw JSON) compare by their digits, whatever the field order. */
const canonical = (record: unknown): string =>
  JSON.stringify(Object.fromEntries(Object.entries(record as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
const asText = (lists: Record<string, unknown[]>): Record<string, string[]> =>
  Object.fromEntries(Object.entries(lists).map(([k, v]) => [k, v.map(canonical)]));

function columns(db: string, table: string): Record<string, string> {
  return readDatabase(db, (handle) => Object.fromEntries(handle.prepare(`SELECT name, type FROM pragma_table_info('${table}')`).all().map((r) => [String(r.name), String(r.type)])));
}

function query(db: string, sql: string): Record<string, unknown>[] {
  return readDatabase(db, (handle) => {
    const statement = handle.prepare(sql);
    statement.setReadBigInts(true);
    return statement.all() as Record<string, unknown>[];
  });
}

let dir: string;
withTempDir('replica-columns-', (d) => (dir = d));

describe('replicate: columns from the service\'s description', () => {
  let account: Account;
  withAccount({ contacts: 150, seed: 31 }, (a) => (account = a));

  it('pipeline_stages gets typed columns, so a dashboard joins a contact\'s stage by id', async () => {
    const db = join(dir, 'stages.db');
    const run = await replicate(account.config(dir), db);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/Stream schemas: the built-in ones merged with the service's description/);
    expect(columns(db, 'pipeline_stages')).toMatchObject({ id: 'TEXT', key: 'TEXT', name: 'TEXT', pipeline_id: 'TEXT', position: 'INTEGER', outcome: 'TEXT' });
    expect(query(db, 'SELECT count(*) AS n FROM pipeline_stages WHERE _extra IS NOT NULL')).toEqual([{ n: 0n }]);
    const joined = query(db, 'SELECT c.id, s.name FROM contacts c JOIN pipeline_stages s ON s.id = c.current_stage_id');
    expect(joined.length).toBe(account.dump().contacts.filter((c) => c.current_stage_id !== null).length);
    expect(joined.every((r) => typeof r.name === 'string' && r.name !== '')).toBe(true);
    expect(asText(replicaAsDump(db))).toEqual(asText(dumpLists(account.dump())));
  });

  it('a field the service adds: a typed column after the next replicate, values exact; rows not read again stay without it', async () => {
    const db = join(dir, 'added.db');
    expect((await replicate(account.config(dir), db)).code).toBe(0);
    account.emulator.control.addExtraField(LIFETIME);
    account.emulator.control.addExtraField(SENTIMENT);
    account.mutate({ op: 'update_contacts', count: 60 });
    account.mutate({ op: 'update_conversations', count: 60 });
    const run = await replicate(account.config(dir), db);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/contacts: table migrated in place \(new column lifetime_value\); no record changed/);
    expect(columns(db, 'contacts')).toMatchObject({ lifetime_value: 'INTEGER' });
    expect(columns(db, 'conversations')).toMatchObject({ sentiment: 'REAL' });

    const dump = account.dump();
    const served = new Map(dump.contacts.map((c) => [c.id, JSON.stringify((c as Record<string, unknown>).lifetime_value)]));
    const rows = query(db, 'SELECT id, lifetime_value, _extra, _absent FROM contacts');
    const records = new Map((replicaAsDump(db).contacts as Record<string, unknown>[]).map((r) => [String(r.id), r]));
    let readAgain = 0;
    let beyond53 = 0;
    for (const row of rows) {
      const id = String(row.id);
      const record = records.get(id) ?? {};
      if (Object.hasOwn(record, 'lifetime_value')) {
        // Read again since the field appeared: the column holds the value, digit for digit.
        readAgain++;
        expect(JSON.stringify(record.lifetime_value), id).toBe(served.get(id));
        expect(row.lifetime_value === null ? 'null' : String(row.lifetime_value)).toBe(served.get(id));
        if (typeof row.lifetime_value === 'bigint' && row.lifetime_value > 2n ** 53n) beyond53++;
      } else {
        // Written before the field appeared: NULL, and the record says it did not carry the field.
        expect(row.lifetime_value).toBeNull();
        expect(String(row._absent)).toContain('lifetime_value');
      }
    }
    expect(readAgain).toBeGreaterThanOrEqual(60);
    expect(beyond53).toBeGreaterThan(0);
    // Every number fills the REAL column (for SQL); a decimal a double does not write back as sent (12.50) also stays in _extra, exact.
    const sentiments = query(db, "SELECT sentiment, _extra -> '$.sentiment' AS text FROM conversations WHERE sentiment IS NOT NULL OR _extra -> '$.sentiment' IS NOT NULL");
    expect(sentiments.some((r) => /^\d+\.50$/.test(String(r.text)) && r.sentiment === Number(r.text))).toBe(true);
    expect(sentiments.some((r) => typeof r.sentiment === 'number' && r.text === null)).toBe(true);
    expect(sentiments.every((r) => typeof r.sentiment === 'number')).toBe(true);

    // A new file holds every record exactly as the service serves it now.
    const fresh = join(dir, 'fresh.db');
    expect((await replicate(account.config(dir), fresh)).code).toBe(0);
    expect(asText(replicaAsDump(fresh))).toEqual(asText(dumpLists(account.dump())));
  });
});

describe('replicate: a file written without the service\'s columns is migrated in place', () => {
  let account: Account;
  withAccount({ contacts: 120, seed: 37 }, (a) => {
    account = a;
    a.emulator.control.addExtraField(LIFETIME);
  });

  it('pinned first (fields in _extra), then the description: ADD COLUMN, values moved out of _extra, records unchanged', async () => {
    const db = join(dir, 'pinned-then-described.db');
    const pinned = await replicate(account.config(dir, { use_service_schema: false }), db);
    expect(pinned.code, pinned.stderr).toBe(0);
    expect(pinned.stderr).not.toMatch(/Stream schemas/);
    expect(columns(db, 'pipeline_stages')).not.toHaveProperty('name');
    expect(columns(db, 'contacts')).not.toHaveProperty('lifetime_value');
    expect(query(db, "SELECT count(*) AS n FROM pipeline_stages WHERE _extra ->> '$.name' IS NOT NULL")).toEqual([{ n: 12n }]);
    const before = asText(replicaAsDump(db));
    expect(before).toEqual(asText(dumpLists(account.dump())));

    const described = await replicate(account.config(dir), db);
    expect(described.code, described.stderr).toBe(0);
    expect(described.stderr).toMatch(/pipeline_stages: table migrated in place \(new columns key, name, pipeline_id, position, outcome\); no record changed/);
    expect(columns(db, 'pipeline_stages')).toMatchObject({ name: 'TEXT', position: 'INTEGER' });
    expect(columns(db, 'contacts')).toMatchObject({ lifetime_value: 'INTEGER' });
    // Moved, not copied: nothing of them is left in _extra; the values are the ones served.
    expect(query(db, 'SELECT count(*) AS n FROM pipeline_stages WHERE _extra IS NOT NULL')).toEqual([{ n: 0n }]);
    expect(query(db, "SELECT count(*) AS n FROM contacts WHERE _extra -> '$.lifetime_value' IS NOT NULL AND lifetime_value IS NOT NULL")).toEqual([{ n: 0n }]);
    expect(query(db, "SELECT count(*) AS n FROM contacts WHERE lifetime_value > 9007199254740992")[0]?.n).toBeGreaterThan(0n);
    expect(asText(replicaAsDump(db))).toEqual(before);
    expect(asText(replicaAsDump(db))).toEqual(asText(dumpLists(account.dump())));
  });

  it('a later run without the description (pinned, or unreachable) keeps every column and keeps filling it', async () => {
    const db = join(dir, 'pinned-then-described.db');
    account.mutate({ op: 'update_contacts', count: 20 });
    const pinned = await replicate(account.config(dir, { use_service_schema: false }), db);
    expect(pinned.code, pinned.stderr).toBe(0);
    expect(columns(db, 'contacts')).toMatchObject({ lifetime_value: 'INTEGER' });
    expect(columns(db, 'pipeline_stages')).toMatchObject({ name: 'TEXT', position: 'INTEGER' });
    expect(query(db, "SELECT count(*) AS n FROM contacts WHERE _extra -> '$.lifetime_value' IS NOT NULL AND lifetime_value IS NOT NULL")).toEqual([{ n: 0n }]);
    expect(asText(replicaAsDump(db))).toEqual(asText(dumpLists(account.dump())));
  });
});
