/** Numbers exactly as written: the pre-scan never misses a number JSON.parse would change. */
import { describe, expect, it } from 'vitest';
import { isRawNumber, mayHoldInexactNumber, parseExactJson } from '../src/exact-json.js';
import { Prng } from 'data-read-emulator';

/** Every JSON number form: integers of every length, fractions with and without trailing zeros, exponents, tiny values, -0. */
function randomNumberText(p: Prng): string {
  const digits = (n: number, first = '123456789') => first[p.int(first.length)] + Array.from({ length: n - 1 }, () => String(p.int(10))).join('');
  const sign = p.chance(0.3) ? '-' : '';
  switch (p.int(8)) {
    case 0:
      return `${sign}${p.chance(0.1) ? '0' : digits(1 + p.int(25))}`;
    case 1:
      return `${sign}${p.chance(0.3) ? '0' : digits(1 + p.int(10))}.${Array.from({ length: 1 + p.int(20) }, () => String(p.int(10))).join('')}`;
    case 2:
      return `${sign}${digits(1 + p.int(4))}.${'0'.repeat(p.int(3))}${digits(1 + p.int(3))}0`;
    case 3:
      return `${sign}${digits(1 + p.int(3))}${p.chance(0.5) ? `.${digits(1 + p.int(3))}` : ''}${p.chance(0.5) ? 'e' : 'E'}${['', '+', '-'][p.int(3)]}${1 + p.int(30)}`;
    case 4:
      return `${sign}0.${'0'.repeat(p.int(9))}${digits(1 + p.int(4))}`;
    case 5:
      return p.chance(0.5) ? '-0' : '-0.0';
    case 6:
      return String(p.int(1000));
    default:
      return `${sign}${digits(1 + p.int(15))}`;
  }
}

describe('exact JSON', () => {
  it('keeps 2^53 + 1, 1.50, 1e3, -0 and 0.1000000000000000055511 as written, in members, arrays and nested objects', () => {
    const text = '{"data":[{"id":"a","n":9007199254740993,"p":1.50,"e":1e3,"z":-0,"long":0.1000000000000000055511,"ok":42,"nested":{"big":123456789012345678901234567890,"list":[1.0,2,3.25]}}],"has_more":false}';
    const value = parseExactJson(text) as { data: Record<string, unknown>[] };
    expect(JSON.stringify(value)).toBe(text);
    const record = value.data[0] as Record<string, unknown>;
    expect(isRawNumber(record.n)).toBe(true);
    expect(record.ok).toBe(42); // unchanged numbers stay plain numbers
  });

  it('a top-level number, and a page without inexact numbers takes the plain parse', () => {
    expect(JSON.stringify(parseExactJson(' 1.50 '))).toBe('1.50');
    expect(parseExactJson('17')).toBe(17);
    const page = '{"data":[{"id":"a","n":12,"t":"2024-01-01T10:00:00.000Z","s":"1.50, 1e3, 9007199254740993"}],"has_more":false}';
    expect(isRawNumber((parseExactJson(page) as { data: { n: unknown }[] }).data[0]?.n)).toBe(false);
  });

  it('whitespace around keys, colons and array items (pretty-printed services) is scanned too', () => {
    const cases: [string, string][] = [
      ['{ "a" : 1.50 }', '{"a":1.50}'],
      ['{"a":\n  [ 1 ,\t9007199254740993 ]\n}', '{"a":[1,9007199254740993]}'],
      ['{"data": [ {"x" :1e2} ]}', '{"data":[{"x":1e2}]}'],
      ['[1, 2, 3.0]', '[1,2,3.0]'],
    ];
    for (const [text, compact] of cases) expect(JSON.stringify(parseExactJson(text)), text).toBe(compact);
  });

  it('10,000 random documents: never a changed digit; whenever the scan says "exact", JSON.parse is exact', () => {
    const p = new Prng(20261121);
    let passedFast = 0;
    for (let i = 0; i < 10_000; i++) {
      const n = randomNumberText(p);
      const shape = p.int(4);
      const text =
        shape === 0 ? `{"data":[{"id":"x","v":${n},"s":"a"}],"has_more":false}`
        : shape === 1 ? `{"data":[{"id":"x","v":[${n}]}]}`
        : shape === 2 ? `{"a":{"b":${n}},"c":[true,${n}]}`
        : `{"data":[{"id":"x"},${n}]}`;
      const value = parseExactJson(text);
      expect(JSON.stringify(value), text).toBe(text);
      if (!mayHoldInexactNumber(text, JSON.parse(text))) {
        passedFast++;
        expect(JSON.stringify(JSON.parse(text)), text).toBe(text);
      }
    }
    expect(passedFast).toBeGreaterThan(1000);
  });

  it('20,000 random compact documents (keys named __proto__, nested objects) come out exactly as written', () => {
    const p = new Prng(77);
    for (let i = 0; i < 20_000; i++) {
      const n = randomNumberText(p);
      const key = ['n', 'count', 'x_y', '__proto__'][p.int(4)];
      const text = p.chance(0.5)
        ? `{"data":[{"id":"r${i}","${key}":${n},"s":"v"},{"id":"q","${key}":${p.int(50)}}],"has_more":true}`
        : `{"data":[{"id":"r${i}","o":{"${key}":${n}},"b":false}],"next_cursor":null}`;
      expect(JSON.stringify(parseExactJson(text)), text).toBe(text);
    }
  });
});
