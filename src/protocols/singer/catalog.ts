/**
 * Singer discovery: one catalog entry per stream of the streams table, with
 * its schema (built in, or merged with the service's description) and the
 * standard metadata (breadcrumbs) that Meltano's select rules edit.
 */
import type { StreamSchemas } from '../../schemas/json-schema.js';
import { STREAMS, type StreamDefinition } from '../../streams.js';
import type { JsonSchema } from './protocol.js';
import { alwaysKept, keyProperties, propertiesOf, singerSchema } from './schema.js';

export interface MetadataEntry {
  breadcrumb: string[];
  metadata: Record<string, unknown>;
}

export interface CatalogEntry {
  tap_stream_id: string;
  stream: string;
  schema: JsonSchema;
  key_properties: string[];
  replication_key?: string;
  metadata: MetadataEntry[];
}

interface SingerCatalog {
  streams: CatalogEntry[];
}

function streamMetadata(stream: StreamDefinition, schema: JsonSchema, tombstones: boolean, manyAccounts = false): MetadataEntry[] {
  const top: Record<string, unknown> = {
    inclusion: 'available',
    'selected-by-default': true,
    'table-key-properties': keyProperties(stream, manyAccounts),
  };
  if (stream.cursorField) top['valid-replication-keys'] = [stream.cursorField];
  if (!stream.syncModes.includes('incremental')) top['forced-replication-method'] = 'FULL_TABLE';
  const automatic = alwaysKept(stream, tombstones, manyAccounts);
  const fields = Object.keys(propertiesOf(schema)).map((name) => ({
    breadcrumb: ['properties', name],
    metadata: { inclusion: automatic.has(name) ? 'automatic' : 'available', 'selected-by-default': true },
  }));
  return [{ breadcrumb: [], metadata: top }, ...fields];
}

function catalogEntry(stream: StreamDefinition, tombstones: boolean, base?: JsonSchema, manyAccounts = false): CatalogEntry {
  const schema = singerSchema(stream, tombstones, base, manyAccounts);
  const entry: CatalogEntry = {
    tap_stream_id: stream.name,
    stream: stream.name,
    schema,
    key_properties: keyProperties(stream, manyAccounts),
    metadata: streamMetadata(stream, schema, tombstones, manyAccounts),
  };
  if (stream.cursorField) entry.replication_key = stream.cursorField;
  return entry;
}

/** Every stream, with its schema from `schemas` (built in where it has none). */
export function discoverCatalog(tombstones: boolean, schemas?: StreamSchemas, manyAccounts = false): SingerCatalog {
  return { streams: STREAMS.map((s) => catalogEntry(s, tombstones, schemas?.get(s.name), manyAccounts)) };
}
