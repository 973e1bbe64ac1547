/**
 * The failure policy table read against the API description (section 7,
 * "Errors"; section 8, "Limits"): what is retried, after which wait, and what
 * the rest becomes. The client's behaviour for each row is tested in
 * errors.test.ts and retry.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { FAILURE_POLICY, bodyRule, finalRule, networkRule, proxyRule, readAction, statusRule } from '../../src/client/policy.js';

const row = (status: number) => {
  const { retried, wait, outcome } = statusRule(status);
  return { retried, wait, code: outcome.code, failure: outcome.failure };
};

describe('the failure policy', () => {
  it("says what a read does with a failure (the CDK's response actions): a 400 on a resume cursor restarts, a 404 on an optional stream is ignored", () => {
    const at = (resumeCursor: boolean, optionalStream: boolean) => ({ resumeCursor, optionalStream });
    expect(statusRule(400).read).toEqual({ action: 'restart', when: 'resumeCursor' });
    expect(statusRule(404).read).toEqual({ action: 'ignore', when: 'optionalStream' });
    expect(readAction('bad_request', at(true, false))).toBe('restart');
    expect(readAction('bad_request', at(false, true))).toBe('fail');
    expect(readAction('not_found', at(false, true))).toBe('ignore');
    expect(readAction('not_found', at(true, false))).toBe('fail');
    for (const code of ['unauthorized', 'forbidden', 'retries_exhausted', 'wait_too_long', 'unreachable', 'unexpected_status', 'request_failed'] as const) {
      expect(readAction(code, at(true, true)), code).toBe('fail');
    }
    // A saved resume cursor too long to send (414 from a proxy or server in front, 431 from Node's own parser): read again too.
    for (const status of [414, 431]) {
      expect(statusRule(status), String(status)).toMatchObject({ retried: false, outcome: { code: 'too_long', failure: 'system_error' }, read: { action: 'restart', when: 'resumeCursor' } });
    }
    expect(readAction('too_long', at(true, false))).toBe('restart');
    expect(readAction('too_long', at(false, true))).toBe('fail');
    // Only the rows say so: no other row names a read action.
    expect(FAILURE_POLICY.filter((r) => r.read !== undefined).map((r) => r.fault)).toEqual([{ status: 400 }, { status: 404 }, { status: 414 }, { status: 431 }]);
  });

  it('follows the documented statuses', () => {
    expect(row(400)).toEqual({ retried: false, wait: 'none', code: 'bad_request', failure: 'system_error' });
    expect(row(401)).toEqual({ retried: false, wait: 'none', code: 'unauthorized', failure: 'config_error' });
    expect(row(403)).toEqual({ retried: false, wait: 'none', code: 'forbidden', failure: 'config_error' });
    expect(row(429)).toEqual({ retried: true, wait: 'retry_after', code: 'retries_exhausted', failure: 'transient_error' });
    expect(row(500)).toEqual({ retried: true, wait: 'backoff', code: 'retries_exhausted', failure: 'transient_error' });
    expect(row(503)).toEqual({ retried: true, wait: 'retry_after', code: 'retries_exhausted', failure: 'transient_error' });
  });

  it("takes a 401 or 403 of the description or of an optional stream's path for that request's failure, not the key's", () => {
    for (const status of [401, 403]) {
      const anyPath = statusRule(status);
      expect(statusRule(status, '/v1/contacts')).toBe(anyPath);
      for (const path of ['/v1/openapi.json', '/v1/pipeline_stages']) {
        const own = statusRule(status, path);
        expect(own, `${status} ${path}`).toMatchObject({ fault: { status, path }, retried: false, outcome: { code: anyPath.outcome.code, failure: 'config_error', scope: 'request' } });
        expect(own.outcome.message, `${status} ${path}`).toBe(anyPath.outcome.message);
      }
    }
  });

  it('retries every 5xx and 408, refuses what the API does not document', () => {
    for (const status of [408, 502, 504, 599]) expect(row(status).retried, String(status)).toBe(true);
    for (const status of [300, 304, 405, 410, 422]) expect(row(status), String(status)).toEqual({ retried: false, wait: 'none', code: 'unexpected_status', failure: 'system_error' });
    // A redirect, permanent or temporary: never followed, the fix is base_url.
    for (const status of [301, 302, 303, 307, 308]) expect(row(status), String(status)).toEqual({ retried: false, wait: 'none', code: 'moved', failure: 'config_error' });
    expect(row(404)).toEqual({ retried: false, wait: 'none', code: 'not_found', failure: 'config_error' });
  });

  it('retries network faults that may pass, not those that will not', () => {
    expect(['timeout', 'network', 'unreachable'].map((k) => networkRule(k as 'timeout').retried)).toEqual([true, true, true]);
    expect(networkRule('unreachable').outcome).toMatchObject({ code: 'unreachable', failure: 'transient_error' });
    expect(networkRule('tls')).toMatchObject({ retried: false, outcome: { code: 'unreachable', failure: 'config_error' } });
    expect(networkRule('fatal')).toMatchObject({ retried: false, outcome: { failure: 'system_error' } });
  });

  it('retries a proxy that is down, cannot reach the API or opens no tunnel in time; a proxy that refuses is a config_error', () => {
    expect(proxyRule('unreachable')).toMatchObject({ retried: true, wait: 'backoff', outcome: { code: 'unreachable', failure: 'transient_error' } });
    expect(proxyRule('timeout')).toMatchObject({ retried: true, wait: 'backoff', outcome: { code: 'retries_exhausted', failure: 'transient_error' } });
    for (const failure of ['auth', 'refused', 'tls', 'protocol'] as const) {
      expect(proxyRule(failure), failure).toMatchObject({ retried: false, wait: 'none', outcome: { code: 'proxy', failure: 'config_error' } });
    }
  });

  it('retries a 2xx body that is not JSON, then calls it a broken contract', () => {
    expect(bodyRule('not JSON')).toMatchObject({ retried: true, wait: 'backoff', outcome: { code: 'contract', failure: 'system_error' } });
  });

  it('retries a 2xx page that is not JSON nor said to be (text/html, a file); on GET /v1/me, on every try, base_url is wrong, for every request', () => {
    const onMe = bodyRule('a page', '/v1/me');
    expect(onMe).toMatchObject({ retried: true, wait: 'backoff', everyTry: true, outcome: { code: 'not_the_api', failure: 'config_error', scope: 'client' } });
    // Mid-run, a gateway's page in the service's place: the broken contract a body that is not JSON is.
    for (const rule of [bodyRule('a page'), bodyRule('a page', '/v1/contacts')]) {
      expect(rule).toMatchObject({ retried: true, wait: 'backoff', outcome: { code: 'contract', failure: 'system_error' } });
    }
    // Not on every try (a 500 first): the row of the fault on any path.
    expect(finalRule(onMe, true)).toBe(onMe);
    expect(finalRule(onMe, false)).toBe(bodyRule('a page'));
    expect(finalRule(bodyRule('not JSON'), false)).toBe(bodyRule('not JSON'));
  });

  it('does not retry a 2xx body larger than the client reads: the same page would be as large again', () => {
    expect(bodyRule('too large')).toMatchObject({ retried: false, wait: 'none', outcome: { code: 'contract', failure: 'system_error' } });
  });

  it('does not retry a 2xx body larger than the client reads and not JSON (a website, a download): base_url is wrong, for every request', () => {
    expect(bodyRule('not the API')).toMatchObject({ retried: false, wait: 'none', outcome: { code: 'not_the_api', failure: 'config_error', scope: 'client' } });
  });

  it('has one row per fault, and a wait only where it retries', () => {
    const faults = FAILURE_POLICY.map((r) => JSON.stringify(r.fault));
    expect(new Set(faults).size).toBe(faults.length);
    for (const r of FAILURE_POLICY) expect(r.wait === 'none', JSON.stringify(r.fault)).toBe(!r.retried);
  });
});
