/**
 * Error responses: read application/problem+json (title, detail, request_id)
 * into plain words for messages. What each status becomes is the failure
 * policy (policy.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Problem } from '../schemas/resources.js';
import { parseJson } from './body.js';
import { headerValue } from './headers.js';
import type { Clean } from './redact.js';

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
  const parsed = looksJson && bytes.length > 0 ? parseJson(bytes) : undefined;
  if (!parsed?.ok || typeof parsed.value !== 'object' || parsed.value === null || Array.isArray(parsed.value)) {
    return headerId === undefined ? {} : { requestId: headerId };
  }
  const doc = parsed.value as Record<string, unknown>;
  const words = problemWords(doc, clean);
  const { title, detail, requestId = headerId } = words;
  // An error answer is rare: zod's compiled fast path (`new Function`) would cost more to build than it saves.
  const checked = Problem.safeParse(doc, { jitless: true });
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
  return { ...words, ...(requestId === undefined ? {} : { requestId }), ...(problem === undefined ? {} : { problem }) };
}

/** title, detail and request_id of an error document, each cleaned and only when it is a string. */
export function problemWords(doc: Record<string, unknown>, clean: Clean): ProblemInfo {
  const title = str(doc.title, clean, 200);
  const detail = str(doc.detail, clean, 600);
  const requestId = str(doc.request_id, clean, 120);
  return {
    ...(title === undefined ? {} : { title }),
    ...(detail === undefined ? {} : { detail }),
    ...(requestId === undefined ? {} : { requestId }),
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
