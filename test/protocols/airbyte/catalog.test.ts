/** The Airbyte catalog with merged schemas, and the configured catalog's schema carried to the type check of read. */
import { describe, expect, it } from 'vitest';
import { airbyteJsonSchema, discoverCatalog, parseConfiguredCatalog, undeclaredTombstoneColumns } from '../../../src/protocols/airbyte/catalog.js';
import { builtInSchemas, type JsonSchema } from '../../../src/schemas/json-schema.js';
import { STREAMS, findStream } from '../../../src/streams.js';
import { ConfigError } from '../../../src/errors.js';
import { thrown } from '../../helpers/thrown.js';

describe('discoverCatalog with the stream schemas of a run', () => {
  it('declares each stream with its schema (Airbyte annotations added), built in where none is given', () => {
    const contacts = builtInSchemas(STREAMS).get('contacts') as JsonSchema;
    const merged = new Map([['contacts', { ...contacts, properties: { ...(contacts.properties as object), signed_up_at: { type: ['null', 'string'], format: 'date-time' } } }]]);
    const streams = discoverCatalog(false, merged);
    const props = streams[0]?.json_schema.properties as Record<string, JsonSchema>;
    expect(props.signed_up_at).toEqual({ type: ['null', 'string'], format: 'date-time', airbyte_type: 'timestamp_with_timezone' });
    expect(streams.slice(1)).toEqual(discoverCatalog(false).slice(1));
    expect(discoverCatalog(true, merged)[0]?.json_schema.properties).toHaveProperty('_ab_cdc_deleted_at');
  });
});

describe('parseConfiguredCatalog', () => {
  it("carries each stream's json_schema (what the destination was told) to read; none declared: the built-in one", () => {
    const told = { type: 'object', properties: { id: { type: 'string' }, lifetime_value: { type: ['null', 'integer'] } } };
    const selected = parseConfiguredCatalog({
      streams: [
        { stream: { name: 'contacts', json_schema: told }, sync_mode: 'incremental' },
        { stream: { name: 'deletions', json_schema: {} }, sync_mode: 'incremental' },
        { stream: { name: 'pipeline_stages' }, sync_mode: 'full_refresh' },
      ],
    });
    expect(selected.map((s) => [s.stream.name, s.schema])).toEqual([['contacts', told], ['deletions', undefined], ['pipeline_stages', undefined]]);
  });

  it('refuses a catalog of another shape with its first issue, where, and the shape expected (a config_error)', () => {
    const error = thrown(() => parseConfiguredCatalog({ streams: [{ stream: 'contacts', sync_mode: 'incremental' }] }));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(
      /^Invalid configured catalog: streams\.0\.stream: .+\. Expected \{"streams": \[\{"stream": \{"name": \.\.\.\}, "sync_mode": "incremental" \| "full_refresh", \.\.\.\}\]\}\.$/,
    );
    expect(error).toMatchObject({ fields: ['catalog.streams.0.stream'] });
    expect(thrown(() => parseConfiguredCatalog([]))).toMatchObject({ fields: ['catalog'] });
  });
});

describe('a json_schema that is not a JSON Schema object', () => {
  it('is read as none (the built-in schema, every field), with a WARN rather than in silence', () => {
    for (const told of ['x', ['id'], 5, { type: 'object', properties: ['id'] }]) {
      const warnings: string[] = [];
      const [selected] = parseConfiguredCatalog({ streams: [{ stream: { name: 'contacts', json_schema: told }, sync_mode: 'incremental' }] }, (m) => warnings.push(m));
      expect(selected?.schema, JSON.stringify(told)).toBeUndefined();
      expect(warnings, JSON.stringify(told)).toEqual([expect.stringMatching(/^Stream "contacts": the configured catalog's json_schema is not a JSON Schema object .*checked against the built-in schema/)]);
    }
    // Absent, null, {} and an object without properties: the documented way to say "the built-in one", no WARN.
    for (const told of [undefined, null, {}, { type: 'object' }]) {
      const warnings: string[] = [];
      parseConfiguredCatalog({ streams: [{ stream: { name: 'contacts', json_schema: told }, sync_mode: 'incremental' }] }, (m) => warnings.push(m));
      expect(warnings, JSON.stringify(told)).toEqual([]);
    }
  });
});

describe('field selection from the configured catalog', () => {
  const contactsSchema = builtInSchemas(STREAMS).get('contacts') as JsonSchema;
  const without = (...fields: string[]): JsonSchema => ({
    ...contactsSchema,
    properties: Object.fromEntries(Object.entries(contactsSchema.properties as Record<string, unknown>).filter(([name]) => !fields.includes(name))),
  });
  const catalog = (schema: JsonSchema) => ({ streams: [{ stream: { name: 'contacts', json_schema: schema }, sync_mode: 'incremental', destination_sync_mode: 'append_dedup' }] });

  it('a field taken out of the schema selects the declared ones; every field declared selects none (fields as received)', () => {
    expect(parseConfiguredCatalog(catalog(without('email')))[0]?.fields?.has('email')).toBe(false);
    expect(parseConfiguredCatalog(catalog(contactsSchema))[0]?.fields).toBeUndefined();
  });

  it('a field a drop treatment removed from the discovered schema is no selection: fields the service adds later still pass', () => {
    const dropped = () => new Set(['email', 'phone']);
    expect(parseConfiguredCatalog(catalog(without('email', 'phone')), undefined, dropped)[0]?.fields).toBeUndefined();
    expect(parseConfiguredCatalog(catalog(without('email', 'phone', 'name')), undefined, dropped)[0]?.fields?.has('name')).toBe(false);
  });
});

describe('a primary_key the configured catalog asks for', () => {
  const entry = (primary_key: unknown): unknown => ({ streams: [{ stream: { name: 'contacts', json_schema: {} }, sync_mode: 'incremental', primary_key }] });
  const warningsFor = (primary_key: unknown): string[] => {
    const warnings: string[] = [];
    parseConfiguredCatalog(entry(primary_key), (m) => warnings.push(m));
    return warnings;
  };

  it('of any other shape than the source\'s is told in the same WARN, not passed over ("id", an object)', () => {
    expect(warningsFor('id')).toEqual([expect.stringMatching(/^Stream "contacts": the configured catalog asks for primary_key "id", but this source defines its own/)]);
    expect(warningsFor({ id: true })).toEqual([expect.stringContaining('asks for primary_key {"id":true}')]);
  });

  it('absent, null, empty or the source\'s own: no warning', () => {
    for (const key of [undefined, null, [], [['id']]]) expect(warningsFor(key), JSON.stringify(key)).toEqual([]);
  });
});

describe('a configured catalog serialized with its unset fields as null', () => {
  // PyAirbyte writes its pydantic ConfiguredAirbyteCatalog with model_dump_json(): every field it did not set is null
  // (cursor_field of a stream without default_cursor_field, primary_key, the refresh fields, the stream's namespace).
  const pyairbyte = (name: string, sync_mode: string): unknown => ({
    stream: { name, json_schema: {}, namespace: null, source_defined_cursor: null, default_cursor_field: null },
    sync_mode,
    cursor_field: null,
    destination_sync_mode: 'overwrite',
    primary_key: null,
    generation_id: null,
    minimum_generation_id: null,
    sync_id: null,
  });

  it('reads a null cursor_field as none given: each stream in its mode, on its own cursor, without a word', () => {
    const warnings: string[] = [];
    const selected = parseConfiguredCatalog({ streams: [pyairbyte('contacts', 'incremental'), pyairbyte('pipeline_stages', 'full_refresh')] }, (m) => warnings.push(m));
    expect(selected.map((s) => [s.stream.name, s.mode])).toEqual([['contacts', 'incremental'], ['pipeline_stages', 'full_refresh']]);
    expect(warnings).toEqual([]);
  });

  it('reads incremental asked of a stream without a cursor in full, with a WARN (PyAirbyte before its fix asked it of every stream)', () => {
    const warnings: string[] = [];
    const selected = parseConfiguredCatalog({ streams: [pyairbyte('contacts', 'incremental'), pyairbyte('pipeline_stages', 'incremental')] }, (m) => warnings.push(m));
    expect(selected.map((s) => [s.stream.name, s.mode])).toEqual([['contacts', 'incremental'], ['pipeline_stages', 'full_refresh']]);
    expect(warnings).toEqual([
      'Stream "pipeline_stages" has no cursor and is read in full every sync: the catalog\'s sync_mode "incremental" is read as full_refresh (supported: full_refresh).',
    ]);
    // A mode Airbyte does not have is still refused.
    expect(thrown(() => parseConfiguredCatalog({ streams: [pyairbyte('contacts', 'cdc')] }))).toMatchObject({ message: expect.stringMatching(/does not support sync_mode "cdc"/) });
  });
});

describe('tombstones into a stream whose configured schema lacks _ab_cdc_deleted_at', () => {
  const withColumn = airbyteJsonSchema(findStream('contacts')!, true);
  const without = airbyteJsonSchema(findStream('contacts')!, false);
  const catalog = (contacts: unknown, mode = 'incremental', log = true) => ({
    streams: [
      { stream: { name: 'contacts', json_schema: contacts }, sync_mode: mode },
      ...(log ? [{ stream: { name: 'deletions' }, sync_mode: 'incremental' }] : []),
    ],
  });

  it('is warned about once, naming the stream and the refresh that declares it (destinations would keep a row of nulls)', () => {
    expect(undeclaredTombstoneColumns(parseConfiguredCatalog(catalog(without)), true)).toEqual([
      expect.stringMatching(/^Stream "contacts": deletions_as_tombstones is on, but the configured catalog's schema of contacts does not declare _ab_cdc_deleted_at; .* a row of nulls .* Refresh the source schema/),
    ]);
  });

  it('says nothing when the schema declares it, declares nothing, the stream gets no tombstones, or tombstones are off', () => {
    expect(undeclaredTombstoneColumns(parseConfiguredCatalog(catalog(withColumn)), true)).toEqual([]);
    expect(undeclaredTombstoneColumns(parseConfiguredCatalog(catalog(undefined)), true)).toEqual([]);
    expect(undeclaredTombstoneColumns(parseConfiguredCatalog(catalog(without, 'full_refresh')), true)).toEqual([]);
    expect(undeclaredTombstoneColumns(parseConfiguredCatalog(catalog(without, 'incremental', false)), true)).toEqual([]);
    expect(undeclaredTombstoneColumns(parseConfiguredCatalog(catalog(without)), false)).toEqual([]);
  });
});
