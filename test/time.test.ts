import { describe, expect, it } from 'vitest';
import { parseInstant } from '../src/time.js';

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
