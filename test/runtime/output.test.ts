/**
 * Record lines written as bytes (src/runtime/output.ts, writeRecordLines):
 * the same bytes as the lines' text in UTF-8, in writes of about 64 KiB that
 * end with whole lines, each write a buffer of its own.
 */
import { describe, expect, it } from 'vitest';
import { rawNumber } from '../../src/exact-json.js';
import { Writable } from 'node:stream';
import { StderrLogger, writeRecordLines } from '../../src/runtime/output.js';

const HEAD = '{"type":"RECORD","record":{"stream":"contacts","data":';
const TAIL = ',"emitted_at":1700000000000}}\n';

/** What writeRecordLines wrote: each write as it was handed over (not copied). */
async function written(records: readonly unknown[]): Promise<Uint8Array[]> {
  const writes: Uint8Array[] = [];
  await writeRecordLines(
    async (bytes) => {
      writes.push(bytes);
    },
    records,
    Buffer.from(HEAD, 'utf8'),
    Buffer.from(TAIL, 'utf8'),
  );
  return writes;
}

const expected = (records: readonly unknown[]): Buffer => Buffer.from(records.map((r) => `${HEAD}${JSON.stringify(r)}${TAIL}`).join(''), 'utf8');

describe('writeRecordLines', () => {
  it('writes each line as its text in UTF-8: accents, CJK, emoji, escapes, exact numbers', async () => {
    const records = [
      { id: 'a', name: 'Nicolás Gonçalves', city: 'São Paulo' },
      { id: 'b', name: '山田太郎', note: 'emoji \u{1F600} and a tab\t and "quotes" and \\' },
      { id: 'c', big: rawNumber('9007199254740993'), price: rawNumber('1.50'), n: 42, none: null, list: [1, 'x', { y: true }] },
      { id: 'd', lone: '\ud800 alone' },
    ];
    const writes = await written(records);
    expect(Buffer.concat(writes)).toEqual(expected(records));
  });

  it('writes nothing for no records', async () => {
    expect(await written([])).toEqual([]);
  });

  it('splits into writes of about 64 KiB, each ending with a whole line, each its own buffer', async () => {
    const records = Array.from({ length: 2000 }, (_, i) => ({ id: `r${i}`, name: `Renée ${i}`, text: 'x'.repeat(i % 300) }));
    const writes = await written(records);
    expect(writes.length).toBeGreaterThan(3);
    for (const w of writes) {
      expect(w.length).toBeLessThanOrEqual(64 * 1024);
      expect(w[w.length - 1]).toBe(0x0a);
    }
    // The buffers were kept as handed over: a later write did not reuse an earlier one's bytes.
    expect(Buffer.concat(writes)).toEqual(expected(records));
    expect(new Set(writes.map((w) => w.buffer)).size).toBe(writes.length);
  });

  it('writes a line longer than a write whole, after the lines before it', async () => {
    const records = [{ id: 'small' }, { id: 'large', text: 'é'.repeat(100_000) }, { id: 'after' }];
    const writes = await written(records);
    expect(Buffer.concat(writes)).toEqual(expected(records));
    expect(writes).toHaveLength(2);
    expect(Buffer.from(writes[0] as Uint8Array).toString('utf8')).toBe(`${HEAD}{"id":"small"}${TAIL}`);
  });
});

describe('StderrLogger', () => {
  /** The text a logger wrote for one line. */
  function printed(message: string): string {
    let text = '';
    const err = new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += chunk.toString('utf8');
        done();
      },
    });
    new StderrLogger('source-data-read', err).log('INFO', message);
    return text;
  }

  it("escapes the characters a terminal runs as commands (the service's words reach stderr), and keeps the rest of the line", () => {
    // An account name from /v1/me: clear the screen, set the window title, CSI in its one-character form, CR over the line, text turned right to left.
    const line = printed('Connected to account "\u001b[2J\u001b]0;owned\u0007\u009b31mAcme\rX\u202eZ" (limits: 10 requests/minute).');
    expect(line).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(line).toMatch(/ INFO source-data-read: Connected to account "\\u001b\[2J\\u001b\]0;owned\\u0007\\u009b31mAcme\\u000dX\\u202eZ" \(limits: 10 requests\/minute\)\.\n$/);
  });

  it('keeps tabs and the lines of a message that has several', () => {
    expect(printed('a\tb\nc')).toMatch(/: a\tb\nc\n$/);
  });
});
