/** engine/service-outage.ts: which failures of an account say the service is down, and the count of accounts in a row. */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/client/api-error.js';
import { ConfigError, ContractError } from '../../src/errors.js';
import { OUTAGE_ACCOUNTS, SharedOutage, probeOutcome, probeSettles, serviceDownBy } from '../../src/engine/service-outage.js';

const withCode = (code: string): Error => Object.assign(new Error(code), { code });
const exhausted = (extra: { status?: number; cause?: unknown }): ApiError => new ApiError('retries_exhausted', 'transient_error', 'past its retries', extra);

describe('serviceDownBy: whether an account\'s failures say the service is down', () => {
  it.each<[string, ApiError | ConfigError | ContractError, boolean, boolean]>([
    // [what, the account's failure, down before /v1/me answered, down after]
    ['connection refused, unknown host (unreachable)', new ApiError('unreachable', 'transient_error', 'Cannot reach'), true, true],
    ['an untrusted certificate (unreachable, a config_error)', new ApiError('unreachable', 'config_error', 'Could not connect securely'), true, true],
    ['a connect timeout past the retries', exhausted({ cause: withCode('UND_ERR_CONNECT_TIMEOUT') }), true, true],
    ['a 503 past the retries', exhausted({ status: 503 }), true, false],
    ['a 500 past the retries', exhausted({ status: 500 }), true, false],
    ['no complete answer in time, past the retries', exhausted({ cause: withCode('UND_ERR_HEADERS_TIMEOUT') }), true, false],
    ['a 503 asking for too long a wait', new ApiError('wait_too_long', 'transient_error', 'wait', { status: 503 }), true, false],
    ['a 429 past the retries (the key\'s quota)', exhausted({ status: 429 }), false, false],
    ['a quota wait too long (429)', new ApiError('wait_too_long', 'transient_error', 'wait', { status: 429 }), false, false],
    ['a key refused (401)', new ApiError('unauthorized', 'config_error', '401', { status: 401 }), false, false],
    ['a 403', new ApiError('forbidden', 'config_error', '403', { status: 403 }), false, false],
    ['a 404', new ApiError('not_found', 'config_error', '404', { status: 404 }), false, false],
    ['a 400', new ApiError('bad_request', 'system_error', '400', { status: 400 }), false, false],
    ['a state of another account', new ConfigError('another account'), false, false],
    ['a body that is not JSON', new ContractError('not JSON'), false, false],
  ])('%s', (_, error, before, after) => {
    expect(serviceDownBy([error], false) !== undefined).toBe(before);
    expect(serviceDownBy([error], true) !== undefined).toBe(after);
  });
});

describe('SharedOutage', () => {
  it(`counts accounts in a row that found the service down: ${OUTAGE_ACCOUNTS} of them, with none read between, are witnesses`, () => {
    const outage = new SharedOutage();
    outage.ended('a', 'failing');
    expect(outage.witnesses()).toBeUndefined();
    outage.ended('b', undefined);
    outage.ended('c', 'failing');
    expect(outage.witnesses()).toBeUndefined();
    outage.ended('d', 'failing');
    expect(outage.witnesses()).toEqual(['c', 'd']);
    outage.ended('e', 'failing');
    expect(outage.witnesses()).toEqual(['c', 'd', 'e']);
    // An account read (or failed for a reason of its own) shows the service answering.
    outage.ended('f', undefined);
    expect(outage.witnesses()).toBeUndefined();
  });
});

describe('serviceDownBy: no connection at all, or the service\'s own errors', () => {
  it('tells them apart', () => {
    expect(serviceDownBy([new ApiError('unreachable', 'transient_error', 'Cannot reach')], false)).toBe('unreachable');
    expect(serviceDownBy([exhausted({ cause: withCode('UND_ERR_CONNECT_TIMEOUT') })], true)).toBe('unreachable');
    expect(serviceDownBy([exhausted({ status: 500 })], false)).toBe('failing');
    expect(serviceDownBy([exhausted({ cause: withCode('UND_ERR_HEADERS_TIMEOUT') })], false)).toBe('failing');
    expect(serviceDownBy([exhausted({ status: 500 })], true)).toBeUndefined();
    expect(serviceDownBy([new ApiError('unauthorized', 'config_error', '401', { status: 401 })], false)).toBeUndefined();
  });
});

describe('a probe (one /v1/me without retries) of an account not started', () => {
  const failed = (error: ApiError | ContractError) => ({ ok: false, message: error.message, error });
  it.each<[string, Parameters<typeof probeOutcome>[0], string, boolean]>([
    // [what, the probe's answer, its outcome, taken as the account's /v1/me]
    ['a success', { ok: true, message: 'Connected', account: 'Acme' }, 'answered', true],
    ['a key refused (401)', failed(new ApiError('unauthorized', 'config_error', '401', { status: 401 })), 'answered', true],
    ['a key without data:read', { ok: false, failureType: 'config_error', message: 'lacks the data:read scope' }, 'answered', true],
    ['a 429 (the key\'s quota: its own /v1/me retries)', failed(exhausted({ status: 429 })), 'answered', false],
    ['a body that is not JSON', failed(exhausted({ status: 200 })), 'answered', false],
    ['a 500', failed(exhausted({ status: 500 })), 'failing', false],
    ['a 503', failed(exhausted({ status: 503 })), 'failing', false],
    ['no answer in time', failed(exhausted({ cause: withCode('UND_ERR_HEADERS_TIMEOUT') })), 'silent', false],
    ['no connection', failed(new ApiError('unreachable', 'transient_error', 'Cannot reach')), 'silent', false],
  ])('%s', (_, check, outcome, settles) => {
    expect(probeOutcome(check)).toBe(outcome);
    expect(probeSettles(check)).toBe(settles);
  });
});

describe('SharedOutage: probing', () => {
  it('probes the accounts not started while the evidence is the service\'s own errors; an answer clears it, no answer ends the probing', () => {
    const outage = new SharedOutage();
    outage.ended('a', 'failing');
    expect(outage.probing()).toBe(false);
    outage.ended('b', 'failing');
    expect(outage.probing()).toBe(true);
    outage.answered();
    expect(outage.witnesses()).toBeUndefined();
    expect(outage.probing()).toBe(false);
    outage.ended('c', 'failing');
    outage.ended('d', 'failing');
    expect(outage.probing()).toBe(true);
    outage.silent('e');
    expect(outage.witnesses()).toEqual(['c', 'd', 'e']);
    expect(outage.probing()).toBe(false);
  });

  it('never probes when the last account could not connect at all', () => {
    const outage = new SharedOutage();
    outage.ended('a', 'failing');
    outage.ended('b', 'unreachable');
    expect(outage.witnesses()).toEqual(['a', 'b']);
    expect(outage.probing()).toBe(false);
  });
});
