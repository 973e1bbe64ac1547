/**
 * The schemas a command declares: merged with the service's description, or
 * built in with one WARN saying why (each way the description can fail), or
 * pinned without a request; only a rejected key or a setting that fails every
 * request of the run is an error. And the drift line of `check`.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/client/api-error.js';
import { ConfigSchema } from '../../src/config/config.js';
import { buildOpenApiDocument } from 'data-read-emulator';
import { ConfigError, ContractError } from '../../src/errors.js';
import { describeStreams, loadStreamSchemas } from '../../src/engine/connect.js';
import { driftNote, type LoadedSchemas } from '../../src/engine/service-schemas.js';
import { builtInSchemas } from '../../src/schemas/json-schema.js';
import { STREAMS } from '../../src/streams.js';
import { FakeApi } from '../helpers/fake-api.js';

type Json = Record<string, unknown>;

/** The emulator's document with `change` applied to the component schema `name`'s properties. */
function emulatorDoc(name: string, change: (props: Json) => void): Json {
  const doc = buildOpenApiDocument() as Json;
  const schemas = (doc.components as { schemas: Record<string, { properties: Json }> }).schemas;
  change(schemas[name]?.properties ?? {});
  return doc;
}

async function describe_(openApi: unknown): Promise<LoadedSchemas> {
  const api = new FakeApi();
  api.openApi = openApi;
  const loaded = await describeStreams(api);
  expect(api.descriptionCalls).toBe(1);
  return loaded;
}

const warns = (loaded: LoadedSchemas): string[] => loaded.notes.filter((n) => n.level === 'WARN').map((n) => n.message);

describe('describeStreams', () => {
  it("the emulator's description: merged, pipeline_stages typed, one INFO naming what was added", async () => {
    const loaded = await describe_(buildOpenApiDocument());
    expect(loaded.source).toBe('service');
    expect(loaded.notes).toEqual([{
      level: 'INFO',
      message: "Stream schemas: the built-in ones merged with the service's description (OpenAPI 3.1.0, GET /v1/openapi.json): fields added: pipeline_stages + key, name, pipeline_id, position, outcome.",
    }]);
    const stages = loaded.schemas.get('pipeline_stages')?.properties as Record<string, Json>;
    expect(stages.position).toEqual({ type: 'integer', description: 'Position of the stage in its funnel, from 0' });
    for (const name of ['contacts', 'conversations', 'stage_events', 'deletions']) expect(loaded.schemas.get(name)).toEqual(builtInSchemas(STREAMS).get(name));
  });

  it('a field gone and fields typed differently: one WARN per stream and kind, naming the fields', async () => {
    const loaded = await describe_(emulatorDoc('Contact', (p) => {
      delete p.job_title;
      p.qualification_score = { type: 'number' };
      p.updated_at = { type: 'integer' };
    }));
    expect(warns(loaded)).toEqual([
      'contacts: the service\'s description no longer lists job_title; it stays declared (nullable), so no destination column is lost.',
      'contacts: types differ: updated_at is integer in the description, string (date-time) built in: kept as built in (the stream\'s cursor); ' +
        'qualification_score is number in the description, integer or null built in: declared as the service describes it.',
    ]);
  });

  it('a required stream the description leaves out: built in, with a WARN; an optional one (pipeline_stages) quietly', async () => {
    const doc = buildOpenApiDocument() as { paths: Json };
    delete doc.paths['/v1/conversations'];
    delete doc.paths['/v1/pipeline_stages'];
    const loaded = await describe_(doc);
    expect(loaded.source).toBe('service');
    expect(warns(loaded)).toEqual(["The service's description does not describe conversations (no path /v1/conversations): built-in schema used."]);
    expect(loaded.schemas.get('pipeline_stages')).toEqual(builtInSchemas(STREAMS).get('pipeline_stages'));
  });

  it.each([
    ['404', new ApiError('not_found', 'config_error', 'no such path', { status: 404 }), /GET \/v1\/openapi\.json answered HTTP 404/],
    ['not JSON', new ContractError('GET /v1/openapi.json answered HTTP 200 with a body that is not the JSON promised: the body is not valid JSON (3 attempts).', { status: 200 }), /body that is not the JSON promised/],
    ['a timeout', new ApiError('retries_exhausted', 'transient_error', 'The Data-Read API request GET /v1/openapi.json did not succeed in 3 attempts (1 + max_retries 2); last cause: no response within 1 s (timeout).'), /no response within 1 s \(timeout\)/],
    ['an unexpected status', new ApiError('unexpected_status', 'system_error', 'The Data-Read API answered GET /v1/openapi.json with HTTP 302, a redirect.', { status: 302 }), /HTTP 302/],
    ['Swagger 2.0', { swagger: '2.0', paths: {} }, /answered, but it is a Swagger 2\.0 document, not OpenAPI 3\.x/],
    ['OpenAPI 4', { openapi: '4.0.0', paths: {} }, /not 3\.x/],
    ['an unknown shape', { openapi: '3.1.0', paths: { '/pets': {} } }, /its shape is not the expected one/],
    ['a JSON string', 'hello', /the document is a string, not an OpenAPI object/],
  ])('%s: the built-in schemas, with one WARN saying why', async (_name, answer, why) => {
    const loaded = await describe_(answer);
    expect(loaded.source).toBe('fallback');
    expect(loaded.schemas).toEqual(builtInSchemas(STREAMS));
    expect(loaded.notes).toHaveLength(1);
    expect(loaded.notes[0]?.level).toBe('WARN');
    expect(loaded.notes[0]?.message).toMatch(/^Using the built-in stream schemas: the service's description cannot be used\. /);
    expect(loaded.notes[0]?.message).toMatch(why);
    expect(loaded.notes[0]?.message).toMatch(/Set use_service_schema to false to skip this request\.$/);
  });

  it.each([
    ['401', new ApiError('unauthorized', 'config_error', 'The Data-Read API did not accept the API key (HTTP 401).', { status: 401 })],
    ['403', new ApiError('forbidden', 'config_error', 'The Data-Read API refused access with this key (HTTP 403).', { status: 403 })],
  ])('a rejected key (%s) is the one error: /v1/me refuses it too', async (_name, error) => {
    const api = new FakeApi();
    api.openApi = error;
    let asked = 0;
    api.me = async () => {
      asked += 1;
      throw new ApiError('unauthorized', 'config_error', 'The Data-Read API did not accept the API key (HTTP 401).', { status: 401, runWide: true });
    };
    await expect(describeStreams(api)).rejects.toBe(error);
    expect(asked).toBe(1);
  });

  it.each([
    ['401', new ApiError('unauthorized', 'config_error', 'The Data-Read API did not accept the API key (HTTP 401).', { status: 401, problem: { type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'needs docs:read', request_id: 'r-1' } })],
    ['403', new ApiError('forbidden', 'config_error', 'The Data-Read API refused access with this key (HTTP 403).', { status: 403, problem: { type: 'about:blank', title: 'Forbidden', status: 403, detail: 'needs docs:read', request_id: 'r-1' } })],
  ])('the description alone refused (%s) while /v1/me takes the key: the built-in schemas, one WARN saying so', async (status, error) => {
    const api = new FakeApi();
    api.openApi = error;
    const loaded = await describeStreams(api);
    expect(loaded.source).toBe('fallback');
    expect(loaded.schemas).toEqual(builtInSchemas(STREAMS));
    expect(loaded.notes).toHaveLength(1);
    expect(loaded.notes[0]?.level).toBe('WARN');
    expect(loaded.notes[0]?.message).toMatch(/^Using the built-in stream schemas: the service's description cannot be used\. /);
    expect(loaded.notes[0]?.message).toContain(`GET /v1/openapi.json answered HTTP ${status} though /v1/me takes the key: the service does not show its description to this key.`);
    expect(loaded.notes[0]?.message).toContain(': needs docs:read" (request_id r-1).');
    // Not the advice of a refused key: the key works.
    expect(loaded.notes[0]?.message).not.toMatch(/did not accept the API key|refused access with this key/);
  });

  it.each([
    ['an untrusted certificate', new ApiError('unreachable', 'config_error', 'Could not connect securely to the Data-Read API: the TLS certificate of api.example.com is not trusted.', { runWide: true })],
    ['a proxy that refuses the connector', new ApiError('proxy', 'config_error', 'Could not reach the Data-Read API: the proxy proxy.corp:3128 (HTTPS_PROXY) answered 407.', { runWide: true })],
    ['a proxy setting that cannot be used', new ConfigError('HTTP_PROXY names a SOCKS proxy (socks5://), which this connector does not support.', { runWide: true })],
  ])('%s, which stops every request of the run, is an error too, not a fallback', async (_name, error) => {
    const api = new FakeApi();
    api.openApi = error;
    await expect(describeStreams(api)).rejects.toBe(error);
  });
});

describe('loadStreamSchemas', () => {
  it('use_service_schema false: the built-in schemas, no request, nothing to say', async () => {
    // A base_url nothing listens on: a request would fail (and take retries).
    const config = ConfigSchema.parse({ api_key: 'drk_live_test', base_url: 'http://127.0.0.1:9', use_service_schema: false });
    const loaded = await loadStreamSchemas(config);
    expect(loaded).toMatchObject({ source: 'pinned', notes: [] });
    expect(loaded.schemas).toEqual(builtInSchemas(STREAMS));
  });

  it('a proxy variable that cannot be used (SOCKS) fails it, as proxy_url does: config_error', async () => {
    const config = ConfigSchema.parse({ api_key: 'drk_live_test', base_url: 'http://127.0.0.1:9', max_retries: 0 });
    const before = { lower: process.env.http_proxy, upper: process.env.HTTP_PROXY };
    delete process.env.http_proxy; // it would hide HTTP_PROXY
    process.env.HTTP_PROXY = 'socks5://127.0.0.1:1080';
    try {
      await expect(loadStreamSchemas(config)).rejects.toMatchObject({ failureType: 'config_error', message: expect.stringContaining('HTTP_PROXY names a SOCKS proxy') });
    } finally {
      for (const [name, value] of [['http_proxy', before.lower], ['HTTP_PROXY', before.upper]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('an unreachable service: the built-in schemas and a WARN (discover does not fail)', async () => {
    const config = ConfigSchema.parse({ api_key: 'drk_live_test', base_url: 'http://127.0.0.1:9', max_retries: 0 });
    const loaded = await loadStreamSchemas(config);
    expect(loaded.source).toBe('fallback');
    expect(loaded.notes[0]?.message).toMatch(/Cannot reach the Data-Read API at /);
  });
});

describe('driftNote (check)', () => {
  it('none', async () => {
    const doc = buildOpenApiDocument() as { components: { schemas: Record<string, { properties: Json }> } };
    const stages = doc.components.schemas.PipelineStage;
    if (stages) stages.properties = { id: stages.properties.id };
    expect(driftNote(await describe_(doc), false)).toEqual({
      level: 'INFO',
      message: "Schema drift: none; the service's description declares the fields of the built-in schemas.",
    });
  });

  it('fields the service adds only: INFO', async () => {
    expect(driftNote(await describe_(buildOpenApiDocument()), false)).toEqual({
      level: 'INFO',
      message:
        'Schema drift: the service describes 5 fields the built-in schemas lack: pipeline_stages.key, pipeline_stages.name, pipeline_stages.pipeline_id, ' +
        'pipeline_stages.position and pipeline_stages.outcome (discover declares them).',
    });
  });

  it('fields gone or typed differently: WARN, both ways in one line; pinned says so', async () => {
    const loaded = await describe_(emulatorDoc('Conversation', (p) => {
      delete p.campaign_id;
      p.agent_message_count = { type: 'string' };
      p.sentiment = { type: 'number' };
    }));
    const note = driftNote(loaded, true);
    expect(note.level).toBe('WARN');
    expect(note.message).toBe(
      'Schema drift: the service describes 6 fields the built-in schemas lack: conversations.sentiment, pipeline_stages.key, pipeline_stages.name, ' +
        'pipeline_stages.pipeline_id, pipeline_stages.position and pipeline_stages.outcome; ' +
        'the built-in schemas declare 1 field the service no longer describes: conversations.campaign_id; ' +
        '1 field typed differently: conversations.agent_message_count (built in integer or null, described string). ' +
        'use_service_schema is false: discover declares the built-in schemas only.',
    );
  });

  it('a description that cannot be used: WARN with the reason', async () => {
    const note = driftNote(await describe_({ swagger: '2.0' }), false);
    expect(note).toEqual({ level: 'WARN', message: "Schema drift unknown: the service's description cannot be used. GET /v1/openapi.json answered, but it is a Swagger 2.0 document, not OpenAPI 3.x." });
  });
});
