/**
 * An in-memory DataReadApi serving one list from fixed records, with the
 * paging rules of the API (opaque cursors, one watermark per read) and hooks
 * to misbehave. For unit tests of the stream reader; the HTTP client has its
 * own tests and the end-to-end tests use the real emulator.
 */
import { ApiError, type ClientStats, type DataReadApi, type ListQuery, type RawPage } from '../../src/client/types.js';
import type { Me } from '../../src/schemas/resources.js';

export interface FakeOptions {
  records: Record<string, unknown>[];
  watermark: string;
  /** Called before each request; may throw or return a page to serve instead. */
  intercept?: (call: number, query: ListQuery) => RawPage | undefined;
}

export class FakeApi implements DataReadApi {
  readonly calls: { path: string; query: ListQuery }[] = [];
  readonly stats: ClientStats = { requests: 0, retries: 0, rateLimitWaits: 0, throttled: 0, waitedMs: 0 };
  private readonly options: FakeOptions;
  constructor(options: FakeOptions) {
    this.options = options;
  }
  async me(): Promise<Me> {
    return { account_name: 'Fake', scopes: ['data:read'], limits: { per_minute: 60, per_day: 1000 } };
  }
  async list(path: string, query: ListQuery): Promise<RawPage> {
    this.calls.push({ path, query: { ...query } });
    this.stats.requests++;
    const injected = this.options.intercept?.(this.calls.length, query);
    if (injected) return injected;
    let offset = 0;
    if (query.cursor !== undefined) {
      const match = /^c(\d+)$/.exec(query.cursor);
      if (!match) throw new ApiError('bad_request', 'system_error', 'Invalid request: cursor is not valid', { status: 400 });
      offset = Number(match[1]);
    }
    const data = this.options.records.slice(offset, offset + query.limit);
    const end = offset + data.length;
    const hasMore = end < this.options.records.length;
    return { data, has_more: hasMore, next_cursor: hasMore ? `c${end}` : null, sync_watermark: this.options.watermark };
  }
  async close(): Promise<void> {}
}

export function makeRecords(n: number): Record<string, unknown>[] {
  return Array.from({ length: n }, (_, i) => ({ id: `r${String(i).padStart(5, '0')}`, updated_at: '2026-01-01T00:00:00.000Z', n: i }));
}
