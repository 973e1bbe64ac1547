/** Addresses: base_url split into the pool's origin and a path prefix; list queries with documented parameters only. */
import { ConfigError } from '../errors.js';
import type { ListQuery } from './types.js';

export interface Base {
  /** scheme://host[:port], what the connection pool is bound to. */
  readonly origin: string;
  /** host[:port], for messages. */
  readonly host: string;
  /** Path before /v1, without a trailing slash ('' for none). */
  readonly prefix: string;
}

export function parseBase(baseUrl: string): Base {
  let url: URL;
  try {
    url = new URL(baseUrl.trim());
  } catch {
    throw new ConfigError('base_url is not a valid address; give the address before /v1, e.g. https://api.example.com.', { field: 'base_url' });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigError(`base_url must start with https:// (got ${url.protocol}//).`, { field: 'base_url' });
  }
  return { origin: url.origin, host: url.host, prefix: url.pathname.replace(/\/+$/, '') };
}

/** Prefix + path + query string of the documented list parameters that are set (in a fixed order). */
export function requestTarget(base: Base, path: string, query?: ListQuery): string {
  const p = path.startsWith('/') ? path : `/${path}`;
  if (query === undefined) return `${base.prefix}${p}`;
  const params = new URLSearchParams();
  if (query.updated_since !== undefined) params.set('updated_since', query.updated_since);
  if (query.cursor !== undefined) params.set('cursor', query.cursor);
  if (query.limit !== undefined) params.set('limit', String(query.limit));
  const qs = params.toString();
  return qs === '' ? `${base.prefix}${p}` : `${base.prefix}${p}?${qs}`;
}
