/**
 * COPY's text format as the PostgreSQL store sends a checkpoint's rows:
 * its escapes, UTF-8, and checkpoints larger than the buffer it starts
 * with. (The server's reading of it: test/stores/postgres/store.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { copyText } from '../../../src/stores/postgres/copy.js';

describe("a checkpoint's rows as COPY text", () => {
  it('a line per row, cells by tabs: NULL as \\N, booleans as t/f, backslash, tab, newline and carriage return escaped', () => {
    const text = copyText([
      ['c1', null, true, 'a\\b\tc\nd\re'],
      ['c2', '', false, 'plain'],
    ]).toString('utf8');
    expect(text).toBe('c1\t\\N\tt\ta\\\\b\\tc\\nd\\re\nc2\t\tf\tplain\n');
  });

  it('UTF-8 bytes for text beyond ASCII (accents, a character outside the BMP)', () => {
    const bytes = copyText([['Conceição', 'São Paulo 🚀']]);
    expect(bytes.toString('utf8')).toBe('Conceição\tSão Paulo 🚀\n');
    expect(bytes.length).toBe(Buffer.byteLength('Conceição\tSão Paulo 🚀\n'));
  });

  it('rows past the buffer it starts with, whole and in order; nothing of a larger call left in a later one', () => {
    const wide = (n: number): string[] => [`id-${n}`, 'é'.repeat(40_000)];
    const rows = Array.from({ length: 20 }, (_, n) => wide(n));
    const text = copyText(rows).toString('utf8');
    expect(text.split('\n')).toHaveLength(21);
    expect(text).toBe(rows.map((r) => `${r.join('\t')}\n`).join(''));
    expect(copyText([['small']]).toString('utf8')).toBe('small\n');
    expect(copyText([]).length).toBe(0);
  });
});
