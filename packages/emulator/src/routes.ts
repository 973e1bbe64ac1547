/**
 * The Data-Read API (/v1): routing, authentication, and the handlers that turn
 * the store into responses. Pages are built by joining the records' cached JSON.
 */
import { iso } from './clock.js';
import { DATA_SCOPE, KEY_PATTERN } from './control.js';
import type { FaultRule } from './faults.js';
import { resolveLimits } from './limits.js';
import { ProblemError } from './problem.js';
import { Prng } from './prng.js';
import { LOOK_BACK_MS, parseListQuery, readQuery, type ListQuerySpec } from './query.js';
import type { Indexable } from './keyset.js';
import type { DeletionRecord, ListName } from './records.js';
import type { EmulatorState } from './state.js';
import type { AccountData, ApiKeyData } from './store.js';

export const JSON_TYPE = 'application/json';

export type Route =
  | { readonly kind: 'openapi'; readonly template: string }
  | { readonly kind: 'me'; readonly template: string }
  | { readonly kind: 'contact'; readonly template: string; readonly id: string }
  | { readonly kind: 'list'; readonly template: string; readonly list: ListName; readonly spec: ListQuerySpec };

export interface Reply {
  readonly status: number;
  readonly contentType: string;
  readonly body: string | Buffer;
  readonly headers?: Readonly<Record<string, string>>;
}

const LISTS: Readonly<Record<string, { list: ListName; spec: ListQuerySpec }>> = {
  '/v1/contacts': { list: 'contacts', spec: { updatedSince: true, createdSince: false } },
  '/v1/conversations': { list: 'conversations', spec: { updatedSince: true, createdSince: false } },
  '/v1/stage_events': { list: 'stage_events', spec: { updatedSince: true, createdSince: true } },
  '/v1/deletions': { list: 'deletions', spec: { updatedSince: true, createdSince: true } },
  '/v1/pipeline_stages': { list: 'pipeline_stages', spec: { updatedSince: false, createdSince: false } },
};

export function matchRoute(path: string): Route | null {
  const list = LISTS[path];
  if (list !== undefined) return { kind: 'list', template: path, list: list.list, spec: list.spec };
  if (path === '/v1/me') return { kind: 'me', template: path };
  if (path === '/v1/openapi.json') return { kind: 'openapi', template: path };
  if (path.startsWith('/v1/contacts/')) {
    const raw = path.slice('/v1/contacts/'.length);
    if (raw !== '' && !raw.includes('/')) {
      let id: string;
      try {
        id = decodeURIComponent(raw);
      } catch {
        return null;
      }
      return { kind: 'contact', template: '/v1/contacts/{id}', id };
    }
  }
  return null;
}

/** The key of an Authorization header, or 401. */
export function authenticate(state: EmulatorState, authorization: string | undefined): ApiKeyData {
  if (authorization === undefined || authorization.trim() === '') {
    throw new ProblemError(401, 'missing API key: send Authorization: Bearer <API_KEY>', { 'WWW-Authenticate': 'Bearer' });
  }
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  const key = m?.[1];
  if (key === undefined) throw new ProblemError(401, 'the Authorization header must be Bearer <API_KEY>', { 'WWW-Authenticate': 'Bearer' });
  if (!KEY_PATTERN.test(key)) throw new ProblemError(401, 'invalid API key (expected <prefix>_live_<secret>)', { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
  const data = state.registry.keysBySecret.get(key);
  if (data === undefined) throw new ProblemError(401, 'invalid API key', { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
  if (data.revoked) throw new ProblemError(401, 'this API key was revoked', { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
  return data;
}

/** 403 when the account may not use the data API, or the key lacks data:read for data routes. */
export function authorize(account: AccountData, key: ApiKeyData, route: Route): void {
  if (!account.settings.dataApi) throw new ProblemError(403, 'the data API is switched off for this account');
  if (!account.settings.planAccess) throw new ProblemError(403, "the account's plan does not include the data API");
  if (route.kind !== 'me' && !key.scopes.includes(DATA_SCOPE)) {
    throw new ProblemError(403, `this API key lacks the scope ${DATA_SCOPE} (its scopes: ${key.scopes.join(', ') || 'none'})`);
  }
}

function json(body: string | Buffer): Reply {
  return { status: 200, contentType: JSON_TYPE, body };
}

const ID_PREFIX = /^\{"id":"[^"]*",?/;

function envelopeTail(next: string | null, hasMore: boolean, watermark: string): string {
  return `],"next_cursor":${next === null ? 'null' : JSON.stringify(next)},"has_more":${hasMore},"sync_watermark":"${watermark}"}`;
}

const HEAD = '{"data":[';

/** A page as one buffer: the records' JSON bytes copied in, no string building. */
function pageBuffer(rows: readonly Indexable[], tail: string): Buffer {
  let size = HEAD.length + Buffer.byteLength(tail) + Math.max(0, rows.length - 1);
  for (const r of rows) size += r.byteLength();
  const buf = Buffer.allocUnsafe(size);
  let at = buf.write(HEAD, 0, 'latin1');
  rows.forEach((r, i) => {
    if (i > 0) buf[at++] = 0x2c;
    r.copyTo(buf, at);
    at += r.byteLength();
  });
  buf.write(tail, at, 'utf8');
  return buf;
}

export interface HandlerContext {
  readonly state: EmulatorState;
  readonly account: AccountData;
  readonly key: ApiKeyData;
  readonly search: string;
  /** A contract fault to apply to a successful response (counted when applied). */
  readonly fault: FaultRule | null;
}

function listPage(ctx: HandlerContext, route: Extract<Route, { kind: 'list' }>): Reply {
  const { state, account, fault } = ctx;
  const params = parseListQuery(ctx.search, route.spec);
  let watermark: number;
  let since: number | null;
  let after: { t: number; id: string } | null = null;
  if (params.cursor !== null) {
    const c = state.codec.decode(params.cursor, account.id, route.template);
    watermark = c.watermark;
    since = c.since;
    after = { t: c.lastT, id: c.lastId };
  } else {
    watermark = state.clock.watermark();
    since = params.since === null ? null : params.since - LOOK_BACK_MS;
  }
  const { rows, lastT, hasMore } = account.read(route.list, { watermark, since, after, limit: params.limit });
  const last = rows[rows.length - 1];
  let next = hasMore && last !== undefined
    ? state.codec.encode({ account: account.id, list: route.template, watermark, since, lastT, lastId: last.id })
    : null;
  let more = hasMore;
  let wm = iso(watermark);
  if (fault === null) return json(pageBuffer(rows, envelopeTail(next, more, wm)));

  let records = rows.map((r) => r.json());
  let applied = true;
  switch (fault.kind) {
    case 'null_cursor':
      more = true;
      next = null;
      break;
    case 'watermark_shift':
      wm = iso(watermark + 60_000);
      break;
    case 'cursor_loop':
      more = true;
      next = params.cursor;
      break;
    case 'missing_id':
      records = records.map((r) => r.replace(ID_PREFIX, '{'));
      break;
    case 'unknown_object_type': {
      const first = records[0];
      const p = Prng.derive(state.seed, 'widget', watermark);
      const widget = first === undefined
        ? { id: p.uuid(), object_type: 'widget', object_id: p.uuid(), deleted_at: wm }
        : { ...(JSON.parse(first) as DeletionRecord), object_type: 'widget' };
      records = [JSON.stringify(widget), ...records.slice(1)];
      break;
    }
    default:
      applied = false;
  }
  if (applied) state.faults.record(fault.kind);
  return json(`${HEAD}${records.join(',')}${envelopeTail(next, more, wm)}`);
}

export function handleApi(ctx: HandlerContext, route: Route): Reply {
  switch (route.kind) {
    case 'me': {
      readQuery(ctx.search, []);
      const eff = resolveLimits(ctx.state.defaultLimits, ctx.account.settings.limits, ctx.key.limits);
      return json(JSON.stringify({
        account_name: ctx.account.settings.name,
        scopes: ctx.key.scopes,
        limits: { per_minute: eff.perMinute, per_day: eff.perDay },
      }));
    }
    case 'contact': {
      readQuery(ctx.search, []);
      const row = ctx.account.visibleContact(route.id);
      if (row === undefined) throw new ProblemError(404, `no contact with id ${route.id}`);
      let body = row.json();
      if (ctx.fault?.kind === 'missing_id') {
        body = body.replace(ID_PREFIX, '{');
        ctx.state.faults.record('missing_id');
      }
      return json(body);
    }
    case 'list':
      return listPage(ctx, route);
    case 'openapi':
      throw new ProblemError(500, 'openapi is served by the server');
  }
}

export const NOT_JSON_BODY = '{"data":[{"id":"Upstream proxy error: connection to backend lost';
export const HTML_BODY =
  '<!DOCTYPE html>\n<html><head><title>Scheduled maintenance</title></head><body><h1>We will be back soon</h1><p>The service is under maintenance.</p></body></html>\n';
