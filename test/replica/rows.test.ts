import { describe, expect, it } from 'vitest';
import { layoutFor, type TableLayout } from '../../src/faces/replica/layout.js';
import { ensureTable, insertSql, openForWrite } from '../../src/faces/replica/database.js';
import { recordToRow, rowToRecord } from '../../src/faces/replica/rows.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';

const contacts = findStream('contacts') as StreamDefinition;

function roundTrip(layout: TableLayout, record: Record<string, unknown>): Record<string, unknown> {
  const db = openForWrite(':memory:');
  ensureTable(db, layout, undefined);
  db.prepare(insertSql(layout)).run(...recordToRow(layout, record), '2026-01-01T00:00:00.000Z');
  const row = db.prepare(`SELECT * FROM "${layout.table}"`).get();
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
