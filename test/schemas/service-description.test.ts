/**
 * Reading the service's OpenAPI description: the item schema of each list
 * operation, whatever form the document uses for references, composition and
 * nullability, and a reason for every document that says nothing usable.
 */
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from 'data-read-emulator';
import { builtInSchema } from '../../src/schemas/json-schema.js';
import { readServiceDescription, type Description } from '../../src/schemas/service-description.js';
import { STREAMS, findStream } from '../../src/streams.js';
import { EMULATOR_STAGE_PROPERTIES } from '../helpers/stage-fields.js';

type Json = Record<string, unknown>;
const contacts = findStream('contacts');
if (contacts === undefined) throw new Error('no contacts stream');

/** A document with one list operation at the contacts path whose items are `item`. */
function docWith(item: Json, extra: Json = {}, version = '3.1.0'): Json {
  return {
    openapi: version,
    paths: {
      [contacts?.path ?? '']: {
        get: { responses: { '200': { content: { 'application/json': { schema: { type: 'object', properties: { data: { type: 'array', items: item } } } } } } } },
      },
    },
    ...extra,
  };
}

function fields(description: Description, stream = 'contacts'): Record<string, unknown> {
  if (!description.ok) throw new Error(`not ok: ${description.reason}`);
  return Object.fromEntries(description.streams.get(stream)?.properties ?? []);
}

describe('readServiceDescription: the emulator\'s own document', () => {
  const description = readServiceDescription(buildOpenApiDocument(), STREAMS);

  it('describes every stream; each built-in field reads back exactly as built in (no drift)', () => {
    expect(description.ok).toBe(true);
    if (!description.ok) return;
    expect(description.version).toBe('3.1.0');
    expect([...description.streams.keys()]).toEqual(STREAMS.map((s) => s.name));
    for (const stream of STREAMS) {
      const builtIn = builtInSchema(stream).properties as Record<string, unknown>;
      const described = fields(description, stream.name);
      for (const [name, prop] of Object.entries(builtIn)) expect(described[name], `${stream.name}.${name}`).toEqual(prop);
    }
  });

  it('gives pipeline_stages the fields the emulator serves, typed (only id is built in)', () => {
    expect(fields(description, 'pipeline_stages')).toEqual(EMULATOR_STAGE_PROPERTIES);
  });
});

describe('readServiceDescription: forms of the same field', () => {
  it.each([
    ['OpenAPI 3.0 nullable: true', { type: 'integer', nullable: true }, '3.0.3'],
    ['OpenAPI 3.1 type array', { type: ['integer', 'null'] }, '3.1.0'],
    ['anyOf with a null variant', { anyOf: [{ type: 'integer' }, { type: 'null' }] }, '3.1.0'],
    ['oneOf with a null variant', { oneOf: [{ type: 'null' }, { type: 'integer' }] }, '3.1.0'],
    ['allOf of a $ref, nullable beside it (3.0)', { allOf: [{ $ref: '#/components/schemas/Score' }], nullable: true }, '3.0.1'],
    ['$ref with a null union (3.1)', { anyOf: [{ $ref: '#/components/schemas/Score' }, { type: 'null' }] }, '3.1.0'],
  ])('%s: a nullable integer', (_name, score, version) => {
    const doc = docWith({ type: 'object', properties: { id: { type: 'string' }, score } }, { components: { schemas: { Score: { type: 'integer', format: 'int64' } } } }, version);
    expect(fields(readServiceDescription(doc, STREAMS)).score).toEqual({ type: ['null', 'integer'] });
  });

  it('items behind $refs, allOf of an envelope and the records (as the emulator writes it), and a path item by $ref', () => {
    const doc = {
      openapi: '3.0.0',
      paths: { [contacts.path]: { $ref: '#/components/pathItems/Contacts' } },
      components: {
        pathItems: { Contacts: { get: { responses: { '200': { $ref: '#/components/responses/Page' } } } } },
        responses: { Page: { content: { 'application/vnd.api+json': { schema: { allOf: [{ $ref: '#/components/schemas/Envelope' }, { properties: { data: { items: { $ref: '#/components/schemas/Contact' } } } }] } } } } },
        schemas: {
          Envelope: { type: 'object', properties: { data: { type: 'array', items: {} }, has_more: { type: 'boolean' } } },
          Contact: { allOf: [{ $ref: '#/components/schemas/Base' }, { type: 'object', properties: { tier: { type: 'string', enum: ['gold', 'silver'], description: 'Tier' } } }] },
          Base: { type: 'object', properties: { id: { type: 'string' }, 'odd~name/x': { type: 'boolean' } } },
        },
      },
    };
    expect(fields(readServiceDescription(doc, STREAMS))).toEqual({
      id: { type: 'string' },
      'odd~name/x': { type: 'boolean' },
      tier: { type: 'string', description: 'Tier', enum: ['gold', 'silver'] },
    });
  });

  it('keeps date-time and date formats, drops the others; arrays and objects keep their items and properties; untyped fields are named', () => {
    const doc = docWith({
      type: 'object',
      properties: {
        at: { type: 'string', format: 'date-time', pattern: '^.*$', readOnly: true },
        day: { type: 'string', format: 'date' },
        mail: { type: 'string', format: 'email' },
        big: { type: 'integer', format: 'int64', minimum: 0 },
        tags: { type: 'array', items: { type: 'string' } },
        address: { type: 'object', properties: { city: { type: ['string', 'null'] } } },
        level: { enum: ['a', 'b', null] },
        anything: {},
        broken: { $ref: '#/components/schemas/Nowhere' },
      },
    });
    const description = readServiceDescription(doc, STREAMS);
    expect(fields(description)).toEqual({
      at: { type: 'string', format: 'date-time' },
      day: { type: 'string', format: 'date' },
      mail: { type: 'string' },
      big: { type: 'integer' },
      tags: { type: 'array', items: { type: 'string' } },
      address: { type: 'object', properties: { city: { type: ['null', 'string'] } } },
      level: { type: ['null', 'string'], enum: ['a', 'b', null] },
    });
    if (description.ok) expect(description.streams.get('contacts')?.untyped).toEqual(['anything', 'broken']);
  });

  it('a reference cycle ends (no endless loop), the field left untyped', () => {
    const doc = docWith({ type: 'object', properties: { id: { type: 'string' }, loop: { $ref: '#/components/schemas/A' } } }, { components: { schemas: { A: { $ref: '#/components/schemas/B' }, B: { $ref: '#/components/schemas/A' } } } });
    const description = readServiceDescription(doc, STREAMS);
    expect(Object.keys(fields(description))).toEqual(['id']);
    if (description.ok) expect(description.streams.get('contacts')?.untyped).toEqual(['loop']);
  });

  it('a reference whose pointer is not valid percent-encoding cannot be followed: the field left untyped, no exception', () => {
    const doc = docWith(
      { type: 'object', properties: { id: { type: 'string' }, share: { $ref: '#/components/schemas/100%' }, half: { $ref: '#/components/schemas/%E0%A4%A' } } },
      { components: { schemas: { '100%': { type: 'integer' } } } },
    );
    const description = readServiceDescription(doc, STREAMS);
    expect(Object.keys(fields(description))).toEqual(['id']);
    if (description.ok) expect(description.streams.get('contacts')?.untyped).toEqual(['share', 'half']);
  });

  it('streams the document does not list are named with the reason; the others are described', () => {
    const description = readServiceDescription(docWith({ type: 'object', properties: { id: { type: 'string' } } }), STREAMS);
    expect(description.ok).toBe(true);
    if (!description.ok) return;
    expect([...description.streams.keys()]).toEqual(['contacts']);
    expect(description.undescribed.get('conversations')).toBe('no path /v1/conversations');
  });

  it('paths written after a server URL that carries /v1 (servers: .../v1, paths /contacts) are the same operations', () => {
    const item = { type: 'object', properties: { id: { type: 'string' }, score: { type: 'integer' } } };
    const listed = docWith(item);
    const operation = (listed.paths as Json)['/v1/contacts'];
    for (const url of ['https://api.example.com/v1', 'https://api.example.com/v1/', '/v1', '{scheme}://api.example.com/v1']) {
      const doc = { openapi: '3.1.0', servers: [{ url: 'https://sandbox.example.com' }, { url }], paths: { '/contacts': operation } };
      const description = readServiceDescription(doc, STREAMS);
      expect(fields(description), url).toEqual({ id: { type: 'string' }, score: { type: 'integer' } });
      if (description.ok) expect(description.undescribed.get('conversations')).toBe('no path /v1/conversations');
    }
    // Without such a server, /contacts is another API's path.
    const bare = readServiceDescription({ openapi: '3.1.0', servers: [{ url: 'https://api.example.com' }], paths: { '/contacts': operation } }, STREAMS);
    expect(bare.ok).toBe(false);
  });
});

describe('readServiceDescription: documents that say nothing usable', () => {
  it.each([
    ['not an object', [1, 2], /is an array, not an OpenAPI object/],
    ['Swagger 2.0', { swagger: '2.0', paths: {} }, /Swagger 2\.0 document, not OpenAPI 3\.x/],
    ['no version', { paths: {} }, /no "openapi" version field/],
    ['OpenAPI 4', { openapi: '4.0.0', paths: {} }, /declares OpenAPI 4\.0\.0, not 3\.x/],
    ['no paths', { openapi: '3.1.0' }, /no "paths" object/],
    ['paths of another API', { openapi: '3.1.0', paths: { '/pets': { get: {} } } }, /describes the records of no stream \(no path \/v1\/contacts\)/],
    ['a list without a 200', docWith({}, {}, '3.0.0'), /describes the records of no stream/],
    ['items without properties', docWith({ type: 'object' }), /"data" items of GET \/v1\/contacts describe no properties/],
  ])('%s', (_name, doc, reason) => {
    const description = readServiceDescription(doc, STREAMS);
    expect(description.ok).toBe(false);
    if (!description.ok) expect(description.reason).toMatch(reason);
  });

  it('schemas whose references fan out (each level three $refs to the next) are refused before they take forever to expand', () => {
    // 3^11 expansions here; each level more triples them, and at 24 levels (MAX_DEPTH) reading never ends.
    const levels = 11;
    const schemas: Json = { [`L${levels}`]: { type: 'object', properties: { leaf: { type: 'string' } } } };
    for (let i = 0; i < levels; i++) {
      const next = { $ref: `#/components/schemas/L${i + 1}` };
      schemas[`L${i}`] = { allOf: [next, next, next] };
    }
    const doc = docWith({ type: 'object', properties: { id: { type: 'string' }, tree: { $ref: '#/components/schemas/L0' } } }, { components: { schemas } });
    const description = readServiceDescription(doc, STREAMS);
    expect(description.ok).toBe(false);
    if (!description.ok) expect(description.reason).toMatch(/^its schemas are too intricate to read: following their \$ref, allOf, anyOf and oneOf takes more than 100000 steps$/);
  });
});
