/**
 * The benchmark's Data-Read server: a tiny node:http server that is never the
 * bottleneck. Pages are rendered once (per stream: 32 distinct pages of 200
 * records, plus the short last page); a request costs a memcpy of the page,
 * the page number written into each record's id slot, and a small tail with
 * the envelope fields. It implements what the connector relies on: bearer
 * auth, limit=200, opaque cursors, next_cursor/has_more, one sync_watermark
 * per read, RateLimit-* headers (with huge limits), /v1/me and /v1/openapi.json
 * (the emulator's description, packages/emulator/openapi.json, as check reads it for its
 * schema drift line). An optional
 * fixed delay per request makes it a slow server.
 *
 * Run it in its own process: `node .build/bench/bench/server.js` prints
 * {"port": N} and serves until stdin closes or SIGTERM.
 *
 * Control (JSON):
 *   POST /__setup {"records": {"/v1/contacts": 100000, ...}, "delayMs": 0} resets counters
 *        optional "changedOf": {"/v1/contacts": 200000}: the N records served are then
 *        new versions (later updated_at, another temperature) of N records spread
 *        evenly over a run of 200000 (every 10th for N = 20000): an incremental sync
 *        whose changes are scattered over the whole replica, as a real account's are
 *   GET  /__stats  request counts per path, out-of-contract requests, peak in-flight
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { ROOT } from './lib.js';
import { GENERATORS, PAGE_SLOT, prng } from './records.js';

export const PAGE = 200;

const TEMPLATES = 32;
const WATERMARK = '2025-06-01T12:00:00.000Z';
const RATE_HEADERS = { 'ratelimit-limit': '1000000', 'ratelimit-remaining': '999999', 'ratelimit-reset': '60' };

/** One rendered page: bytes with the id slots at known offsets. */
interface Template {
  readonly bytes: Buffer;
  readonly slots: readonly number[];
  readonly count: number;
}

function render(path: string, seed: number, count: number): Template {
  const generate = GENERATORS[path];
  if (generate === undefined) throw new Error(`no generator for ${path}`);
  const r = prng(seed);
  const parts: string[] = [];
  for (let i = 0; i < count; i++) parts.push(JSON.stringify(generate(r, i)));
  const bytes = Buffer.from(`{"data":[${parts.join(',')}],`, 'utf8');
  const marker = Buffer.from('P'.repeat(PAGE_SLOT));
  const slots: number[] = [];
  for (let at = bytes.indexOf(marker); at !== -1; at = bytes.indexOf(marker, at + PAGE_SLOT)) slots.push(at);
  if (bytes.length + 200 > BUFFER_BYTES) throw new Error(`a ${path} page of ${bytes.length} bytes does not fit the response buffers`);
  if (slots.length !== count) throw new Error(`expected ${count} id slots in a ${path} page, found ${slots.length}`);
  return { bytes, slots, count };
}

interface StreamPages {
  readonly total: number;
  readonly pages: number;
  readonly full: readonly Template[];
  readonly last: Template | undefined;
  /** Pages rendered whole (changed records): served as they are, no id slots. */
  readonly fixed?: readonly Template[];
}

/** When the changed versions were made (after every generated updated_at). */
const CHANGED_AT = '2025-06-01T11:00:00.000Z';
const templateSeed = (path: string, t: number): number => 1000 + t * 7919 + path.length;

/** Record `index` of page `page` of a run, as the full pages serve it (id slot stamped). */
function originalRecord(path: string, page: number, index: number, parsed: Map<number, Record<string, unknown>[]>): Record<string, unknown> {
  const t = page % TEMPLATES;
  let records = parsed.get(t);
  if (records === undefined) {
    const generate = GENERATORS[path];
    if (generate === undefined) throw new Error(`no generator for ${path}`);
    const r = prng(templateSeed(path, t));
    records = [];
    for (let i = 0; i < PAGE; i++) records.push(generate(r, i));
    parsed.set(t, records);
  }
  const record = { ...records[index] };
  record.id = String(record.id).replace('P'.repeat(PAGE_SLOT), (page & 0xffffffff).toString(16).padStart(PAGE_SLOT, '0'));
  return record;
}

/** `count` changed versions of records spread evenly over a run of `of` records, in pages. */
function changedPages(path: string, count: number, of: number): Template[] {
  if (!(count > 0 && of >= count)) throw new Error(`changedOf: ${count} changed records of ${of}`);
  const stride = Math.floor(of / count);
  const parsed = new Map<number, Record<string, unknown>[]>();
  const pages: Template[] = [];
  for (let start = 0; start < count; start += PAGE) {
    const parts: string[] = [];
    for (let k = start; k < Math.min(count, start + PAGE); k++) {
      const at = k * stride;
      const record = originalRecord(path, Math.floor(at / PAGE), at % PAGE, parsed);
      if ('updated_at' in record) record.updated_at = CHANGED_AT;
      if ('temperature' in record) record.temperature = record.temperature === 'hot' ? 'cold' : 'hot';
      parts.push(JSON.stringify(record));
    }
    const bytes = Buffer.from(`{"data":[${parts.join(',')}],`, 'utf8');
    if (bytes.length + 200 > BUFFER_BYTES) throw new Error(`a changed ${path} page of ${bytes.length} bytes does not fit the response buffers`);
    pages.push({ bytes, slots: [], count: parts.length });
  }
  return pages;
}

const templateCache = new Map<string, Template[]>();
/** Reused response buffers (no per-request allocation of a 220 KB page). */
const BUFFER_BYTES = 1 << 20;
const spare: Buffer[] = [];

function pagesFor(path: string, total: number): StreamPages {
  let full = templateCache.get(path);
  if (full === undefined) {
    full = [];
    for (let t = 0; t < TEMPLATES; t++) full.push(render(path, templateSeed(path, t), PAGE));
    templateCache.set(path, full);
  }
  const pages = Math.max(1, Math.ceil(total / PAGE));
  const rest = total % PAGE;
  const last = total === 0 ? render(path, 1, 0) : rest === 0 ? undefined : render(path, 2, rest);
  return { total, pages, full, last };
}

interface Counters {
  list: Record<string, number>;
  other: Record<string, number>;
  badRequests: number;
  inFlight: number;
  maxInFlight: number;
  firstAt: number;
  lastAt: number;
}

const fresh = (): Counters => ({ list: {}, other: {}, badRequests: 0, inFlight: 0, maxInFlight: 0, firstAt: 0, lastAt: 0 });

/** The service's description, as the emulator serves it (checked in, generated from the zod schemas). */
const DESCRIPTION = readFileSync(join(ROOT, 'packages', 'emulator', 'openapi.json'));

let streams = new Map<string, StreamPages>();
let delayMs = 0;
let run = 0;
let counters = fresh();
/** The lists a read went through to their last page since the last setup: a later read from the server's now finds nothing new. */
let served = new Set<string>();

function json(res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': status >= 400 ? 'application/problem+json' : 'application/json', 'content-length': Buffer.byteLength(text), ...extra });
  res.end(text);
}

function problem(res: ServerResponse, status: number, title: string, detail: string): void {
  if (status === 400) counters.badRequests += 1;
  json(res, status, { type: 'about:blank', title, status, detail, request_id: `bench-${Date.now()}` }, RATE_HEADERS);
}

function servePage(res: ServerResponse, path: string, stream: StreamPages, index: number): void {
  const isLast = index === stream.pages - 1;
  if (isLast) served.add(path);
  const template = stream.fixed ? stream.fixed[index] : isLast && stream.last !== undefined ? stream.last : stream.full[index % TEMPLATES];
  if (template === undefined) throw new Error('no template');
  const buffer = spare.pop() ?? Buffer.allocUnsafeSlow(BUFFER_BYTES);
  const size = template.bytes.copy(buffer);
  const stamp = (index & 0xffffffff).toString(16).padStart(PAGE_SLOT, '0');
  for (const at of template.slots) buffer.write(stamp, at, 'latin1');
  const next = isLast ? null : `${run.toString(36)}.${(index + 1).toString(36)}.${path.length}`;
  const tail = `"next_cursor":${next === null ? 'null' : `"${next}"`},"has_more":${!isLast},"sync_watermark":"${WATERMARK}"}`;
  const body = buffer.subarray(0, size + buffer.write(tail, size, 'utf8'));
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length, ...RATE_HEADERS });
  res.end(body, () => spare.push(buffer));
}

function handleApi(req: IncomingMessage, res: ServerResponse, url: URL): void {
  if (!/^Bearer \S+_live_\S+$/.test(req.headers.authorization ?? '')) {
    problem(res, 401, 'Unauthorized', 'The API key is missing or invalid.');
    return;
  }
  const path = url.pathname;
  if (path === '/v1/me') {
    counters.other[path] = (counters.other[path] ?? 0) + 1;
    json(res, 200, { account_name: 'Bench account', scopes: ['data:read'], limits: { per_minute: 1_000_000, per_day: 100_000_000 } }, RATE_HEADERS);
    return;
  }
  if (path === '/v1/openapi.json') {
    counters.other[path] = (counters.other[path] ?? 0) + 1;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': DESCRIPTION.length, ...RATE_HEADERS });
    res.end(DESCRIPTION);
    return;
  }
  if (url.searchParams.get('limit') === '1' && !url.searchParams.has('cursor')) {
    // replicate asks for the service's now (a one-record page) before a run from saved state, check for one
    // contact (the key serves the data), set up or not: only the envelope is read, so no record is served.
    // Counted apart from the list requests.
    const probe = `${path} (limit=1)`;
    counters.other[probe] = (counters.other[probe] ?? 0) + 1;
    json(res, 200, { data: [], next_cursor: null, has_more: false, sync_watermark: WATERMARK }, RATE_HEADERS);
    return;
  }
  const stream = streams.get(path);
  if (stream === undefined) {
    counters.other[path] = (counters.other[path] ?? 0) + 1;
    problem(res, 404, 'Not Found', `${path} is not served by the benchmark server.`);
    return;
  }
  counters.list[path] = (counters.list[path] ?? 0) + 1;
  if (url.searchParams.get('limit') !== String(PAGE)) {
    problem(res, 400, 'Invalid request', `limit must be ${PAGE} in the benchmark (got ${url.searchParams.get('limit') ?? 'none'}).`);
    return;
  }
  const cursor = url.searchParams.get('cursor');
  if (cursor === null && url.searchParams.get('updated_since') === WATERMARK && served.has(path)) {
    // A read from the watermark of a read already served (the catch-up after a full read): nothing changed since.
    json(res, 200, { data: [], next_cursor: null, has_more: false, sync_watermark: WATERMARK }, RATE_HEADERS);
    return;
  }
  let index = 0;
  if (cursor !== null) {
    const m = /^([0-9a-z]+)\.([0-9a-z]+)\.(\d+)$/.exec(cursor);
    const page = m ? parseInt(m[2] ?? '', 36) : NaN;
    if (!m || m[1] !== run.toString(36) || Number(m[3]) !== path.length || !(page > 0 && page < stream.pages)) {
      problem(res, 400, 'Invalid request', 'cursor is not valid.');
      return;
    }
    index = page;
  }
  servePage(res, path, stream, index);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

interface Setup {
  readonly records?: Record<string, number>;
  readonly changedOf?: Record<string, number>;
  readonly delayMs?: number;
}

async function handleControl(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  if (url.pathname === '/__setup' && req.method === 'POST') {
    const setup = JSON.parse(await readBody(req)) as Setup;
    const next = new Map<string, StreamPages>();
    for (const [path, total] of Object.entries(setup.records ?? {})) {
      const of = setup.changedOf?.[path];
      const pages = pagesFor(path, total);
      next.set(path, of === undefined || total === 0 ? pages : { ...pages, fixed: changedPages(path, total, of) });
    }
    streams = next;
    delayMs = setup.delayMs ?? 0;
    run += 1;
    counters = fresh();
    served = new Set();
    json(res, 200, { ok: true, run });
    return;
  }
  if (url.pathname === '/__stats') {
    json(res, 200, counters);
    return;
  }
  json(res, 404, { error: 'unknown control path' });
}

const server = createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
  const url = new URL(req.url ?? '/', 'http://bench');
  if (url.pathname.startsWith('/__')) {
    handleControl(req, res, url).catch((err: unknown) => json(res, 500, { error: String(err) }));
    return;
  }
  const now = Date.now();
  if (counters.firstAt === 0) counters.firstAt = now;
  counters.lastAt = now;
  counters.inFlight += 1;
  if (counters.inFlight > counters.maxInFlight) counters.maxInFlight = counters.inFlight;
  res.on('close', () => {
    counters.inFlight -= 1;
  });
  const respond = (): void => {
    try {
      handleApi(req, res, url);
    } catch (err) {
      json(res, 500, { type: 'about:blank', title: 'Internal Server Error', status: 500, detail: String(err), request_id: 'bench' });
    }
  };
  if (delayMs > 0) setTimeout(respond, delayMs);
  else respond();
});

const portArg = process.argv.indexOf('--port');
const port = portArg === -1 ? 0 : Number(process.argv[portArg + 1]);
server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
});
// Stop when the parent goes away.
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
