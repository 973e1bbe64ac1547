/**
 * A FIFO semaphore: at most `size` holders at once, waiters served in arrival
 * order. A released permit passes straight to the oldest waiter, so a caller
 * that arrives later can never overtake one that is already queued.
 */
type Release = () => void;

export class Gate {
  readonly size: number;
  #active = 0;
  readonly #queue: Array<(release: Release) => void> = [];

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`concurrency must be a positive integer, got ${size}`);
    this.size = size;
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
    if (this.#active < this.size) {
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
      const next = this.#queue.shift();
      if (next) next(this.#permit()); // the permit changes hands; #active stays
      else this.#active -= 1;
    };
  }
}
