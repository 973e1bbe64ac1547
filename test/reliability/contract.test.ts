/** A service that breaks its contract: one clear system_error naming the breach, no state past unread data (its time is a figure of `npm run reliability`). */
import { describe, expect, it } from 'vitest';
import { expectNoLeaksAfterAll } from '../helpers/leaks.js';
import { CONTRACT_CASES, runContractCase } from '../../reliability/contract.js';

expectNoLeaksAfterAll();

describe.concurrent('contract breaches', () => {
  it.each(CONTRACT_CASES.map((c, i) => [c.name, c, i] as const))('%s', async (_name, c, i) => {
    const r = await runContractCase(c, 80 + i);
    expect(r.problems).toEqual([]);
    expect(r.outcome).toBe(c.error === undefined ? 'none' : 'system_error');
    expect(r.lost).toBe(0);
  });
});
