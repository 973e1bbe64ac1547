/**
 * An in-memory DataReadApi with one list per path (the paging rules of the
 * API: opaque cursors, one watermark per read, has_more), for unit tests of
 * the replica. A hook runs before each page so tests can delay or fail one.
 */
import { ApiError, type ClientStats, type DataReadApi, type ListQuery, type RawPage } from '../../src/client/types.js';
import type { Me } from '../../src/schemas/resources.js';

export type Rec = Record<string, unknown>;

export class FakeService implements DataReadApi {
  readonly stats: ClientStats = { requests: 0, retries: 0, rateLimitWaits: 0, throttled: 0, waitedMs: 0 };
  readonly calls: { path: string; query: ListQuery }[] = [];
  readonly lists = new Map<string, Rec[]>();
  watermark = '2026-03-01T00:00:00.000Z';
  beforePage: (path: string, query: ListQuery) => void | Promise<void> = () => undefined;

  set(path: string, records: Rec[]): this {
    this.lists.set(path, records);
    return this;
  }

  async me(): Promise<Me> {
    return { account_name: 'Fake', scopes: ['data:read'], limits: { per_minute: 600, per_day: 100_000 } };
  }

  async list(path: string, query: ListQuery): Promise<RawPage> {
    this.calls.push({ path, query: { ...query } });
    this.stats.requests++;
    await this.beforePage(path, query);
    const records = this.lists.get(path);
    if (!records) throw new ApiError('not_found', 'system_error', `${path}: not found`, { status: 404 });
    let offset = 0;
    if (query.cursor !== undefined) {
      const match = /^(.+)#(\d+)$/.exec(query.cursor);
      if (!match || match[1] !== path) throw new ApiError('bad_request', 'system_error', 'Invalid request: cursor is not valid', { status: 400 });
      offset = Number(match[2]);
    }
    const data = records.slice(offset, offset + query.limit);
    const end = offset + data.length;
    const hasMore = end < records.length;
    return { data, has_more: hasMore, next_cursor: hasMore ? `${path}#${end}` : null, sync_watermark: this.watermark };
  }

  async close(): Promise<void> {}
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
