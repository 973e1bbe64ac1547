/**
 * The service cannot be reached (connection refused, host name unknown, host
 * unreachable): a fact about the service, not about one request. One request
 * (the first that met it) retries with its back-off as the failure policy
 * says; every other request of the client waits for the outcome instead of
 * retrying on its own: when the service answers again they go on, when the
 * retries run out they all fail with that one error. So a sync of five
 * streams against a closed port makes one series of retries, not five.
 */
import type { ConnectorError } from '../errors.js';

/** Who is retrying: one token per request (its #get call). */
export type Prober = object;

export class Outage {
  /** The request whose retries decide the outcome. */
  readonly prober: Prober;
  /** When the first attempt that met the fault was sent (epoch ms). */
  readonly since: number;
  /** Attempts that met the fault, by any request. */
  attempts = 0;
  readonly #done: Promise<ConnectorError | undefined>;
  #settle!: (error: ConnectorError | undefined) => void;
  #settled = false;

  constructor(prober: Prober, since: number) {
    this.prober = prober;
    this.since = since;
    this.#done = new Promise((resolve) => {
      this.#settle = resolve;
    });
  }

  get settled(): boolean {
    return this.#settled;
  }

  /** Resolves when the outage ends: with the error every waiting request fails with, or undefined when the service answered. */
  outcome(): Promise<ConnectorError | undefined> {
    return this.#done;
  }

  /** The service answered (whatever it said), or the prober stopped for another reason: the waiting requests try again. */
  over(): void {
    this.#end(undefined);
  }

  /** The prober's retries ran out: every waiting request fails with `error`. */
  failed(error: ConnectorError): void {
    this.#end(error);
  }

  #end(error: ConnectorError | undefined): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#settle(error);
  }
}
