/** The OpenAPI 3.1 document: generated from the zod schemas, served at /v1/openapi.json, and true to the data. */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../packages/emulator/src/index.js';
import { Contact, Conversation } from '../../src/schemas/resources.js';
import { get, readAll, setup } from './helpers.js';

type Doc = {
  openapi: string;
  info: { version: string };
  paths: Record<string, { get: { responses: Record<string, unknown>; security?: unknown[] } }>;
  components: { schemas: Record<string, { properties?: Record<string, unknown>; required?: string[] }> };
};

describe('buildOpenApiDocument', () => {
  it('describes every operation, the shared errors and the schemas from resources.ts', () => {
    const doc = buildOpenApiDocument() as unknown as Doc;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1');
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/v1/contacts', '/v1/contacts/{id}', '/v1/conversations', '/v1/deletions', '/v1/me', '/v1/openapi.json', '/v1/pipeline_stages', '/v1/stage_events',
    ]);
    for (const p of ['/v1/contacts', '/v1/conversations', '/v1/stage_events', '/v1/deletions']) {
      expect(Object.keys(doc.paths[p]?.get.responses ?? {}).sort()).toEqual(['200', '400', '401', '403', '429', '500', '503']);
    }
    expect(doc.paths['/v1/contacts/{id}']?.get.responses).toHaveProperty('404');
    expect(Object.keys(doc.components.schemas.Contact?.properties ?? {})).toEqual(Object.keys(Contact.shape));
    expect(Object.keys(doc.components.schemas.Conversation?.properties ?? {})).toEqual(Object.keys(Conversation.shape));
    expect(doc.components.schemas.PipelineStage?.required).toEqual(['id', 'key', 'name', 'pipeline_id', 'position', 'outcome']);
    expect(JSON.stringify(doc)).not.toContain('"airbyte_type"');
    expect(JSON.stringify(buildOpenApiDocument())).toBe(JSON.stringify(doc)); // deterministic
  });
});

describe('/v1/openapi.json', () => {
  it('is served without a key, and what the API serves validates against it', async () => {
    const s = await setup({ contacts: 120 });
    try {
      const got = await get(s.emu.url, '/v1/openapi.json');
      expect(got.status).toBe(200);
      expect(got.headers['content-type']).toBe('application/json');
      expect(got.body).toEqual(buildOpenApiDocument({ serverUrl: s.emu.url }));

      const ajv = new Ajv2020({ strict: false, allErrors: true });
      addFormats.default(ajv);
      ajv.addSchema({ ...(got.body as object), $id: 'openapi' });
      const doc = got.body as Doc;
      for (const path of ['/v1/contacts', '/v1/conversations', '/v1/stage_events', '/v1/deletions', '/v1/pipeline_stages']) {
        const content = (doc.paths[path]?.get.responses['200'] as { content: { 'application/json': { schema: object } } }).content;
        const validate = ajv.compile({ $ref: `openapi#/paths/${path.replace(/\//g, '~1')}/get/responses/200/content/application~1json/schema` });
        expect(content).toBeDefined();
        for (const page of await readAll(s.emu.url, path, s.key, { limit: 200 })) {
          expect(validate(page), `${path}: ${JSON.stringify(validate.errors)}`).toBe(true);
        }
      }
      const problem = ajv.compile({ $ref: 'openapi#/components/schemas/Problem' });
      expect(problem((await get(s.emu.url, '/v1/contacts')).body)).toBe(true);
    } finally {
      await s.emu.close();
    }
  });
});
