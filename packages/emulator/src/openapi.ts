/**
 * The OpenAPI 3.1 description of the Data-Read API, with the record schemas
 * generated from the zod schemas the emulator serves (served-schemas.ts:
 * src/schemas/resources.ts and the pipeline stages' fields), plus the extra
 * fields it was told to describe (extra-fields.ts), by z.toJSONSchema, draft
 * 2020-12, the dialect of OpenAPI 3.1.
 */
import { z } from 'zod';
import { Me, Problem } from 'source-data-read/schemas';
import { extraFieldSchema, type ExtraField } from './extra-fields.js';
import { PROBLEM_TITLES } from './problem.js';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from './query.js';
import type { ListName } from './records.js';
import { SERVED_SCHEMAS } from './served-schemas.js';

export interface OpenApiOptions {
  /** Base URL (before /v1) for `servers`; omitted when not given. */
  readonly serverUrl?: string;
  /** Extra fields to describe, per list (those served with `described: false` are left out by the caller). */
  readonly extraFields?: (list: ListName) => readonly ExtraField[];
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

/**
 * z.toJSONSchema, minus $schema, with non-standard keywords renamed to x-...
 * extensions. An integer marked `format: int64` is a 64-bit integer: zod's
 * bounds of JavaScript's safe integers (±2^53) do not apply to it.
 */
function schemaOf(schema: z.ZodType): JsonObject {
  const raw = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io: 'output',
    unrepresentable: 'any',
    override: (ctx) => {
      const json = ctx.jsonSchema as Record<string, unknown>;
      if (json.type === 'integer' && json.format === 'int64') {
        delete json.minimum;
        delete json.maximum;
      }
    },
  }) as JsonObject;
  delete raw.$schema;
  const rename = (node: Json): Json => {
    if (Array.isArray(node)) return node.map(rename);
    if (node === null || typeof node !== 'object') return node;
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(node)) {
      out[k === 'airbyte_type' ? 'x-airbyte-type' : k] = k === 'properties' ? Object.fromEntries(Object.entries(v as JsonObject).map(([p, s]) => [p, rename(s)])) : rename(v);
    }
    return out;
  };
  return rename(raw) as JsonObject;
}

const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` });
const intHeader = (description: string): JsonObject => ({ description, schema: { type: 'integer', minimum: 0 } });

const RATE_HEADERS: JsonObject = {
  'RateLimit-Limit': { $ref: '#/components/headers/RateLimit-Limit' },
  'RateLimit-Remaining': { $ref: '#/components/headers/RateLimit-Remaining' },
  'RateLimit-Reset': { $ref: '#/components/headers/RateLimit-Reset' },
};

function problemResponse(status: number, retry: boolean): JsonObject {
  return {
    description: PROBLEM_TITLES[status] ?? 'Error',
    headers: retry ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' }, ...RATE_HEADERS } : { ...RATE_HEADERS },
    content: { 'application/problem+json': { schema: ref('Problem') } },
  };
}

function errors(statuses: readonly number[]): JsonObject {
  const out: JsonObject = {};
  for (const s of statuses) out[String(s)] = { $ref: `#/components/responses/Error${s}` };
  return out;
}

interface ListDoc {
  readonly list: ListName;
  readonly path: string;
  readonly schema: string;
  readonly summary: string;
  readonly filter: string | null;
  readonly createdSince: boolean;
}

const LIST_DOCS: readonly ListDoc[] = [
  { list: 'contacts', path: '/v1/contacts', schema: 'Contact', summary: 'Page of contacts, with current stage and first origin', filter: 'updated_at', createdSince: false },
  { list: 'conversations', path: '/v1/conversations', schema: 'Conversation', summary: 'Page of conversations', filter: 'updated_at', createdSince: false },
  { list: 'stage_events', path: '/v1/stage_events', schema: 'StageEvent', summary: 'Page of stage changes (immutable)', filter: 'created_at', createdSince: true },
  { list: 'deletions', path: '/v1/deletions', schema: 'Deletion', summary: 'Page of deletion records of the last 90 days', filter: 'deleted_at', createdSince: true },
  { list: 'pipeline_stages', path: '/v1/pipeline_stages', schema: 'PipelineStage', summary: 'Funnel stages', filter: null, createdSince: false },
];

const LIST_ERRORS = [400, 401, 403, 429, 500, 503];

function listOperation(doc: ListDoc): JsonObject {
  const parameters: Json[] = [];
  if (doc.filter !== null) parameters.push({ $ref: '#/components/parameters/updated_since' });
  if (doc.createdSince) parameters.push({ $ref: '#/components/parameters/created_since' });
  parameters.push({ $ref: '#/components/parameters/cursor' }, { $ref: '#/components/parameters/limit' });
  const name = doc.path.slice('/v1/'.length);
  return {
    get: {
      operationId: `list_${name}`,
      summary: doc.summary,
      description: doc.filter === null
        ? 'Full list; paginated like every list. Order: funnel, then position.'
        : `Filtered and ordered on ${doc.filter} (then id). The time filter reaches back 5 minutes; records are limited to those up to sync_watermark, fixed on the first page.`,
      security: [{ bearer: [] }],
      parameters,
      responses: {
        '200': {
          description: 'A page',
          headers: { ...RATE_HEADERS },
          content: {
            'application/json': {
              schema: {
                allOf: [ref('PageEnvelope'), { type: 'object', properties: { data: { type: 'array', items: ref(doc.schema) } } }],
              },
            },
          },
        },
        ...errors(LIST_ERRORS),
      },
    },
  };
}

/** A list's record schema as served, with the extra fields to describe. */
function recordSchema(list: ListName, options: OpenApiOptions): z.ZodType {
  const extra = options.extraFields?.(list) ?? [];
  const base = SERVED_SCHEMAS[list];
  return extra.length === 0 ? base : base.extend(Object.fromEntries(extra.map((f) => [f.name, extraFieldSchema(f)])));
}

export function buildOpenApiDocument(options: OpenApiOptions = {}): JsonObject {
  const paths: JsonObject = {};
  paths['/v1/me'] = {
    get: {
      operationId: 'get_me',
      summary: 'The account that owns the key, the key scopes and its limits (intended for testing a key)',
      security: [{ bearer: [] }],
      responses: {
        '200': { description: 'Account information', headers: { ...RATE_HEADERS }, content: { 'application/json': { schema: ref('Me') } } },
        ...errors([400, 401, 403, 429, 500, 503]),
      },
    },
  };
  for (const doc of LIST_DOCS.slice(0, 1)) paths[doc.path] = listOperation(doc);
  paths['/v1/contacts/{id}'] = {
    get: {
      operationId: 'get_contact',
      summary: 'A single contact (not wrapped in the envelope)',
      security: [{ bearer: [] }],
      parameters: [{ name: 'id', in: 'path', required: true, description: 'Identifier of the contact', schema: { type: 'string' } }],
      responses: {
        '200': { description: 'The contact', headers: { ...RATE_HEADERS }, content: { 'application/json': { schema: ref('Contact') } } },
        ...errors([400, 401, 403, 404, 429, 500, 503]),
      },
    },
  };
  for (const doc of LIST_DOCS.slice(1)) paths[doc.path] = listOperation(doc);
  paths['/v1/openapi.json'] = {
    get: {
      operationId: 'get_openapi',
      summary: 'This description',
      security: [],
      responses: { '200': { description: 'OpenAPI 3.1 document', content: { 'application/json': { schema: { type: 'object' } } } } },
    },
  };

  const responses: JsonObject = {};
  for (const s of [400, 401, 403, 404, 429, 500, 503]) responses[`Error${s}`] = problemResponse(s, s === 429 || s === 503);

  const doc: JsonObject = {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    info: {
      title: 'Data-Read API',
      version: '1',
      description: "Read-only access to an account's contacts, conversations, stage changes and deletions, for incremental replication.",
    },
    ...(options.serverUrl === undefined ? {} : { servers: [{ url: options.serverUrl }] }),
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'Account API key <prefix>_live_<secret>' } },
      parameters: {
        updated_since: {
          name: 'updated_since', in: 'query', required: false,
          description: 'Only records from this instant on (ISO 8601 date-time with zone, or YYYY-MM-DD as midnight UTC); the search reaches back 5 minutes.',
          schema: { type: 'string' },
        },
        created_since: {
          name: 'created_since', in: 'query', required: false,
          description: 'Synonym of updated_since.',
          schema: { type: 'string' },
        },
        cursor: { name: 'cursor', in: 'query', required: false, description: 'Opaque; next_cursor of the previous page.', schema: { type: 'string' } },
        limit: {
          name: 'limit', in: 'query', required: false, description: 'Items per page.',
          schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT },
        },
      },
      headers: {
        'RateLimit-Limit': intHeader('Requests allowed per minute for the key'),
        'RateLimit-Remaining': intHeader('Requests left in the current minute'),
        'RateLimit-Reset': intHeader('Seconds until the minute restarts'),
        'Retry-After': intHeader('Seconds to wait before repeating the request'),
      },
      responses,
      schemas: {
        ...Object.fromEntries(LIST_DOCS.map((d) => [d.schema, schemaOf(recordSchema(d.list, options))])),
        Me: schemaOf(Me),
        Problem: schemaOf(Problem),
        PageEnvelope: {
          type: 'object',
          required: ['data', 'next_cursor', 'has_more', 'sync_watermark'],
          properties: {
            data: { type: 'array', items: {} },
            next_cursor: { type: ['string', 'null'], description: 'Cursor of the next page; null on the last page' },
            has_more: { type: 'boolean', description: 'true when more pages exist' },
            sync_watermark: { type: 'string', format: 'date-time', description: 'Instant up to which the read is complete; identical on every page of one read' },
          },
        },
      },
    },
  };
  return doc;
}
