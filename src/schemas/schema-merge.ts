/**
 * Merging a stream's built-in schema with what the service's description
 * says about its records. Merge, never lose:
 * - a field only the service describes is added, as described;
 * - a field only the built-in schema has (the service no longer describes it)
 *   is kept, made nullable (the primary key and the cursor stay non-null);
 * - a field both have keeps the built-in's guarantees: the primary key and the
 *   cursor stay exactly as built in (required, non-null, typed as the
 *   connector needs them); any other field takes the service's type, format
 *   and enum, and stays nullable when either side says it may be null;
 *   a format the service leaves out is kept from the built-in schema;
 * - types that differ (the base types or the formats) are a conflict: the
 *   built-in wins for the key and the cursor, the service for the rest, and
 *   the caller warns about each.
 * Field order: the built-in fields first, then the added ones in the
 * description's order. Pure data in, data out.
 */
import { isObject } from '../exact-json.js';
import type { StreamDefinition } from '../streams.js';
import type { JsonSchema } from './json-schema.js';
import type { DescribedStream } from './service-description.js';

interface TypeConflict {
  readonly field: string;
  /** The types as a person reads them: "integer or null", "string (date-time)". */
  readonly builtIn: string;
  readonly service: string;
  /** Whose type the merged schema declares. */
  readonly kept: 'built-in' | 'service';
  /** Why the built-in type was kept: the field is the stream's primary key or cursor. */
  readonly role?: 'primary key' | 'cursor';
}

export interface StreamMerge {
  readonly stream: string;
  /** The merged record schema, in the neutral form of json-schema.ts (no deleted-at column). */
  readonly schema: JsonSchema;
  /** Fields the service describes that the built-in schema lacks (now declared). */
  readonly added: readonly string[];
  /** Built-in fields the service no longer describes (kept, nullable). */
  readonly missing: readonly string[];
  readonly conflicts: readonly TypeConflict[];
  /** Fields the service lists without a type that can be read (not declared unless built in). */
  readonly untyped: readonly string[];
}

function types(prop: JsonSchema): string[] {
  const t = prop.type;
  if (typeof t === 'string') return [t];
  return Array.isArray(t) ? t.filter((x): x is string => typeof x === 'string') : [];
}

const baseTypes = (prop: JsonSchema): string[] => types(prop).filter((t) => t !== 'null').sort();
const isNullable = (prop: JsonSchema): boolean => types(prop).includes('null');
const formatOf = (prop: JsonSchema): string | undefined => (typeof prop.format === 'string' ? prop.format : undefined);

/** "integer or null", "string (date-time)". */
export function typeText(prop: JsonSchema): string {
  const base = baseTypes(prop).join(' or ') || 'untyped';
  const format = formatOf(prop);
  return `${base}${format === undefined ? '' : ` (${format})`}${isNullable(prop) ? ' or null' : ''}`;
}

/** The same property, allowing null (in its type and, when it has one, its enum). */
export function withNull(prop: JsonSchema): JsonSchema {
  const base = baseTypes(prop);
  const ordered = types(prop).filter((t) => t !== 'null');
  const type = base.length === 1 ? ['null', ordered[0]] : ['null', ...ordered];
  const out: JsonSchema = { ...prop, type };
  if (Array.isArray(prop.enum) && !prop.enum.includes(null)) out.enum = [...prop.enum, null];
  return out;
}

/** The same property, its nullability set as given. */
function nullableAs(prop: JsonSchema, nullable: boolean): JsonSchema {
  if (nullable) return isNullable(prop) ? prop : withNull(prop);
  if (!isNullable(prop)) return prop;
  const base = types(prop).filter((t) => t !== 'null');
  const out: JsonSchema = { ...prop, type: base.length === 1 ? base[0] : base };
  if (Array.isArray(prop.enum)) out.enum = prop.enum.filter((v) => v !== null);
  return out;
}

function sameTypes(a: JsonSchema, b: JsonSchema): boolean {
  const [x, y] = [baseTypes(a), baseTypes(b)];
  if (x.length !== y.length || x.some((t, i) => t !== y[i])) return false;
  const [fa, fb] = [formatOf(a), formatOf(b)];
  return fa === undefined || fb === undefined || fa === fb;
}

/** Keywords in a stable order: type, description, format, enum, items, properties, then anything else. */
function ordered(prop: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const key of ['type', 'description', 'format', 'enum', 'items', 'properties']) if (prop[key] !== undefined) out[key] = prop[key];
  for (const [key, value] of Object.entries(prop)) if (!(key in out) && value !== undefined) out[key] = value;
  return out;
}

/** A field both sides describe, not the key or the cursor: the service's type, nullable when either side says so. */
function mergeField(builtIn: JsonSchema, service: JsonSchema): JsonSchema {
  const nullable = isNullable(builtIn) || isNullable(service);
  const format = formatOf(service) ?? (sameTypes(builtIn, service) ? formatOf(builtIn) : undefined);
  const merged: JsonSchema = {
    ...service,
    description: service.description ?? builtIn.description,
    format,
  };
  if (merged.items === undefined && builtIn.items !== undefined && sameTypes(builtIn, service)) merged.items = builtIn.items;
  return ordered(nullableAs(merged, nullable));
}

/** Merge one stream's built-in schema (the neutral form) with the service's description of its records. */
export function mergeStreamSchema(stream: StreamDefinition, builtIn: JsonSchema, described: DescribedStream): StreamMerge {
  const builtInProps = isObject(builtIn.properties) ? builtIn.properties : {};
  const properties: JsonSchema = {};
  const missing: string[] = [];
  const conflicts: TypeConflict[] = [];
  const roleOf = (field: string): TypeConflict['role'] =>
    field === stream.primaryKey ? 'primary key' : field === stream.cursorField ? 'cursor' : undefined;

  for (const [field, raw] of Object.entries(builtInProps)) {
    if (!isObject(raw)) continue;
    const service = described.properties.get(field);
    const role = roleOf(field);
    if (service === undefined) {
      // Listed without a readable type: described, but nothing to merge. Not listed at all: kept, nullable unless key or cursor.
      if (!described.untyped.includes(field)) missing.push(field);
      properties[field] = role !== undefined || described.untyped.includes(field) ? raw : withNull(raw);
      continue;
    }
    const differ = !sameTypes(raw, service);
    if (role !== undefined) {
      if (differ) conflicts.push({ field, builtIn: typeText(raw), service: typeText(service), kept: 'built-in', role });
      properties[field] = ordered({ ...raw, description: service.description ?? raw.description });
      continue;
    }
    if (differ) conflicts.push({ field, builtIn: typeText(raw), service: typeText(service), kept: 'service' });
    properties[field] = mergeField(raw, service);
  }
  const added: string[] = [];
  for (const [field, service] of described.properties) {
    if (Object.hasOwn(properties, field)) continue;
    properties[field] = ordered(service);
    added.push(field);
  }
  return {
    stream: stream.name,
    schema: { ...builtIn, properties },
    added,
    missing,
    conflicts,
    untyped: described.untyped.filter((f) => !Object.hasOwn(builtInProps, f)),
  };
}
