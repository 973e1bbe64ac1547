/** engine/service-outage.ts: which failures of an account say the service is down, and the count of accounts in a row. */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/client/api-error.js';
import { ConfigError, ContractError } from '../../src/errors.js';
import { OUTAGE_ACCOUNTS, SharedOutage, foundServiceDown } from '../../src/engine/service-outage.js';

const withCode = (code: string): Error => Object.assign(new Error(code), { code });
const exhausted = (extra: { status?: number; cause?: unknown }): ApiError => new ApiError('retries_exhausted', 'transient_error', 'past its retries', extra);

describe('foundServiceDown', () => {
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
    expect(foundServiceDown([error], false)).toBe(before);
    expect(foundServiceDown([error], true)).toBe(after);
  });
});

describe('SharedOutage', () => {
  it(`counts accounts in a row that found the service down: ${OUTAGE_ACCOUNTS} of them, with none read between, are witnesses`, () => {
    const outage = new SharedOutage();
    outage.ended('a', true);
    expect(outage.witnesses()).toBeUndefined();
    outage.ended('b', false);
    outage.ended('c', true);
    expect(outage.witnesses()).toBeUndefined();
    outage.ended('d', true);
    expect(outage.witnesses()).toEqual(['c', 'd']);
    outage.ended('e', true);
    expect(outage.witnesses()).toEqual(['c', 'd', 'e']);
    // An account read (or failed for a reason of its own) shows the service answering.
    outage.ended('f', false);
    expect(outage.witnesses()).toBeUndefined();
  });
});
