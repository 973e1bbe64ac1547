/**
 * Response bodies: read the bytes, undo Content-Encoding (undici's `request`
 * hands bodies over as sent), parse JSON once, numbers exact. No per-record work here.
 */
import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate } from 'node:zlib';
import type { Dispatcher } from 'undici';
import { parseExactJson } from '../exact-json.js';
import type { Clean } from './redact.js';

const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);
const brotliAsync = promisify(brotliDecompress);

/**
 * A body longer than the client reads (ClientOptions.maxBodyBytes), as sent
 * or once decompressed: a page is some hundred KB, and a body without end
 * (a download behind a wrong base_url, a compression bomb) would otherwise
 * fill the memory until the process dies, with no word and no state.
 */
export class BodyTooLarge extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`the body is larger than the ${sizeText(limit)} the connector reads of one answer`);
    this.name = 'BodyTooLarge';
    this.limit = limit;
  }

  /** "a body larger than the 64 MiB the connector reads of one answer", for the client's messages. */
  get what(): string {
    return `a body larger than the ${sizeText(this.limit)} the connector reads of one answer`;
  }
}

/** "64 MiB", "64 KiB", "1000 bytes". */
function sizeText(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

/** All bytes of a response body, at most `max` (else BodyTooLarge, the rest left unread). */
export async function readBytes(body: Dispatcher.ResponseData['body'], max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > max) throw new BodyTooLarge(max);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks, size);
}

/** A body read as text; `utf8` false when some bytes were not UTF-8 (each became U+FFFD). */
export interface BodyText {
  readonly text: string;
  readonly utf8: boolean;
}

/**
 * All of a body as UTF-8 text, decoded chunk by chunk as it arrives: no
 * contiguous copy of the bytes is made (a page is ~200 KB; one big Buffer per
 * page is external memory the GC frees late). TextDecoder's streaming mode is
 * the fastest decoder Node has (simdutf), faster than StringDecoder and than
 * one toString of the concatenated bytes. A BOM is kept (parseJson drops it).
 * At most `max` bytes (else BodyTooLarge, the rest left unread).
 * Bytes that are not UTF-8 become U+FFFD, as with Buffer#toString, and
 * `utf8` says so (the decoder is fatal; only then are the chunks, held
 * until the end, decoded again with replacement).
 */
export async function readText(body: Dispatcher.ResponseData['body'], max: number): Promise<BodyText> {
  let decoder: TextDecoder | undefined = new TextDecoder('utf-8', { ignoreBOM: true, fatal: true });
  const chunks: Buffer[] = [];
  let size = 0;
  let text = '';
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > max) throw new BodyTooLarge(max);
    chunks.push(chunk as Buffer);
    if (decoder === undefined) continue;
    try {
      text += decoder.decode(chunk as Buffer, { stream: true });
    } catch {
      decoder = undefined;
    }
  }
  if (decoder !== undefined) {
    try {
      return { text: text + decoder.decode(), utf8: true };
    } catch {
      // The body ends inside a character.
    }
  }
  const replacing = new TextDecoder('utf-8', { ignoreBOM: true });
  text = '';
  for (const chunk of chunks) text += replacing.decode(chunk, { stream: true });
  return { text: text + replacing.decode(), utf8: false };
}

/** Whether a Content-Encoding header leaves the body as sent (absent, or identity only). */
export function isIdentityEncoding(contentEncoding: string | undefined): boolean {
  if (contentEncoding === undefined) return true;
  return contentEncoding.split(',').every((c) => {
    const coding = c.trim().toLowerCase();
    return coding === '' || coding === 'identity';
  });
}

/**
 * Undo the Content-Encoding list (last applied first), each step at most
 * `max` bytes (else BodyTooLarge). Throws on a corrupt or unknown coding.
 */
export async function decode(bytes: Buffer, contentEncoding: string | undefined, max: number): Promise<Buffer> {
  if (contentEncoding === undefined) return bytes;
  const codings = contentEncoding
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  const limit = { maxOutputLength: max };
  let out = bytes;
  try {
    for (const coding of codings.reverse()) {
      if (coding === 'gzip' || coding === 'x-gzip') out = await gunzipAsync(out, limit);
      else if (coding === 'deflate') out = await inflateAsync(out, limit);
      else if (coding === 'br') out = await brotliAsync(out, limit);
      else throw new Error(`unsupported content-encoding "${coding}"`);
    }
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw new BodyTooLarge(max);
    throw err;
  }
  return out;
}

type JsonResult = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly reason: string };

/**
 * Parse a whole body (bytes, or text already decoded) as JSON (a leading BOM
 * is tolerated). Every number keeps its text (see exact-json.ts).
 */
export function parseJson(body: Buffer | string): JsonResult {
  let text = typeof body === 'string' ? body : body.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.trim() === '') return { ok: false, reason: 'the body is empty' };
  try {
    return { ok: true, value: parseExactJson(text) };
  } catch (err) {
    // V8's messages quote the body; the body is described separately, so only the kind of fault is kept.
    const message = err instanceof Error ? err.message : '';
    const position = /at position (\d+)/.exec(message)?.[1];
    const truncated = /end of (JSON )?input|Unterminated/i.test(message) || (position !== undefined && Number(position) >= text.trimEnd().length);
    return { ok: false, reason: truncated ? 'the JSON body ends too early (truncated)' : 'the body is not valid JSON' };
  }
}

/** Text that begins as JSON does (after white space and a BOM): an object or an array. */
const JSON_START = /^[\s\uFEFF]*[[{]/;

/**
 * Whether a Content-Type is JSON (application/json, application/problem+json,
 * any other +json or json subtype); undefined without one. The API answers in
 * JSON only: a body of another type (text/html, a download) comes from
 * something else at base_url.
 */
export function isJsonType(contentType: string | undefined): boolean | undefined {
  if (contentType === undefined || contentType.trim() === '') return undefined;
  const subtype = contentType.split(';')[0]?.trim().toLowerCase().split('/')[1] ?? '';
  return /(^|[+.-])json$/.test(subtype);
}

/**
 * What came back, for a message: content type and the first characters,
 * cleaned; of JSON text only its size, never its characters (a page that
 * breaks off is records: names, e-mails, phones, whatever the config says of
 * them, as they were before any treatment).
 */
export function describeBody(bytes: Buffer, contentType: string | undefined, clean: Clean): string {
  const type = contentType === undefined ? 'no content-type' : `content-type ${clean(contentType, 80)}`;
  if (bytes.length === 0) return `${type}, empty body`;
  const text = bytes.toString('utf8');
  if (JSON_START.test(text)) return `${type}, ${bytes.length} bytes of JSON text (not quoted: it may hold records)`;
  // Clean the whole text before cutting it, so no part of a secret can survive at the cut.
  const head = clean(text, 80);
  return `${type}, ${bytes.length} bytes, beginning "${head}"`;
}
