/**
 * The Airbyte catalog: discovered from the streams table and the stream
 * schemas (built in, or merged with the service's description), and the
 * configured catalog a user passes to `read`, validated against it.
 */
import { isObject } from '../../exact-json.js';
import { z } from 'zod';
import { ConfigError } from '../../errors.js';
import { builtInSchema, primaryKeyPaths, recordJsonSchema, type JsonSchema, type StreamSchemas } from '../../schemas/json-schema.js';
import { STREAMS, findStream, hasTombstones, isDeletionLog, type StreamDefinition, type SyncMode } from '../../streams.js';
import type { SelectedStream } from '../../engine/sync.js';
import { AIRBYTE_DELETED_AT, type AirbyteStream } from './protocol.js';
import { invalidCatalog } from '../catalog-kind.js';

/** A copy with Airbyte's type annotation on every date-time (destinations then type the column as a timestamp). */
function withAirbyteTypes(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'properties' && isObject(value)) {
      out.properties = Object.fromEntries(Object.entries(value).map(([name, p]) => [name, isObject(p) ? withAirbyteTypes(p) : p]));
    } else out[key] = key === 'items' && isObject(value) ? withAirbyteTypes(value) : value;
  }
  if (schema.format === 'date-time') out.airbyte_type = 'timestamp_with_timezone';
  return out;
}

/**
 * A stream's record schema as Airbyte reads it: the shared schema (`base`, the
 * built-in one by default), annotated, with the tombstone column when on.
 */
export function airbyteJsonSchema(stream: StreamDefinition, tombstones: boolean, base?: JsonSchema, manyAccounts = false): JsonSchema {
  return withAirbyteTypes(recordJsonSchema(stream, { deletedAtColumn: hasTombstones(stream, tombstones) ? AIRBYTE_DELETED_AT : undefined, base, accountField: manyAccounts }));
}

/** The stream as discover declares it; `manyAccounts` (a config with `accounts`): the account field, first in the primary key. */
export function airbyteStream(stream: StreamDefinition, tombstones: boolean, base?: JsonSchema, manyAccounts = false): AirbyteStream {
  const json_schema = airbyteJsonSchema(stream, tombstones, base, manyAccounts);
  const out: AirbyteStream = {
    name: stream.name,
    json_schema,
    supported_sync_modes: [...stream.syncModes],
    source_defined_primary_key: primaryKeyPaths(stream, manyAccounts),
    is_resumable: stream.cursorField !== null,
    description: stream.description,
  };
  if (stream.cursorField) {
    out.source_defined_cursor = true;
    out.default_cursor_field = [stream.cursorField];
  }
  return out;
}

/** Every stream, with its schema from `schemas` (built in where it has none). */
export function discoverCatalog(tombstones: boolean, schemas?: StreamSchemas, manyAccounts = false): AirbyteStream[] {
  return STREAMS.map((s) => airbyteStream(s, tombstones, schemas?.get(s.name), manyAccounts));
}

/**
 * The configured stream's field selection: its schema's properties when a
 * field of the stream's built-in schema is missing from them (the user took
 * it out: it is not emitted, as PyAirbyte and scripts expect); undefined when
 * the schema declares them all, or declares none (every field, as received).
 * A field in `dropped` (a `drop` treatment: discover leaves it out) missing
 * from the schema is no selection.
 */
function fieldSelection(stream: StreamDefinition, schema: JsonSchema | undefined, dropped: ReadonlySet<string>): ReadonlySet<string> | undefined {
  if (schema === undefined || !isObject(schema.properties)) return undefined;
  const declared = new Set(Object.keys(schema.properties));
  const builtIn = Object.keys((builtInSchema(stream).properties as object | undefined) ?? {});
  return builtIn.every((field) => declared.has(field) || dropped.has(field)) ? undefined : declared;
}

const ConfiguredCatalog = z.object({
  streams: z.array(
    z.looseObject({
      stream: z.looseObject({ name: z.string(), namespace: z.string().nullish(), json_schema: z.unknown().optional() }),
      sync_mode: z.string(),
      destination_sync_mode: z.string().optional(),
      // null as none given: what a serializer that writes every unset field writes (PyAirbyte's pydantic models).
      cursor_field: z.array(z.string()).nullish(),
      primary_key: z.unknown().optional(),
    }),
  ),
});

/**
 * The WARN for a configured stream whose cursor_field or primary_key differs
 * from the source-defined ones (both are source-defined: the state follows
 * the stream's own cursor, every record carries its own key); undefined when
 * they agree or are not given.
 */
function ownKeysWarning(stream: StreamDefinition, mode: SyncMode, cursorField: readonly string[] | undefined, primaryKey: unknown, manyAccounts: boolean): string | undefined {
  const ownCursor = stream.cursorField === null ? [] : [stream.cursorField];
  const ownKey = primaryKeyPaths(stream, manyAccounts);
  const asked: string[] = [];
  if (mode === 'incremental' && cursorField !== undefined && cursorField.length > 0 && JSON.stringify(cursorField) !== JSON.stringify(ownCursor)) {
    asked.push(`cursor_field ${JSON.stringify(cursorField)}`);
  }
  // Not given: undefined, null or []. Any other shape ("id", {}) is a key asked for too, told as it is rather than passed over.
  const keyGiven = primaryKey !== undefined && primaryKey !== null && !(Array.isArray(primaryKey) && primaryKey.length === 0);
  if (keyGiven && JSON.stringify(primaryKey) !== JSON.stringify(ownKey)) {
    asked.push(`primary_key ${JSON.stringify(primaryKey)}`);
  }
  if (asked.length === 0) return undefined;
  return (
    `Stream "${stream.name}": the configured catalog asks for ${asked.join(' and ')}, but this source defines its own and uses them: ` +
    `cursor ${JSON.stringify(ownCursor)}, primary key ${JSON.stringify(ownKey)} (the state follows ${stream.cursorField ?? 'no cursor'}; ` +
    `records are keyed by ${ownKey.map((k) => k.join('.')).join(' and ')}). Set the connection to the source-defined cursor and primary key.`
  );
}

/**
 * Validate a configured catalog: known streams, supported sync modes, no
 * duplicates. A cursor_field or primary_key other than the source's own is
 * reported through `warn`, once per stream.
 */
export function parseConfiguredCatalog(
  input: unknown,
  warn: (message: string) => void = () => undefined,
  dropped: (stream: StreamDefinition) => ReadonlySet<string> = () => new Set(),
  manyAccounts = false,
): SelectedStream[] {
  // Parsed once a run: zod's compiled fast path (`new Function`) would cost more to build than it saves.
  const parsed = ConfiguredCatalog.safeParse(input, { jitless: true });
  if (!parsed.success) throw invalidCatalog('configured catalog', parsed.error.issues, 'Expected {"streams": [{"stream": {"name": ...}, "sync_mode": "incremental" | "full_refresh", ...}]}.');
  const seen = new Set<string>();
  const selected: SelectedStream[] = [];
  for (const [index, entry] of parsed.data.streams.entries()) {
    const name = entry.stream.name;
    const stream = findStream(name);
    if (!stream) {
      throw new ConfigError(
        `The configured catalog names stream "${name}", which this source does not have. Known streams: ${STREAMS.map((s) => s.name).join(', ')}.`,
        { field: `catalog.streams.${index}.stream.name` },
      );
    }
    if (seen.has(name)) throw new ConfigError(`The configured catalog lists stream "${name}" twice.`, { field: `catalog.streams.${index}.stream.name` });
    seen.add(name);
    let mode = entry.sync_mode as SyncMode;
    if (mode === 'incremental' && !stream.syncModes.includes(mode)) {
      // What a stream without a cursor does when a client asks every stream for incremental (PyAirbyte before its
      // fix, tools built on it), as the Python CDK does too: a full read, said once.
      warn(`Stream "${name}" has no cursor and is read in full every sync: the catalog's sync_mode "incremental" is read as full_refresh (supported: ${stream.syncModes.join(', ')}).`);
      mode = 'full_refresh';
    }
    if (!stream.syncModes.includes(mode)) {
      throw new ConfigError(
        `Stream "${name}" does not support sync_mode "${entry.sync_mode}"; supported: ${stream.syncModes.join(', ')}.`,
        { field: `catalog.streams.${index}.sync_mode` },
      );
    }
    const warning = ownKeysWarning(stream, mode, entry.cursor_field ?? undefined, entry.primary_key, manyAccounts);
    if (warning) warn(warning);
    // The schema the destination was told: records are checked against its types (built in when it declares no properties).
    const told = entry.stream.json_schema;
    const schema = isObject(told) && isObject(told.properties) && Object.keys(told.properties).length > 0 ? told : undefined;
    // Absent, null or without properties: the built-in schema, as documented. Any other shape is a broken catalog, said rather than passed over.
    const broken = told !== undefined && told !== null && (!isObject(told) || (told.properties !== undefined && !isObject(told.properties)));
    if (broken) {
      warn(
        `Stream "${name}": the configured catalog's json_schema is not a JSON Schema object with "properties" as an object (it holds ${JSON.stringify(told).slice(0, 80)}); ` +
          'the stream is read with all its fields and checked against the built-in schema. Refresh the source schema in the connection (or run discover again).',
      );
    }
    selected.push({ stream, mode, schema, fields: fieldSelection(stream, schema, dropped(stream)) });
  }
  if (selected.length === 0) throw new ConfigError('The configured catalog selects no stream.', { field: 'catalog.streams' });
  return selected;
}

/**
 * The WARN, once a stream, for each stream that gets tombstones (the option
 * on, the deletion log selected, the stream read incrementally) while the
 * schema the configured catalog told the destination does not declare the
 * tombstone column (a catalog discovered before the option was turned on):
 * Airbyte destinations delete a row only when its stream declares that
 * column, and would keep each deleted row as a row of nulls.
 */
export function undeclaredTombstoneColumns(streams: readonly SelectedStream[], tombstones: boolean): string[] {
  if (!streams.some(({ stream }) => isDeletionLog(stream))) return [];
  return streams
    .filter(({ stream, mode, schema }) => mode === 'incremental' && hasTombstones(stream, tombstones) && isObject(schema?.properties) && !Object.hasOwn(schema.properties, AIRBYTE_DELETED_AT))
    .map(
      ({ stream }) =>
        `Stream "${stream.name}": deletions_as_tombstones is on, but the configured catalog's schema of ${stream.name} does not declare ${AIRBYTE_DELETED_AT}; ` +
        `Airbyte destinations delete a row only when its stream declares that column, and would keep each deleted ${stream.name} row as a row of nulls instead. ` +
        `Refresh the source schema in the connection (or run discover again) so that it declares ${AIRBYTE_DELETED_AT}.`,
    );
}
