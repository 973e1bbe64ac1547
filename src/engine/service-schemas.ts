/**
 * The stream schemas a command declares, made from what was fetched: the
 * built-in ones merged with the service's own description (`GET
 * /v1/openapi.json`), or the built-in ones alone when `use_service_schema`
 * is false or the description cannot be used (one WARN saying why). Pure:
 * the fetching (one request with the client's auth, pacing and retries)
 * lives with the connection, in connect.ts. Also the drift line of `check`.
 */
import { andList as list } from '../errors.js';
import type { StreamSchemas } from '../schemas/json-schema.js';
import { builtInSchema, builtInSchemas } from '../schemas/json-schema.js';
import { mergeStreamSchema, type StreamMerge } from '../schemas/schema-merge.js';
import { readServiceDescription } from '../schemas/service-description.js';
import { findStream, type StreamDefinition } from '../streams.js';

interface SchemaNote {
  readonly level: 'INFO' | 'WARN';
  readonly message: string;
}

type SchemaSource =
  /** The built-in schemas merged with the service's description. */
  | 'service'
  /** use_service_schema is false: the built-in schemas, nothing asked. */
  | 'pinned'
  /** The description could not be used: the built-in schemas. */
  | 'fallback';

export interface LoadedSchemas {
  readonly schemas: StreamSchemas;
  readonly source: SchemaSource;
  /** What to tell the user (log lines, in order). */
  readonly notes: readonly SchemaNote[];
  /** Per stream the description describes: what the merge did. */
  readonly merges: ReadonlyMap<string, StreamMerge>;
  /** Streams the description does not describe, each with the reason (built-in schema used). */
  readonly undescribed: ReadonlyMap<string, string>;
  /** Why the description could not be used (source 'fallback'). */
  readonly reason?: string;
}

/** Where the service serves its description, as log lines name it. */
export const WHERE = 'GET /v1/openapi.json';

/** "1 field", "2 fields". */
const fields = (n: number): string => `${n} field${n === 1 ? '' : 's'}`;

/** The built-in schemas, made when first asked for (check only needs the reason). */
function builtIn(streams: readonly StreamDefinition[], source: 'pinned' | 'fallback', notes: readonly SchemaNote[], reason?: string): LoadedSchemas {
  let schemas: StreamSchemas | undefined;
  return {
    get schemas(): StreamSchemas {
      schemas ??= builtInSchemas(streams);
      return schemas;
    },
    source,
    notes,
    merges: new Map(),
    undescribed: new Map(),
    ...(reason === undefined ? {} : { reason }),
  };
}

/** The built-in schemas, because the description cannot be used (`reason`, the end of a sentence): one WARN. */
export function fallbackSchemas(streams: readonly StreamDefinition[], reason: string): LoadedSchemas {
  return builtIn(streams, 'fallback', [{
    level: 'WARN',
    message:
      `Using the built-in stream schemas: the service's description cannot be used. ${reason} ` +
      'Fields the service added since this release are not declared (records still carry them, as received). ' +
      'Set use_service_schema to false to skip this request.',
  }], reason);
}

/** The notes of a successful merge: what was added (INFO), and one WARN per stream about fields gone or typed differently. */
function mergeNotes(version: string, merges: ReadonlyMap<string, StreamMerge>, undescribed: ReadonlyMap<string, string>): SchemaNote[] {
  const notes: SchemaNote[] = [];
  const added = [...merges.values()].filter((m) => m.added.length > 0).map((m) => `${m.stream} + ${m.added.join(', ')}`);
  const untyped = [...merges.values()].flatMap((m) => m.untyped.map((f) => `${m.stream}.${f}`));
  notes.push({
    level: 'INFO',
    message:
      `Stream schemas: the built-in ones merged with the service's description (OpenAPI ${version}, ${WHERE}): ` +
      `${added.length > 0 ? `fields added: ${added.join('; ')}` : 'no field added'}.` +
      (untyped.length > 0 ? ` Listed without a type that can be read, left undeclared: ${list(untyped)}.` : ''),
  });
  for (const m of merges.values()) {
    if (m.missing.length > 0) {
      notes.push({
        level: 'WARN',
        message:
          `${m.stream}: the service's description no longer lists ${list(m.missing)}; ` +
          `${m.missing.length === 1 ? 'it stays' : 'they stay'} declared (nullable), so no destination column is lost.`,
      });
    }
    if (m.conflicts.length > 0) {
      const parts = m.conflicts.map((c) =>
        c.kept === 'built-in'
          ? `${c.field} is ${c.service} in the description, ${c.builtIn} built in: kept as built in (the stream's ${c.role ?? 'key'})`
          : `${c.field} is ${c.service} in the description, ${c.builtIn} built in: declared as the service describes it`,
      );
      notes.push({ level: 'WARN', message: `${m.stream}: types differ: ${parts.join('; ')}.` });
    }
  }
  const required = [...undescribed].filter(([name]) => findStream(name)?.optional !== true);
  if (required.length > 0) {
    notes.push({
      level: 'WARN',
      message: `The service's description does not describe ${list(required.map(([name, why]) => `${name} (${why})`))}: built-in schema used.`,
    });
  }
  return notes;
}

/** The built-in schemas alone: use_service_schema is false, nothing asked. */
export function pinnedSchemas(streams: readonly StreamDefinition[]): LoadedSchemas {
  return builtIn(streams, 'pinned', []);
}

/** Merge the service's description (the parsed body of GET /v1/openapi.json) into the built-in schemas, or fall back to them saying why. */
export function mergeDescription(doc: unknown, streams: readonly StreamDefinition[]): LoadedSchemas {
  const description = readServiceDescription(doc, streams);
  if (!description.ok) return fallbackSchemas(streams, `${WHERE} answered, but ${description.reason}.`);
  const schemas = new Map(builtInSchemas(streams));
  const merges = new Map<string, StreamMerge>();
  for (const stream of streams) {
    const described = description.streams.get(stream.name);
    if (described === undefined) continue;
    const merge = mergeStreamSchema(stream, builtInSchema(stream), described);
    merges.set(stream.name, merge);
    schemas.set(stream.name, merge.schema);
  }
  return {
    schemas,
    source: 'service',
    merges,
    undescribed: description.undescribed,
    notes: mergeNotes(description.version, merges, description.undescribed),
  };
}

/**
 * `check`'s one line on drift between the built-in schemas and the service's
 * description: fields the service describes that the built-in schemas lack
 * (INFO: discover declares them), and the other way round or typed
 * differently (WARN), or why the description cannot be used (WARN).
 */
export function driftNote(loaded: LoadedSchemas, pinned: boolean): SchemaNote {
  const pin = pinned ? ' use_service_schema is false: discover declares the built-in schemas only.' : '';
  if (loaded.source !== 'service') {
    return { level: 'WARN', message: `Schema drift unknown: the service's description cannot be used. ${loaded.reason ?? ''}${pin}`.replace(/ +$/, '') };
  }
  const merges = [...loaded.merges.values()];
  const added = merges.flatMap((m) => m.added.map((f) => `${m.stream}.${f}`));
  const missing = merges.flatMap((m) => m.missing.map((f) => `${m.stream}.${f}`));
  const conflicts = merges.flatMap((m) => m.conflicts.map((c) => `${m.stream}.${c.field} (built in ${c.builtIn}, described ${c.service})`));
  if (added.length + missing.length + conflicts.length === 0) {
    return { level: 'INFO', message: `Schema drift: none; the service's description declares the fields of the built-in schemas.${pin}` };
  }
  const parts: string[] = [];
  if (added.length > 0) parts.push(`the service describes ${fields(added.length)} the built-in schemas lack: ${list(added)}${pinned ? '' : ' (discover declares them)'}`);
  if (missing.length > 0) parts.push(`the built-in schemas declare ${fields(missing.length)} the service no longer describes: ${list(missing)}`);
  if (conflicts.length > 0) parts.push(`${fields(conflicts.length)} typed differently: ${list(conflicts)}`);
  return { level: missing.length + conflicts.length > 0 ? 'WARN' : 'INFO', message: `Schema drift: ${parts.join('; ')}.${pin}` };
}
