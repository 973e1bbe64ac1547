import { describe, expect, it } from 'vitest';
import { discoverCatalog, type CatalogEntry, type MetadataEntry } from '../../../src/protocols/singer/catalog.js';

const entry = (catalog: { streams: CatalogEntry[] }, name: string): CatalogEntry => {
  const found = catalog.streams.find((s) => s.tap_stream_id === name);
  if (!found) throw new Error(`no ${name}`);
  return found;
};
const md = (e: CatalogEntry, breadcrumb: string[]): MetadataEntry['metadata'] | undefined =>
  e.metadata.find((m) => JSON.stringify(m.breadcrumb) === JSON.stringify(breadcrumb))?.metadata;

describe('Singer discovery', () => {
  const catalog = discoverCatalog(false);

  it('lists every stream with tap_stream_id, stream, schema, key_properties and metadata', () => {
    expect(catalog.streams.map((s) => s.tap_stream_id)).toEqual(['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages']);
    for (const s of catalog.streams) {
      expect(s.stream).toBe(s.tap_stream_id);
      expect(s.key_properties).toEqual(['id']);
      expect(s.schema.type).toBe('object');
      expect(JSON.stringify(s.schema)).not.toContain('airbyte_type');
    }
  });

  it('writes stream metadata: key, replication keys, forced method only for full-table streams', () => {
    const contacts = entry(catalog, 'contacts');
    expect(md(contacts, [])).toEqual({
      inclusion: 'available',
      'selected-by-default': true,
      'table-key-properties': ['id'],
      'valid-replication-keys': ['updated_at'],
    });
    expect(contacts.replication_key).toBe('updated_at');
    expect(md(entry(catalog, 'stage_events'), [])?.['valid-replication-keys']).toEqual(['created_at']);
    expect(md(entry(catalog, 'deletions'), [])?.['valid-replication-keys']).toEqual(['deleted_at']);
    const stages = entry(catalog, 'pipeline_stages');
    expect(md(stages, [])?.['forced-replication-method']).toBe('FULL_TABLE');
    expect(md(stages, [])?.['valid-replication-keys']).toBeUndefined();
    expect(stages.replication_key).toBeUndefined();
  });

  it('marks the key and the replication key automatic, every other field available, all selected by default', () => {
    const contacts = entry(catalog, 'contacts');
    const fields = contacts.metadata.filter((m) => m.breadcrumb.length === 2);
    expect(fields.map((f) => f.breadcrumb[1])).toEqual(Object.keys(contacts.schema.properties as object));
    expect(md(contacts, ['properties', 'id'])).toEqual({ inclusion: 'automatic', 'selected-by-default': true });
    expect(md(contacts, ['properties', 'updated_at'])).toEqual({ inclusion: 'automatic', 'selected-by-default': true });
    expect(md(contacts, ['properties', 'email'])).toEqual({ inclusion: 'available', 'selected-by-default': true });
    expect(md(entry(catalog, 'stage_events'), ['properties', 'created_at'])?.inclusion).toBe('automatic');
    // What deletions are applied by: the record pipeline keeps them whatever the selection says.
    expect(md(entry(catalog, 'deletions'), ['properties', 'object_type'])?.inclusion).toBe('automatic');
    expect(md(entry(catalog, 'deletions'), ['properties', 'object_id'])?.inclusion).toBe('automatic');
  });

  it('declares _sdc_deleted_at in contacts and conversations only when tombstones are on', () => {
    expect(JSON.stringify(catalog)).not.toContain('_sdc_deleted_at');
    const withTombstones = discoverCatalog(true);
    for (const name of ['contacts', 'conversations']) {
      const e = entry(withTombstones, name);
      expect((e.schema.properties as Record<string, unknown>)._sdc_deleted_at).toEqual({
        type: ['null', 'string'],
        format: 'date-time',
        description: expect.any(String),
      });
      expect(md(e, ['properties', '_sdc_deleted_at'])?.inclusion).toBe('automatic');
    }
    for (const name of ['stage_events', 'deletions', 'pipeline_stages']) {
      expect(JSON.stringify(entry(withTombstones, name))).not.toContain('_sdc_deleted_at');
    }
  });
});
