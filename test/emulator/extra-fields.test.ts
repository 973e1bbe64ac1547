/**
 * Extra fields: the emulator serves a field beyond the API description's on
 * every record of a list, as a service adds one between connector releases,
 * and /v1/openapi.json describes it (or not yet). Values are exact (integers
 * beyond 2^53, decimals with a trailing zero) and validate against the
 * served description.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parseArgs } from '../../packages/emulator/src/cli.js';
import { extraValue, parseExtraField, type ExtraField } from '../../packages/emulator/src/extra-fields.js';
import { buildOpenApiDocument } from '../../packages/emulator/src/openapi.js';
import { parseKeepingNumbers } from '../../packages/emulator/src/raw-json.js';
import { control, get, readAll, setup } from './helpers.js';

type Doc = { paths: Record<string, unknown>; components: { schemas: Record<string, { properties: Record<string, unknown> }> } };

const LIFETIME: ExtraField = { list: 'contacts', name: 'lifetime_value', type: 'integer' };

/** Every page of a list, parsed keeping numbers as written. */
async function records(url: string, path: string, key: string): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let cursor: string | undefined;
  for (;;) {
    const got = await get(url, path, { key, query: { limit: 200, ...(cursor === undefined ? {} : { cursor }) } });
    const page = parseKeepingNumbers(got.text) as { data: Record<string, unknown>[]; next_cursor: string | null };
    out.push(...page.data);
    if (page.next_cursor === null) return out;
    cursor = page.next_cursor;
  }
}

describe('extra fields', () => {
  it('values: a function of the id, about a fifth null, integers beyond 2^53 and decimals like 12.50 written exactly', () => {
    const ids = Array.from({ length: 500 }, (_, i) => `id-${i}`);
    const ints = ids.map((id) => JSON.stringify(extraValue(LIFETIME, id)));
    expect(ints).toEqual(ids.map((id) => JSON.stringify(extraValue(LIFETIME, id))));
    const nulls = ints.filter((v) => v === 'null').length;
    expect(nulls).toBeGreaterThan(60);
    expect(nulls).toBeLessThan(140);
    expect(ints.some((v) => v !== 'null' && BigInt(v) > 2n ** 53n)).toBe(true);
    const decimals = ids.map((id) => JSON.stringify(extraValue({ ...LIFETIME, type: 'number' }, id)));
    expect(decimals.some((v) => /^\d+\.50$/.test(v))).toBe(true);
    for (const type of ['string', 'boolean', 'date-time'] as const) {
      const values = ids.map((id) => extraValue({ ...LIFETIME, type }, id)).filter((v) => v !== null);
      expect(values.every((v) => (type === 'boolean' ? typeof v === 'boolean' : typeof v === 'string')), type).toBe(true);
    }
  });

  it('an option at start: every record carries it, the description declares it, and pages validate against the description', async () => {
    const extraFields: ExtraField[] = [
      LIFETIME,
      { list: 'conversations', name: 'sentiment', type: 'number' },
      { list: 'pipeline_stages', name: 'probability', type: 'number', description: 'Chance to win from this stage' },
      { list: 'stage_events', name: 'reason', type: 'string' },
      { list: 'deletions', name: 'deleted_by', type: 'string', described: false },
    ];
    const s = await setup({ contacts: 80, extraFields });
    try {
      const doc = (await get(s.emu.url, '/v1/openapi.json')).body as Doc;
      expect(doc).toEqual(buildOpenApiDocument({ serverUrl: s.emu.url, extraFields: (list) => extraFields.filter((f) => f.list === list && f.described !== false) }));
      expect(doc.components.schemas.Contact?.properties.lifetime_value).toEqual({
        anyOf: [{ type: 'integer', format: 'int64' }, { type: 'null' }],
        description: "Added by the service after this connector's release (integer)",
      });
      expect(doc.components.schemas.PipelineStage?.properties.probability).toMatchObject({ description: 'Chance to win from this stage' });
      expect(doc.components.schemas.Deletion?.properties).not.toHaveProperty('deleted_by');

      const ajv = new Ajv2020({ strict: false, allErrors: true });
      addFormats.default(ajv);
      ajv.addSchema({ ...doc, $id: 'openapi' });
      for (const [path, field] of [['/v1/contacts', 'lifetime_value'], ['/v1/conversations', 'sentiment'], ['/v1/pipeline_stages', 'probability'], ['/v1/stage_events', 'reason'], ['/v1/deletions', 'deleted_by']] as const) {
        const validate = ajv.compile({ $ref: `openapi#/paths/${path.replace(/\//g, '~1')}/get/responses/200/content/application~1json/schema` });
        for (const page of await readAll(s.emu.url, path, s.key, { limit: 200 })) expect(validate(page), `${path}: ${JSON.stringify(validate.errors)}`).toBe(true);
        const served = await records(s.emu.url, path, s.key);
        expect(served.length).toBeGreaterThan(0);
        expect(served.every((r) => Object.hasOwn(r, field)), path).toBe(true);
      }
      // Served exactly as the dump says, and the dump as the value function says (integers beyond 2^53 included).
      const contacts = await records(s.emu.url, '/v1/contacts', s.key);
      const dumped = new Map(s.emu.control.dump(s.accountId).contacts.map((c) => [c.id, c as Record<string, unknown>]));
      for (const c of contacts) {
        expect(JSON.stringify(c.lifetime_value)).toBe(JSON.stringify(extraValue(LIFETIME, String(c.id))));
        expect(JSON.stringify(dumped.get(String(c.id))?.lifetime_value)).toBe(JSON.stringify(c.lifetime_value));
      }
      expect(contacts.some((c) => /^\d{16,}$/.test(JSON.stringify(c.lifetime_value)))).toBe(true);
      // New records carry it too, and a change of a record (re-read from its JSON) keeps the exact value.
      s.emu.control.mutate(s.accountId, { op: 'create_contacts', count: 3 });
      s.emu.control.mutate(s.accountId, { op: 'update_contacts', count: 30 });
      const after = await records(s.emu.url, '/v1/contacts', s.key);
      expect(after.length).toBe(contacts.length + 3);
      for (const c of after) expect(JSON.stringify(c.lifetime_value)).toBe(JSON.stringify(extraValue(LIFETIME, String(c.id))));
    } finally {
      await s.emu.close();
    }
  });

  it('added at run time (control API): the description changes at once, existing records carry it without a new cursor', async () => {
    const s = await setup({ contacts: 40 });
    try {
      const before = await records(s.emu.url, '/v1/contacts', s.key);
      expect(before.every((c) => !Object.hasOwn(c, 'lifetime_value'))).toBe(true);
      const added = await control(s.emu, 'POST', '/extra-fields', LIFETIME);
      expect(added.status, added.text).toBe(200);
      expect(added.body).toEqual([LIFETIME]);
      expect((await control(s.emu, 'GET', '/extra-fields')).body).toEqual([LIFETIME]);
      const doc = (await get(s.emu.url, '/v1/openapi.json')).body as Doc;
      expect(doc.components.schemas.Contact?.properties).toHaveProperty('lifetime_value');
      const after = await records(s.emu.url, '/v1/contacts', s.key);
      expect(after.map((c) => c.updated_at)).toEqual(before.map((c) => c.updated_at));
      for (const c of after) expect(JSON.stringify(c.lifetime_value)).toBe(JSON.stringify(extraValue(LIFETIME, String(c.id))));

      for (const [bad, why] of [
        [{ ...LIFETIME }, /contacts has a field 'lifetime_value' already/],
        [{ list: 'contacts', name: 'email', type: 'string' }, /contacts has a field 'email' already/],
        [{ list: 'widgets', name: 'x', type: 'string' }, /list/],
        [{ list: 'contacts', name: 'Bad Name', type: 'string' }, /lower-case letters/],
        [{ list: 'contacts', name: 'x', type: 'decimal' }, /type/],
      ] as const) {
        const refused = await control(s.emu, 'POST', '/extra-fields', bad);
        expect(refused.status, JSON.stringify(bad)).toBe(400);
        expect(refused.text).toMatch(why);
      }
    } finally {
      await s.emu.close();
    }
  });

  it('--extra-field on the command line', () => {
    expect(parseArgs(['--extra-field', 'contacts.lifetime_value:integer', '--extra-field=deletions.deleted_by:string:undescribed']).extraFields).toEqual([
      LIFETIME,
      { list: 'deletions', name: 'deleted_by', type: 'string', described: false },
    ]);
    expect(parseExtraField('pipeline_stages.win_probability:number')).toEqual({ list: 'pipeline_stages', name: 'win_probability', type: 'number' });
    expect(() => parseArgs(['--extra-field', 'contacts:integer'])).toThrow(/expected LIST\.NAME:TYPE/);
    expect(() => parseArgs(['--extra-field', 'widgets.x:integer'])).toThrow(/unknown list 'widgets'/);
    expect(() => parseArgs(['--extra-field', 'contacts.x:decimal'])).toThrow(/type must be one of integer, number, string, boolean, date-time/);
  });
});
