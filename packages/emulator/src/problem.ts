/** application/problem+json responses: one fixed title per status. */

export const PROBLEM_TITLES: Readonly<Record<number, string>> = {
  400: 'Invalid request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  413: 'Payload too large',
  429: 'Too many requests',
  500: 'Internal server error',
  503: 'Service unavailable',
};

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

export function problemTitle(status: number): string {
  return PROBLEM_TITLES[status] ?? 'Error';
}

export interface ProblemDocument {
  readonly type: 'about:blank';
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly request_id: string;
}

export function problemDocument(status: number, detail: string, requestId: string): ProblemDocument {
  return { type: 'about:blank', title: problemTitle(status), status, detail, request_id: requestId };
}

/** Thrown by request handlers; the server turns it into a problem+json response. */
export class ProblemError extends Error {
  readonly status: number;
  readonly detail: string;
  readonly headers: Readonly<Record<string, string>>;
  constructor(status: number, detail: string, headers: Readonly<Record<string, string>> = {}) {
    super(`${status} ${problemTitle(status)}: ${detail}`);
    this.name = 'ProblemError';
    this.status = status;
    this.detail = detail;
    this.headers = headers;
  }
}
