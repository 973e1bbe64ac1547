/** The replica's columns from a merged schema, and their evolution over runs: added, never dropped, retyped only when the schema is to be followed. */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { evolveLayout, layoutFor, type TableLayout } from '../../src/replica/layout.js';
import { replicaRecords } from '../../src/replica/records.js';
import { ReplicaStore } from '../../src/replica/store.js';
import { builtInSchema, type JsonSchema } from '../../src/schemas/json-schema.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { tempDir } from '../helpers/cli.js';
import { contact, iso } from '../helpers/fake-api.js';

const contacts = findStream('contacts') as StreamDefinition;
const dir = tempDir('replica-layout-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The built-in contacts schema with fields added or retyped. */
function schemaWith(props: Record<string, JsonSchema>): JsonSchema {
  const base = builtInSchema(contacts);
  return { ...base, properties: { ...(base.properties as object), ...props } };
}

const fields = (layout: TableLayout): string[] => layout.columns.map((c) => `${c.field}:${c.kind}`);

describe('layoutFor and evolveLayout', () => {
  it('a merged schema gives typed columns for the fields it adds; a field differing only in case from a column gets none', () => {
    const layout = layoutFor(contacts, schemaWith({ lifetime_value: { type: ['null', 'integer'] }, Email: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } }));
    expect(fields(layout).slice(-2)).toEqual(['lifetime_value:integer', 'tags:json']);
    expect(fields(layout)).not.toContain('Email:text');
  });

  it('never drops a stored column; appends the new ones; keeps stored kinds unless told to retype', () => {
    const stored = layoutFor(contacts, schemaWith({ lifetime_value: { type: ['null', 'integer'] } }));
    const builtIn = layoutFor(contacts);
    expect(evolveLayout(builtIn, stored, false).columns).toEqual(stored.columns);
    expect(evolveLayout(builtIn, stored, true).columns).toEqual(stored.columns);

    const retyped = layoutFor(contacts, schemaWith({ qualification_score: { type: ['null', 'number'] }, tier: { type: 'string' } }));
    const kept = evolveLayout(retyped, stored, false);
    expect(fields(kept)).toEqual([...fields(stored), 'tier:text']);
    const followed = evolveLayout(retyped, stored, true);
    expect(fields(followed)).toContain('qualification_score:real');
    expect(fields(followed).slice(-2)).toEqual(['lifetime_value:integer', 'tier:text']);
    expect(evolveLayout(retyped, undefined, false)).toEqual(retyped);
  });
});

describe('ReplicaStore with the stream schemas of a run', () => {
  it('gives no column to a described field whose name holds U+0000 (SQL text cannot carry it): its values stay in _extra', () => {
    const path = join(dir, 'nul-name.db');
    const records = [contact('c1', 1, { 'nul\u0000name': 'v' }), contact('c2', 2)];
    const first = new ReplicaStore(path);
    first.commit(contacts, records, { sync_watermark: iso(2) });
    first.close();
    // The service's description declares the field: the next run opens, and writes, as before.
    const schemas = new Map([[contacts.name, schemaWith({ 'nul\u0000name': { type: ['null', 'string'] }, tier: { type: 'string' } })]]);
    const described = new ReplicaStore(path, undefined, { schemas, retype: true });
    expect(described.layoutOf(contacts.name).columns.map((c) => c.field)).not.toContain('nul\u0000name');
    described.commit(contacts, [contact('c3', 3, { 'nul\u0000name': 'w', tier: 'gold' })], { sync_watermark: iso(3) });
    described.close();
    expect(replicaRecords(path).get('contacts')).toStrictEqual([...records, contact('c3', 3, { 'nul\u0000name': 'w', tier: 'gold' })]);
  });

  it('gives no column to a described field whose name holds a lone surrogate (SQL text is UTF-8: it would name another column): its values stay in _extra', () => {
    const path = join(dir, 'lone-name.db');
    const [high, low] = ['lone\ud800name', 'lone\udc00name'];
    const records = [contact('c1', 1, { [high]: 'v', [low]: 'w' }), contact('c2', 2)];
    const first = new ReplicaStore(path);
    first.commit(contacts, records, { sync_watermark: iso(2) });
    first.close();
    // The service's description declares both (each would be "lone\ufffdname" in SQL): the next run opens, and writes, as before.
    const schemas = new Map([[contacts.name, schemaWith({ [high]: { type: ['null', 'string'] }, [low]: { type: ['null', 'string'] }, tier: { type: 'string' } })]]);
    const described = new ReplicaStore(path, undefined, { schemas, retype: true });
    expect(described.layoutOf(contacts.name).columns.map((c) => c.field)).not.toContain(high);
    described.commit(contacts, [contact('c3', 3, { [high]: 'x', tier: 'gold' })], { sync_watermark: iso(3) });
    described.close();
    expect(replicaRecords(path).get('contacts')).toStrictEqual([...records, contact('c3', 3, { [high]: 'x', tier: 'gold' })]);
  });

  it('adds the columns in place, keeps them on a later run with the built-in schemas, and every record reads back the same', () => {
    const path = join(dir, 'store.db');
    const records = [contact('c1', 1, { lifetime_value: 12 }), contact('c2', 2)];
    const first = new ReplicaStore(path);
    first.commit(contacts, records, { sync_watermark: iso(2) });
    first.close();
    expect(replicaRecords(path).get('contacts')).toStrictEqual(records);

    const schemas = new Map([[contacts.name, schemaWith({ lifetime_value: { type: ['null', 'integer'] } })]]);
    const described = new ReplicaStore(path, undefined, { schemas, retype: true });
    expect(described.migrations).toEqual([
      { stream: 'contacts', change: 'new column lifetime_value', columns: [{ stream: 'contacts', column: 'lifetime_value', change: 'added', from: null, to: 'INTEGER' }] },
    ]);
    expect(described.db.prepare('SELECT id, lifetime_value, _extra FROM contacts ORDER BY id').all()).toEqual([
      { id: 'c1', lifetime_value: 12, _extra: null },
      { id: 'c2', lifetime_value: null, _extra: null },
    ]);
    described.close();
    expect(replicaRecords(path).get('contacts')).toStrictEqual(records);

    const pinned = new ReplicaStore(path, undefined, { retype: false });
    expect(pinned.migrations).toEqual([]);
    expect(pinned.layoutOf(contacts.name).columns.map((c) => c.field)).toContain('lifetime_value');
    pinned.close();
    expect(replicaRecords(path).get('contacts')).toStrictEqual(records);
  });
});
