/**
 * Error responses: read application/problem+json (title, detail, request_id)
 * and turn a status into an ApiError whose message a user can act on.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Problem } from '../schemas/resources.js';
import { parseJson } from './body.js';
import { headerValue } from './headers.js';
import type { Clean } from './text.js';
import { ApiError } from './types.js';

/** What the service said about an error, cleaned; each part only when it was given. */
export interface ProblemInfo {
  readonly title?: string;
  readonly detail?: string;
  readonly requestId?: string;
  /** The full document when it matched the documented shape (strings cleaned). */
  readonly problem?: Problem;
}

function str(value: unknown, clean: Clean, max: number): string | undefined {
  if (typeof value !== 'string') return undefined;
  const out = clean(value, max);
  return out === '' ? undefined : out;
}

/** Parse an error body; lenient: takes whatever of title/detail/request_id is there. */
export function readProblem(bytes: Buffer, headers: IncomingHttpHeaders, clean: Clean): ProblemInfo {
  const headerId = str(headerValue(headers, 'x-request-id') ?? headerValue(headers, 'request-id'), clean, 120);
  const contentType = headerValue(headers, 'content-type') ?? '';
  const looksJson = /json/i.test(contentType) || /^\s*\{/.test(bytes.subarray(0, 64).toString('utf8'));
  if (!looksJson || bytes.length === 0) return headerId === undefined ? {} : { requestId: headerId };
  const parsed = parseJson(bytes);
  if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null || Array.isArray(parsed.value)) {
    return headerId === undefined ? {} : { requestId: headerId };
  }
  const doc = parsed.value as Record<string, unknown>;
  const title = str(doc.title, clean, 200);
  const detail = str(doc.detail, clean, 600);
  const requestId = str(doc.request_id, clean, 120) ?? headerId;
  const checked = Problem.safeParse(doc);
  // Only the documented fields are kept: an extra field could echo anything, the key included.
  const problem: Problem | undefined = checked.success
    ? {
        type: clean(checked.data.type, 200),
        status: checked.data.status,
        title: title ?? '',
        detail: detail ?? '',
        request_id: requestId ?? '',
      }
    : undefined;
  return {
    ...(title === undefined ? {} : { title }),
    ...(detail === undefined ? {} : { detail }),
    ...(requestId === undefined ? {} : { requestId }),
    ...(problem === undefined ? {} : { problem }),
  };
}

/** ` The service said: "Title: detail" (request_id abc).` or '' when it said nothing. */
export function serviceSaid(info: ProblemInfo): string {
  const words = [info.title, info.detail].filter((s): s is string => s !== undefined).join(': ');
  const id = info.requestId === undefined ? '' : `request_id ${info.requestId}`;
  if (words === '' && id === '') return '';
  if (words === '') return ` (${id}).`;
  return ` The service said: "${words}"${id === '' ? '' : ` (${id})`}.`;
}

/** "HTTP 500 (Internal error; request_id r-1)": a short cause for logs and the final message. */
export function statusCause(status: number, info: ProblemInfo): string {
  const parts = [info.title, info.detail].filter((s): s is string => s !== undefined).join(': ');
  const id = info.requestId === undefined ? '' : `request_id ${info.requestId}`;
  const inner = [parts, id].filter((s) => s !== '').join('; ');
  return inner === '' ? `HTTP ${status}` : `HTTP ${status} (${inner})`;
}

/** The error for a status that is not retried (4xx other than 408/429, 3xx, 1xx). */
export function statusError(status: number, method: string, path: string, info: ProblemInfo, internal: string): ApiError {
  const said = serviceSaid(info);
  const extra = { status, internal, ...(info.problem === undefined ? {} : { problem: info.problem }) };
  const request = `${method} ${path}`;
  switch (status) {
    case 401:
      return new ApiError(
        'unauthorized',
        'config_error',
        'The Data-Read API did not accept the API key (HTTP 401): the key is missing, invalid or revoked. ' +
          'Check api_key in the config (the whole key, <prefix>_live_<secret>, without spaces or quotes); ' +
          'if it was revoked, create a new key in the Data-Read account and put it in api_key.' +
          said,
        extra,
      );
    case 403:
      return new ApiError(
        'forbidden',
        'config_error',
        'The Data-Read API refused access with this key (HTTP 403): the data API is switched off for the account, ' +
          "the account's plan does not include it, or the key lacks the data:read scope. " +
          'Ask an account administrator to switch the data API on (or move to a plan that includes it), ' +
          'or use a key that has the data:read scope.' +
          said,
        extra,
      );
    case 400:
      return new ApiError(
        'bad_request',
        'system_error',
        `The Data-Read API rejected ${request} as an invalid request (HTTP 400): a parameter was refused, ` +
          'or the page cursor was altered or belongs to another account.' +
          said,
        extra,
      );
    case 404:
      return new ApiError(
        'not_found',
        'config_error',
        `The Data-Read API has no ${path} (HTTP 404). Check base_url: it must be the address before /v1, ` +
          'for example https://api.example.com.' +
          said,
        extra,
      );
    default: {
      const redirect = status >= 300 && status < 400;
      const what = redirect
        ? 'a redirect, which the connector does not follow. Check base_url (use the final address, with https://).'
        : 'a status the API does not document.';
      return new ApiError('unexpected_status', 'system_error', `The Data-Read API answered ${request} with HTTP ${status}, ${what}${said}`, extra);
    }
  }
}
