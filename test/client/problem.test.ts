/** readProblem: what an error answer's body and headers give the messages, each part only when it was given. */
import { describe, expect, it } from 'vitest';
import { readProblem } from '../../src/client/problem.js';

const clean = (text: string): string => text;
const PROBLEM = { 'content-type': 'application/problem+json' };

describe('readProblem', () => {
  it("keeps the document's words and its documented fields; its request_id wins over the header's", () => {
    const doc = { type: 'about:blank', title: 'Not Found', status: 404, detail: 'none', request_id: 'r1', extra: 'x' };
    expect(readProblem(Buffer.from(JSON.stringify(doc)), { ...PROBLEM, 'x-request-id': 'h1' }, clean)).toStrictEqual({
      title: 'Not Found',
      detail: 'none',
      requestId: 'r1',
      problem: { type: 'about:blank', status: 404, title: 'Not Found', detail: 'none', request_id: 'r1' },
    });
  });

  it("takes the header's request id when the document has none, and no problem when it is not the documented shape", () => {
    expect(readProblem(Buffer.from('{"title": "Oops"}'), { ...PROBLEM, 'request-id': 'h2' }, clean)).toStrictEqual({ title: 'Oops', requestId: 'h2' });
  });

  it("gives only the header's request id for a body that is empty, not JSON, or JSON but no object", () => {
    for (const body of ['', 'Bad Gateway', '[1, 2]', 'null', '{not json']) {
      expect(readProblem(Buffer.from(body), { ...PROBLEM, 'x-request-id': 'h3' }, clean)).toStrictEqual({ requestId: 'h3' });
      expect(readProblem(Buffer.from(body), {}, clean)).toStrictEqual({});
    }
  });
});
