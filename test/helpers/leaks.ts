/** The reliability files' last check: no secret appeared in any output the harness watched. */
import { afterAll, expect } from 'vitest';
import { leakWatch } from '../../reliability/harness.js';

/** After the file's tests: leakWatch saw no api_key, proxy credential or hash_key in any stdout or stderr. */
export function expectNoLeaksAfterAll(): void {
  afterAll(() => {
    expect(leakWatch.leaks).toEqual([]);
  });
}
