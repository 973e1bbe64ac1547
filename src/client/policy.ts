/**
 * The failure policy, as one table: for every answer that is not a usable 2xx
 * and every fault on the way, whether the client retries it, how long it waits
 * first, and what it becomes when it is not retried or the retries run out
 * (the error code, the Airbyte failure type, the message). Check it against
 * the API description, section 7 "Errors" (400, 401, 403, 429, 500, 503 on
 * the list operations; 429 and 503 carry Retry-After) and section 8 "Limits".
 *
 * Waits: `backoff` is the growing, jittered wait of retry.ts (at most
 * max_retries retries); `retry_after` is the Retry-After the service sent
 * (else its RateLimit-Reset, else a backoff), and every request of the client
 * waits with it; a wait longer than max_wait_seconds stops the sync (WAIT_TOO_LONG).
 *
 * Scope: a fault of the request ('request': this path, this cursor, this
 * answer) fails that request only. A fault of the key or of the service as a
 * whole ('client': the key refused, the service unreachable, its certificate
 * not trusted) would fail every request alike: the client remembers the
 * error and fails every later request with it at once, and the error is
 * marked run-wide (one report for the sync, not one per stream). While the
 * service cannot be reached, every request shares one back-off (outage.ts).
 *
 * Reading a stream: what the reader does with a failure the client did not
 * retry, or whose retries ran out (the response actions of the Airbyte CDK's
 * error mapping): 'fail' by default; a row may say 'restart' (read again from
 * the last complete watermark) or 'ignore' (skip the stream, with a WARN),
 * and when: a 400 on a saved resume cursor restarts the read (so does a 414
 * or 431: a saved cursor too long to send), a 404 on an optional stream
 * skips it (readAction).
 */
import type { FailureType } from '../errors.js';
import type { ProxyFailure } from './proxy-error.js';
import type { NetKind } from './retry.js';
import type { ApiErrorCode } from './api-error.js';
import { STREAMS } from '../streams.js';

type Wait = 'none' | 'backoff' | 'retry_after';

/** What a message may say about the failed request. */
interface FailureContext {
  /** "GET /v1/contacts" (path without the query). */
  readonly request: string;
  readonly path: string;
  /** The HTTP status, when there was an answer. */
  readonly status: number | undefined;
  /** The cause of the last fault, in plain words ("HTTP 500 (Internal error)", "connection reset ..."). */
  readonly cause: string;
  /** A redirect's Location, as an absolute address without its query, cleaned; undefined when it gave none. */
  readonly location: string | undefined;
  /** ' The service said: "..." (request_id ...).' or ''. */
  readonly said: string;
  /** "3 attempts", "9 attempts over 1 min 37 s" (the failing request's attempts, its first and its retries, and how long they took). */
  readonly tries: string;
  /** The service's address as configured ("https://api.example.com"). */
  readonly base: string;
  readonly maxRetries: number;
  /** What limited the retries, after "1 + ": "max_retries 8", or a command's own limit (ClientOptions.retryLimit). */
  readonly retryLimit: string;
  /** The setting that holds the key, as the user knows it: "api_key", or an entry's of a list of keys (ClientOptions.keySetting). */
  readonly keySetting: string;
  /** ' The sync stops; the next sync resumes from the saved state.', or '' where no sync runs (check). */
  readonly stopNote: string;
  /** Where to look when the API cannot be reached: base_url and the network, or the proxy in use. */
  readonly reach: string;
  /** What to do when the API's certificate is not trusted (ca_certificate). */
  readonly trust: string;
}

/** 'request': this request fails; 'client': every request would, so every later one fails with the same error (run-wide). */
type Scope = 'request' | 'client';

/** What a failure becomes. `code` 'contract' is a ContractError, every other code an ApiError. */
interface Outcome {
  readonly code: ApiErrorCode | 'contract' | 'request_failed';
  readonly failure: FailureType;
  readonly scope: Scope;
  readonly message: (c: FailureContext) => string;
}

/**
 * What went wrong: an HTTP status (or a class of them), a network fault, a
 * 2xx body that is not JSON (or too large), or a failure at the proxy (down
 * or unable to reach the API; no tunnel in time; a refusal: 407, 403, its
 * certificate). `path`: on that request only, as the API's path, before any
 * other row of the same fault.
 */
type Fault =
  | { readonly status: number | '5xx' | 'any other'; readonly path?: string }
  | { readonly network: NetKind }
  | { readonly body: BodyFault; readonly path?: string }
  | { readonly proxy: 'unreachable' | 'timeout' | 'refused' };

/**
 * What is wrong with a 2xx body: not the promised JSON (cut, corrupt), not
 * JSON and of a Content-Type that is no JSON either ('a page': text/html,
 * text/plain, a download), larger than the client reads (BodyTooLarge), or
 * larger than that and of a type that is no JSON: no answer of the API at all.
 */
export type BodyFault = 'not JSON' | 'a page' | 'too large' | 'not the API';

/**
 * What the reader does with a failure: 'fail' the stream, 'restart' the read
 * from the last complete watermark, or 'ignore' the stream (skipped).
 */
type ReadAction = 'fail' | 'restart' | 'ignore';

/** Where the failed request stood in the read of a stream. */
interface ReadSituation {
  /** The read started from a saved resume cursor (and has not got past its first page). */
  readonly resumeCursor: boolean;
  /** The stream is one the service may not offer (StreamDefinition.optional). */
  readonly optionalStream: boolean;
}

export interface FailureRule {
  readonly fault: Fault;
  readonly retried: boolean;
  readonly wait: Wait;
  /** The longest single back-off wait for this fault, where it is shorter than the client's (60 s). */
  readonly capMs?: number;
  /** The error when the fault is not retried, or when its retries run out. */
  readonly outcome: Outcome;
  /**
   * The outcome holds only when every attempt of the request met this row;
   * after attempts that did not (a 500, then pages), the request ends as the
   * row of the same fault on any path says (finalRule).
   */
  readonly everyTry?: true;
  /** What the reader does instead of failing the stream, and in which situation; none: the stream fails. */
  readonly read?: { readonly action: Exclude<ReadAction, 'fail'>; readonly when: keyof ReadSituation };
}

const RETRIES_EXHAUSTED: Outcome = {
  code: 'retries_exhausted',
  failure: 'transient_error',
  scope: 'request',
  message: (c) => `The Data-Read API request ${c.request} did not succeed in ${c.tries} (1 + ${c.retryLimit}); last cause: ${c.cause}.${c.stopNote}`,
};

/** The longest wait between two attempts while the service (or the proxy) cannot be reached. */
const UNREACHABLE_CAP_MS = 10_000;

const UNREACHABLE: Outcome = {
  code: 'unreachable',
  failure: 'transient_error',
  scope: 'client',
  message: (c) => `Cannot reach the Data-Read API at ${c.base}: ${c.cause}; ${c.tries} (1 + ${c.retryLimit}). ${c.reach}${c.stopNote}`,
};

/** A redirect, permanent (301, 308: the API moved) or temporary (302, 303, 307: base_url points at something in front of it, or at an old address). */
function moved(kind: 'permanent' | 'temporary'): Outcome {
  return {
    code: 'moved',
    scope: 'request',
    failure: 'config_error',
    message: (c) => {
      const to = c.location === undefined ? 'without a Location' : `to ${c.location}`;
      const base = c.location === undefined ? undefined : movedBase(c.location, c.path);
      const fix = base === undefined ? 'Check base_url: it must be the address before /v1, with https://.' : `If that is the API's address, set base_url to ${base}.`;
      return `The Data-Read API at ${c.base} answered ${c.request} with HTTP ${c.status}, a ${kind} redirect ${to}, which the connector does not follow (the API key would go with it). ${fix}${c.said}`;
    },
  };
}

const MOVED = moved('permanent');
const REDIRECTED = moved('temporary');

const TOO_LONG: Outcome = {
  code: 'too_long',
  scope: 'request',
  failure: 'system_error',
  message: (c) => `The Data-Read API refused ${c.request} as too long (HTTP ${c.status}): its address or headers are longer than the service takes.${c.said}`,
};

/** The base_url a redirect points at: its address before the path asked for, when it keeps that path. */
function movedBase(location: string, path: string): string | undefined {
  return location.endsWith(path) ? location.slice(0, location.length - path.length) : undefined;
}

/** A 404's advice, which a run of many accounts replaces when other accounts read the same base_url (engine/accounts.ts). */
export const NOT_FOUND_ADVICE = 'Check base_url: it must be the address before /v1, for example https://api.example.com.';

/** A 2xx body that is not the promised JSON, after its retries: the service broke its contract. */
const BROKEN_BODY: Outcome = { code: 'contract', failure: 'system_error', scope: 'request', message: (c) => `${c.request} answered ${c.cause} (${c.tries}).` };

/** Something else than the API answers at base_url (a website, a download): every request would meet the same. */
function notTheApi(tries: 'with tries' | 'once'): Outcome {
  return {
    code: 'not_the_api',
    failure: 'config_error',
    scope: 'client',
    message: (c) =>
      `The address in base_url (${c.base}) does not seem to be the Data-Read API: ${c.request} answered ${c.cause}` +
      `${tries === 'once' ? ", not the API's JSON" : ` (${c.tries})`}. ${NOT_FOUND_ADVICE}`,
  };
}

/** Where the service serves its machine-readable description (API description, section 4.2). */
export const DESCRIPTION_PATH = '/v1/openapi.json';

const UNAUTHORIZED: Outcome = {
  code: 'unauthorized',
  scope: 'client',
  failure: 'config_error',
  message: (c) =>
    'The Data-Read API did not accept the API key (HTTP 401): the key is missing, invalid or revoked. ' +
    `Check ${c.keySetting} in the config (the whole key, <prefix>_live_<secret>, without spaces or quotes); ` +
    `if it was revoked, create a new key in the Data-Read account and put it in ${c.keySetting}.${c.said}`,
};

const FORBIDDEN: Outcome = {
  code: 'forbidden',
  scope: 'client',
  failure: 'config_error',
  message: (c) =>
    'The Data-Read API refused access with this key (HTTP 403): the data API is switched off for the account, ' +
    "the account's plan does not include it, or the key lacks the data:read scope. " +
    'Ask an account administrator to switch the data API on (or move to a plan that includes it), ' +
    `or use a key that has the data:read scope.${c.said}`,
};

/**
 * A refusal of a path whose statuses the API description does not show may be that path's alone: the description
 * (another scope than data:read, a gateway of its own; connect.ts asks /v1/me which it is) and an optional stream (a
 * plan without that resource). The key's other requests are still sent; the caller fails that request only.
 */
const OWN_REFUSALS = [DESCRIPTION_PATH, ...STREAMS.filter((s) => s.optional).map((s) => s.path)].flatMap((path): FailureRule[] => [
  { fault: { status: 401, path }, retried: false, wait: 'none', outcome: { ...UNAUTHORIZED, scope: 'request' } },
  { fault: { status: 403, path }, retried: false, wait: 'none', outcome: { ...FORBIDDEN, scope: 'request' } },
]);

export const FAILURE_POLICY: readonly FailureRule[] = [
  {
    fault: { status: 400 },
    retried: false,
    wait: 'none',
    outcome: {
      code: 'bad_request',
      scope: 'request',
      failure: 'system_error',
      message: (c) =>
        `The Data-Read API rejected ${c.request} as an invalid request (HTTP 400): a parameter was refused, ` +
        `or the page cursor was altered or belongs to another account.${c.said}`,
    },
    // The service refuses a saved resume cursor (expired, or of another API version): read again, records may repeat, none are lost.
    read: { action: 'restart', when: 'resumeCursor' },
  },
  { fault: { status: 401 }, retried: false, wait: 'none', outcome: UNAUTHORIZED },
  { fault: { status: 403 }, retried: false, wait: 'none', outcome: FORBIDDEN },
  ...OWN_REFUSALS,
  {
    fault: { status: 404 },
    retried: false,
    wait: 'none',
    outcome: {
      code: 'not_found',
      scope: 'request',
      failure: 'config_error',
      message: (c) => `The Data-Read API has no ${c.path} (HTTP 404). ${NOT_FOUND_ADVICE}${c.said}`,
    },
    // A stream the service may not offer (an add-on): skipped with a WARN, the others go on.
    read: { action: 'ignore', when: 'optionalStream' },
  },
  {
    // The service (or a server in front of it) refuses a request line or headers that long. The connector's own requests
    // are short; only a saved resume cursor, which the user's state file hands it, can make one so long.
    fault: { status: 414 },
    retried: false,
    wait: 'none',
    outcome: TOO_LONG,
    read: { action: 'restart', when: 'resumeCursor' },
  },
  { fault: { status: 431 }, retried: false, wait: 'none', outcome: TOO_LONG, read: { action: 'restart', when: 'resumeCursor' } },
  {
    // Permanent: the API moved (or base_url lacks a part the service adds). Never followed: the Authorization header
    // would go to wherever the service points, and the next request would go to the old address again.
    fault: { status: 301 },
    retried: false,
    wait: 'none',
    outcome: MOVED,
  },
  { fault: { status: 308 }, retried: false, wait: 'none', outcome: MOVED },
  // Temporary: a login page or gateway in front of the API, or an address that forwards elsewhere. Never followed
  // either (the key would go with it); the user acts on base_url (or on what stands in front of the API).
  { fault: { status: 302 }, retried: false, wait: 'none', outcome: REDIRECTED },
  { fault: { status: 303 }, retried: false, wait: 'none', outcome: REDIRECTED },
  { fault: { status: 307 }, retried: false, wait: 'none', outcome: REDIRECTED },
  { fault: { status: 408 }, retried: true, wait: 'backoff', outcome: RETRIES_EXHAUSTED },
  { fault: { status: 429 }, retried: true, wait: 'retry_after', outcome: RETRIES_EXHAUSTED },
  { fault: { status: 503 }, retried: true, wait: 'retry_after', outcome: RETRIES_EXHAUSTED },
  { fault: { status: '5xx' }, retried: true, wait: 'backoff', outcome: RETRIES_EXHAUSTED },
  {
    fault: { status: 'any other' },
    retried: false,
    wait: 'none',
    outcome: {
      code: 'unexpected_status',
      scope: 'request',
      failure: 'system_error',
      message: (c) => `The Data-Read API answered ${c.request} with HTTP ${c.status}, ${unexpectedWhat(c.status, c.location)}${c.said}`,
    },
  },
  { fault: { network: 'timeout' }, retried: true, wait: 'backoff', outcome: RETRIES_EXHAUSTED },
  { fault: { network: 'network' }, retried: true, wait: 'backoff', outcome: RETRIES_EXHAUSTED },
  // A service that cannot be reached at all is retried by one request for every caller (outage.ts), with
  // waits of at most 10 s: max_retries 8 costs at most 80 s of waiting, not the minutes a 5xx storm may deserve.
  { fault: { network: 'unreachable' }, retried: true, wait: 'backoff', capMs: UNREACHABLE_CAP_MS, outcome: UNREACHABLE },
  {
    fault: { network: 'tls' },
    retried: false,
    wait: 'none',
    outcome: {
      code: 'unreachable',
      failure: 'config_error',
      scope: 'client',
      message: (c) => `Could not connect securely to the Data-Read API: ${c.cause}. ${c.trust}`,
    },
  },
  {
    fault: { network: 'fatal' },
    retried: false,
    wait: 'none',
    outcome: { code: 'request_failed', failure: 'system_error', scope: 'request', message: (c) => `The request to the Data-Read API could not be made: ${c.cause}.` },
  },
  { fault: { proxy: 'unreachable' }, retried: true, wait: 'backoff', capMs: UNREACHABLE_CAP_MS, outcome: UNREACHABLE },
  { fault: { proxy: 'timeout' }, retried: true, wait: 'backoff', outcome: RETRIES_EXHAUSTED },
  {
    fault: { proxy: 'refused' },
    retried: false,
    wait: 'none',
    outcome: { code: 'proxy', failure: 'config_error', scope: 'client', message: (c) => `Could not reach the Data-Read API: ${c.cause}.` },
  },
  { fault: { body: 'not JSON' }, retried: true, wait: 'backoff', outcome: BROKEN_BODY },
  {
    // The account check, the first request of every run, answered by a web page (a company's site, the API's
    // documentation, a login portal) or a file on every try: base_url points at something else. Retried all the same:
    // a gateway's page between two deployments passes.
    fault: { body: 'a page', path: '/v1/me' },
    everyTry: true,
    retried: true,
    wait: 'backoff',
    outcome: notTheApi('with tries'),
  },
  // Mid-run (the account check passed), a page is a gateway's or a proxy's answer in the service's place, not base_url's.
  { fault: { body: 'a page' }, retried: true, wait: 'backoff', outcome: BROKEN_BODY },
  {
    // Not a cut or corrupt body: the same page would be as large again, and each try reads the limit's bytes first.
    fault: { body: 'too large' },
    retried: false,
    wait: 'none',
    outcome: {
      code: 'contract',
      failure: 'system_error',
      scope: 'request',
      message: (c) =>
        `${c.request} answered ${c.cause}. It is not asked again: the same page would be as large. ` +
        'Check base_url (the address of the Data-Read API, not of a download or another site); ' +
        'if it is right, lower page_size so that a page is smaller, and report it to Data-Read.',
    },
  },
  {
    // A web site's page or a download at base_url: every request would meet the same, and only base_url mends it.
    fault: { body: 'not the API' },
    retried: false,
    wait: 'none',
    outcome: notTheApi('once'),
  },
];

/**
 * A redirect is told apart from other undocumented statuses: the fix is in base_url. A 304 (Not Modified) is no
 * redirect: it answers a conditional request, and the connector sends none.
 */
function unexpectedWhat(status: number | undefined, location: string | undefined): string {
  const to = location === undefined ? '' : ` to ${location}`;
  return status !== undefined && status >= 300 && status < 400 && status !== 304
    ? `a redirect${to}, which the connector does not follow. Check base_url (use the final address, with https://).`
    : 'a status the API does not document.';
}

function find(match: (fault: Fault) => boolean): FailureRule {
  const rule = FAILURE_POLICY.find((r) => match(r.fault));
  if (rule === undefined) throw new Error('the failure policy has no rule for this fault');
  return rule;
}

/** The rule for an HTTP status that is not 2xx: the row for that request's path (the API's), else the row of the status on any path. */
export function statusRule(status: number, path?: string): FailureRule {
  const exact = (on: string | undefined) => FAILURE_POLICY.find((r) => 'status' in r.fault && r.fault.status === status && r.fault.path === on);
  return exact(path) ?? exact(undefined) ?? find((f) => 'status' in f && f.status === (status >= 500 && status <= 599 ? '5xx' : 'any other'));
}

/** The rule for a fault on the way (no complete response). */
export function networkRule(kind: NetKind): FailureRule {
  return find((f) => 'network' in f && f.network === kind);
}

/** The rule for a failure at the proxy (a ProxyError): 407, 403, its certificate or its protocol are refusals. */
export function proxyRule(failure: ProxyFailure): FailureRule {
  const kind = failure === 'unreachable' || failure === 'timeout' ? failure : 'refused';
  return find((f) => 'proxy' in f && f.proxy === kind);
}

/**
 * What the reader does with an ApiError of `code`, in `situation`: the
 * action of the row whose error it is, when the row's situation holds;
 * otherwise the stream fails.
 */
export function readAction(code: ApiErrorCode, situation: ReadSituation): ReadAction {
  const rule = FAILURE_POLICY.find((r) => r.read !== undefined && r.outcome.code === code);
  return rule?.read !== undefined && situation[rule.read.when] ? rule.read.action : 'fail';
}

/**
 * The rule for a 2xx whose body is not the promised JSON, or is larger than
 * the client reads: the row for that request's path (the API's), else the
 * row of the fault on any path.
 */
export function bodyRule(fault: BodyFault, path?: string): FailureRule {
  const own = FAILURE_POLICY.find((r) => 'body' in r.fault && r.fault.body === fault && r.fault.path !== undefined && r.fault.path === path);
  return own ?? find((f) => 'body' in f && f.body === fault && f.path === undefined);
}

/**
 * The rule a request ends by, when its last attempt met `rule`: that rule,
 * unless it holds only when every attempt met it (everyTry) and some did
 * not; then the row of the same fault on any path.
 */
export function finalRule(rule: FailureRule, everyTryAlike: boolean): FailureRule {
  if (rule.everyTry !== true || everyTryAlike || !('body' in rule.fault)) return rule;
  return bodyRule(rule.fault.body);
}

/**
 * A wait (Retry-After, RateLimit-Reset, or the minute's quota used up) longer
 * than max_wait_seconds: a transient_error that says when to come back.
 */
export const WAIT_TOO_LONG = {
  code: 'wait_too_long',
  failure: 'transient_error',
  /** The key's quota: every caller waits for the same instant, so every caller would stop. */
  scope: 'client',
  /** @param end the stop note and what the service said */
  message(status: number | undefined, waitMs: number, at: string, waitText: string, limit: string, end: string): string {
    if (status === 503) return `The Data-Read API is unavailable (HTTP 503) and asks to wait until ${at} (${waitText}), ${limit}.${end}`;
    if (waitMs > 60_000) return `The Data-Read API's daily request quota is used up; it resets at ${at} (in ${waitText}, ${limit}).${end}`;
    return `The Data-Read API's request limit is reached; it resets at ${at} (in ${waitText}, ${limit}).${end}`;
  },
} as const;
