/**
 * JSON Schemas of the streams, generated from the zod resource schemas in the
 * shape Airbyte and Singer destinations read best: draft-07, no `$ref`,
 * `additionalProperties: true`, nullable fields as `type: ["null", T]`,
 * date-times as `format: date-time`, only `id` and the cursor field required.
 * The schema is neutral: each protocol face adds its own annotations (the
 * Airbyte face its `airbyte_type`) and names its own deleted-at column.
 */
import { isObject } from '../exact-json.js';
import { z } from 'zod';
import type { StreamDefinition } from '../streams.js';

export type JsonSchema = { [key: string]: unknown };

/** Turn one zod-generated property schema into the destination-friendly form. */
function normalizeProperty(input: JsonSchema): JsonSchema {
  const anyOf = input.anyOf;
  let base: JsonSchema = { ...input };
  let nullable = false;
  if (Array.isArray(anyOf)) {
    const variants = anyOf.filter(isObject);
    const nonNull = variants.filter((v) => v.type !== 'null');
    nullable = nonNull.length < variants.length;
    const { anyOf: _dropped, ...rest } = input;
    base = { ...(nonNull[0] ?? {}), ...rest };
  }
  const out: JsonSchema = {};
  const type = base.type;
  out.type = nullable && typeof type === 'string' ? ['null', type] : type;
  if (typeof base.description === 'string') out.description = base.description;
  if (base.format === 'date-time') out.format = 'date-time';
  if (type === 'array' && isObject(base.items)) out.items = normalizeProperty(base.items);
  return out;
}

interface RecordSchemaOptions {
  /** Declare this deleted-at column, a nullable date-time (tombstones are on for the stream). */
  readonly deletedAtColumn?: string | undefined;
  /**
   * The stream's record schema to start from (the built-in one merged with the
   * service's description, see schema-merge.ts); default: the built-in schema.
   */
  readonly base?: JsonSchema | undefined;
  /** Declare the `account` field first, required (a config with `accounts`). */
  readonly accountField?: boolean | undefined;
}

/** The field every record of a config with `accounts` carries: the name of its entry. */
export const ACCOUNT_FIELD = 'account';

/**
 * Where a record of a config with `accounts` keeps a field `account` the
 * service sent itself: `account` holds the entry's name (the key), and the
 * service's value must not be lost.
 */
export const SERVICE_ACCOUNT_FIELD = 'service_account';

/** A stream's primary key as key paths: [["id"]], or [["account"], ["id"]] with `accounts`. */
export function primaryKeyPaths(stream: StreamDefinition, manyAccounts: boolean): string[][] {
  return manyAccounts ? [[ACCOUNT_FIELD], [stream.primaryKey]] : [[stream.primaryKey]];
}

/** Each stream's record schema in the neutral form (no deleted-at column), by stream name. */
export type StreamSchemas = ReadonlyMap<string, JsonSchema>;

const builtIns = new Map<string, JsonSchema>();

/** The schema built into this release, from the stream's zod schema (the same object on every call: do not change it). */
export function builtInSchema(stream: StreamDefinition): JsonSchema {
  const known = builtIns.get(stream.name);
  if (known !== undefined) return known;
  const generated = z.toJSONSchema(stream.schema, { target: 'draft-07', io: 'output' }) as JsonSchema;
  const props = isObject(generated.properties) ? generated.properties : {};
  const properties: JsonSchema = {};
  for (const [name, prop] of Object.entries(props)) {
    if (isObject(prop)) properties[name] = normalizeProperty(prop);
  }
  const required = [stream.primaryKey, ...(stream.cursorField ? [stream.cursorField] : [])];
  const schema: JsonSchema = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    type: 'object',
    additionalProperties: true,
    required,
    properties,
  };
  builtIns.set(stream.name, schema);
  return schema;
}

/** The built-in schemas of these streams. */
export function builtInSchemas(streams: readonly StreamDefinition[]): StreamSchemas {
  return new Map(streams.map((s) => [s.name, builtInSchema(s)]));
}

/** The JSON Schema of one stream's records: the base schema (built-in by default), with the deleted-at column when asked. */
export function recordJsonSchema(stream: StreamDefinition, options: RecordSchemaOptions = {}): JsonSchema {
  const base = structuredClone(options.base ?? builtInSchema(stream));
  const properties: JsonSchema = isObject(base.properties) ? base.properties : {};
  if (options.deletedAtColumn) {
    properties[options.deletedAtColumn] = {
      type: ['null', 'string'],
      format: 'date-time',
      description: 'Set when the object was deleted in Data-Read (a tombstone); null otherwise',
    };
  }
  if (!options.accountField) return { ...base, properties };
  const account: JsonSchema = { type: 'string', description: 'The name of the config\'s accounts entry the record was read from (first part of the primary key)' };
  const required = Array.isArray(base.required) ? base.required.filter((r) => r !== ACCOUNT_FIELD) : [];
  const served = withServiceAccount({ ...base, properties });
  return { ...served, required: [ACCOUNT_FIELD, ...required], properties: { [ACCOUNT_FIELD]: account, ...(served.properties as JsonSchema) } };
}

/**
 * A schema as a config with `accounts` serves it: a field `account` the
 * service describes is declared as service_account (where the pipeline
 * moves its values: engine/pipeline.ts), `account` left for the entry's
 * name. The schema given is not changed.
 */
export function withServiceAccount(schema: JsonSchema): JsonSchema {
  const properties: JsonSchema = isObject(schema.properties) ? schema.properties : {};
  if (!(ACCOUNT_FIELD in properties)) return schema;
  const { [ACCOUNT_FIELD]: described, ...rest } = properties;
  const moved = SERVICE_ACCOUNT_FIELD in rest ? {} : { [SERVICE_ACCOUNT_FIELD]: described };
  return { ...schema, properties: { ...rest, ...moved } };
}


/** Whether a property schema lets a value be null (no type at all does). */
export function admitsNull(property: unknown): boolean {
  if (!isObject(property)) return true;
  const type = property.type;
  if (type === undefined) return true;
  return type === 'null' || (Array.isArray(type) && type.includes('null'));
}
