/**
 * Crash and resume, CI size: SIGKILL at random points (STATE lines, RECORD
 * lines or bytes read at a trickle, ms), restart from the last STATE; the
 * replica after each completed sync is exact. `npm run reliability` makes 36+ kills.
 */
import { describe, expect, it } from 'vitest';
import { expectNoLeaksAfterAll } from '../helpers/leaks.js';
import { runCrashScenario } from '../../reliability/crash.js';

expectNoLeaksAfterAll();

describe.concurrent('SIGKILL at random points, resumed from the last STATE', () => {
  it.each([
    [11, false],
    [12, true],
  ] as const)('seed %i (tombstones %s): nothing lost', async (seed, tombstones) => {
    const r = await runCrashScenario({ seed, contacts: 300, pageSize: 40, kills: 5, killsPerSync: 3, latencyMs: 20, tombstones });
    expect(r.problems).toEqual([]);
    expect(r.kills).toBe(5);
    expect(r.lost + r.extra).toBe(0);
  }, 120_000);
});
