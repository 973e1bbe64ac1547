/**
 * The Data-Read API client: one undici Pool per client, a FIFO gate that keeps
 * requests in flight under maxConcurrent (retries included), shared pacing on
 * RateLimit-* and Retry-After, jittered backoff on faults, one shared back-off
 * while the service cannot be reached, a refused key or an unreachable
 * service remembered (every later request fails at once with the same
 * error), and errors in plain words that never contain the API key.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { ConfigError, ConnectorError, ContractError, messageOf } from '../errors.js';
import { proxySecrets } from '../network/proxy-env.js';
import type { Me } from '../schemas/resources.js';
import { isUtf8 } from 'node:buffer';
import { setTimeout as sleep } from 'node:timers/promises';
import { BodyTooLarge, decode, describeBody, isIdentityEncoding, isJsonType, parseJson, readBytes, readText, type BodyText } from './body.js';
import { Gate } from './gate.js';
import { SharedReach, type Outage, type Prober } from './outage.js';
import { headerNumber, headerValue, resetAsMs } from './headers.js';
import { Pacer, type PaceWait } from './pacer.js';
import { DESCRIPTION_PATH, WAIT_TOO_LONG, bodyRule, finalRule, networkRule, proxyRule, statusRule, type BodyFault, type FailureRule } from './policy.js';
import { readProblem, statusCause, serviceSaid, type ProblemInfo } from './problem.js';
import { ProxyError, proxyAuthFailure } from './proxy-error.js';
import { Backoff, classifyNetError, parseRetryAfter, safeCause, type NetFault } from './retry.js';
import { cleaner, duration, isoTime, type Clean } from './redact.js';
import { chooseRoute, openDispatcher, reachHint, trustHint, type Route } from './route.js';
import { ApiError } from './api-error.js';
import type { ClientOptions, ClientStats, DataReadApi, ListQuery, RawPage, WaitNotice } from './types.js';
import { parseBase, requestTarget, type Base } from './url.js';
import { checkEnvelope, checkMe } from './validate.js';

export type CreateClientOptions = ClientOptions & {
  /** Use this dispatcher instead of the client's own (tests); proxy_url, ca_certificate and the environment then do not apply. The client does not close it. */
  readonly dispatcher?: Dispatcher;
};

const DEFAULT_RETRY_BASE_MS = 1000;
const DEFAULT_STOP_NOTE = 'The sync stops; the next sync resumes from the saved state.';
const DEFAULT_RETRY_MAX_MS = 60_000;
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;
/** After a simultaneous-request 429 lowered the requests in flight: how long without another before one more may go (the quota's minute). */
const RAISE_AFTER_MS = 60_000;
/** What a request gives once the run is stopped: a promise that never settles, so its caller stalls where it is. */
const NEVER: Promise<never> = new Promise(() => undefined);

/**
 * The client's clock: epoch ms that never step (the wall clock at the
 * process's start, plus the monotonic time since). Every wait (pacing,
 * Retry-After, backoff) is measured on it, so a step of the wall clock (an
 * NTP step, a clock fixed by hand) neither stretches a wait past
 * max_wait_seconds nor cuts one short. Whole milliseconds, as Date.now
 * gives: the instants it yields reach the protocols (a quota_reset is an
 * integer).
 */
const steadyNow = (): number => Math.floor(performance.timeOrigin + performance.now());

/** Why an attempt did not produce a usable body, and the rule of the failure policy that applies. */
interface Fault {
  readonly rule: FailureRule;
  readonly retryable: boolean;
  /** status: an HTTP error status; net: no (complete) response; body: a 2xx whose body is not JSON. */
  readonly kind: 'status' | 'net' | 'body';
  /** Plain words, cleaned. */
  readonly cause: string;
  readonly status?: number;
  readonly info?: ProblemInfo;
  readonly net?: NetFault;
  /** For a redirect: where it points (redirectTarget). */
  readonly location?: string;
  /** For 429/503: the wait the service asked for (Retry-After, or RateLimit-Reset). */
  readonly retryAfterMs?: number;
  /** Detail for logs (TRACE internal_message), cleaned. */
  readonly internal: string;
  readonly causeError?: Error;
}

/** `notUtf8`: the body held bytes that are not UTF-8, passed on as U+FFFD. */
type Attempt = { readonly ok: true; readonly value: unknown; readonly notUtf8?: true } | { readonly ok: false; readonly fault: Fault };

/**
 * What #get does after one step: done (the value), retry the fault (after its
 * wait), again (at once: another request was probing an outage), held (not
 * sent: while it queued for a permit, the key or the service turned out to
 * fail; SharedReach.mayTry says how).
 */
type Step =
  | { readonly next: 'done'; readonly value: unknown }
  | { readonly next: 'retry'; readonly fault: Fault; readonly outage: boolean }
  | { readonly next: 'again' }
  | { readonly next: 'held' };

function positiveInt(name: string, value: number, min: number): number {
  if (!Number.isFinite(value) || value < min) throw new ConfigError(`${name} must be a number of at least ${min} (got ${String(value)}).`, { field: name });
  return Math.floor(value);
}

class DataReadClient implements DataReadApi {
  readonly stats: ClientStats = { requests: 0, retries: 0, rateLimitWaits: 0, throttled: 0, waitedMs: 0, rateLimitWaitedMs: 0 };

  readonly #base: Base;
  readonly #headers: Record<string, string>;
  #dispatcher: Dispatcher | undefined;
  /** A proxy or ca_certificate setting that cannot be used: the first request throws it. */
  #routeError: unknown;
  #route: Route | undefined;
  readonly #ownsDispatcher: boolean;
  readonly #gate: Gate;
  /** When the latest simultaneous-request 429 was answered, while the requests in flight are below the setting (#mayRaise). */
  #clashedAt: number | undefined;
  readonly #pacer: Pacer;
  readonly #clean: Clean;
  readonly #timeoutMs: number;
  readonly #maxRetries: number;
  readonly #maxWaitMs: number;
  readonly #retryBaseMs: number;
  readonly #retryMaxMs: number;
  readonly #maxBodyBytes: number;
  readonly #now: () => number;
  readonly #random: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #onWait: ((notice: WaitNotice) => void) | undefined;
  readonly #onLog: ((level: 'INFO' | 'WARN', message: string) => void) | undefined;
  /** ' ' + the stop note, or '' (appended to the errors that stop the caller). */
  readonly #stopNote: string;
  /** "max_retries 8", or the words of a command with its own limit (ClientOptions.retryLimit). */
  readonly #retryLimit: string;
  /** The key's setting as the errors name it (ClientOptions.keySetting). */
  readonly #keySetting: string;
  readonly #closing = new AbortController();
  /** The run's stop (ClientOptions.signal). */
  readonly #stop: AbortSignal | undefined;
  /** Aborted by close() or the run's stop: ends the request in flight and the waits. */
  readonly #halt: AbortSignal;
  /** A failure of the key or of the service remembered, an outage in progress: shared by every request. */
  readonly #reach: SharedReach;
  /** path -> the end of the last rate-limit wait it was told about. */
  readonly #told = new Map<string, number>();
  /** Paths whose answers held bytes that are not UTF-8, told once each. */
  readonly #notUtf8 = new Set<string>();
  #closed: Promise<void> | undefined;

  constructor(o: CreateClientOptions) {
    const env = o.env ?? process.env;
    // Proxy credentials (proxy_url, HTTPS_PROXY, ...) are hidden like the key, in every message.
    this.#clean = cleaner([o.apiKey, ...proxySecrets(o.proxyUrl, env)]);
    if (typeof o.apiKey !== 'string' || o.apiKey.trim() === '') throw new ConfigError('api_key is empty; give the Data-Read API key.', { field: 'api_key' });
    if (!/^[\x21-\x7e]+$/.test(o.apiKey)) {
      throw new ConfigError('api_key contains spaces, line breaks or other characters that cannot be sent in an HTTP header; copy the key again.', { field: 'api_key' });
    }
    this.#base = parseBase(o.baseUrl);
    const maxConcurrent = positiveInt('max_concurrent_requests', o.maxConcurrent, 1);
    this.#timeoutMs = positiveInt('request timeout (ms)', o.timeoutMs, 1);
    this.#maxRetries = positiveInt('max_retries', o.maxRetries, 0);
    this.#maxWaitMs = Math.max(0, o.maxWaitSeconds) * 1000;
    this.#retryBaseMs = Math.max(0, o.retryBaseMs ?? DEFAULT_RETRY_BASE_MS);
    this.#retryMaxMs = Math.max(this.#retryBaseMs, o.retryMaxMs ?? DEFAULT_RETRY_MAX_MS);
    this.#maxBodyBytes = positiveInt('largest body (bytes)', o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, 1);
    this.#now = o.now ?? steadyNow;
    this.#random = o.random ?? Math.random;
    this.#sleep = o.sleep ?? ((ms) => this.#timerSleep(ms));
    this.#reach = new SharedReach(this.#now);
    this.#stop = o.signal;
    this.#halt = o.signal === undefined ? this.#closing.signal : AbortSignal.any([this.#closing.signal, o.signal]);
    this.#onWait = o.onWait;
    this.#onLog = o.onLog;
    const stopNote = o.stopNote ?? DEFAULT_STOP_NOTE;
    this.#stopNote = stopNote === '' ? '' : ` ${stopNote}`;
    this.#retryLimit = o.retryLimit ?? `max_retries ${this.#maxRetries}`;
    this.#keySetting = o.keySetting ?? 'api_key';
    this.#headers = {
      authorization: `Bearer ${o.apiKey}`,
      'user-agent': o.userAgent,
      accept: 'application/json',
      'accept-encoding': 'gzip',
    };
    this.#gate = new Gate(maxConcurrent);
    this.#pacer = new Pacer({
      now: this.#now,
      sleep: (ms) => this.#sleep(ms),
      maxWaitMs: this.#maxWaitMs,
      announce: (wait, waitMs) => this.#announceRateWait(wait, waitMs),
      waiting: (wait, waitMs, path) => this.#tellWaiting(wait, waitMs, path),
      tooLong: (wait, waitMs, path) => this.#waitTooLong(wait, waitMs, path, undefined),
    });
    if (o.dispatcher !== undefined) {
      this.#dispatcher = o.dispatcher;
      this.#ownsDispatcher = false;
    } else {
      this.#ownsDispatcher = true;
      try {
        this.#route = chooseRoute(this.#base.origin, { proxyUrl: o.proxyUrl, caCertificate: o.caCertificate, env });
        for (const note of this.#route.notes) this.#log(note.level, note.message);
        this.#dispatcher = openDispatcher(this.#route, this.#base.origin, { connections: maxConcurrent, keepAliveTimeout: 10_000, timeoutMs: this.#timeoutMs });
      } catch (err) {
        this.#routeError = err;
      }
    }
  }

  async me(): Promise<Me> {
    const target = requestTarget(this.#base, '/v1/me');
    const value = await this.#get(target, '/v1/me');
    return checkMe(value, this.#clean);
  }

  async description(): Promise<unknown> {
    const target = requestTarget(this.#base, DESCRIPTION_PATH);
    return this.#get(target, DESCRIPTION_PATH);
  }

  async list(path: string, query: ListQuery): Promise<RawPage> {
    const target = requestTarget(this.#base, path, query);
    // The API's path (as /v1/me's), without a base_url's own path before /v1: the streams are found by it (rate-limit notices).
    const value = await this.#get(target, path);
    return checkEnvelope(value, `GET ${path}`, this.#clean);
  }

  close(): Promise<void> {
    if (this.#closed === undefined) {
      this.#closing.abort();
      const own = this.#ownsDispatcher ? this.#dispatcher : undefined;
      this.#closed = own === undefined ? Promise.resolve() : own.close();
    }
    return this.#closed;
  }

  /** The dispatcher; a proxy or ca_certificate setting that cannot be used throws here. */
  #openDispatcher(): Dispatcher {
    if (this.#routeError !== undefined) throw this.#routeError;
    if (this.#dispatcher === undefined) throw this.#closedError();
    return this.#dispatcher;
  }

  // --- one request, with its retries ---------------------------------------

  /** One request with its retries; once the run is stopped, it never settles (ClientOptions.signal). */
  async #get(target: string, label: string): Promise<unknown> {
    try {
      return await this.#retried(target, label);
    } catch (err) {
      if (this.#stop?.aborted) return NEVER;
      throw err;
    }
  }

  async #retried(target: string, label: string): Promise<unknown> {
    const me: Prober = {};
    const started = this.#now();
    const backoff = new Backoff(this.#retryBaseMs, this.#retryMaxMs, this.#random);
    /** The rules the faults of this request's attempts met (FailureRule.everyTry). */
    const met = new Set<FailureRule>();
    try {
      for (let attempt = 1; ; attempt += 1) {
        await this.#reach.mayTry(me);
        const step = await this.#step(target, label, me, attempt, started, met);
        if (step.next === 'done') return step.value;
        if (step.next === 'held') attempt -= 1; // not sent: mayTry says what became of the service
        if (step.next !== 'retry') continue;
        const { fault } = step;
        const retry = `retry ${attempt} of ${this.#maxRetries}`;
        if (fault.retryAfterMs !== undefined) {
          // A 429/503: every caller waits (the quota belongs to the key); the wait itself is announced by the pacer.
          const until = this.#now() + fault.retryAfterMs;
          // Blocked either way: when the wait is too long, the other callers stop too instead of spending requests.
          this.#pacer.block(until, fault.status);
          if (fault.retryAfterMs > this.#maxWaitMs) {
            throw this.#waitTooLong({ until, cause: 'retry_after', ...(fault.status === undefined ? {} : { status: fault.status }) }, fault.retryAfterMs, label, fault);
          }
          this.#log('WARN', `GET ${label}: ${fault.cause}; waiting ${duration(fault.retryAfterMs)} as the service asks, then ${retry}.`);
        } else {
          const waitMs = Math.min(backoff.next(), fault.rule.capMs ?? Number.POSITIVE_INFINITY);
          this.#log(
            'WARN',
            step.outage
              ? `Cannot reach the Data-Read API at ${this.#baseText()}: ${fault.cause}; ${retry} in ${duration(waitMs)} (every request waits for it).`
              : `GET ${label}: ${fault.cause}; ${retry} in ${duration(waitMs)}.`,
          );
          const now = this.#now();
          this.#notify({ reason: 'backoff', waitMs, until: now + waitMs, path: label });
          this.stats.waitedMs += waitMs;
          await this.#sleep(waitMs);
        }
      }
    } finally {
      // A prober that stops for any other reason (the client closed, a wait too long) lets the others try for themselves.
      this.#reach.reached(me);
    }
  }

  /**
   * One attempt and what it teaches, under a permit of the gate: a request
   * queued for the permit meanwhile sees a refused key or an outage as soon
   * as it gets the permit, and is not sent.
   */
  async #step(target: string, label: string, me: Prober, attempt: number, started: number, met: Set<FailureRule>): Promise<Step> {
    this.#mayRaise();
    const release = await this.#gate.acquire();
    try {
      if (this.#reach.held(me)) return { next: 'held' };
      const result = await this.#attempt(target, label);
      if (attempt > 1) this.stats.retries += 1;
      if (result.ok) {
        this.#reach.reached();
        return { next: 'done', value: result.value };
      }
      const fault = result.fault;
      met.add(fault.rule);
      let outage: Outage | undefined;
      if (fault.kind === 'net' && fault.net?.kind === 'unreachable') {
        outage = this.#reach.unreachable(me);
        // Another request is retrying for everyone: wait for its outcome (SharedReach.mayTry), then try again.
        if (outage.prober !== me && attempt <= this.#maxRetries) return { next: 'again' };
      } else {
        this.#reach.reached();
      }
      if (!fault.retryable || attempt > this.#maxRetries) {
        // This request's own attempts: 1 + max_retries when they ran out (the first attempts of the requests that then
        // waited for this one's outcome are not retries, and are not counted).
        const tries = triesText(attempt, this.#now() - started);
        throw this.#fail({ ...fault, rule: finalRule(fault.rule, met.size === 1) }, tries, label);
      }
      return { next: 'retry', fault, outage: outage !== undefined };
    } finally {
      release();
    }
  }

  /** The error a fault ends in; a failure of the key or of the service is remembered, and ends an outage in failure. */
  #fail(fault: Fault, tries: string, label: string): ConnectorError {
    const error = this.#policyError(fault, tries, label);
    if (error.runWide) this.#reach.remember(error);
    return error;
  }

  #baseText(): string {
    return `${this.#base.origin}${this.#base.prefix}`;
  }

  /** One HTTP attempt (the caller holds a permit of the gate), after the pacer allows it. */
  async #attempt(target: string, label: string): Promise<Attempt> {
    this.#assertOpen();
    const dispatcher = this.#openDispatcher();
    await this.#pacer.ready(label);
    this.#assertOpen();
    this.stats.requests += 1;
    const seq = this.#pacer.sent();
    const sentAt = this.#now();
    /** Requests in flight once this one went out, itself included. */
    const sentWith = this.#pacer.inFlight;
    // request_timeout_seconds bounds the attempt as a whole (a body that trickles in included); route.ts bounds each wait of its connections.
    let timedOut = false;
    const controller = new AbortController();
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.#timeoutMs);
    const stop = (): void => controller.abort();
    this.#halt.addEventListener('abort', stop, { once: true });
    let status: number;
    let headers: IncomingHttpHeaders;
    let raw: Buffer | BodyText;
    let tooLarge: BodyTooLarge | undefined;
    /** A 429 whose figures are a short limiter's, not the minute's quota: the requests in flight when it was sent. */
    let limiterAt: number | undefined;
    try {
      const res = await dispatcher.request({
        origin: this.#base.origin,
        path: target,
        method: 'GET',
        headers: this.#headers,
        signal: controller.signal,
      });
      // The description is not one of the key's operations (API description, sections 4.2 and 8): RateLimit-* on it
      // may count another minute (the emulator's, a fresh one for requests outside any key's quota), and taken as the
      // key's they make the key's requests before it look like others spending it, spread as such. Its send still counts.
      if (label !== DESCRIPTION_PATH) {
        this.#pacer.observe(res.headers, this.#now(), sentAt, seq, res.statusCode);
        if (res.statusCode === 429 && this.#pacer.throttle === 'limiter') limiterAt = sentWith;
      }
      status = res.statusCode;
      headers = res.headers;
      // A success as sent is decoded straight to text; anything else is kept as bytes.
      try {
        const max = this.#maxBodyBytes;
        raw = status >= 200 && status < 300 && isIdentityEncoding(headerValue(headers, 'content-encoding')) ? await readText(res.body, max) : await readBytes(res.body, max);
      } catch (err) {
        if (!(err instanceof BodyTooLarge)) throw err;
        // Left unread (the connection is closed): a success is a body fault, an error is judged by its status alone.
        if (status >= 200 && status < 300) tooLarge = err;
        raw = Buffer.alloc(0);
      }
    } catch (err) {
      if (this.#halt.aborted) throw this.#closedError();
      return { ok: false, fault: this.#netFault(err, timedOut) };
    } finally {
      clearTimeout(timer);
      this.#halt.removeEventListener('abort', stop);
      this.#pacer.done();
    }
    if (tooLarge !== undefined) return this.#tooLargeFault(status, tooLarge.what, headerValue(headers, 'content-type'));
    const result = await this.#judge(status, headers, raw, label);
    if (result.ok && result.notUtf8 === true) this.#tellNotUtf8(label);
    if (!result.ok && limiterAt !== undefined) this.#lowerConcurrency(result.fault, headers, limiterAt, label);
    return result;
  }

  /**
   * A 429 of a limiter of simultaneous requests (API description, section 8:
   * its size is not shown): fewer requests in flight from now on, or every
   * later clash costs a Retry-After for every caller. The refused request
   * went out with `inFlight` requests in flight, itself included: the
   * service admits fewer, so at most one less from now on (at least one;
   * the refusals of one clash each give their bound, the lowest holds).
   * Taken for that limit: a 429 whose figures are the minute's with quota
   * left (Pacer.throttle 'limiter' and RateLimit-Remaining above 0; a burst
   * limiter answers with a window of its own, Remaining 0), and whose
   * Retry-After ends within the minute's Reset (the day's quota asks for
   * longer). It rises by one again after a minute without such a 429
   * (#mayRaise): the clash may have been another process's on the key, gone
   * since, or counted a moment early (a request the service had not yet let
   * go); a limit that is the service's own costs one 429 a minute to find.
   */
  #lowerConcurrency(fault: Fault, headers: IncomingHttpHeaders, inFlight: number, label: string): void {
    const remaining = headerNumber(headers, 'ratelimit-remaining') ?? 0;
    const resetMs = resetAsMs(headers, this.#now());
    if (!(remaining > 0) || resetMs === undefined || (fault.retryAfterMs ?? 0) > resetMs) return;
    this.#clashedAt = this.#now();
    if (!this.#gate.lower(inFlight - 1)) return;
    const limit = this.#gate.limit;
    this.#log(
      'INFO',
      `GET ${label}: HTTP 429 for a request sent with ${inFlight} in flight while the minute's quota is not spent: the service limits simultaneous requests on this key. ` +
        `Sending at most ${limit} ${limit === 1 ? 'request' : 'requests'} in flight until a minute passes without such a 429 (max_concurrent_requests is ${this.#gate.size}; set it to ${limit} to start there).`,
    );
  }

  /**
   * One request more in flight again (never above max_concurrent_requests)
   * once RAISE_AFTER_MS have passed since the last simultaneous-request
   * 429 (#lowerConcurrency), said in an INFO line.
   */
  #mayRaise(): void {
    if (this.#clashedAt === undefined || this.#now() - this.#clashedAt < RAISE_AFTER_MS) return;
    this.#clashedAt = undefined;
    if (!this.#gate.raise()) return;
    const limit = this.#gate.limit;
    // Still below the setting: the next minute without a clash raises it again.
    if (limit < this.#gate.size) this.#clashedAt = this.#now();
    this.#log('INFO', `No simultaneous-request 429 for a minute: sending at most ${limit} ${limit === 1 ? 'request' : 'requests'} in flight again (max_concurrent_requests is ${this.#gate.size}).`);
  }

  /**
   * JSON is UTF-8; bytes that are not are passed on as U+FFFD (one bad byte
   * in a name should not stop a sync), but never without a word: the values
   * that hold U+FFFD are not the service's.
   */
  #tellNotUtf8(label: string): void {
    if (this.#notUtf8.has(label)) return;
    this.#notUtf8.add(label);
    this.#log(
      'WARN',
      `GET ${label} answered bytes that are not UTF-8: each was passed on as U+FFFD (\ufffd) in the values that held it. ` +
        'Report it to Data-Read; the values stay so until the service sends them again. (Said once per path.)',
    );
  }

  /** From a complete response to a value or a fault; `path`: the API's path of the request (the failure policy's rows for it). */
  async #judge(status: number, headers: IncomingHttpHeaders, body: Buffer | BodyText, path: string): Promise<Attempt> {
    if (!Buffer.isBuffer(body)) {
      // The usual case: a 2xx without content coding, already text.
      const parsed = parseJson(body.text);
      if (parsed.ok) return body.utf8 ? { ok: true, value: parsed.value } : { ok: true, value: parsed.value, notUtf8: true };
    }
    const raw = Buffer.isBuffer(body) ? body : Buffer.from(body.text, 'utf8');
    const contentType = headerValue(headers, 'content-type');
    let bytes = raw;
    let decodeProblem: string | undefined;
    let tooLarge: BodyTooLarge | undefined;
    try {
      bytes = await decode(raw, headerValue(headers, 'content-encoding'), this.#maxBodyBytes);
    } catch (err) {
      if (err instanceof BodyTooLarge) tooLarge = err;
      decodeProblem = this.#clean(messageOf(err), 120);
    }

    if (status >= 200 && status < 300) {
      if (tooLarge !== undefined) return this.#tooLargeFault(status, `${tooLarge.what} once decompressed`, contentType);
      if (decodeProblem !== undefined) {
        return this.#bodyFault(status, `the body could not be decompressed (${decodeProblem}); ${describeBody(raw, contentType, this.#clean)}`);
      }
      const parsed = parseJson(bytes);
      if (parsed.ok) return isUtf8(bytes) ? { ok: true, value: parsed.value } : { ok: true, value: parsed.value, notUtf8: true };
      // Not JSON, and not even said to be: a web page or a file, maybe from something else than the API at base_url.
      const fault = isJsonType(contentType) === false ? 'a page' : 'not JSON';
      return this.#bodyFault(status, `${this.#clean(parsed.reason, 160)}; ${describeBody(bytes, contentType, this.#clean)}`, fault, path);
    }

    const info = readProblem(decodeProblem === undefined ? bytes : Buffer.alloc(0), headers, this.#clean);
    const rule = statusRule(status, path);
    const cause = statusCause(status, info);
    const internal = this.#clean(`HTTP ${status}; content-type ${contentType ?? 'none'}; ${cause}`, 1000);
    if (status === 429) this.stats.throttled += 1;
    let retryAfterMs: number | undefined;
    if (rule.retried && rule.wait === 'retry_after') {
      retryAfterMs = parseRetryAfter(headerValue(headers, 'retry-after'), this.#now(), headerValue(headers, 'date'));
      retryAfterMs ??= resetAsMs(headers, this.#now());
      // "Again now" (0, or a date already past), as a simultaneous-request limiter may say while the requests
      // that fill it run on: taken at its word, every retry would go at once and all be spent in no time. A
      // growing backoff instead (not the minute's RateLimit-Reset after a Retry-After 0: the service said the
      // wait is short). A RateLimit-Reset 0 in place of a Retry-After says no more.
      if (retryAfterMs === 0) retryAfterMs = undefined;
    }
    const location = status >= 300 && status < 400 ? this.#redirectTarget(headerValue(headers, 'location')) : undefined;
    const base: Fault = { rule, retryable: rule.retried, kind: 'status', status, info, cause, internal, ...(location === undefined ? {} : { location }) };
    return { ok: false, fault: retryAfterMs === undefined ? base : { ...base, retryAfterMs } };
  }

  /** A redirect's Location for a message: absolute, without query or fragment (a cursor, maybe a token), cleaned. */
  #redirectTarget(location: string | undefined): string | undefined {
    if (location === undefined || location.trim() === '') return undefined;
    let url: URL;
    try {
      url = new URL(location.trim(), this.#base.origin);
    } catch {
      return `"${this.#clean(location, 120)}" (not an address)`;
    }
    return this.#clean(`${url.origin}${url.pathname}`, 200);
  }

  /** `what`: why the body is not the JSON promised; with 'too large' and 'not the API', the body as BodyTooLarge.what says it. */
  #bodyFault(status: number, what: string, fault: BodyFault = 'not JSON', path?: string): Attempt {
    const cause = fault === 'not JSON' || fault === 'a page' ? `HTTP ${status} with a body that is not the JSON promised: ${what}` : `HTTP ${status} with ${what}`;
    const rule = bodyRule(fault, path);
    return { ok: false, fault: { rule, retryable: rule.retried, kind: 'body', status, cause, internal: cause } };
  }

  /**
   * A 2xx body larger than the client reads: the API's page too large (a contract error), or, when its type is no
   * JSON (text/html, a download), something else than the API at base_url (a config error that says so).
   */
  #tooLargeFault(status: number, what: string, contentType: string | undefined): Attempt {
    if (isJsonType(contentType) !== false) return this.#bodyFault(status, what, 'too large');
    return this.#bodyFault(status, `${what}, of content-type ${this.#clean(contentType ?? '', 80)}`, 'not the API');
  }

  #netFault(err: unknown, timedOut: boolean): Fault {
    const atProxy = err instanceof ProxyError ? err : proxyAuthFailure(err, this.#route?.proxy);
    if (atProxy !== undefined && !timedOut) return this.#proxyFault(atProxy);
    const net = classifyNetError(err, { timedOut, timeoutMs: this.#timeoutMs, host: this.#base.host, clean: this.#clean });
    const rule = networkRule(net.kind);
    return { rule, retryable: rule.retried, kind: 'net', net, cause: net.text, internal: net.text, causeError: safeCause(err, this.#clean) };
  }

  /** A failure at the proxy: retried when the proxy may come back (down, or cannot reach the API yet), else a config_error. */
  #proxyFault(err: ProxyError): Fault {
    const text = this.#clean(err.message, 400);
    const rule = proxyRule(err.failure);
    const net: NetFault = { kind: err.failure === 'timeout' ? 'timeout' : err.retryable ? 'unreachable' : 'fatal', code: err.code, text };
    return { rule, retryable: rule.retried, kind: 'net', net, cause: text, internal: text, causeError: safeCause(err, this.#clean) };
  }

  // --- errors ----------------------------------------------------------------

  /** The error a fault becomes (not retried, or its retries ran out), as the failure policy says. */
  #policyError(fault: Fault, tries: string, label: string): ConnectorError {
    const { outcome } = fault.rule;
    const message = outcome.message({
      request: `GET ${label}`,
      path: label,
      status: fault.status,
      cause: fault.cause,
      location: fault.location,
      said: fault.info === undefined ? '' : serviceSaid(fault.info),
      tries,
      base: this.#baseText(),
      maxRetries: this.#maxRetries,
      retryLimit: this.#retryLimit,
      keySetting: this.#keySetting,
      stopNote: this.#stopNote,
      reach: reachHint(this.#route),
      trust: trustHint(this.#route),
    });
    const internal = `GET ${label}: ${fault.internal}; ${tries}`;
    if (outcome.code === 'contract') return new ContractError(message, { internal, ...(fault.status === undefined ? {} : { status: fault.status }) });
    return new ApiError(outcome.code, outcome.failure, message, {
      internal,
      runWide: outcome.scope === 'client',
      ...(fault.status === undefined ? {} : { status: fault.status }),
      ...(fault.info?.problem === undefined ? {} : { problem: fault.info.problem }),
      ...(fault.causeError === undefined ? {} : { cause: fault.causeError }),
    });
  }

  #waitTooLong(wait: PaceWait, waitMs: number, label: string, fault: Fault | undefined): ApiError {
    const at = isoTime(wait.until);
    const limit = `longer than max_wait_seconds (${Math.round(this.#maxWaitMs / 1000)} s) allows`;
    const said = fault?.info === undefined ? '' : serviceSaid(fault.info);
    const status = fault?.status ?? wait.status;
    const message = WAIT_TOO_LONG.message(status, waitMs, at, duration(waitMs), limit, `${this.#stopNote}${said}`);
    const cause = wait.cause === 'quota' ? 'RateLimit-Remaining 0' : wait.cause === 'shared' || wait.cause === 'spread' ? 'RateLimit-Remaining spent by other users of the key' : `HTTP ${status ?? 429} Retry-After`;
    return new ApiError(WAIT_TOO_LONG.code, WAIT_TOO_LONG.failure, message, {
      resetAt: wait.until,
      runWide: WAIT_TOO_LONG.scope === 'client',
      internal: `GET ${label}: ${cause}, wait ${Math.round(waitMs)} ms > max ${this.#maxWaitMs} ms`,
      ...(status === undefined ? {} : { status }),
      ...(fault?.info?.problem === undefined ? {} : { problem: fault.info.problem }),
    });
  }

  #closedError(): ConnectorError {
    return new ConnectorError('system_error', 'The Data-Read API client was closed while a request was pending.');
  }

  #assertOpen(): void {
    if (this.#halt.aborted) throw this.#closedError();
  }

  // --- waits and reports -----------------------------------------------------

  /** A shared rate-limit wait begins: counted and logged once, whoever waits. */
  #announceRateWait(wait: PaceWait, waitMs: number): void {
    this.stats.rateLimitWaits += 1;
    this.stats.waitedMs += waitMs;
    this.stats.rateLimitWaitedMs += waitMs;
    const why =
      wait.cause === 'quota'
        ? 'the request quota of this minute is used up (RateLimit-Remaining 0)'
        : wait.cause === 'shared' || wait.cause === 'spread'
          ? 'what is left of this minute\'s request quota is expected to go to other users of the same API key (RateLimit-Remaining falls faster than this connector spends it)'
          : 'the service asked to wait (Retry-After)';
    this.#log('INFO', `Pausing requests for ${duration(waitMs)}, until ${isoTime(wait.until)}: ${why}.`);
  }

  /** Each path that waits is told once per wait: every stream held back reports RATE_LIMITED, not only the first. */
  #tellWaiting(wait: PaceWait, waitMs: number, path: string): void {
    if (this.#told.get(path) === wait.until) return;
    this.#told.set(path, wait.until);
    this.#notify({ reason: 'rate_limited', waitMs, until: wait.until, path });
  }

  #notify(notice: WaitNotice): void {
    this.#onWait?.(notice);
  }

  #log(level: 'INFO' | 'WARN', message: string): void {
    this.#onLog?.(level, this.#clean(message, 2000));
  }

  async #timerSleep(ms: number): Promise<void> {
    // Node's timer rejects only on the abort: the client's close or the run's stop.
    await sleep(ms, undefined, { signal: this.#halt }).catch(() => {
      throw this.#closedError();
    });
  }
}

/** "1 attempt", "9 attempts over 1 min 37 s": the attempts of one request, its first and its retries. */
function triesText(attempts: number, ms: number): string {
  return attempts === 1 ? '1 attempt' : `${attempts} attempts over ${duration(ms)}`;
}

/** A client for the Data-Read API. Close it when done. */
export function createClient(options: CreateClientOptions): DataReadApi {
  return new DataReadClient(options);
}
