import { describe, expect, it } from 'vitest';
import { changedAfterDeletion, isLaterInstant, parseInstant } from '../src/time.js';
import { canonicalInstant } from '../src/stores/values.js';
import { instantMicros } from '../src/stores/duckdb/writer.js';

describe('parseInstant', () => {
  it('reads dates as midnight UTC and rejects impossible ones', () => {
    expect(parseInstant('2024-03-01')).toBe(Date.UTC(2024, 2, 1));
    expect(parseInstant('2024-13-01')).toBeNaN();
    expect(parseInstant('2024-03-01T00:00:00+02:00')).toBe(Date.UTC(2024, 1, 29, 22));
    expect(parseInstant('2024-03-01T00:00:00+0200')).toBe(Date.UTC(2024, 1, 29, 22));
    expect(parseInstant('2024-03-01T05:30-0530')).toBe(Date.UTC(2024, 2, 1, 11));
    expect(parseInstant('0099-01-01')).toBe(new Date('0099-01-01T00:00:00Z').getTime());
    for (const bad of ['0000-01-01', '2024-02-30T00:00:00Z', '2024-01-01T12:60:00Z', '2024-01-01T00:00:00+0260']) expect(parseInstant(bad), bad).toBeNaN();
  });
});

describe('isLaterInstant', () => {
  it('compares to the microsecond, across offsets; never for what is not an instant', () => {
    expect(isLaterInstant('2026-01-01T00:00:00.000500Z', '2026-01-01T00:00:00.000Z')).toBe(true);
    expect(isLaterInstant('2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000500Z')).toBe(false);
    expect(isLaterInstant('2026-01-01T00:00:00.0005Z', '2026-01-01T00:00:00.000500Z')).toBe(false);
    // Digits past the microsecond are not compared.
    expect(isLaterInstant('2026-01-01T00:00:00.0000009Z', '2026-01-01T00:00:00Z')).toBe(false);
    expect(isLaterInstant('2026-01-01T02:00:00.000001+02:00', '2026-01-01T00:00:00Z')).toBe(true);
    expect(isLaterInstant('2026-01-02', '2026-01-01T23:59:59.999999Z')).toBe(true);
    for (const [a, b] of [['soon', '2026-01-01'], ['2026-01-01', 'soon'], [null, '2026-01-01'], [20, 10]]) expect(isLaterInstant(a, b)).toBe(false);
  });
});

describe('changedAfterDeletion', () => {
  it("only a cursor later than the deletion by more than the service's 5-minute look-back, to the microsecond", () => {
    const deleted = '2026-01-01T00:00:00.000Z';
    expect(changedAfterDeletion('2026-01-01T00:00:30Z', deleted)).toBe(false);
    expect(changedAfterDeletion('2026-01-01T00:05:00.000Z', deleted)).toBe(false);
    expect(changedAfterDeletion('2026-01-01T00:05:00.000001Z', deleted)).toBe(true);
    expect(changedAfterDeletion('2026-01-01T00:05:00.000999Z', '2026-01-01T00:00:00.001Z')).toBe(false);
    expect(changedAfterDeletion('2026-01-01T00:05:00.001Z', '2025-12-31T21:00:00.000999-03:00')).toBe(true);
    for (const [a, b] of [['soon', deleted], ['2026-01-02', 'soon'], [null, deleted]]) expect(changedAfterDeletion(a, b)).toBe(false);
  });
});

describe("the process's time zone (TZ)", () => {
  it('changes no instant read: start_date forms, offsets, fractions, leap days, year ends, across a DST change', () => {
    const texts = [
      '2024-02-29', '2024-02-29T23:59:59.999Z', '2025-12-31T23:59:59.9999999-03:00', '2026-01-01T00:00:00+05:30', '2026-03-08T02:30:00-0500',
      '2026-10-25T01:30:00.5+01:00', '2026-11-02T00:00Z', '0001-01-01T00:00:00.000001+01:00', '9999-12-31T23:59:59.999Z', '2026-06-01t12:00:00.123456z',
    ];
    // What the config and the state read (parseInstant), and what the stores write (canonicalInstant, DuckDB's microseconds).
    const read = () =>
      texts.map((t) => {
        const canonical = canonicalInstant(t) ?? null;
        return [parseInstant(t), canonical, canonical === null ? null : instantMicros(t).toString()];
      });
    const saved = process.env.TZ;
    try {
      process.env.TZ = 'UTC';
      const utc = read();
      for (const zone of ['America/Sao_Paulo', 'Asia/Kolkata', 'America/New_York', 'Pacific/Chatham']) {
        process.env.TZ = zone;
        expect(new Date(Date.UTC(2026, 0, 1)).getTimezoneOffset(), zone).not.toBe(0);
        expect(read(), zone).toEqual(utc);
        expect(isLaterInstant('2026-03-08T03:00:00-04:00', '2026-03-08T01:59:59.999-05:00'), zone).toBe(true);
      }
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  });
});
