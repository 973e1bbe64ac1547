import { describe, expect, it } from 'vitest';
import { instantMicros } from '../../src/stores/duckdb/writer.js';
import { canonicalInstant } from '../../src/stores/values.js';

/** The instants of a date-time as Date reads it, the way both functions worked before their shortcut for toISOString's form. */
function byDate(text: string): { iso: string; micros: bigint } {
  const ms = Date.parse(text.replace(' ', 'T').replace(/(\.\d{3})\d+/, '$1'));
  const fraction = /:\d{2}\.(\d+)/.exec(text)?.[1] ?? '';
  const subMs = fraction.length > 3 ? Number(fraction.slice(3, 6).padEnd(3, '0')) : 0;
  return { iso: new Date(ms).toISOString(), micros: BigInt(ms) * 1000n + BigInt(subMs) };
}

describe('instants in toISOString form take the short way to the same result', () => {
  it('gives the text itself and the same microseconds as Date, over a spread of instants', () => {
    let seed = 1;
    const next = (): number => (seed = (seed * 48271) % 2147483647) / 2147483647;
    for (let i = 0; i < 5000; i++) {
      const text = new Date(Date.UTC(1, 0, 1) + Math.floor(next() * (Date.UTC(9999, 11, 31) - Date.UTC(1, 0, 1)))).toISOString();
      expect(canonicalInstant(text)).toBe(text);
      expect(instantMicros(text)).toBe(byDate(text).micros);
    }
  });

  it('checks the calendar as before: leap days, month lengths, hours', () => {
    expect(canonicalInstant('2024-02-29T10:00:00.000Z')).toBe('2024-02-29T10:00:00.000Z');
    expect(canonicalInstant('2000-02-29T10:00:00.000Z')).toBe('2000-02-29T10:00:00.000Z');
    for (const bad of ['2023-02-29T10:00:00.000Z', '1900-02-29T10:00:00.000Z', '2024-04-31T10:00:00.000Z', '2024-13-01T10:00:00.000Z', '2024-01-01T24:00:00.000Z', '2024-01-01T10:60:00.000Z', '2024-01-01T10:00:60.000Z', '0000-01-01T00:00:00.000Z']) {
      expect(canonicalInstant(bad)).toBeUndefined();
    }
  });

  it('refuses an offset beyond 15:59, which PostgreSQL refuses and Date reads', () => {
    expect(canonicalInstant('2026-01-01T00:00:00+15:59')).toBe('2025-12-31T08:01:00.000Z');
    expect(canonicalInstant('2026-01-01T00:00:00-1559')).toBe('2026-01-01T15:59:00.000Z');
    for (const bad of ['2026-01-01T00:00:00+16:00', '2026-01-01T00:00:00-16:00', '2026-01-01T00:00:00.5+2359', '2026-01-01T00:00:00+12:60']) expect(canonicalInstant(bad)).toBeUndefined();
  });

  it('leaves other forms to Date: offsets, lower-case z, more or fewer digits', () => {
    for (const text of ['2026-01-01T00:12:00.123456+02:00', '2026-01-01t00:12:00.123z', '2026-01-01 00:12:00Z', '2026-01-01T00:12:00.1Z', '2026-01-01T00:12:00.123456789Z']) {
      expect(canonicalInstant(text)).toBe(byDate(text).iso);
      expect(canonicalInstant(text)).not.toBe(text);
      expect(instantMicros(text)).toBe(byDate(text).micros);
    }
  });
});
