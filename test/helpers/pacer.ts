/**
 * A Pacer for unit tests: its clock (`now.t`) moves only when it sleeps, and
 * every sleep and every announced wait is recorded.
 */
import { Pacer, type PaceWait } from '../../src/client/pacer.js';

export interface TestPacer {
  readonly p: Pacer;
  /** The instants (epoch ms) of the waits the pacer announced. */
  readonly announced: number[];
  /** The waits it announced, whole (their cause too). */
  readonly waits: PaceWait[];
  /** The sleeps it took, in ms. */
  readonly slept: number[];
}

/** A Pacer on the clock `now`, accepting waits up to 100 s. */
export function pacer(now: { t: number }): TestPacer {
  const announced: number[] = [];
  const waits: PaceWait[] = [];
  const slept: number[] = [];
  const p = new Pacer({
    now: () => now.t,
    sleep: async (ms) => {
      slept.push(ms);
      now.t += ms;
    },
    maxWaitMs: 100_000,
    announce: (w) => {
      announced.push(w.until);
      waits.push(w);
    },
    tooLong: () => new Error('too long'),
  });
  return { p, announced, waits, slept };
}
