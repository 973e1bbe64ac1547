/**
 * The paginator asks for the next page while its caller writes the current
 * one out: with the real client (its gate, pacer and undici pool) against a
 * loopback server, the next page's request has been written to its socket
 * (undici's `undici:client:sendHeaders` diagnostics channel, published just
 * before the write) by the time the current page is handed over. Otherwise
 * the caller's work on each page (treating, hashing, writing) would be added
 * to every page's round trip.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/client.js';
import { Paginator } from '../../src/engine/paginator.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';

const contacts = findStream('contacts') as StreamDefinition;
const PAGES = 6;
const SIZE = 50;
const WATERMARK = '2026-03-01T10:00:00.000Z';

let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://loopback');
    const n = Number(url.searchParams.get('cursor') ?? '0');
    const data = Array.from({ length: SIZE }, (_, i) => ({ id: `c${n * SIZE + i}`, updated_at: WATERMARK }));
    const more = n + 1 < PAGES;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ data, has_more: more, next_cursor: more ? String(n + 1) : null, sync_watermark: WATERMARK }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe('Paginator', () => {
  for (const maxConcurrent of [1, 2, 4]) {
    it(`hands a page over once the next page's request is on its socket (max_concurrent_requests ${maxConcurrent})`, async () => {
      const written: string[] = [];
      const onSend = (message: unknown): void => {
        written.push((message as { request: { path: string } }).request.path);
      };
      subscribe('undici:client:sendHeaders', onSend);
      const client = createClient({ baseUrl, apiKey: 'k3y', userAgent: 'test', timeoutMs: 5000, maxRetries: 0, maxWaitSeconds: 60, maxConcurrent });
      try {
        const pages = new Paginator(client, contacts, { updatedSince: undefined }, SIZE);
        const late: string[] = [];
        let read = 0;
        for (;;) {
          const page = await pages.next();
          read += page.records.length;
          if (page.next === null) break;
          if (!written.some((path) => new URL(path, baseUrl).searchParams.get('cursor') === page.next)) late.push(page.next);
        }
        expect(read).toBe(PAGES * SIZE);
        expect(late, 'pages whose next request had not left when they were handed over').toEqual([]);
      } finally {
        unsubscribe('undici:client:sendHeaders', onSend);
        await client.close();
      }
    });
  }
});
