/** Shared helpers of the emulator tests: start an emulator with an account and key, GET over HTTP, read whole lists. */
import { request } from 'undici';
import { expect } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../packages/emulator/src/index.js';

export interface Setup {
  readonly emu: Emulator;
  readonly accountId: string;
  readonly key: string;
}

export async function setup(options: EmulatorOptions & { contacts?: number } = {}): Promise<Setup> {
  const { contacts = 0, ...rest } = options;
  const emu = await startEmulator({ host: '127.0.0.1', port: 0, seed: 7, ...rest });
  const account = emu.control.createAccount({ name: 'Acme' });
  const { key } = emu.control.createKey(account.id);
  if (contacts > 0) emu.control.seed(account.id, { contacts });
  return { emu, accountId: account.id, key };
}

export interface Got {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly text: string;
  /** Parsed body when it is JSON, else undefined. */
  readonly body: unknown;
}

export async function get(base: string, path: string, options: { key?: string | null; authorization?: string; query?: Record<string, string | number> } = {}): Promise<Got> {
  const qs = options.query === undefined ? '' : `?${new URLSearchParams(Object.entries(options.query).map(([k, v]) => [k, String(v)])).toString()}`;
  const headers: Record<string, string> = {};
  if (options.authorization !== undefined) headers.authorization = options.authorization;
  else if (options.key !== undefined && options.key !== null) headers.authorization = `Bearer ${options.key}`;
  const res = await request(`${base}${path}${qs}`, { headers });
  const text = await res.body.text();
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) flat[k] = Array.isArray(v) ? v.join(', ') : v;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, headers: flat, text, body };
}

export async function control(emu: Emulator, method: string, path: string, body?: unknown, token: string | null = emu.controlToken): Promise<Got> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const res = await request(`${emu.controlUrl}${path}`, {
    method: method as 'GET',
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.body.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) flat[k] = Array.isArray(v) ? v.join(', ') : v;
  return { status: res.statusCode, headers: flat, text, body: parsed };
}

export interface Page {
  data: Record<string, unknown>[];
  next_cursor: string | null;
  has_more: boolean;
  sync_watermark: string;
}

export function asPage(got: Got): Page {
  expect(got.status, got.text).toBe(200);
  const page = got.body as Page;
  expect(Object.keys(page).sort()).toEqual(['data', 'has_more', 'next_cursor', 'sync_watermark']);
  return page;
}

/** Read every page of a list; returns the pages. */
export async function readAll(base: string, path: string, key: string, query: Record<string, string | number> = {}, between?: (page: Page, n: number) => void | Promise<void>): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | null = null;
  for (;;) {
    const got = await get(base, path, { key, query: cursor === null ? query : { ...query, cursor } });
    const page = asPage(got);
    pages.push(page);
    if (between !== undefined) await between(page, pages.length);
    if (!page.has_more) {
      expect(page.next_cursor).toBeNull();
      return pages;
    }
    expect(typeof page.next_cursor).toBe('string');
    cursor = page.next_cursor;
    if (pages.length > 100_000) throw new Error('runaway read');
  }
}

export function records(pages: readonly Page[]): Record<string, unknown>[] {
  return pages.flatMap((p) => p.data);
}

/** Asserts a problem+json error with the given status. */
export function expectProblem(got: Got, status: number, detail?: RegExp | string): Record<string, unknown> {
  expect(got.status, got.text).toBe(status);
  expect(got.headers['content-type']).toBe('application/problem+json');
  const p = got.body as Record<string, unknown>;
  expect(Object.keys(p).sort()).toEqual(['detail', 'request_id', 'status', 'title', 'type']);
  expect(p.type).toBe('about:blank');
  expect(p.status).toBe(status);
  expect(typeof p.title).toBe('string');
  expect(typeof p.detail).toBe('string');
  expect(p.request_id).toMatch(/^req_/);
  expect(got.headers['x-request-id']).toBe(p.request_id);
  if (detail !== undefined) {
    if (typeof detail === 'string') expect(p.detail).toBe(detail);
    else expect(p.detail).toMatch(detail);
  }
  return p;
}

export const TITLES: Record<number, string> = {
  400: 'Invalid request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  429: 'Too many requests',
  500: 'Internal server error',
  503: 'Service unavailable',
};

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
