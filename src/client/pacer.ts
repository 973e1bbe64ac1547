/**
 * Shared view of the key's request quota, built from the RateLimit-* headers
 * of every response, and the waits that follow from it. One Pacer per client:
 * when one caller learns that the quota is used up (Remaining 0, or a 429/503
 * with Retry-After), every caller waits for the same instant, and that wait is
 * announced once.
 *
 * Other processes may spend the same key (several connections on one key;
 * docs/performance.md): the service's Remaining then falls faster than this
 * client's own sends, and a 429 comes although the pacer kept count. The
 * pacer counts the others' requests per request of its own (this window and
 * the two before; this window alone once it holds SETTLED answers of its
 * own, as others come and go; in its first window, also those its first
 * answer shows before its own, as a rate), and while others are about (and
 * in its first window, before it can know) it
 *  - spreads the key's quota over the first SPREAD part of the window (in
 *    its first window over START_SPREAD_MS at least), taking its share of
 *    the steps, so that a process that starts or wakes later still finds
 *    some quota instead of a 429;
 *  - sends near the window's end only while a slot is still expected to be
 *    free when its request arrives (Remaining less the others' requests
 *    expected before it: the most seen between two of its own), and
 *    otherwise waits for the window to restart.
 * Alone on the key, after its first window, it sends until Remaining is 0.
 *
 * A 429 is the answer of a limiter, and not always of the minute's window: a
 * burst or simultaneous-request limiter answers "Retry-After 1, Remaining 0,
 * Reset 1" while the minute's quota is far from spent. So a 429 (or a 503)
 * costs its Retry-After (`block`), and its RateLimit-* never count as the
 * window's figures: the window (Remaining, Reset, the others' share) is
 * learnt from answered requests only. A 429 counts as a sign of others on the key (the
 * spread of this window and the next) unless its figures contradict the
 * window: a Remaining above 0, a Reset before the window can end, or the
 * next answer of the same window with Remaining left.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { headerNumber, resetAsMs } from './headers.js';

/**
 * Why a caller must wait before sending: the minute's quota is used up, what
 * is left of it is expected to go to other users of the key, or the service
 * asked (Retry-After).
 */
type PaceCause = 'quota' | 'shared' | 'spread' | 'retry_after';

export interface PaceWait {
  readonly until: number;
  readonly cause: PaceCause;
  /** For retry_after: the status that asked for the wait (429 or 503). */
  readonly status?: number;
}

interface PacerOptions {
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

interface PacerView {
  readonly limit: number | undefined;
  readonly remaining: number | undefined;
  readonly resetAt: number | undefined;
  readonly blockedUntil: number;
  readonly inFlight: number;
  /** Requests of other users of the key admitted per request of this client, this window and the two before (0 when alone). */
  readonly othersPerOwn: number;
}

/** One response of the current window: its send number and the Remaining it reported. */
interface Mark {
  readonly seq: number;
  readonly remaining: number;
}

/**
 * What the latest 429 said of the quota, and what became of it: 'pending'
 * while it may be the window's own refusal (the quota spent, by others when
 * this client kept count); 'limiter' once its figures are contradicted (a
 * burst or simultaneous-request limiter: no sign of others); 'quota' once the
 * next answer confirms it (a new window, or Remaining 0 still).
 */
interface Throttle {
  /** When it was answered: only a request sent after it can confirm or contradict it. */
  readonly at: number;
  verdict: 'pending' | 'limiter' | 'quota';
}

/**
 * With others on the key, send while at least this much of a slot is
 * expected to be left once the others' expected requests are taken off
 * Remaining (with the average others per own request as the expectation):
 * a smaller margin sends into slots the others take (429s on a shared key),
 * a larger one leaves slots unused.
 */
const SHARE_MARGIN = 0.75;
/**
 * With others on the key (and in this client's first window, while it cannot
 * know), the key's quota is spread over this part of the window: one request
 * of the key per SPREAD x window / limit, so that a process that starts or
 * wakes later still finds some (bursting the quota at the window's start
 * left the others only 429s).
 */
const SPREAD = 0.3;
/**
 * In this client's first window it cannot tell whether others start with it:
 * the quota is spread over at least this long (or the whole window, if
 * shorter), so that processes started together (Node starts in a few hundred
 * milliseconds, more on a busy machine) all find some of it.
 */
const START_SPREAD_MS = 2000;
/** Windows before the current one whose counts of own and others' requests still count. */
const HISTORY = 2;
/** Own requests in a window after which that window's counts alone say how many others there are (they come and go). */
const SETTLED = 2;
/** Own requests in a window without one of others' after which the others count as gone. */
const GONE = 3;
/** Longest window assumed for spreading: the quota is per minute. */
const MAX_WINDOW_MS = 60_000;

export class Pacer {
  readonly #o: PacerOptions;
  #limit: number | undefined;
  #remaining: number | undefined;
  #resetAt: number | undefined;
  /** Send time of the request whose response opened the current window estimate. */
  #windowSentFrom = Number.NEGATIVE_INFINITY;
  /** Lowest Remaining the service reported in the current window. */
  #windowRemaining: number | undefined;
  /** The current window cannot end before this instant (from the answers' Reset, whole seconds rounded up). */
  #windowEndsAfter = Number.NEGATIVE_INFINITY;
  /** The latest 429 and what its figures turned out to be. */
  #throttle: Throttle | undefined;
  #blockedUntil = 0;
  #blockedBy: number | undefined;
  #inFlight = 0;
  #sleeping: { until: number; done: Promise<void> } | undefined;
  #announcedUntil = -1;
  /** Requests sent so far; each response is matched to its send number. */
  #sends = 0;
  /** The first and the latest (by send number) responses of the current window. */
  #first: Mark | undefined;
  #latest: Mark | undefined;
  /** Own and others' requests counted in the last windows before the current one. */
  #history: { own: number; others: number; gap: number }[] = [];
  /** Most requests of others between two consecutive own requests in the current window. */
  #gap = 0;
  /** Windows seen (responses that opened a new window estimate). */
  #windows = 0;
  /** The window of the latest 429 (a sign that others spent the quota unless its figures prove otherwise: #throttle), or -2 (never). */
  #contendedIn = -2;
  /** The window's length: the largest RateLimit-Reset that opened a window (whole seconds, rounded up), at most a minute; ms. */
  #windowMs = 0;
  /** When this client last sent a request. */
  #lastSentAt = Number.NEGATIVE_INFINITY;
  /**
   * In this client's first window, before its own answers can show others:
   * the requests of others its first answer counted (the window's quota less
   * Remaining less its own sends), as a rate per own spread step.
   */
  #earlyOthers = 0;

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
      othersPerOwn: this.#othersPerOwn(),
    };
  }

  /**
   * Requests of others per own request, over the current window and the
   * HISTORY windows before it, or the current window alone once SETTLED own
   * requests of it were answered (an other that finished no longer counts
   * against the slots left); 0 once GONE own requests of the current window
   * saw none of others (they have finished).
   */
  #othersPerOwn(): number {
    const current = this.#current();
    if (current.own >= GONE && current.others === 0) return 0;
    if (current.own >= SETTLED) return current.others / current.own;
    let own = 0;
    let others = 0;
    for (const w of [...this.#history, current]) {
      own += w.own;
      others += w.others;
    }
    const counted = own === 0 ? 0 : others / own;
    return this.#windows <= 1 ? Math.max(counted, this.#earlyOthers) : counted;
  }

  /**
   * Requests of others expected before this client's next one arrives: the
   * most seen between two consecutive own requests (this window and the
   * HISTORY before it), at least othersPerOwn. The average alone
   * under-counts for a client that sends more often than the others, and that
   * client is the one that then sends into the window's last slot.
   */
  #othersExpected(): number {
    const perOwn = this.#othersPerOwn();
    if (perOwn === 0) return 0;
    if (this.#current().own >= SETTLED) return Math.max(perOwn, this.#gap);
    return Math.max(perOwn, this.#gap, ...this.#history.map((w) => w.gap));
  }

  /**
   * Own and others' requests between the first and latest responses of the
   * current window: the fall of Remaining, less this client's own sends in
   * between, is the others'.
   */
  #current(): { own: number; others: number; gap: number } {
    const first = this.#first;
    const latest = this.#latest;
    if (first === undefined || latest === undefined || latest.seq <= first.seq) return { own: 0, others: 0, gap: this.#gap };
    const own = latest.seq - first.seq;
    return { own, others: Math.max(0, first.remaining - latest.remaining - own), gap: this.#gap };
  }

  /** Requests sent and not yet done. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * What the latest 429 turned out to be so far: 'limiter' when its figures
   * say a short limiter (burst, simultaneous requests) refused it, not the
   * minute's quota; undefined before any 429.
   */
  get throttle(): Throttle['verdict'] | undefined {
    return this.#throttle?.verdict;
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
    if (wait === undefined && this.#remaining !== undefined && this.#remaining > 0 && this.#resetAt !== undefined && this.#resetAt > now) {
      wait = this.#shareWait(now, this.#remaining, this.#resetAt);
    }
    return wait;
  }

  /**
   * Whether others may be spending the key: in the first window, when their
   * requests were counted, or after a 429 in this window or the one before
   * whose figures did not prove it a short limiter's.
   */
  #mayShare(): boolean {
    if (this.#windows <= 1 || this.#othersPerOwn() > 0) return true;
    return this.#windows - this.#contendedIn <= 1 && this.#throttle?.verdict !== 'limiter';
  }

  /**
   * With others on the key: spend the window's quota evenly over its first
   * SPREAD part (a latecomer still finds some), and near its end send only
   * while a slot is still expected to be free when this request arrives.
   */
  #shareWait(now: number, remaining: number, resetAt: number): PaceWait | undefined {
    if (!this.#mayShare()) return undefined;
    const limit = this.#limit;
    if (limit !== undefined && limit > 0 && this.#windowMs > 0) {
      // The key as a whole spends one request per step; this client, one per (1 + others per own) steps.
      const spreadMs = Math.max(this.#windowMs * SPREAD, this.#windows <= 1 ? Math.min(this.#windowMs, START_SPREAD_MS) : 0);
      const step = spreadMs / limit;
      const next = this.#lastSentAt + (1 + this.#othersPerOwn()) * step;
      if (next > now) return { until: next, cause: 'spread' };
    }
    const others = this.#othersExpected();
    if (others > 0 && remaining - others < SHARE_MARGIN) return { until: resetAt, cause: 'shared' };
    return undefined;
  }

  /**
   * Resolve when a request may be sent. Throws `tooLong(...)` when the wait
   * exceeds maxWaitMs (a spread is cut to it instead). Call `sent()` right
   * after, with no await in between.
   */
  async ready(path: string): Promise<void> {
    /** A spread longer than maxWaitMs was waited, cut to it. */
    let cut = false;
    for (;;) {
      const now = this.#o.now();
      const wait = this.required(now);
      if (wait === undefined || (cut && wait.cause === 'spread')) return;
      const waitMs = wait.until - now;
      if (waitMs > this.#o.maxWaitMs) {
        // The spread is this client's own courtesy to the key's other users, not a wait the service asked for: cut to
        // max_wait_seconds, never a reason to stop the sync.
        if (wait.cause !== 'spread') throw this.#o.tooLong(wait, waitMs, path);
        cut = true;
        await this.#o.sleep(this.#o.maxWaitMs);
        continue;
      }
      await this.#waitFor(wait, waitMs, path);
    }
  }

  #waitFor(wait: PaceWait, waitMs: number, path: string): Promise<void> {
    if (wait.cause === 'spread') return this.#o.sleep(waitMs); // a short pause between requests: not a rate-limit wait
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

  /** A request is about to go out: count it against the local view of the quota. Returns its send number, for `observe`. */
  sent(): number {
    this.#inFlight += 1;
    if (this.#remaining !== undefined) this.#remaining = Math.max(0, this.#remaining - 1);
    this.#sends += 1;
    this.#lastSentAt = this.#o.now();
    return this.#sends;
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
   *
   * `seq` is the request's send number (from `sent()`; the latest send when
   * omitted): Remaining's fall beyond this client's own sends in the window
   * is the others' share.
   *
   * `status` 429 or 503 (a refusal that asks to wait): the figures are the
   * refusing limiter's or gateway's, not the window's (a 429's are judged in
   * #throttled); call `block()` with its Retry-After after this. Any other
   * status but a 2xx: its figures are not taken.
   */
  observe(headers: IncomingHttpHeaders, now: number, sentAt: number = now, seq: number = this.#sends, status?: number): void {
    const limit = headerNumber(headers, 'ratelimit-limit');
    const reported = headerNumber(headers, 'ratelimit-remaining');
    // A Remaining above the Limit is not the window's (a gateway counting another window, the day's): at most the
    // Limit, or its fall to the next answer's figure would count as others spending the key, and their share stop the sync.
    const cap = limit ?? this.#limit;
    const remaining = reported !== undefined && cap !== undefined ? Math.min(reported, cap) : reported;
    // Whole ms, rounded up: the instant a wait ends is announced (quota_reset) and must not come before the service's.
    const resetMs = resetAsMs(headers, now);
    const reset = resetMs === undefined ? undefined : resetMs / 1000;
    if (status === 429 || status === 503) {
      if (status === 429) this.#throttled(now, remaining, reset);
      return;
    }
    // Another error answer: the API promises RateLimit-* on 200, 429 and 503 only (sections 4.1 and 7), and a router or
    // gateway answering a path it does not serve (a 404), or a key it refuses, may send a minute of its own (the
    // emulator's, outside any key's quota): taken as the key's, the fall from it to the next answer counts as others.
    if (status !== undefined && (status < 200 || status > 299)) return;
    if (limit !== undefined) this.#limit = limit;
    if (reset !== undefined && resetMs !== undefined) {
      const bound = now + resetMs;
      // The window ends more than reset - 1 s after the service answered, and it answered after the request was sent.
      const after = sentAt + (reset - 1) * 1000;
      const fresh =
        this.#resetAt === undefined ||
        now >= this.#resetAt ||
        (remaining !== undefined && this.#windowRemaining !== undefined && remaining > this.#windowRemaining);
      if (remaining !== undefined) this.#judgeThrottle(sentAt, fresh, remaining);
      if (fresh) {
        this.#windowEndsAfter = after;
        this.#windows += 1;
        this.#windowMs = Math.min(MAX_WINDOW_MS, Math.max(this.#windowMs, reset * 1000));
        const ended = this.#current();
        if (ended.own > 0) this.#history = [...this.#history, ended].slice(-HISTORY);
        this.#gap = 0;
        this.#resetAt = bound;
        this.#windowSentFrom = sentAt;
        this.#windowRemaining = remaining;
        this.#first = remaining === undefined ? undefined : { seq, remaining };
        this.#latest = this.#first;
        if (this.#windows === 1 && remaining !== undefined && this.#limit !== undefined) this.#earlyOthers = this.#othersBefore(this.#limit, remaining, reset, seq);
      } else if (sentAt >= this.#windowSentFrom) {
        this.#resetAt = Math.min(this.#resetAt ?? bound, bound);
        this.#windowEndsAfter = Math.max(this.#windowEndsAfter, after);
        if (remaining !== undefined) this.#windowRemaining = Math.min(this.#windowRemaining ?? remaining, remaining);
        if (remaining !== undefined && (this.#latest === undefined || seq > this.#latest.seq)) {
          if (this.#latest !== undefined && seq === this.#latest.seq + 1) this.#gap = Math.max(this.#gap, this.#latest.remaining - remaining - 1);
          this.#latest = { seq, remaining };
          this.#first ??= this.#latest;
        }
      } else {
        return; // a response from before the current window: stale
      }
    }
    if (remaining !== undefined) this.#remaining = Math.max(0, remaining - Math.max(0, this.#inFlight - 1));
  }

  /**
   * What this client's first answer says of others: the window's requests
   * before it that were not its own (limit - Remaining - its sends), over the
   * longest the window can have run by then (Reset is whole seconds, rounded
   * up), as requests per own spread step of the first window. A count alone
   * would make a client that comes late into a busy minute wait for long.
   */
  #othersBefore(limit: number, remaining: number, reset: number, seq: number): number {
    const others = limit - remaining - seq;
    if (others <= 0 || limit <= 0) return 0;
    const ranMs = Math.max(1, this.#windowMs - Math.max(0, reset - 1) * 1000);
    const stepMs = Math.max(this.#windowMs * SPREAD, Math.min(this.#windowMs, START_SPREAD_MS)) / limit;
    return (others * stepMs) / ranMs;
  }

  /**
   * A 429: what its figures say of the window. Remaining above 0 says the
   * quota is not spent, and a Reset that ends before the window can end is
   * another limiter's: either is a short limiter (burst, simultaneous
   * requests), no sign of others. Otherwise the next answer decides
   * (#judgeThrottle).
   */
  #throttled(now: number, remaining: number | undefined, reset: number | undefined): void {
    const spent = remaining === undefined || remaining === 0;
    const beforeWindowEnd = reset !== undefined && now + reset * 1000 < this.#windowEndsAfter;
    this.#throttle = { at: now, verdict: spent && !beforeWindowEnd ? 'pending' : 'limiter' };
  }

  /**
   * The first answer to a request sent after a pending 429: Remaining left in
   * the same window contradicts it (a short limiter's); a new window, or
   * Remaining 0, confirms it.
   */
  #judgeThrottle(sentAt: number, fresh: boolean, remaining: number): void {
    const throttle = this.#throttle;
    if (throttle === undefined || throttle.verdict !== 'pending' || sentAt < throttle.at) return;
    throttle.verdict = !fresh && remaining > 0 ? 'limiter' : 'quota';
  }

  /** Every caller waits until `until` (a 429/503 Retry-After). */
  block(until: number, status?: number): void {
    // A 429 although the pacer kept count: others on the key may have spent the quota (unless its figures say otherwise: #throttle).
    if (status === 429) this.#contendedIn = this.#windows;
    if (until > this.#blockedUntil) {
      this.#blockedUntil = until;
      this.#blockedBy = status;
    }
  }
}
