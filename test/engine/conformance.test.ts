/** Values that do not fit their declared type: passed on, and the first of each kind reported once per stream. */
import { describe, expect, it } from 'vitest';
import { TypeAudit, isIntegralText, jsonTypeOf } from '../../src/engine/conformance.js';
import { parseExactJson } from '../../src/exact-json.js';
import type { JsonSchema } from '../../src/schemas/json-schema.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';

const contacts = findStream('contacts') as StreamDefinition;
const good = { id: 'c0', updated_at: '2026-01-01T00:00:00.000Z', qualification_score: 70, email: 'a@b.c', do_not_contact: false, name: null };

describe('type audit', () => {
  it('whole numbers, whatever their text, are integers; fractions are not', () => {
    for (const t of ['0', '-0', '1.0', '1e3', '1.5e1', '100e-2', '9007199254740993', '123456789012345678901234567890', '0.0e5']) expect(isIntegralText(t), t).toBe(true);
    for (const t of ['1.5', '1e-1', '1.05e1', '0.1']) expect(isIntegralText(t), t).toBe(false);
    const exact = parseExactJson('{"a":1.0,"b":1.50,"c":9007199254740993}') as Record<string, unknown>;
    expect([jsonTypeOf(exact.a), jsonTypeOf(exact.b), jsonTypeOf(exact.c), jsonTypeOf(1.5), jsonTypeOf(null)]).toEqual(['integer', 'number', 'integer', 'number', 'null']);
  });

  it('records that fit say nothing; absent fields fit', () => {
    const audit = new TypeAudit(contacts);
    audit.check([good, { id: 'c1', updated_at: '2026-01-01T00:00:00.000Z' }, parseExactJson('{"id":"c2","updated_at":"x","qualification_score":9007199254740993}') as Record<string, unknown>]);
    expect(audit.warning()).toBeUndefined();
  });

  it('one WARN naming the first of each kind (field, declared type, what came), with counts', () => {
    const audit = new TypeAudit(contacts);
    audit.check([
      good,
      { ...good, id: 'c1', qualification_score: 1.5 },
      { ...good, id: 'c2', qualification_score: 2.5 },
      { ...good, id: 'c3', qualification_score: '12' },
      { ...good, id: 'c4', email: 42 },
      { ...good, id: 'c7', do_not_contact: 'ana@example.com' },
      { ...good, id: 'c8', name: { first: 'Ana' } },
    ]);
    audit.check([{ ...good, id: 'c5', updated_at: null }, parseExactJson('{"id":"c6","updated_at":"x","qualification_score":1.50}') as Record<string, unknown>]);
    const warning = audit.warning() ?? '';
    expect(warning).toMatch(/^contacts: 6 kinds of value do not fit the declared type; passed on as received/);
    // Contents of records stay out of logs: a string that is not number-like, an object, only by size.
    expect(warning).toContain('do_not_contact is declared boolean or null but got a string (a 15-character string in record c7)');
    expect(warning).toContain('name is declared string or null but got an object (1 key in record c8)');
    expect(warning).not.toContain('ana@example.com');
    expect(warning).toContain('qualification_score is declared integer or null but got a number with a fraction (1.5 in record c1, and 2 more)');
    expect(warning).toContain('qualification_score is declared integer or null but got a string ("12" in record c3)');
    expect(warning).toContain('email is declared string or null but got an integer (42 in record c4)');
    expect(warning).toContain('updated_at is declared string but got null (null in record c5)');
  });

  it('a record without its cursor field does not fit either (the cursor is never absent); other absent fields fit', () => {
    const audit = new TypeAudit(contacts);
    audit.check([good, { id: 'c1' }, { id: 'c2', name: 'Ana' }]);
    expect(audit.warning()).toBe(
      'contacts: a value does not fit the declared type; passed on as received (a strict destination may reject them): ' +
        'updated_at is declared string but got no value (absent in record c1, and 1 more).',
    );
    const stages = new TypeAudit(findStream('pipeline_stages') as StreamDefinition);
    stages.check([{ id: 's1' }]);
    expect(stages.warning()).toBeUndefined();
  });

  it("shows a record's id with its control characters escaped and cut short: nothing of the service's reaches a terminal as is", () => {
    const audit = new TypeAudit(contacts);
    const id = `\u001b[2J\u001b]0;owned\u0007\u009b31m\u202e${'x'.repeat(5000)}`;
    audit.check([{ ...good, id, qualification_score: 1.5 }]);
    const warning = audit.warning() ?? '';
    expect(warning).toContain('(1.5 in record \\u001b[2J\\u001b]0;owned\\u0007\\u009b31m\\u202exxx');
    expect(warning).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(warning.length).toBeLessThan(400);
  });

  it('never quotes a withheld field (personal data): the field, the type and the record only', () => {
    const audit = new TypeAudit(contacts, undefined, new Set(['phone', 'email']));
    audit.check([{ ...good, id: 'c1', phone: 5511987654321 }, { ...good, id: 'c2', email: 42 }, { ...good, id: 'c3', qualification_score: '12' }]);
    const warning = audit.warning() ?? '';
    expect(warning).toContain('phone is declared string or null but got an integer (its value not shown: personal data in record c1)');
    expect(warning).toContain('email is declared string or null but got an integer (its value not shown: personal data in record c2)');
    expect(warning).toContain('("12" in record c3)');
    expect(warning).not.toMatch(/5511987654321|\b42\b/);
  });

  it('a field named like a member of every object (constructor, __proto__) is checked only when the record has it', () => {
    const told = JSON.parse('{"type":"object","properties":{"id":{"type":"string"},"constructor":{"type":"string"},"__proto__":{"type":["null","integer"]}}}') as JsonSchema;
    const audit = new TypeAudit(contacts, told);
    audit.check([{ id: 'c1' }, JSON.parse('{"id":"c2","constructor":"x","__proto__":null}') as Record<string, unknown>]);
    expect(audit.warning()).toBeUndefined();
    audit.check([JSON.parse('{"id":"c3","constructor":5,"__proto__":"a"}') as Record<string, unknown>]);
    expect(audit.warning()).toBe(
      'contacts: 2 kinds of value do not fit the declared type; passed on as received (a strict destination may reject them): ' +
        'constructor is declared string but got an integer (5 in record c3); __proto__ is declared integer or null but got a string (a 1-character string in record c3).',
    );
  });

  it('checks the schema the destination was told (a configured catalog, a SCHEMA sent), not the built-in one', () => {
    // As a service's description would have it: qualification_score a number now, a new integer field.
    const told = {
      type: 'object',
      properties: {
        id: { type: 'string' },
        updated_at: { type: 'string', format: 'date-time', airbyte_type: 'timestamp_with_timezone' },
        qualification_score: { type: ['null', 'number'] },
        lifetime_value: { type: ['null', 'integer'] },
        notes: {},
      },
    };
    const audit = new TypeAudit(contacts, told);
    audit.check([{ ...good, qualification_score: 1.5, lifetime_value: 12 }, { ...good, id: 'c1', lifetime_value: 'a lot', notes: 3 }]);
    expect(audit.warning()).toBe(
      'contacts: a value does not fit the declared type; passed on as received (a strict destination may reject them): ' +
        'lifetime_value is declared integer or null but got a string (a 5-character string in record c1).',
    );
    const builtIn = new TypeAudit(contacts);
    builtIn.check([{ ...good, qualification_score: 1.5, lifetime_value: 'a lot' }]);
    expect(builtIn.warning()).toMatch(/qualification_score is declared integer or null but got a number with a fraction/);
    expect(builtIn.warning()).not.toMatch(/lifetime_value/);
  });
});
