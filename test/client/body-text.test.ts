/** Bodies decoded chunk by chunk equal one decode of the whole body. */
import { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import { isIdentityEncoding, parseJson, readText } from '../../src/client/body.js';

const asBody = (chunks: Buffer[]): Dispatcher.ResponseData['body'] => Readable.from(chunks) as unknown as Dispatcher.ResponseData['body'];

/** Every way of cutting `bytes` in two, plus a cut into single bytes. */
function cuts(bytes: Buffer): Buffer[][] {
  const out: Buffer[][] = [[bytes], [...bytes].map((b) => Buffer.from([b]))];
  for (let i = 1; i < bytes.length; i++) out.push([bytes.subarray(0, i), bytes.subarray(i)]);
  return out;
}

describe('readText', () => {
  it('decodes multi-byte characters split across chunks', async () => {
    const bytes = Buffer.from('{"name":"João Müller 😀 ünïcödé","n":1}', 'utf8');
    for (const chunks of cuts(bytes)) expect(await readText(asBody(chunks), 1000)).toEqual({ text: bytes.toString('utf8'), utf8: true });
  });

  it('replaces invalid UTF-8 as Buffer#toString does, says so, and keeps a BOM for parseJson to drop', async () => {
    const bad = Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d, 0xc3, 0x28, 0xe2, 0x82]);
    for (const chunks of cuts(bad)) expect(await readText(asBody(chunks), 1000)).toEqual({ text: bad.toString('utf8'), utf8: false });
    // Cut inside the last character: only the end of the body shows it.
    for (const chunks of cuts(Buffer.from([0x7b, 0x7d, 0xe2, 0x82]))) expect((await readText(asBody(chunks), 1000)).utf8).toBe(false);
    const parsed = parseJson((await readText(asBody([Buffer.from('\ufeff{"a":1}', 'utf8')]), 1000)).text);
    expect(parsed).toEqual({ ok: true, value: { a: 1 } });
  });

  it('reads as text only bodies without a content coding', () => {
    expect(isIdentityEncoding(undefined)).toBe(true);
    expect(isIdentityEncoding('identity')).toBe(true);
    expect(isIdentityEncoding(' Identity , ')).toBe(true);
    expect(isIdentityEncoding('gzip')).toBe(false);
    expect(isIdentityEncoding('identity, br')).toBe(false);
  });
});
