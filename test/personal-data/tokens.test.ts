/**
 * The tokens stay what they were: every case of fixtures/tokens.json (values
 * of every kind: e-mails with spaces, capitals and non-ASCII characters,
 * phones with separators, text with Unicode white space and both NFC and NFD
 * forms, empty strings, values past one SHA-256 block, numbers, null) treated
 * as a sync treats them gives the token recorded there, under two keys (one
 * longer than a block and beyond ASCII). Also the RFC 4231 HMAC-SHA-256
 * vectors whose key and data are text, through the treatment itself.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { recordTreater, treatmentPlan, type Treatment } from '../../src/personal-data/treatments.js';
import type { PersonalKind } from '../../src/streams.js';

interface Case {
  readonly kind: PersonalKind;
  readonly note: string;
  readonly value?: unknown;
  readonly raw?: string;
  readonly hash: readonly (string | null)[];
  readonly sha256: string | null;
  readonly email_domain: string | null;
}

const fixture = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'tokens.json'), 'utf8')) as { keys: string[]; cases: Case[] };
/** The field of contacts each kind stands in. */
const FIELD: Readonly<Record<PersonalKind, string>> = { email: 'email', phone: 'phone', text: 'name' };

/** A number kept as written, as the exact JSON parser gives it (Node 22+; TypeScript's lib does not declare it yet). */
const rawJSON = (text: string): unknown => (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(text);
const valueOf = (c: Case): unknown => (c.raw !== undefined ? rawJSON(c.raw) : structuredClone(c.value));

/** A treater of contacts applying `treatment` to the three fields. */
function treater(treatment: Treatment, key: string | undefined): (records: Record<string, unknown>[]) => void {
  const config = { personal_data: 'keep' as const, field_treatments: Object.values(FIELD).map((field) => ({ stream: 'contacts', field, treatment })), hash_key: key };
  const treat = recordTreater(treatmentPlan(config).get('contacts'), key);
  if (treat === undefined) throw new Error('no treater');
  return treat;
}

/** What each case becomes: in one page of every case, in pages of one, and in a long page of every case again and again (values that repeat). */
function treated(treatment: Treatment, key: string | undefined): { page: unknown[]; alone: unknown[]; repeated: unknown[] } {
  const field = (c: Case): string => FIELD[c.kind];
  const treat = treater(treatment, key);
  const page = fixture.cases.map((c, i) => ({ id: `c${i}`, [field(c)]: valueOf(c) }));
  treat(page);
  const alone = fixture.cases.map((c) => {
    const one = [{ id: 'c', [field(c)]: valueOf(c) }];
    treater(treatment, key)(one);
    return one[0]?.[field(c)];
  });
  const rounds = 60;
  const long = Array.from({ length: rounds }, (_, r) => fixture.cases.map((c, i) => ({ id: `c${r}-${i}`, [field(c)]: valueOf(c) }))).flat();
  treat(long);
  const repeated = fixture.cases.map((c, i) => {
    const values = new Set(Array.from({ length: rounds }, (_, r) => long[r * fixture.cases.length + i]?.[field(c)]));
    return values.size === 1 ? [...values][0] : [...values];
  });
  return { page: page.map((r, i) => r[field(fixture.cases[i] as Case)]), alone, repeated };
}

/** Each case treated by `treatment` gives `expected`, however the pages are cut. */
function expectTokens(treatment: Treatment, key: string | undefined, expected: readonly unknown[]): void {
  const got = treated(treatment, key);
  expect(got.page).toEqual(expected);
  expect(got.alone).toEqual(expected);
  expect(got.repeated).toEqual(expected);
}

describe("today's tokens (fixtures/tokens.json)", () => {
  it('has cases of every kind, null and numbers among them', () => {
    expect(fixture.cases.length).toBeGreaterThan(60);
    for (const kind of ['email', 'phone', 'text'] as const) expect(fixture.cases.filter((c) => c.kind === kind).length).toBeGreaterThan(10);
    expect(fixture.cases.some((c) => c.value === null)).toBe(true);
    expect(fixture.cases.some((c) => typeof c.value === 'number')).toBe(true);
    expect(fixture.cases.some((c) => c.raw !== undefined)).toBe(true);
  });

  it.each(fixture.keys.map((key, k) => [k, key] as const))('hash under key %i', (k, key) => {
    expectTokens('hash', key, fixture.cases.map((c) => c.hash[k]));
  });

  it('sha256', () => {
    expectTokens('sha256', undefined, fixture.cases.map((c) => c.sha256));
  });

  it('email_domain', () => {
    expectTokens('email_domain', undefined, fixture.cases.map((c) => c.email_domain));
  });
});

describe('RFC 4231 HMAC-SHA-256 vectors whose key and data are text, through the hash treatment', () => {
  const vectors: [string, string, string, string][] = [
    ['1', '\u000b'.repeat(20), 'Hi There', 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7'],
    ['2', 'Jefe', 'what do ya want for nothing?', '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843'],
    ['5 (truncated to 128 bits)', '\u000c'.repeat(20), 'Test With Truncation', 'a3b6167473100ee06e0c796c2955552b'],
  ];
  it.each(vectors)('test case %s', (_n, key, data, expected) => {
    const record: Record<string, unknown> = { id: 'c1', name: data };
    treater('hash', key)([record]);
    expect(String(record.name).slice(0, expected.length)).toBe(expected);
  });
});
