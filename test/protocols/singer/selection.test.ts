import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import { discoverCatalog, type CatalogEntry } from '../../../src/protocols/singer/catalog.js';
import { planAll, planFromCatalog } from '../../../src/protocols/singer/selection.js';
import { thrown } from '../../helpers/thrown.js';

type Catalog = { streams: CatalogEntry[] };

/** The discovered catalog edited the way Meltano's select/metadata rules edit it. */
function select(streams: Record<string, { fields?: string[]; method?: string } | true>, tombstones = false): Catalog {
  const catalog = discoverCatalog(tombstones);
  for (const entry of catalog.streams) {
    const rule = streams[entry.tap_stream_id];
    for (const m of entry.metadata) {
      if (m.breadcrumb.length === 0) {
        m.metadata.selected = rule !== undefined;
        if (rule !== undefined && rule !== true && rule.method) m.metadata['replication-method'] = rule.method;
      } else if (rule !== undefined && rule !== true && rule.fields) {
        m.metadata.selected = rule.fields.includes(m.breadcrumb[1] as string);
      } else {
        m.metadata.selected = rule !== undefined;
      }
    }
  }
  return catalog;
}

/** The `[]` metadata of the catalog's stream at `index`. */
const topOf = (c: Catalog, index: number): Record<string, unknown> =>
  (c.streams[index] as CatalogEntry).metadata.find((m) => m.breadcrumb.length === 0)?.metadata as Record<string, unknown>;
/** The metadata of `field` of the catalog's stream at `index`. */
const fieldOf = (c: Catalog, index: number, field: string): Record<string, unknown> =>
  (c.streams[index] as CatalogEntry).metadata.find((m) => m.breadcrumb[1] === field)?.metadata as Record<string, unknown>;

const noWarn = (m: string): void => {
  throw new Error(`unexpected warning: ${m}`);
};

describe('stream selection', () => {
  it('without a catalog plans every stream, incremental where supported, all fields', () => {
    const plans = planAll(false);
    expect(plans.map((p) => [p.stream.name, p.mode])).toEqual([
      ['contacts', 'incremental'],
      ['conversations', 'incremental'],
      ['stage_events', 'incremental'],
      ['deletions', 'incremental'],
      ['pipeline_stages', 'full_refresh'],
    ]);
    expect(plans.every((p) => p.excluded.size === 0)).toBe(true);
    expect(plans[0]?.bookmarkProperties).toEqual(['updated_at']);
    expect(plans[4]?.bookmarkProperties).toEqual([]);
  });

  it('keeps only the streams with selected: true (Meltano select rules), in catalog order', () => {
    const plans = planFromCatalog(select({ deletions: true, contacts: true }), false, noWarn);
    expect(plans.map((p) => p.stream.name)).toEqual(['contacts', 'deletions']);
  });

  it('falls back to selected-by-default, and reads the legacy schema.selected of --properties files', () => {
    const discovered = discoverCatalog(false);
    expect(planFromCatalog(discovered, false, noWarn)).toHaveLength(5);
    const legacy = {
      streams: [
        { tap_stream_id: 'contacts', stream: 'contacts', schema: { type: 'object', selected: true, properties: { id: { type: 'string' } } } },
        { tap_stream_id: 'conversations', stream: 'conversations', schema: { type: 'object', properties: {} } },
      ],
    };
    const plans = planFromCatalog(legacy, false, noWarn);
    expect(plans.map((p) => p.stream.name)).toEqual(['contacts']);
    expect(plans[0]?.schema).toEqual({
      type: 'object',
      properties: { id: { type: 'string' }, updated_at: expect.objectContaining({ format: 'date-time' }) },
    });
  });

  it('honours replication-method FULL_TABLE and warns about methods a stream cannot do', () => {
    const warnings: string[] = [];
    const plans = planFromCatalog(
      select({ contacts: { method: 'FULL_TABLE' }, pipeline_stages: { method: 'INCREMENTAL' }, deletions: { method: 'LOG_BASED' } }),
      false,
      (m) => warnings.push(m),
    );
    expect(plans.map((p) => [p.stream.name, p.mode, p.bookmarkProperties])).toEqual([
      ['contacts', 'full_refresh', []],
      ['deletions', 'incremental', ['deleted_at']],
      ['pipeline_stages', 'full_refresh', []],
    ]);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('LOG_BASED');
    expect(warnings[1]).toContain('FULL_TABLE replication only');
  });

  it('warns about a replication-method or replication-key that is not a string, rather than passing over it', () => {
    const catalog = select({ contacts: true, deletions: true });
    topOf(catalog, 0)['replication-method'] = 5;
    topOf(catalog, 0)['replication-key'] = ['updated_at'];
    const warnings: string[] = [];
    const plans = planFromCatalog(catalog, false, (m) => warnings.push(m));
    expect(plans.map((p) => [p.stream.name, p.mode])).toEqual([
      ['contacts', 'incremental'],
      ['deletions', 'incremental'],
    ]);
    expect(warnings).toEqual([
      'Stream "contacts": replication-method 5 is not supported (use INCREMENTAL or FULL_TABLE); using INCREMENTAL.',
      'Stream "contacts" replicates on its own cursor "updated_at"; replication-key ["updated_at"] is ignored.',
    ]);
  });

  it('warns about a replication-key on a stream read whole: pipeline_stages (no cursor), or FULL_TABLE with another key', () => {
    const catalog = select({ contacts: { method: 'FULL_TABLE' }, conversations: { method: 'FULL_TABLE' }, pipeline_stages: true });
    topOf(catalog, 0)['replication-key'] = 'name';
    topOf(catalog, 1)['replication-key'] = 'updated_at'; // its own cursor: nothing to say
    topOf(catalog, 4)['replication-key'] = 'updated_at';
    (catalog.streams[4] as CatalogEntry & { replication_key?: string }).replication_key = 'position';
    const warnings: string[] = [];
    const plans = planFromCatalog(catalog, false, (m) => warnings.push(m));
    expect(plans.map((p) => [p.stream.name, p.mode])).toEqual([
      ['contacts', 'full_refresh'],
      ['conversations', 'full_refresh'],
      ['pipeline_stages', 'full_refresh'],
    ]);
    expect(warnings).toEqual([
      'Stream "contacts" replicates on its own cursor "updated_at"; replication-key "name" is ignored.',
      'Stream "pipeline_stages" has no cursor: it is read whole at every sync (FULL_TABLE); replication-key "updated_at" is ignored.',
    ]);
  });

  it('rejects a selected stream the tap does not have and a stream selected twice; ignores unselected unknown ones', () => {
    const catalog = select({ contacts: true });
    catalog.streams.push({ tap_stream_id: 'invoices', stream: 'invoices', schema: {}, key_properties: [], metadata: [{ breadcrumb: [], metadata: { selected: false } }] });
    expect(planFromCatalog(catalog, false, noWarn)).toHaveLength(1);
    catalog.streams.push({ tap_stream_id: 'invoices', stream: 'invoices', schema: {}, key_properties: [], metadata: [{ breadcrumb: [], metadata: { selected: true } }] });
    expect(() => planFromCatalog(catalog, false, noWarn)).toThrow(/"invoices", which this tap does not have/);
    const twice = select({ contacts: true });
    twice.streams.push(structuredClone(twice.streams[0] as CatalogEntry));
    expect(() => planFromCatalog(twice, false, noWarn)).toThrow(ConfigError);
    expect(thrown(() => planFromCatalog(twice, false, noWarn))).toMatchObject({ fields: [`catalog.streams.${twice.streams.length - 1}`] });
    expect(thrown(() => planFromCatalog({ stream: [] }, false, noWarn))).toMatchObject({ fields: ['catalog.streams'] });
    expect(() => planFromCatalog({ stream: [] }, false, noWarn)).toThrow(/Invalid catalog/);
  });

  it.each([
    ['"selected": "false" on a stream', (c: Catalog) => (topOf(c, 0).selected = 'false'), /stream "contacts": metadata "selected" must be true or false \(a JSON boolean\), not "false"/, 'catalog.streams.0.metadata'],
    ['"selected-by-default": 1 on a stream', (c: Catalog) => (topOf(c, 1)['selected-by-default'] = 1), /stream "conversations": metadata "selected-by-default" must be true or false .*not 1/, 'catalog.streams.1.metadata'],
    ['"selected": "false" on a field', (c: Catalog) => (fieldOf(c, 0, 'email').selected = 'false'), /stream "contacts", field "email": metadata "selected" must be true or false .*not "false"/, 'catalog.streams.0.metadata'],
    ['a legacy schema.selected "true"', (c: Catalog) => ((c.streams[2] as CatalogEntry).schema.selected = 'true'), /stream "stage_events": schema "selected" must be true or false .*not "true"/, 'catalog.streams.2.schema'],
    ['"selected": "false" on the key, a field always kept', (c: Catalog) => (fieldOf(c, 0, 'id').selected = 'false'), /stream "contacts", field "id": metadata "selected" must be true or false .*not "false"/, 'catalog.streams.0.metadata'],
  ])('refuses %s (a config_error naming it), never a guess', (_what, edit, message, field) => {
    const catalog = discoverCatalog(false);
    edit(catalog);
    const error = thrown(() => planFromCatalog(catalog, false, noWarn));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/^Invalid catalog: /);
    expect((error as Error).message).toMatch(message);
    expect(error).toMatchObject({ fields: [field] });
  });

  it('reads a null selected as no flag (selected-by-default decides)', () => {
    const catalog = discoverCatalog(false);
    topOf(catalog, 0).selected = null;
    expect(planFromCatalog(catalog, false, noWarn)).toHaveLength(5);
  });

  it('selects no stream when every stream is deselected', () => {
    expect(planFromCatalog(select({}), false, noWarn)).toEqual([]);
  });
});

describe('field selection', () => {
  it('drops deselected fields from the schema and records, but keeps the key and the replication key', () => {
    const [plan] = planFromCatalog(select({ contacts: { fields: ['email'] } }), false, noWarn);
    expect(Object.keys(plan?.schema.properties as object)).toEqual(['id', 'updated_at', 'email']);
    expect(plan?.excluded.has('name')).toBe(true);
    expect(plan?.excluded.has('id')).toBe(false);
    expect(plan?.excluded.has('updated_at')).toBe(false);
    expect(plan?.schema.required).toEqual(['id', 'updated_at']);
  });

  it('warns about a field the catalog leaves out that the schema does not have, rather than dropping nothing in silence', () => {
    const catalog = select({ contacts: true });
    const contacts = catalog.streams[0] as CatalogEntry;
    contacts.metadata.push({ breadcrumb: ['properties', 'emial'], metadata: { selected: false } });
    contacts.metadata.push({ breadcrumb: ['properties', 'phone_number'], metadata: { inclusion: 'unsupported' } });
    contacts.metadata.push({ breadcrumb: ['properties', 'nickname'], metadata: { selected: true } });
    const warnings: string[] = [];
    const [plan] = planFromCatalog(catalog, false, (m) => warnings.push(m));
    expect(plan?.excluded.size).toBe(0);
    expect(warnings).toEqual([
      'Stream "contacts": the catalog leaves out field "emial", which the stream\'s schema does not have; nothing is dropped for it. Check the field\'s name (Meltano: the select rules).',
      'Stream "contacts": the catalog leaves out field "phone_number", which the stream\'s schema does not have; nothing is dropped for it. Check the field\'s name (Meltano: the select rules).',
    ]);
  });

  it('keeps a field whose metadata carries no selected flag, and drops inclusion: unsupported', () => {
    const catalog = select({ conversations: true });
    const entry = catalog.streams[1] as CatalogEntry;
    for (const m of entry.metadata) {
      if (m.breadcrumb[1] === 'active') delete m.metadata.selected;
      if (m.breadcrumb[1] === 'channel_id') m.metadata = { inclusion: 'unsupported' };
    }
    const [plan] = planFromCatalog(catalog, false, noWarn);
    expect(plan?.excluded.has('active')).toBe(false);
    expect(plan?.excluded.has('channel_id')).toBe(true);
  });

  it('keeps _sdc_deleted_at with tombstones on, even if the select rules leave it out', () => {
    const [plan] = planFromCatalog(select({ contacts: { fields: ['email'] } }, true), true, noWarn);
    expect(Object.keys(plan?.schema.properties as object)).toEqual(['id', 'updated_at', 'email', '_sdc_deleted_at']);
  });

  it('adds _sdc_deleted_at to a catalog discovered without tombstones, and removes it when they are off', () => {
    const [on] = planFromCatalog(select({ contacts: true }, false), true, noWarn);
    expect(Object.keys(on?.schema.properties as object)).toContain('_sdc_deleted_at');
    const [off] = planFromCatalog(select({ contacts: true }, true), false, noWarn);
    expect(Object.keys(off?.schema.properties as object)).not.toContain('_sdc_deleted_at');
  });

  it('leaves the account field of a catalog discovered with accounts out of the SCHEMA of a one-key sync, with a warning', () => {
    const catalog = discoverCatalog(false, undefined, true);
    const warnings: string[] = [];
    const [plan] = planFromCatalog({ streams: catalog.streams.slice(0, 1) }, false, (m) => warnings.push(m), false);
    // Declared and required, `account` would make every record (which has none) invalid for the targets that validate.
    expect(Object.keys(plan?.schema.properties as object)).not.toContain('account');
    expect(plan?.schema.required).toEqual(['id', 'updated_at']);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('Stream "contacts": the catalog was discovered with accounts');
    expect(warnings[0]).toContain('Run --discover again');
    // With accounts it is the key, declared first.
    const [many] = planFromCatalog({ streams: catalog.streams.slice(0, 1) }, false, noWarn, true);
    expect(Object.keys(many?.schema.properties as object)[0]).toBe('account');
  });

  it('warns that a key the catalog asks for (Meltano table-key-properties) is not the one records are keyed by', () => {
    const catalog = select({ contacts: true, conversations: true });
    topOf(catalog, 0)['table-key-properties'] = ['email'];
    (catalog.streams[1] as CatalogEntry).key_properties = ['id', 'contact_id'];
    const warnings: string[] = [];
    const plans = planFromCatalog(catalog, false, (m) => warnings.push(m));
    expect(plans).toHaveLength(2);
    expect(warnings).toEqual([
      expect.stringContaining('Stream "contacts": the catalog asks for key ["email"], but the tap keys every record by its own, ["id"]'),
      expect.stringContaining('Stream "conversations": the catalog asks for key ["id","contact_id"]'),
    ]);
    // The discovered key, or that of a catalog discovered with or without accounts, is no request.
    expect(() => planFromCatalog(select({ contacts: true }), false, noWarn, true)).not.toThrow();
    expect(() => planFromCatalog(discoverCatalog(false, undefined, true), false, noWarn, true)).not.toThrow();
  });

  it('keeps a field named account of a catalog discovered with one key (the service\'s own field)', () => {
    const catalog = select({ contacts: true });
    const entry = catalog.streams[0] as CatalogEntry;
    (entry.schema.properties as Record<string, unknown>).account = { type: ['null', 'string'] };
    const [plan] = planFromCatalog(catalog, false, noWarn, false);
    expect((plan?.schema.properties as Record<string, unknown>).account).toEqual({ type: ['null', 'string'] });
  });

  it('uses the schema of the catalog (Meltano schema overrides), cleaned of legacy selection keys', () => {
    const catalog = select({ stage_events: true });
    const entry = catalog.streams[2] as CatalogEntry;
    (entry.schema.properties as Record<string, unknown>).pipeline_id = { type: ['null', 'string'], maxLength: 64, selected: true };
    const [plan] = planFromCatalog(catalog, false, noWarn);
    expect((plan?.schema.properties as Record<string, unknown>).pipeline_id).toEqual({ type: ['null', 'string'], maxLength: 64 });
  });
});

