/**
 * Retries: how long to wait between attempts (decorrelated jitter), reading
 * Retry-After, and classifying network faults. Which faults are retried is
 * the failure policy (policy.ts).
 */
import type { Clean } from './redact.js';
import { duration } from './redact.js';
import { httpDate, secondsAsMs } from './headers.js';

/**
 * Growing, jittered waits ("decorrelated jitter"): each wait is drawn between
 * the base and three times the previous wait, capped. Waits grow on average,
 * never fall under the base, and callers that failed together spread out.
 */
export class Backoff {
  readonly #base: number;
  readonly #cap: number;
  readonly #random: () => number;
  #previous: number;

  constructor(baseMs: number, capMs: number, random: () => number) {
    this.#base = Math.max(0, baseMs);
    this.#cap = Math.max(this.#base, capMs);
    this.#random = random;
    this.#previous = this.#base;
  }

  next(): number {
    const high = Math.min(this.#cap, this.#previous * 3);
    const r = Math.min(1, Math.max(0, this.#random()));
    const wait = Math.min(this.#cap, this.#base + r * Math.max(0, high - this.#base));
    this.#previous = Math.max(wait, this.#base);
    return Math.round(wait);
  }
}

/**
 * Retry-After as a wait in ms: delta-seconds (the documented form) or an
 * HTTP date. A date is on the service's clock: it is measured from the
 * response's own `Date` (`responseDate`) when it has one, so that a machine
 * whose clock is behind or ahead of the service's waits what the service
 * meant; from `now` otherwise. A value that is neither is no Retry-After
 * (undefined): never a date long past, which would say "again now".
 */
export function parseRetryAfter(value: string | undefined, now: number, responseDate?: string): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  const ms = secondsAsMs(text);
  if (ms !== undefined) return ms;
  const date = httpDate(text);
  if (date === undefined) return undefined;
  const sent = responseDate === undefined ? undefined : httpDate(responseDate);
  return Math.max(0, date - (sent ?? now));
}

/**
 * A failure to get a response: timeout, network (reset, closed), unreachable
 * (DNS, refused), tls (a certificate not trusted), fatal (a bug or a closed
 * client). Whether each is retried is the failure policy (policy.ts).
 */
export type NetKind = 'timeout' | 'network' | 'unreachable' | 'tls' | 'fatal';

export interface NetFault {
  readonly kind: NetKind;
  readonly code: string | undefined;
  /** Plain words, cleaned of secrets. */
  readonly text: string;
}

interface ErrorLike {
  readonly code?: unknown;
  readonly name?: unknown;
  readonly message?: unknown;
  readonly cause?: unknown;
  readonly errors?: unknown;
}

function asErrorLike(value: unknown): ErrorLike | undefined {
  return typeof value === 'object' && value !== null ? (value as ErrorLike) : undefined;
}

/** The first error code found on the error, its cause chain, or an AggregateError's members. */
export function errorCode(err: unknown, depth = 0): string | undefined {
  const e = asErrorLike(err);
  if (e === undefined || depth > 4) return undefined;
  if (typeof e.code === 'string' && e.code !== '') return e.code;
  const fromCause = errorCode(e.cause, depth + 1);
  if (fromCause !== undefined) return fromCause;
  if (Array.isArray(e.errors)) {
    for (const member of e.errors as unknown[]) {
      const code = errorCode(member, depth + 1);
      if (code !== undefined) return code;
    }
  }
  return undefined;
}

function errorMessage(err: unknown): string {
  const e = asErrorLike(err);
  if (e === undefined) return String(err);
  const own = typeof e.message === 'string' ? e.message : '';
  const cause = asErrorLike(e.cause);
  const causeMessage = cause !== undefined && typeof cause.message === 'string' ? cause.message : '';
  return [own, causeMessage].filter((m) => m !== '').join(': ') || (typeof e.name === 'string' ? e.name : 'unknown error');
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT', 'ESOCKETTIMEDOUT']);
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA']);
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'EADDRNOTAVAIL']);
const FATAL_CODES = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_DESTROYED', 'UND_ERR_CLOSED', 'UND_ERR_NOT_SUPPORTED', 'ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_VALUE', 'ERR_INVALID_URL', 'ERR_INVALID_CHAR', 'ERR_INVALID_HTTP_TOKEN']);

function isTlsCode(code: string): boolean {
  return (
    code.startsWith('CERT_') ||
    code.startsWith('ERR_TLS_CERT') ||
    code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' ||
    code === 'UNABLE_TO_GET_ISSUER_CERT' ||
    code === 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY' ||
    code === 'DEPTH_ZERO_SELF_SIGNED_CERT' ||
    code === 'SELF_SIGNED_CERT_IN_CHAIN' ||
    code === 'ERR_SSL_WRONG_VERSION_NUMBER'
  );
}

interface NetContext {
  /** Our own deadline for the attempt fired. */
  readonly timedOut: boolean;
  readonly timeoutMs: number;
  /** host[:port] of the service. */
  readonly host: string;
  readonly clean: Clean;
}

/** Classify an error thrown while sending a request or reading its body. */
export function classifyNetError(err: unknown, ctx: NetContext): NetFault {
  const code = errorCode(err);
  const message = ctx.clean(errorMessage(err), 200);
  const tag = code === undefined ? message : `${code}: ${message}`;
  if (ctx.timedOut || (code !== undefined && TIMEOUT_CODES.has(code))) {
    const what = code === 'UND_ERR_CONNECT_TIMEOUT' ? `could not connect to ${ctx.host}` : 'no complete answer';
    return { kind: 'timeout', code: code ?? 'TIMEOUT', text: `${what} within ${duration(ctx.timeoutMs)} (request_timeout_seconds)` };
  }
  // Unreachable: the message around it names the service's address (policy.ts), so these do not repeat the host.
  if (code !== undefined && DNS_CODES.has(code)) {
    return { kind: 'unreachable', code, text: `its host name could not be resolved (DNS ${code})` };
  }
  if (code === 'ECONNREFUSED') {
    return { kind: 'unreachable', code, text: 'the connection was refused (ECONNREFUSED)' };
  }
  if (code !== undefined && UNREACHABLE_CODES.has(code)) {
    return { kind: 'unreachable', code, text: `the host cannot be reached (${tag})` };
  }
  // OpenSSL's "wrong version number": the server answered an https:// address in something else than TLS (plain
  // HTTP, most often), met on reading or, as EPROTO, on writing. Not its certificate, and not a fault a retry mends.
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || (code === 'EPROTO' && /wrong version number/i.test(message))) {
    return { kind: 'tls', code, text: `${ctx.host} did not answer in TLS (${code}): no HTTPS is served there; check the host and port of base_url` };
  }
  if (code !== undefined && isTlsCode(code)) {
    return { kind: 'tls', code, text: `the TLS certificate of ${ctx.host} is not trusted (${tag})` };
  }
  if (code !== undefined && FATAL_CODES.has(code)) {
    return { kind: 'fatal', code, text: `the request could not be made (${tag})` };
  }
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET') {
    return { kind: 'network', code, text: `the connection was closed before the answer was complete (${tag})` };
  }
  return { kind: 'network', code, text: `network error (${tag})` };
}

/** A cleaned stand-in for an error from the network stack, safe to keep as `cause`. */
export function safeCause(err: unknown, clean: Clean): Error {
  const e = asErrorLike(err);
  const name = e !== undefined && typeof e.name === 'string' ? e.name : 'Error';
  const out = new Error(clean(errorMessage(err), 500));
  out.name = clean(name, 80);
  const code = errorCode(err);
  if (code !== undefined) Object.defineProperty(out, 'code', { value: clean(code, 80), enumerable: true });
  // Keep the original frames (names of functions and files only), cleaned.
  const stack = err instanceof Error && typeof err.stack === 'string' ? err.stack.split('\n').slice(1).join('\n') : '';
  out.stack = `${out.name}: ${out.message}${stack === '' ? '' : `\n${stack.split('\n').map((l) => clean(l, 300)).map((l) => `    ${l}`).join('\n')}`}`;
  return out;
}
