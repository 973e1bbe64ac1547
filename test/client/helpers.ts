/**
 * Shared test helpers: a nock-backed service at http://api.test, a fake clock
 * whose sleep advances time instantly, and a canary key that must never show up.
 */
import { inspect } from 'node:util';
import nock from 'nock';
import { expect } from 'vitest';
import { createClient, type CreateClientOptions } from '../../src/client/client.js';
import type { DataReadApi, WaitNotice } from '../../src/client/types.js';

export const BASE = 'http://api.test';
export const CANARY = 'drk_live_CANARY9f8e7d6c5b4a3210zz';
export const UA = 'source-data-read/0.1.0 (+https://example.test/source-data-read)';
export const T0 = Date.parse('2025-03-01T12:00:00.000Z');
export const WATERMARK = '2025-03-01T11:59:00.000Z';

export function page(data: unknown[] = [{ id: 'c1' }], more = false, cursor: string | null = null): Record<string, unknown> {
  return { data, next_cursor: cursor, has_more: more, sync_watermark: WATERMARK };
}

export const JSON_HEADERS = { 'content-type': 'application/json' };
export const PROBLEM_HEADERS = { 'content-type': 'application/problem+json' };

export function problem(status: number, title: string, detail: string, requestId = `req-${status}`): Record<string, unknown> {
  return { type: 'about:blank', title, status, detail, request_id: requestId };
}

/** Time that moves only when the client sleeps (or the test advances it). */
export class FakeClock {
  t = T0;
  readonly sleeps: number[] = [];
  readonly now = (): number => this.t;
  readonly sleep = async (ms: number): Promise<void> => {
    this.sleeps.push(ms);
    this.t += ms;
    await Promise.resolve();
  };
}

export interface Harness {
  readonly client: DataReadApi;
  readonly clock: FakeClock;
  readonly waits: WaitNotice[];
  readonly logs: Array<{ level: string; message: string }>;
  /** Everything the client told the outside (for the canary check). */
  readonly told: () => string;
}

export function harness(overrides: Partial<CreateClientOptions> = {}, fakeTime = true): Harness {
  const clock = new FakeClock();
  const waits: WaitNotice[] = [];
  const logs: Array<{ level: string; message: string }> = [];
  const client = createClient({
    baseUrl: BASE,
    apiKey: CANARY,
    userAgent: UA,
    timeoutMs: 2000,
    maxRetries: 3,
    maxWaitSeconds: 900,
    maxConcurrent: 2,
    retryBaseMs: 5,
    retryMaxMs: 50,
    random: () => 0.5,
    onWait: (n) => waits.push(n),
    onLog: (level, message) => logs.push({ level, message }),
    ...(fakeTime ? { now: clock.now, sleep: clock.sleep } : {}),
    ...overrides,
  });
  return { client, clock, waits, logs, told: () => JSON.stringify({ waits, logs }) };
}

/** Run `fn`, expect it to reject, return the error. */
export async function failure(fn: () => Promise<unknown>): Promise<Error> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof Error) return err;
    throw new Error(`rejected with a non-Error: ${String(err)}`);
  }
  throw new Error('expected a rejection, got a value');
}

/** What `fn` rejected with (as failure does), the harness's client closed afterwards. */
export async function failureThenClose(h: Harness, fn: () => Promise<unknown>): Promise<Error> {
  const err = await failure(fn);
  await h.client.close();
  return err;
}

/** The canary key appears nowhere in the error: message, stack, JSON, inspect (with causes), internal. */
export function expectNoKey(err: unknown, extra = ''): void {
  const views = [inspect(err, { depth: 10, showHidden: true }), JSON.stringify(err), extra];
  if (err instanceof Error) {
    views.push(err.message, String(err.stack), String((err as { internal?: unknown }).internal));
    let cause: unknown = err.cause;
    for (let i = 0; i < 5 && cause !== undefined; i += 1) {
      views.push(inspect(cause, { depth: 10, showHidden: true }));
      cause = cause instanceof Error ? cause.cause : undefined;
    }
  }
  for (const v of views) {
    expect(v).not.toContain(CANARY);
    expect(v).not.toContain('CANARY9f8e7d6c5b4a3210');
  }
}

export function resetNock(): void {
  nock.cleanAll();
  nock.abortPendingRequests();
}

/**
 * Answer GET `path` (any query) up to `times` times with `answer(n)`, n the
 * number of the request from 1; `count` says how many requests came.
 */
export function countRequests(path: string, times: number, answer: (n: number) => [number, unknown, Record<string, string>?]): { readonly count: number } {
  const counter = { count: 0 };
  nock(BASE)
    .get(path)
    .query(true)
    .times(times)
    .reply(() => {
      counter.count += 1;
      const [status, body, headers] = answer(counter.count);
      return [status, body as string, headers ?? {}];
    });
  return counter;
}
