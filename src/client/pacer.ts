/**
 * Shared view of the key's request quota, built from the RateLimit-* headers
 * of every response, and the waits that follow from it. One Pacer per client:
 * when one caller learns that the quota is used up (Remaining 0, or a 429/503
 * with Retry-After), every caller waits for the same instant, and that wait is
 * announced once.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { headerValue } from './headers.js';

/** Why a caller must wait before sending: the minute's quota is used up, or the service asked (Retry-After). */
export type PaceCause = 'quota' | 'retry_after';

export interface PaceWait {
  readonly until: number;
  readonly cause: PaceCause;
  /** For retry_after: the status that asked for the wait (429 or 503). */
  readonly status?: number;
}

export interface PacerOptions {
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  /** Longest single wait accepted, ms; a longer one is handed to `tooLong` instead. */
  readonly maxWaitMs: number;
  /** Called once per distinct shared wait, before sleeping. */
  readonly announce: (wait: PaceWait, waitMs: number, path: string) => void;
  /** Called for every caller that waits (each path may need telling, not only the first). */
  readonly waiting?: (wait: PaceWait, waitMs: number, path: string) => void;
  /** Builds the error thrown when a wait exceeds maxWaitMs. */
  readonly tooLong: (wait: PaceWait, waitMs: number, path: string) => Error;
}

export interface PacerView {
  readonly limit: number | undefined;
  readonly remaining: number | undefined;
  readonly resetAt: number | undefined;
  readonly blockedUntil: number;
  readonly inFlight: number;
}

/** A non-negative finite number from a header, or undefined. */
function headerNumber(headers: IncomingHttpHeaders, name: string): number | undefined {
  const raw = headerValue(headers, name);
  if (raw === undefined) return undefined;
  const trimmed = raw.trim();
  if (!/^\d+(\.\d+)?$/.test(trimmed)) return undefined;
  return Number(trimmed);
}

export class Pacer {
  readonly #o: PacerOptions;
  #limit: number | undefined;
  #remaining: number | undefined;
  #resetAt: number | undefined;
  /** Send time of the request whose response opened the current window estimate. */
  #windowSentFrom = Number.NEGATIVE_INFINITY;
  /** Lowest Remaining the service reported in the current window. */
  #windowRemaining: number | undefined;
  #blockedUntil = 0;
  #blockedBy: number | undefined;
  #inFlight = 0;
  #sleeping: { until: number; done: Promise<void> } | undefined;
  #announcedUntil = -1;

  constructor(options: PacerOptions) {
    this.#o = options;
  }

  get view(): PacerView {
    return {
      limit: this.#limit,
      remaining: this.#remaining,
      resetAt: this.#resetAt,
      blockedUntil: this.#blockedUntil,
      inFlight: this.#inFlight,
    };
  }

  /** The wait needed before the next send, or undefined when a request may go now. */
  required(now: number): PaceWait | undefined {
    let wait: PaceWait | undefined;
    if (this.#blockedUntil > now) {
      wait = { until: this.#blockedUntil, cause: 'retry_after', ...(this.#blockedBy === undefined ? {} : { status: this.#blockedBy }) };
    }
    if (this.#remaining !== undefined && this.#remaining <= 0 && this.#resetAt !== undefined) {
      if (this.#resetAt > now) {
        if (wait === undefined || this.#resetAt > wait.until) wait = { until: this.#resetAt, cause: 'quota' };
      } else {
        // The window restarted: assume the full quota until a response says otherwise.
        this.#remaining = this.#limit;
        this.#resetAt = undefined;
      }
    }
    return wait;
  }

  /**
   * Resolve when a request may be sent. Throws `tooLong(...)` when the wait
   * exceeds maxWaitMs. Call `sent()` right after, with no await in between.
   */
  async ready(path: string): Promise<void> {
    for (;;) {
      const now = this.#o.now();
      const wait = this.required(now);
      if (wait === undefined) return;
      const waitMs = wait.until - now;
      if (waitMs > this.#o.maxWaitMs) throw this.#o.tooLong(wait, waitMs, path);
      await this.#waitFor(wait, waitMs, path);
    }
  }

  #waitFor(wait: PaceWait, waitMs: number, path: string): Promise<void> {
    this.#o.waiting?.(wait, waitMs, path);
    const current = this.#sleeping;
    if (current !== undefined && current.until === wait.until) return current.done;
    if (wait.until !== this.#announcedUntil) {
      this.#announcedUntil = wait.until;
      this.#o.announce(wait, waitMs, path);
    }
    const entry = { until: wait.until, done: Promise.resolve() };
    entry.done = this.#o.sleep(waitMs).finally(() => {
      if (this.#sleeping === entry) this.#sleeping = undefined;
    });
    this.#sleeping = entry;
    return entry.done;
  }

  /** A request is about to go out: count it against the local view of the quota. */
  sent(): void {
    this.#inFlight += 1;
    if (this.#remaining !== undefined) this.#remaining = Math.max(0, this.#remaining - 1);
  }

  /** A request finished (response read, or failed). */
  done(): void {
    this.#inFlight = Math.max(0, this.#inFlight - 1);
  }

  /**
   * Learn from a response's RateLimit-* headers; call before `done()`. The
   * service's Remaining does not yet count the other requests still in
   * flight, so they are taken off (a conservative view).
   *
   * RateLimit-Reset is whole seconds, rounded up: each response only says the
   * window ends within (reset - 1, reset] seconds of when it was answered, so
   * `now + reset` is an upper bound, up to a second late. Within one window
   * the earliest such bound is the tightest (the first response of a window
   * says "2" when 1.99 s are left; the last one may say "2" with 1.01 s
   * left), so the pacer keeps the minimum; waiting on the last response alone
   * would add up to a second to every window. A new window is recognised when
   * the previous estimate has passed or Remaining goes up; a late response to
   * a request sent before the current window was seen cannot move the
   * estimate (nor Remaining).
   */
  observe(headers: IncomingHttpHeaders, now: number, sentAt: number = now): void {
    const limit = headerNumber(headers, 'ratelimit-limit');
    const remaining = headerNumber(headers, 'ratelimit-remaining');
    const reset = headerNumber(headers, 'ratelimit-reset');
    if (limit !== undefined) this.#limit = limit;
    if (reset !== undefined) {
      const bound = now + reset * 1000;
      const fresh =
        this.#resetAt === undefined ||
        now >= this.#resetAt ||
        (remaining !== undefined && this.#windowRemaining !== undefined && remaining > this.#windowRemaining);
      if (fresh) {
        this.#resetAt = bound;
        this.#windowSentFrom = sentAt;
        this.#windowRemaining = remaining;
      } else if (sentAt >= this.#windowSentFrom) {
        this.#resetAt = Math.min(this.#resetAt ?? bound, bound);
        if (remaining !== undefined) this.#windowRemaining = Math.min(this.#windowRemaining ?? remaining, remaining);
      } else {
        return; // a response from before the current window: stale
      }
    }
    if (remaining !== undefined) this.#remaining = Math.max(0, remaining - Math.max(0, this.#inFlight - 1));
  }

  /** Every caller waits until `until` (a 429/503 Retry-After). */
  block(until: number, status?: number): void {
    if (until > this.#blockedUntil) {
      this.#blockedUntil = until;
      this.#blockedBy = status;
    }
  }
}
