/**
 * A FIFO semaphore: at most `limit` holders at once (at first `size`),
 * waiters served in arrival order. A released permit passes straight to the
 * oldest waiter, so a caller that arrives later can never overtake one that
 * is already queued. `lower` takes the limit down (never below one): the
 * permits held above it are not handed on when released; `raise` lets one
 * more in again (never above `size`).
 */
type Release = () => void;

export class Gate {
  readonly size: number;
  #limit: number;
  #active = 0;
  readonly #queue: Array<(release: Release) => void> = [];

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`concurrency must be a positive integer, got ${size}`);
    this.size = size;
    this.#limit = size;
  }

  /** Holders allowed at once now: `size`, or less once lowered. */
  get limit(): number {
    return this.#limit;
  }

  /** Allow at most `limit` holders from now on (at least one, never more than now); whether the limit changed. */
  lower(limit: number): boolean {
    const next = Math.max(1, Math.min(this.#limit, Math.floor(limit)));
    if (next === this.#limit) return false;
    this.#limit = next;
    return true;
  }

  /** Allow one holder more (never more than `size`), handing a permit to the oldest waiter at once; whether the limit changed. */
  raise(): boolean {
    if (this.#limit >= this.size) return false;
    this.#limit += 1;
    while (this.#active < this.#limit && this.#queue.length > 0) {
      this.#active += 1;
      this.#queue.shift()?.(this.#permit());
    }
    return true;
  }

  /** Holders right now. */
  get active(): number {
    return this.#active;
  }

  /** Callers waiting for a permit. */
  get waiting(): number {
    return this.#queue.length;
  }

  acquire(): Promise<Release> {
    if (this.#active < this.#limit) {
      this.#active += 1;
      return Promise.resolve(this.#permit());
    }
    return new Promise<Release>((resolve) => this.#queue.push(resolve));
  }

  #permit(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // Above a lowered limit, the permit is not handed on: the holders drain down to it.
      const next = this.#active > this.#limit ? undefined : this.#queue.shift();
      if (next) next(this.#permit()); // the permit changes hands; #active stays
      else this.#active -= 1;
    };
  }
}
