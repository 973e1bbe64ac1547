/**
 * Reading the service's own description (`/v1/openapi.json`, OpenAPI 3.x):
 * for each stream, the item schema of its list operation (GET <path> -> 200
 * -> application/json -> `data` -> `items`; the path as the API names it,
 * /v1/..., or after a `servers` URL that carries /v1), turned field by field
 * into the neutral JSON Schema form of json-schema.ts: a type (nullable as
 * `["null", T]`), description, format (date-time and date only: the formats
 * destinations type columns by), enum, and items/properties for arrays and
 * objects. `$ref`s (local ones, `#/...`) are resolved; `allOf` is merged;
 * nullability is read from OpenAPI 3.0's `nullable: true`, 3.1's
 * `type: [T, "null"]`, an `anyOf`/`oneOf` with a null variant and an enum that
 * holds null. Pure: the document comes in as parsed JSON, nothing is fetched.
 */
import { isObject } from '../exact-json.js';
import type { StreamDefinition } from '../streams.js';
import type { JsonSchema } from './json-schema.js';

/** What the description says about one stream's records. */
export interface DescribedStream {
  /** Each field the description types, in the description's order, in the neutral form. */
  readonly properties: ReadonlyMap<string, JsonSchema>;
  /** Fields the description lists without a type that can be read (left undeclared). */
  readonly untyped: readonly string[];
}

export type Description =
  | {
    readonly ok: true;
    /** The OpenAPI version the document declares, e.g. "3.1.0". */
    readonly version: string;
    /** Streams whose records the document describes. */
    readonly streams: ReadonlyMap<string, DescribedStream>;
    /** Streams it does not describe, each with the reason. */
    readonly undescribed: ReadonlyMap<string, string>;
  }
  | { readonly ok: false; readonly reason: string };

type Json = { [key: string]: unknown };

/** How deep references and nesting are followed (a cycle or an absurd document stops here). */
const MAX_DEPTH = 24;
/**
 * Schemas expanded (flatten) for one document, at most. The emulator's
 * document takes about 300; $refs that fan out (an allOf of three $refs to
 * the next level, and so on) multiply at each level, and within MAX_DEPTH
 * would take billions: the document is then refused, not read for ever.
 */
const MAX_STEPS = 100_000;

/** The document asks for more than MAX_STEPS expansions (caught by readServiceDescription). */
class DescriptionTooIntricate extends Error {
  constructor() {
    super(`its schemas are too intricate to read: following their $ref, allOf, anyOf and oneOf takes more than ${MAX_STEPS} steps`);
    this.name = 'DescriptionTooIntricate';
  }
}
/** The JSON Schema types a destination can type a column by. */
const TYPES = ['string', 'integer', 'number', 'boolean', 'object', 'array'] as const;
type BaseType = (typeof TYPES)[number];
const KEPT_FORMATS = new Set(['date-time', 'date']);

class Reader {
  private readonly doc: Json;
  private steps = 0;

  constructor(doc: Json) {
    this.doc = doc;
  }

  /** Follow `$ref` (local JSON pointers) until a schema without one; sibling keywords (3.1) win over the target's. */
  resolve(node: unknown, depth = 0): Json | undefined {
    if (!isObject(node)) return undefined;
    const ref = node.$ref;
    if (typeof ref !== 'string') return node;
    if (depth >= MAX_DEPTH) return undefined;
    const target = this.pointer(ref);
    const resolved = this.resolve(target, depth + 1);
    if (resolved === undefined) return undefined;
    const { $ref: _ref, ...siblings } = node;
    return { ...resolved, ...siblings };
  }

  private pointer(ref: string): unknown {
    if (!ref.startsWith('#/')) return undefined;
    let node: unknown = this.doc;
    for (const raw of ref.slice(2).split('/')) {
      const decoded = decodeText(raw);
      // Not valid percent-encoding ("#/components/schemas/100%"): a reference that cannot be followed.
      if (decoded === undefined) return undefined;
      const part = decoded.replaceAll('~1', '/').replaceAll('~0', '~');
      if (!isObject(node) || !Object.hasOwn(node, part)) return undefined;
      node = node[part];
    }
    return node;
  }

  /** A schema with its refs resolved and its allOf merged into one object (keywords of later members win; properties merge). */
  flatten(node: unknown, depth = 0): Json | undefined {
    this.steps += 1;
    if (this.steps > MAX_STEPS) throw new DescriptionTooIntricate();
    const schema = this.resolve(node, depth);
    if (schema === undefined || depth >= MAX_DEPTH) return undefined;
    const { allOf, ...own } = schema;
    if (!Array.isArray(allOf)) return schema;
    let merged: Json = {};
    for (const member of allOf) {
      const flat = this.flatten(member, depth + 1);
      if (flat !== undefined) merged = mergeFlat(merged, flat);
    }
    return mergeFlat(merged, own);
  }

  /** The properties of an object schema (allOf merged), each flattened. */
  properties(node: unknown, depth = 0): Map<string, Json> | undefined {
    const schema = this.flatten(node, depth);
    if (schema === undefined || !isObject(schema.properties)) return undefined;
    const out = new Map<string, Json>();
    // A field whose reference cannot be followed stays listed, without a type.
    for (const [name, prop] of Object.entries(schema.properties)) out.set(name, this.flatten(prop, depth + 1) ?? {});
    return out;
  }

  /** One field's schema in the neutral form; undefined when no type can be read from it. */
  neutral(node: unknown, depth = 0): JsonSchema | undefined {
    const schema = this.flatten(node, depth);
    if (schema === undefined || depth >= MAX_DEPTH) return undefined;
    let nullable = schema.nullable === true;
    let base: Json = schema;
    const variants = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined;
    if (variants !== undefined) {
      const flat = variants.map((v) => this.flatten(v, depth + 1)).filter((v): v is Json => v !== undefined);
      const nonNull = flat.filter((v) => !isNullSchema(v));
      nullable ||= nonNull.length < flat.length;
      const { anyOf: _a, oneOf: _o, ...outer } = schema;
      // One real variant: it is the type (the outer keywords, a description, win). Several: a union of their types.
      base = nonNull.length === 1 ? { ...(nonNull[0] as Json), ...outer } : { ...outer, type: unionTypes(nonNull) };
    }
    const declared = typeList(base.type);
    if (declared.includes('null')) nullable = true;
    const enumValues = Array.isArray(base.enum) ? base.enum : base.const !== undefined ? [base.const] : undefined;
    if (enumValues?.includes(null)) nullable = true;
    let types = declared.filter((t): t is BaseType => (TYPES as readonly string[]).includes(t));
    if (types.length === 0) types = inferTypes(base, enumValues);
    if (types.length === 0) return undefined;

    const out: JsonSchema = {};
    const [only] = types;
    if (types.length === 1 && only !== undefined) out.type = nullable ? ['null', only] : only;
    else out.type = nullable ? ['null', ...types] : [...types];
    if (typeof base.description === 'string' && base.description !== '') out.description = base.description;
    if (types.includes('string') && typeof base.format === 'string' && KEPT_FORMATS.has(base.format)) out.format = base.format;
    if (enumValues !== undefined && enumValues.length > 0 && enumValues.every(isPrimitive)) {
      const values = enumValues.filter((v) => v !== null);
      out.enum = nullable ? [...values, null] : values;
    }
    if (types.includes('array') && base.items !== undefined) {
      const items = this.neutral(base.items, depth + 1);
      if (items !== undefined) out.items = items;
    }
    if (types.includes('object')) {
      const props = this.properties(base, depth + 1);
      if (props !== undefined && props.size > 0) {
        const nested: JsonSchema = {};
        for (const [name, prop] of props) {
          const n = this.neutral(prop, depth + 2);
          if (n !== undefined) nested[name] = n;
        }
        out.properties = nested;
      }
    }
    return out;
  }
}

/** A part of a URI fragment, percent-decoded; undefined when its escapes are not valid UTF-8 percent-encoding. */
function decodeText(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

function isNullSchema(schema: Json): boolean {
  return schema.type === 'null' || (Array.isArray(schema.enum) && schema.enum.length === 1 && schema.enum[0] === null);
}

function typeList(type: unknown): string[] {
  if (typeof type === 'string') return [type];
  return Array.isArray(type) ? type.filter((t): t is string => typeof t === 'string') : [];
}

function unionTypes(variants: readonly Json[]): string[] {
  const out: string[] = [];
  for (const v of variants) for (const t of typeList(v.type)) if (!out.includes(t)) out.push(t);
  return out;
}

function isPrimitive(v: unknown): boolean {
  return v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

/** A type from what else the schema says, when it names none (an enum's values, a date-time format, properties, items). */
function inferTypes(schema: Json, enumValues: readonly unknown[] | undefined): BaseType[] {
  if (enumValues !== undefined) {
    const kinds = new Set<string>(enumValues.filter((v) => v !== null).map((v) => (typeof v === 'number' ? (Number.isInteger(v) ? 'integer' : 'number') : typeof v)));
    const types = [...kinds].filter((t): t is BaseType => (TYPES as readonly string[]).includes(t));
    return types.includes('number') ? types.filter((t) => t !== 'integer') : types;
  }
  if (typeof schema.format === 'string' && KEPT_FORMATS.has(schema.format)) return ['string'];
  if (isObject(schema.properties)) return ['object'];
  if (schema.items !== undefined) return ['array'];
  return [];
}

/** Merge two flattened schemas (allOf): keywords of `b` win, except properties (merged by name), items (merged) and type (intersected). */
function mergeFlat(a: Json, b: Json): Json {
  const out: Json = { ...a, ...b };
  if (isObject(a.properties) && isObject(b.properties)) {
    const props: Json = { ...a.properties };
    for (const [name, schema] of Object.entries(b.properties)) {
      const before = props[name];
      props[name] = isObject(before) && isObject(schema) ? { allOf: [before, schema] } : schema;
    }
    out.properties = props;
  }
  if (isObject(a.items) && isObject(b.items)) out.items = { allOf: [a.items, b.items] };
  if (a.type !== undefined && b.type !== undefined) {
    const both = typeList(a.type).filter((t) => typeList(b.type).includes(t));
    out.type = both.length === 1 ? both[0] : both;
  }
  if (Array.isArray(a.required) || Array.isArray(b.required)) {
    out.required = [...new Set([...(Array.isArray(a.required) ? a.required : []), ...(Array.isArray(b.required) ? b.required : [])])];
  }
  return out;
}

/** The media type object of a JSON response: application/json, else the first `+json` or `json` one. */
function jsonContent(content: unknown): Json | undefined {
  if (!isObject(content)) return undefined;
  const key = Object.hasOwn(content, 'application/json') ? 'application/json' : Object.keys(content).find((k) => /json/i.test(k));
  const media = key === undefined ? undefined : content[key];
  return isObject(media) ? media : undefined;
}

/**
 * The path prefixes the document's `servers` carry ("/v1" of
 * https://api.example.com/v1): OpenAPI paths are written after the server
 * URL, so a description may list /v1/contacts as /contacts.
 */
function serverPrefixes(doc: Json): string[] {
  if (!Array.isArray(doc.servers)) return [];
  const out: string[] = [];
  for (const server of doc.servers) {
    const url = isObject(server) ? server.url : undefined;
    if (typeof url !== 'string') continue;
    // Relative ("/v1") or absolute, with {variables} in the scheme or host: only the path matters.
    const path = (/^[^/]*:\/\/[^/]*(\/.*)?$/.exec(url)?.[1] ?? (url.startsWith('/') ? url : '')).replace(/[?#].*$/, '').replace(/\/+$/, '');
    if (path !== '' && !out.includes(path)) out.push(path);
  }
  return out;
}

/** The path item of `path`: listed as is, or after a server URL that carries its prefix. */
function pathItem(paths: Json, prefixes: readonly string[], path: string): unknown {
  if (Object.hasOwn(paths, path)) return paths[path];
  for (const prefix of prefixes) {
    const rest = path.startsWith(`${prefix}/`) ? path.slice(prefix.length) : undefined;
    if (rest !== undefined && Object.hasOwn(paths, rest)) return paths[rest];
  }
  return undefined;
}

/** One stream's item schema from its list operation, or why it cannot be found. */
function describeStream(reader: Reader, paths: Json, prefixes: readonly string[], stream: StreamDefinition): DescribedStream | string {
  const item = reader.resolve(pathItem(paths, prefixes, stream.path));
  if (item === undefined) return `no path ${stream.path}`;
  const get = reader.resolve(item.get);
  if (get === undefined) return `no GET operation at ${stream.path}`;
  const responses = reader.resolve(get.responses);
  const ok = responses === undefined ? undefined : reader.resolve(responses['200'] ?? responses['2XX'] ?? responses['2xx']);
  if (ok === undefined) return `GET ${stream.path} has no 200 response`;
  const media = jsonContent(ok.content);
  if (media === undefined) return `the 200 response of GET ${stream.path} has no JSON content`;
  const envelope = reader.properties(media.schema);
  const data = envelope?.get('data');
  if (data === undefined) return `the 200 response of GET ${stream.path} has no "data" property`;
  const fields = reader.properties(data.items);
  if (fields === undefined || fields.size === 0) return `the "data" items of GET ${stream.path} describe no properties`;
  const properties = new Map<string, JsonSchema>();
  const untyped: string[] = [];
  for (const [name, schema] of fields) {
    const neutral = reader.neutral(schema);
    if (neutral === undefined) untyped.push(name);
    else properties.set(name, neutral);
  }
  return { properties, untyped };
}

/** What an OpenAPI 3.x document says about the streams' records; `ok: false` with the reason when it says nothing usable. */
export function readServiceDescription(doc: unknown, streams: readonly StreamDefinition[]): Description {
  if (!isObject(doc)) return { ok: false, reason: `the document is ${Array.isArray(doc) ? 'an array' : doc === null ? 'null' : `a ${typeof doc}`}, not an OpenAPI object` };
  const version = doc.openapi;
  if (typeof version !== 'string') {
    return {
      ok: false,
      reason: typeof doc.swagger === 'string'
        ? `it is a Swagger ${doc.swagger} document, not OpenAPI 3.x`
        : 'it has no "openapi" version field: not an OpenAPI 3.x document',
    };
  }
  if (!/^3\.\d+(\.\d+)?/.test(version)) return { ok: false, reason: `it declares OpenAPI ${version.slice(0, 20)}, not 3.x` };
  if (!isObject(doc.paths)) return { ok: false, reason: 'its shape is not the expected one: it has no "paths" object' };
  const reader = new Reader(doc);
  const prefixes = serverPrefixes(doc);
  const described = new Map<string, DescribedStream>();
  const undescribed = new Map<string, string>();
  try {
    for (const stream of streams) {
      const result = describeStream(reader, doc.paths, prefixes, stream);
      if (typeof result === 'string') undescribed.set(stream.name, result);
      else described.set(stream.name, result);
    }
  } catch (err) {
    if (err instanceof DescriptionTooIntricate) return { ok: false, reason: err.message };
    throw err;
  }
  if (described.size === 0) {
    const first = [...undescribed.values()][0] ?? 'no stream';
    return { ok: false, reason: `its shape is not the expected one: it describes the records of no stream (${first})` };
  }
  return { ok: true, version, streams: described, undescribed };
}
