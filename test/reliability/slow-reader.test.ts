/** A slow reader: flat memory, nothing lost or reordered; a reader that goes away: a prompt, clear exit. */
import { describe, expect, it } from 'vitest';
import { expectNoLeaksAfterAll } from '../helpers/leaks.js';
import { runClosedReader, runSlowReader } from '../../reliability/slow-reader.js';

expectNoLeaksAfterAll();

describe.concurrent('stdout backpressure', () => {
  it('stdout read at a trickle: memory stays flat, no message of a stream lost or reordered', async () => {
    const r = await runSlowReader({ contacts: 1500, pageSize: 200, trickleBytes: 16_384, everyMs: 10, seed: 71 });
    expect(r.problems).toEqual([]);
    expect(r.outputBytes).toBeGreaterThan(4_000_000);
    expect(r.reordered).toBe(0);
    expect(r.lost).toBe(0);
  });

  it('the reader goes away: exit 75 with one clear line on stderr, no usage text, no more pages read', async () => {
    const r = await runClosedReader({ contacts: 1500, closeAfterBytes: 100_000, seed: 72 });
    expect(r.problems).toEqual([]);
    expect(r.code).toBe(75);
  });
});
