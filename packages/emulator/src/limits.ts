/**
 * Request limits per API key: a fixed per-minute window and a fixed per-day
 * window (both lengths configurable so tests run in seconds) and a cap on
 * requests in flight. Windows follow the virtual clock, so advancing the
 * clock also ends them. RateLimit-* describe the minute's window (as the API
 * says); the day's quota shows only in /v1/me (per_day) and in the
 * Retry-After of its 429.
 */

export interface Limits {
  /** Requests per window (reported as per_minute and RateLimit-Limit). */
  readonly perMinute: number;
  /** Requests per day window (reported as per_day). */
  readonly perDay: number;
  /** Simultaneous requests in flight. */
  readonly concurrency: number;
  /** Length of the "minute" window, ms. */
  readonly windowMs: number;
  /** Length of the "day" window, ms. */
  readonly dayWindowMs: number;
}

export type LimitOverrides = { readonly [K in keyof Limits]?: Limits[K] };

export const DEFAULT_LIMITS: Limits = {
  perMinute: 1000,
  perDay: 100_000,
  concurrency: 8,
  windowMs: 60_000,
  dayWindowMs: 86_400_000,
};

/** Later layers win; undefined fields fall through. */
export function resolveLimits(...layers: readonly (LimitOverrides | undefined)[]): Limits {
  const out: { -readonly [K in keyof Limits]: Limits[K] } = { ...DEFAULT_LIMITS };
  for (const layer of layers) {
    if (layer === undefined) continue;
    for (const k of Object.keys(out) as (keyof Limits)[]) {
      const v = layer[k];
      if (v !== undefined) out[k] = v;
    }
  }
  return out;
}

/** Whole seconds until `ms` have passed: at least 1 while any time remains. */
export function ceilSeconds(ms: number): number {
  return ms <= 0 ? 0 : Math.max(1, Math.ceil(ms / 1000));
}

export interface RateHeaders {
  readonly limit: number;
  readonly remaining: number;
  readonly reset: number;
}

export interface Admission {
  readonly ok: boolean;
  readonly reason: 'per_minute' | 'per_day' | 'concurrency' | null;
  /** Seconds, for Retry-After on a refusal. */
  readonly retryAfter: number;
  readonly headers: RateHeaders;
}

interface Usage {
  minuteStart: number;
  minuteCount: number;
  dayStart: number;
  dayCount: number;
  inFlight: number;
  maxInFlight: number;
}

export class RateLimiter {
  private readonly usage = new Map<string, Usage>();

  private state(keyId: string, limits: Limits, now: number): Usage {
    let u = this.usage.get(keyId);
    if (u === undefined) {
      u = { minuteStart: now, minuteCount: 0, dayStart: now, dayCount: 0, inFlight: 0, maxInFlight: 0 };
      this.usage.set(keyId, u);
    }
    if (now >= u.minuteStart + limits.windowMs) {
      u.minuteStart = now;
      u.minuteCount = 0;
    }
    if (now >= u.dayStart + limits.dayWindowMs) {
      u.dayStart = now;
      u.dayCount = 0;
    }
    return u;
  }

  /**
   * The minute's figures only, as the API describes its RateLimit-* (even on
   * a 429 for the day quota, whose Retry-After says how long to wait): a
   * Remaining capped by the day's quota would read to a client as requests
   * of other users of the key.
   */
  private headers(u: Usage, limits: Limits, now: number): RateHeaders {
    return {
      limit: limits.perMinute,
      remaining: Math.max(0, limits.perMinute - u.minuteCount),
      reset: ceilSeconds(u.minuteStart + limits.windowMs - now),
    };
  }

  /** Count a request, or refuse it (a refused request uses no quota). Call release() after an admitted one. */
  admit(keyId: string, limits: Limits, now: number): Admission {
    const u = this.state(keyId, limits, now);
    if (u.dayCount >= limits.perDay) {
      return { ok: false, reason: 'per_day', retryAfter: Math.max(1, ceilSeconds(u.dayStart + limits.dayWindowMs - now)), headers: this.headers(u, limits, now) };
    }
    if (u.minuteCount >= limits.perMinute) {
      return { ok: false, reason: 'per_minute', retryAfter: Math.max(1, ceilSeconds(u.minuteStart + limits.windowMs - now)), headers: this.headers(u, limits, now) };
    }
    if (u.inFlight >= limits.concurrency) {
      return { ok: false, reason: 'concurrency', retryAfter: 1, headers: this.headers(u, limits, now) };
    }
    u.minuteCount++;
    u.dayCount++;
    u.inFlight++;
    if (u.inFlight > u.maxInFlight) u.maxInFlight = u.inFlight;
    return { ok: true, reason: null, retryAfter: 0, headers: this.headers(u, limits, now) };
  }

  /** Headers for a key without counting a request. */
  peek(keyId: string, limits: Limits, now: number): RateHeaders {
    return this.headers(this.state(keyId, limits, now), limits, now);
  }

  release(keyId: string): void {
    const u = this.usage.get(keyId);
    if (u !== undefined && u.inFlight > 0) u.inFlight--;
  }

  inFlight(keyId: string): number {
    return this.usage.get(keyId)?.inFlight ?? 0;
  }

  /** Forget the windows (not the in-flight counts). */
  resetWindows(): void {
    for (const u of this.usage.values()) {
      u.minuteCount = 0;
      u.dayCount = 0;
      u.maxInFlight = u.inFlight;
    }
  }
}

/** Headers for requests with no valid key: the default limits, nothing counted. */
export function anonymousHeaders(limits: Limits): RateHeaders {
  return { limit: limits.perMinute, remaining: limits.perMinute, reset: ceilSeconds(limits.windowMs) };
}
