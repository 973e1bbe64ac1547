/**
 * The client's one error: the API answered with a failure, or could not be
 * reached (`code` says which, in the terms of the failure policy,
 * policy.ts), with a message in plain words for a user.
 */
import { ConnectorError, type FailureType } from '../errors.js';
import type { Problem } from '../schemas/resources.js';

export type ApiErrorCode =
  | 'unauthorized' // 401
  | 'forbidden' // 403 (data API off, plan without access, key without data:read)
  | 'bad_request' // 400 (invalid parameter, altered/foreign cursor)
  | 'not_found' // 404
  | 'too_long' // 414/431: the request line or headers longer than the service takes (a saved resume cursor too long to send)
  | 'moved' // 301/308, 302/303/307: a permanent or temporary redirect (never followed: the key would go with it)
  | 'retries_exhausted' // 429/5xx/network/timeout/unparsable past max_retries
  | 'wait_too_long' // Retry-After or RateLimit-Reset beyond max_wait_seconds
  | 'unreachable' // DNS failure, connection refused, TLS failure, past retries (the API's or the proxy's)
  | 'proxy' // the proxy refused: credentials (407), its rules (403), not an HTTP proxy, its certificate
  | 'unexpected_status' // a status the API does not document and that is not retried (405, 410, 422, another 3xx...)
  | 'not_the_api' // a 2xx body not JSON nor of a JSON type (text/html, a download), too large to read or on GET /v1/me every try: base_url points at something else
  | 'request_failed'; // the request could not be made at all (a bug, a closed client)
// A 2xx whose body breaks the contract is a ContractError (errors.ts), not an ApiError.

/** An error from the API or from reaching it. `message` is plain words for a user. */
export class ApiError extends ConnectorError {
  readonly code: ApiErrorCode;
  readonly status: number | undefined;
  readonly problem: Problem | undefined;
  /** For wait_too_long: epoch ms when the quota resets. */
  readonly resetAt: number | undefined;
  constructor(
    code: ApiErrorCode,
    failureType: FailureType,
    message: string,
    extra: { status?: number; problem?: Problem; resetAt?: number; internal?: string; cause?: unknown; runWide?: boolean } = {},
  ) {
    super(failureType, message, { internal: extra.internal, cause: extra.cause, runWide: extra.runWide === true });
    this.name = 'ApiError';
    this.code = code;
    this.status = extra.status;
    this.problem = extra.problem;
    this.resetAt = extra.resetAt;
  }
}
