/**
 * Fault matrix, CI size: each transport fault on every 4th request, through a
 * full sync and a round of changes and deletions (every other kind with
 * deletions as tombstones). `npm run reliability` runs 5/20/50 % and 3 rounds.
 */
import { describe, expect, it } from 'vitest';
import { expectNoLeaksAfterAll } from '../helpers/leaks.js';
import { TRANSPORT_KINDS, runFaultScenario } from '../../reliability/faults.js';

expectNoLeaksAfterAll();

describe.concurrent('fault matrix: the replica equals the dump, or the next run completes it exactly', () => {
  it.each(TRANSPORT_KINDS.map((kind, i) => [kind, i] as const))('%s on every 4th request', async (kind, i) => {
    const r = await runFaultScenario({ kind, rate: { every: 4 }, contacts: 40, pageSize: 25, rounds: 1, maxRetries: 3, maxReruns: 4, seed: 200 + i, tombstones: i % 2 === 1 });
    expect(r.problems).toEqual([]);
    expect(r.faults).toBeGreaterThan(0);
    expect(r.lost + r.extra).toBe(0);
  }, 120_000);
});
