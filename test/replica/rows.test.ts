import { describe, expect, it } from 'vitest';
import { layoutFor, type TableLayout } from '../../src/replica/layout.js';
import { insertSql, openForWrite, storedLayouts } from '../../src/replica/database.js';
import { ensureTable } from '../../src/replica/migrate.js';
import { recordToRow, rowToRecord } from '../../src/replica/rows.js';
import { isRawNumber, parseExactJson } from '../../src/exact-json.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { recordJsonSchema } from '../../src/schemas/json-schema.js';

const contacts = findStream('contacts') as StreamDefinition;

function roundTrip(layout: TableLayout, record: Record<string, unknown>): Record<string, unknown> {
  const db = openForWrite(':memory:');
  ensureTable(db, layout, undefined);
  db.prepare(insertSql(layout)).run(...recordToRow(layout, record), '2026-01-01T00:00:00.000Z');
  const select = db.prepare(`SELECT * FROM "${layout.table}"`);
  select.setReadBigInts(true);
  const row = select.get();
  db.close();
  if (!row) throw new Error('no row');
  return rowToRecord(layout, row);
}

describe('replica layout', () => {
  it('types the columns from the JSON schema: strings and date-times TEXT, integers INTEGER, booleans INTEGER', () => {
    const layout = layoutFor(contacts);
    const kinds = Object.fromEntries(layout.columns.map((c) => [c.field, c.kind]));
    expect(kinds).toMatchObject({ id: 'text', updated_at: 'text', qualification_score: 'integer', do_not_contact: 'boolean', temperature: 'text' });
    const db = openForWrite(':memory:');
    ensureTable(db, layout, undefined);
    const cols = db.prepare(`SELECT name, type, pk FROM pragma_table_info('contacts')`).all();
    db.close();
    expect(cols).toContainEqual(expect.objectContaining({ name: 'qualification_score', type: 'INTEGER' }));
    expect(cols).toContainEqual(expect.objectContaining({ name: 'do_not_contact', type: 'INTEGER' }));
    expect(cols).toContainEqual(expect.objectContaining({ name: 'won_at', type: 'TEXT' }));
    expect(cols).toContainEqual(expect.objectContaining({ name: 'id', pk: 1 }));
    expect(cols.map((c) => c.name)).toEqual(expect.arrayContaining(['_extra', '_absent', '_synced_at']));
  });
});

describe('records to rows and back', () => {
  const layout = layoutFor(contacts);

  it('stores typed values in typed columns and gives back the exact record', () => {
    const record = {
      id: 'c1', updated_at: '2026-01-02T03:04:05.678Z', qualification_score: 42, do_not_contact: false,
      won_at: null, temperature: 'hot', name: 'Ana',
    };
    const back = roundTrip({ ...layout, columns: layout.columns.filter((c) => c.field in record) }, record);
    expect(back).toStrictEqual(record);
  });

  it('keeps unknown fields, values of another type than declared, and tells absent fields from null ones', () => {
    const record: Record<string, unknown> = {
      id: 'c2',
      updated_at: '2026-01-02T03:04:05.678Z',
      qualification_score: '17', // a string where an integer is declared
      do_not_contact: 1, // a number where a boolean is declared
      email: null,
      temperature: { nested: [1, 2] },
      custom_fields: { plan: 'pro', seats: 3 },
      tags: ['a', 'b'],
      big: 2 ** 60,
      ratio: 0.25,
    };
    const back = roundTrip(layout, record);
    expect(back).toStrictEqual(record);
    expect(Object.hasOwn(back, 'phone')).toBe(false);
    expect(back.email).toBeNull();
  });

  it('survives awkward keys (__proto__, quotes, bookkeeping names)', () => {
    const record = JSON.parse('{"id":"c3","updated_at":"2026-01-01T00:00:00.000Z","__proto__":{"x":1},"we\\"ird":1,"_extra":"mine"}') as Record<string, unknown>;
    const back = roundTrip(layout, record);
    expect(JSON.stringify(back, Object.keys(back).sort())).toBe(JSON.stringify(record, Object.keys(record).sort()));
    expect(Object.keys(back).sort()).toEqual(Object.keys(record).sort());
  });
});

describe('strings that are not well-formed Unicode', () => {
  it('a lone surrogate (a cut emoji, sent as an escape) reads back exact from _extra; its column keeps the text with U+FFFD', () => {
    const layout = layoutFor(contacts);
    const record = parseExactJson('{"id":"c4","updated_at":"2026-01-01T00:00:00.000Z","name":"Ana \\ud83d","email":"\\udc00x@y.z","job_title":"pair \\ud83d\\ude00"}') as Record<string, unknown>;
    expect(roundTrip(layout, record)).toStrictEqual(record);
    const db = openForWrite(':memory:');
    ensureTable(db, layout, undefined);
    db.prepare(insertSql(layout)).run(...recordToRow(layout, record), '2026-01-01T00:00:00.000Z');
    // SQL sees the text as SQLite holds it (UTF-8), and the exact value with `_extra ->`.
    expect(db.prepare(`SELECT name, job_title, _extra -> '$.name' AS exact FROM contacts`).get()).toEqual({ name: 'Ana \ufffd', job_title: 'pair \ud83d\ude00', exact: '"Ana \\ud83d"' });
    db.close();
  });
});

describe('numbers digit for digit', () => {
  const layout = layoutFor(findStream('conversations') as StreamDefinition);

  it('an integer beyond 2^53 in an INTEGER column, exact; beyond 64 bits and decimals JavaScript would rewrite, exact in _extra', () => {
    const text =
      '{"id":"v1","updated_at":"2026-01-01T00:00:00.000Z","contact_message_count":9007199254740993,"agent_message_count":123456789012345678901234567890,' +
      '"x_price":1.50,"x_exp":1e3,"x_neg_zero":-0,"x_max":9223372036854775807,"x_min":-9223372036854775808,"x_nested":{"n":[1.0,18446744073709551617]}}';
    const record = parseExactJson(text) as Record<string, unknown>;
    expect(isRawNumber(record.contact_message_count)).toBe(true);
    const db = openForWrite(':memory:');
    ensureTable(db, layout, undefined);
    db.prepare(insertSql(layout)).run(...recordToRow(layout, record), '2026-01-01T00:00:00.000Z');
    const raw = db.prepare('SELECT contact_message_count AS c, typeof(contact_message_count) AS t, agent_message_count AS a, _extra AS e FROM conversations');
    raw.setReadBigInts(true);
    const row = raw.get() as { c: bigint; t: string; a: null; e: string };
    expect(row).toMatchObject({ c: 9007199254740993n, t: 'integer', a: null });
    // The SQL face of _extra: `->` gives the exact JSON text.
    const extra = db.prepare(`SELECT _extra -> '$.agent_message_count' AS a, _extra -> '$.x_price' AS p FROM conversations`).get();
    expect(extra).toEqual({ a: '123456789012345678901234567890', p: '1.50' });
    const select = db.prepare('SELECT * FROM conversations');
    select.setReadBigInts(true);
    const back = rowToRecord(layout, select.get() as Record<string, never>);
    db.close();
    const order = Object.keys(record);
    expect(JSON.stringify(back, order)).toBe(JSON.stringify(record, order));
    expect(JSON.stringify(back.x_nested)).toBe('{"n":[1.0,18446744073709551617]}');
  });

  it('an integer beyond 2^53 that JavaScript holds exactly (even, 9007199254740994): a plain number from the parse, still an exact INTEGER', () => {
    const record = parseExactJson('{"id":"v2","updated_at":"2026-01-01T00:00:00.000Z","contact_message_count":9007199254740994,"agent_message_count":-9007199254809444}') as Record<string, unknown>;
    expect(typeof record.contact_message_count).toBe('number');
    const db = openForWrite(':memory:');
    ensureTable(db, layout, undefined);
    db.prepare(insertSql(layout)).run(...recordToRow(layout, record), '2026-01-01T00:00:00.000Z');
    const select = db.prepare('SELECT contact_message_count AS c, agent_message_count AS a, _extra AS e FROM conversations');
    select.setReadBigInts(true);
    expect(select.get()).toEqual({ c: 9007199254740994n, a: -9007199254809444n, e: null });
    const all = db.prepare('SELECT * FROM conversations');
    all.setReadBigInts(true);
    const back = rowToRecord(layout, all.get() as Record<string, never>);
    db.close();
    expect(back.contact_message_count).toBe(9007199254740994);
    expect(back.agent_message_count).toBe(-9007199254809444);
  });

  describe('a REAL column (a number field of the service)', () => {
    const schema = recordJsonSchema(findStream('conversations') as StreamDefinition);
    const priced = layoutFor(findStream('conversations') as StreamDefinition, { ...schema, properties: { ...(schema.properties as Record<string, unknown>), price: { type: ['number', 'null'] } } });
    const texts = { a: '1.50', b: '1e3', c: '-0', d: '0.1000000000000000055511151231257827', e: '9007199254740993', f: '1e400', g: '2.5' };
    const record = (id: string, text: string): Record<string, unknown> =>
      parseExactJson(`{"id":"${id}","updated_at":"2026-01-01T00:00:00.000Z","price":${text}}`) as Record<string, unknown>;
    const columnOf = (db: ReturnType<typeof openForWrite>): Record<string, unknown> =>
      Object.fromEntries(db.prepare('SELECT id, price, _extra -> \'$.price\' AS exact FROM conversations ORDER BY id').all().map((r) => [r.id, [r.price, r.exact]]));

    it('holds the nearest double of a number a double does not write back the same, for SQL; the exact text stays in _extra and reads back', () => {
      const db = openForWrite(':memory:');
      ensureTable(db, priced, undefined);
      for (const [id, text] of Object.entries(texts)) db.prepare(insertSql(priced)).run(...recordToRow(priced, record(id, text)), '2026-01-01T00:00:00.000Z');
      expect(columnOf(db)).toEqual({ a: [1.5, '1.50'], b: [1000, '1e3'], c: [0, '-0'], d: [0.1, '0.1000000000000000055511151231257827'], e: [9007199254740992, '9007199254740993'], f: [null, '1e400'], g: [2.5, null] });
      expect(db.prepare('SELECT sum(price) AS s FROM conversations').get()).toEqual({ s: 1.5 + 1000 + 0.1 + 9007199254740992 + 2.5 });
      const select = db.prepare('SELECT * FROM conversations ORDER BY id');
      select.setReadBigInts(true);
      const back = select.all().map((row) => JSON.stringify(rowToRecord(priced, row)));
      db.close();
      expect(back).toEqual(Object.entries(texts).map(([id, text]) => JSON.stringify(record(id, text))));
    });

    it('of a table written before (such numbers left the column NULL) is filled when the table is opened, once', () => {
      const db = openForWrite(':memory:');
      const { realNearest: _, ...before } = priced;
      ensureTable(db, before, undefined);
      const insert = db.prepare(`INSERT INTO conversations (id, updated_at, _extra, _absent, _synced_at) VALUES (?, '2026-01-01T00:00:00.000Z', ?, ?, '2026-01-01T00:00:00.000Z')`);
      insert.run('a', '{"price":1.50}', null);
      insert.run('f', '{"price":1e400}', null);
      insert.run('h', '{"price":"n/a"}', null);
      db.prepare(`INSERT INTO conversations (id, updated_at, price, _synced_at) VALUES ('g', '2026-01-01T00:00:00.000Z', 2.5, '2026-01-01T00:00:00.000Z')`).run();
      const migration = ensureTable(db, priced, storedLayouts(db).get('conversations'));
      expect(migration).toEqual({ stream: 'conversations', change: 'REAL column price filled from _extra in 1 row', columns: [] });
      expect(columnOf(db)).toEqual({ a: [1.5, '1.50'], f: [null, '1e400'], g: [2.5, null], h: [null, '"n/a"'] });
      expect(storedLayouts(db).get('conversations')?.realNearest).toBe(true);
      expect(ensureTable(db, priced, storedLayouts(db).get('conversations'))).toBeUndefined();
      // A table without a REAL column only has its layout's record brought up to date, with nothing to tell.
      const plain = layoutFor(contacts);
      const { realNearest: __, ...plainBefore } = plain;
      ensureTable(db, plainBefore, undefined);
      expect(ensureTable(db, plain, storedLayouts(db).get('contacts'))).toBeUndefined();
      expect(storedLayouts(db).get('contacts')?.realNearest).toBe(true);
      db.close();
    });
  });
});
