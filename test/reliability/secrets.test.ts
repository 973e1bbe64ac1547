/** Secrets: a hostile service echoing the request everywhere; the canary key appears in no byte of stdout or stderr. */
import { describe, expect, it } from 'vitest';
import { expectNoLeaksAfterAll } from '../helpers/leaks.js';
import { leakWatch } from '../../reliability/harness.js';
import { runSecrets } from '../../reliability/secrets.js';

expectNoLeaksAfterAll();

describe('the API key never leaks', () => {
  it('check and read against answers that echo the request', async () => {
    const before = leakWatch.runs; // the watch counts every run of this worker's files (they share its modules)
    const r = await runSecrets(4);
    expect(r.problems).toEqual([]);
    expect(r.failedCleanly).toBe(r.runs);
    expect(leakWatch.runs - before).toBe(r.runs);
    expect(leakWatch.leaks).toEqual([]);
  }, 120_000);
});
