/**
 * An in-memory DataReadApi: one list of records per API path, served with the
 * paging rules of the API (opaque cursors, one watermark per read, has_more),
 * and a hook before each page to delay, fail or replace it. For unit tests of
 * the engine and the faces; the HTTP client has its own tests and the
 * end-to-end tests use the real emulator.
 */
import { ApiError } from '../../src/client/api-error.js';
import type { ClientStats, DataReadApi, ListQuery, RawPage } from '../../src/client/types.js';
import type { Me } from '../../src/schemas/resources.js';

export type Rec = Record<string, unknown>;

/** Runs before each page (`call` counts from 1): may wait, throw (a failed request) or return the page to serve instead. */
export type BeforePage = (path: string, query: ListQuery, call: number) => RawPage | undefined | void | Promise<RawPage | undefined | void>;

export class FakeApi implements DataReadApi {
  readonly stats: ClientStats = { requests: 0, retries: 0, rateLimitWaits: 0, throttled: 0, waitedMs: 0, rateLimitWaitedMs: 0 };
  readonly calls: { path: string; query: ListQuery }[] = [];
  readonly lists = new Map<string, Rec[]>();
  watermark: string;
  beforePage: BeforePage = () => undefined;
  /** What GET /v1/openapi.json answers: a document, or an error to throw (default: a 404). */
  openApi: unknown = new ApiError('not_found', 'config_error', 'The Data-Read API has no /v1/openapi.json (HTTP 404).', { status: 404 });
  descriptionCalls = 0;

  /** @param lists records per path; a path without a list answers 404 */
  constructor(lists: Record<string, Rec[]> = {}, watermark = '2026-03-01T00:00:00.000Z') {
    for (const [path, records] of Object.entries(lists)) this.lists.set(path, records);
    this.watermark = watermark;
  }

  set(path: string, records: Rec[]): this {
    this.lists.set(path, records);
    return this;
  }

  async me(): Promise<Me> {
    return { account_name: 'Fake', scopes: ['data:read'], limits: { per_minute: 600, per_day: 100_000 } };
  }

  async description(): Promise<unknown> {
    this.descriptionCalls++;
    this.stats.requests++;
    if (this.openApi instanceof Error) throw this.openApi;
    return this.openApi;
  }

  async list(path: string, query: ListQuery): Promise<RawPage> {
    this.calls.push({ path, query: { ...query } });
    this.stats.requests++;
    const injected = await this.beforePage(path, query, this.calls.length);
    if (injected) return injected;
    const records = this.lists.get(path);
    if (!records) throw new ApiError('not_found', 'config_error', `The Data-Read API has no ${path} (HTTP 404).`, { status: 404 });
    let offset = 0;
    if (query.cursor !== undefined) {
      const match = /^c(\d+)$/.exec(query.cursor);
      if (!match) throw new ApiError('bad_request', 'system_error', 'Invalid request: cursor is not valid', { status: 400 });
      offset = Number(match[1]);
    }
    const data = records.slice(offset, offset + query.limit);
    const end = offset + data.length;
    const hasMore = end < records.length;
    return { data, has_more: hasMore, next_cursor: hasMore ? `c${end}` : null, sync_watermark: this.watermark };
  }

  async close(): Promise<void> {}
}

/** `n` records with ids r00000, r00001, ... */
export function makeRecords(n: number): Rec[] {
  return Array.from({ length: n }, (_, i) => ({ id: `r${String(i).padStart(5, '0')}`, updated_at: '2026-01-01T00:00:00.000Z', n: i }));
}

export const iso = (minute: number): string => new Date(Date.UTC(2026, 0, 1, 0, minute)).toISOString();

export function contact(id: string, minute: number, extra: Rec = {}): Rec {
  return { id, updated_at: iso(minute), created_at: iso(0), name: `Contact ${id}`, temperature: 'warm', qualification_score: minute, do_not_contact: false, ...extra };
}

export function conversation(id: string, minute: number, extra: Rec = {}): Rec {
  return { id, contact_id: 'c1', updated_at: iso(minute), created_at: iso(minute), active: true, outcome_category: null, ...extra };
}

export function deletion(id: string, objectType: unknown, objectId: string, minute: number): Rec {
  return { id, object_type: objectType, object_id: objectId, deleted_at: iso(minute) };
}
