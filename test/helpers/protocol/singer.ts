/**
 * The Singer message checker: a tap's stdout, line by line, by the rules
 * Singer targets rely on:
 * - every non-blank line is a JSON object of a known type;
 * - SCHEMA has stream, schema and key_properties (a list of strings); key and
 *   bookmark properties are top-level properties of the schema, and the
 *   schema compiles (draft-07);
 * - RECORD follows a SCHEMA for its stream, validates against it (with
 *   formats, e.g. date-time), has every key property non-null, and its
 *   time_extracted, when given, is an RFC 3339 instant;
 * - STATE has a value of the connector's shape: {"bookmarks": {stream: state},
 *   "currently_syncing": null | stream}, each bookmark as stream-state.ts says.
 * Warnings (allowed, but worth knowing): duplicate key records in one stream;
 * a stream that does not end with a STATE (targets echo the last STATE only
 * when no RECORD follows it).
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { isInstant, streamStateProblems } from './stream-state.js';
import { type CheckSummary, increment, isObject, linesOf, summarize } from './summary.js';

const KNOWN = new Set(['SCHEMA', 'RECORD', 'STATE', 'ACTIVATE_VERSION', 'BATCH']);

// ajv-formats is CommonJS: under nodenext its default import is the module object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

interface StreamSchema {
  validate: ValidateFunction;
  keys: string[];
}

function newAjv(): Ajv {
  // Draft-07 as targets read it: unknown keywords are a schema error; union types and optional required lists are fine.
  const ajv = new Ajv({ allErrors: true, verbose: true, strictSchema: true, strictTypes: false, strictTuples: false, strictRequired: false, logger: false });
  addFormats(ajv);
  return ajv;
}

/** One validation error as a line of the summary: "<value> is not of type 'null', 'integer' at field/sub". */
function describe(e: ErrorObject): string {
  const at = e.instancePath.replace(/^\//, '');
  if (e.keyword === 'type') {
    const types = ([] as unknown[]).concat((e.params as { type: unknown }).type).map((t) => `'${String(t)}'`);
    return `${JSON.stringify(e.data)} is not of type ${types.join(', ')} at ${at}`;
  }
  return `${JSON.stringify(e.data)} ${e.message ?? 'is invalid'} at ${at}`;
}

function stringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

/**
 * The validator of each stream schema already compiled, by the schema's JSON text. Compiling a tap's five schemas took
 * some 50 ms of CPU at each check, and the tests check the same few schemas again and again. Each is compiled by an
 * Ajv of its own, as it was by one per check: no schema sees another (an `$id` given twice is no conflict).
 */
const compiled = new Map<string, ValidateFunction>();

function validatorOf(schema: Record<string, unknown>): ValidateFunction {
  const text = JSON.stringify(schema);
  let validate = compiled.get(text);
  if (validate === undefined) {
    validate = newAjv().compile(schema);
    compiled.set(text, validate);
  }
  return validate;
}

/** Check a tap's whole stdout. */
export function checkSinger(stdout: string): CheckSummary {
  const errors: string[] = [];
  const warnings: string[] = [];
  const counts: Record<string, number> = {};
  const schemas = new Map<string, StreamSchema>();
  const keysSeen = new Map<string, Map<string, number>>();
  let lastType: string | undefined;

  const onSchema = (n: number, m: Record<string, unknown>): void => {
    for (const field of ['stream', 'schema', 'key_properties']) if (!(field in m)) errors.push(`line ${n}: SCHEMA missing ${field}`);
    const stream = String(m.stream);
    const schema = isObject(m.schema) ? m.schema : {};
    if ('schema' in m && !isObject(m.schema)) errors.push(`line ${n}: SCHEMA of ${stream}: schema must be an object`);
    const properties = isObject(schema.properties) ? schema.properties : {};
    const keys = m.key_properties ?? [];
    const bookmarks = m.bookmark_properties ?? [];
    if (!stringList(keys)) errors.push(`line ${n}: key_properties must be a list of property names`);
    if (!stringList(bookmarks)) errors.push(`line ${n}: bookmark_properties must be a list of property names`);
    const named = [...(stringList(keys) ? keys : []), ...(stringList(bookmarks) ? bookmarks : [])];
    for (const k of named) if (!(k in properties)) errors.push(`line ${n}: "${k}" not a top-level property of ${stream}`);
    try {
      schemas.set(stream, { validate: validatorOf(schema), keys: stringList(keys) ? keys : [] });
    } catch (e) {
      errors.push(`line ${n}: the schema of ${stream} does not compile: ${(e as Error).message}`);
    }
  };

  const onRecord = (n: number, m: Record<string, unknown>): void => {
    const { stream, record } = m;
    if (typeof stream !== 'string' || !isObject(record)) {
      errors.push(`line ${n}: RECORD needs stream and object record`);
      return;
    }
    const schema = schemas.get(stream);
    if (schema === undefined) {
      errors.push(`line ${n}: RECORD for "${stream}" before its SCHEMA`);
      return;
    }
    if (!schema.validate(record)) for (const e of schema.validate.errors ?? []) errors.push(`line ${n}: ${stream}: ${describe(e)}`);
    const key = schema.keys.map((k) => record[k]);
    if (key.some((v) => v === null || v === undefined)) errors.push(`line ${n}: ${stream}: null or missing key ${JSON.stringify(Object.fromEntries(schema.keys.map((k) => [k, record[k] ?? null])))}`);
    if (schema.keys.length > 0) {
      const seen = keysSeen.get(stream) ?? new Map<string, number>();
      keysSeen.set(stream, seen);
      const id = JSON.stringify(key);
      seen.set(id, (seen.get(id) ?? 0) + 1);
    }
    if ('time_extracted' in m && !isInstant(m.time_extracted)) errors.push(`line ${n}: bad time_extracted ${JSON.stringify(m.time_extracted)}`);
  };

  const onState = (n: number, m: Record<string, unknown>): void => {
    if (!('value' in m)) {
      errors.push(`line ${n}: STATE missing value`);
      return;
    }
    errors.push(...singerStateProblems(`line ${n}: STATE`, m.value));
  };

  for (const { n, text } of linesOf(stdout)) {
    if (text.trim() === '') continue;
    let m: unknown;
    try {
      m = JSON.parse(text);
    } catch (e) {
      errors.push(`line ${n}: not JSON (${(e as Error).message})`);
      continue;
    }
    if (!isObject(m)) {
      errors.push(`line ${n}: not a JSON object`);
      continue;
    }
    const type = typeof m.type === 'string' ? m.type.toUpperCase() : '';
    if (!KNOWN.has(type)) {
      errors.push(`line ${n}: unknown or missing type ${JSON.stringify(m.type)}`);
      continue;
    }
    increment(counts, type);
    lastType = type;
    if (type === 'SCHEMA') onSchema(n, m);
    else if (type === 'RECORD') onRecord(n, m);
    else if (type === 'STATE') onState(n, m);
  }
  for (const [stream, seen] of keysSeen) {
    let duplicates = 0;
    for (const count of seen.values()) if (count > 1) duplicates += count - 1;
    if (duplicates > 0) warnings.push(`${stream}: ${duplicates} duplicate primary-key record(s)`);
  }
  if (lastType !== 'STATE') warnings.push('last message is not a STATE (targets echo nothing / lose progress)');
  return summarize(errors, { counts, warnings });
}

/** The problems of a STATE value: {"bookmarks": {stream: state}, "currently_syncing": null | name}. */
export function singerStateProblems(where: string, value: unknown): string[] {
  if (!isObject(value)) return [`${where}: value must be an object {"bookmarks": {...}}, got ${JSON.stringify(value)}`];
  const problems: string[] = [];
  if (!isObject(value.bookmarks)) problems.push(`${where}: value.bookmarks must be an object of per-stream states`);
  else for (const [stream, state] of Object.entries(value.bookmarks)) problems.push(...streamStateProblems(`${where}: bookmark of "${stream}"`, state));
  if ('currently_syncing' in value && value.currently_syncing !== null && typeof value.currently_syncing !== 'string') {
    problems.push(`${where}: currently_syncing must be null or a stream name`);
  }
  return problems;
}
