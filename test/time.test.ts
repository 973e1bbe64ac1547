import { describe, expect, it } from 'vitest';
import { isLaterInstant, parseInstant } from '../src/time.js';

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
