/**
 * The service cannot be reached (connection refused, host name unknown, host
 * unreachable): a fact about the service, not about one request. One request
 * (the first that met it) retries with its back-off as the failure policy
 * says; every other request of the client waits for the outcome instead of
 * retrying on its own: when the service answers again they go on, when the
 * retries run out they all fail with that one error. So a sync of five
 * streams against a closed port makes one series of retries, not five.
 * SharedReach holds this for a client, with the failure of the key or of the
 * service it remembered (every later request fails with it at once).
 */
import type { ConnectorError } from '../errors.js';

/** Who is retrying: one token per request (its #get call). */
export type Prober = object;

export class Outage {
  /** The request whose retries decide the outcome. */
  readonly prober: Prober;
  /** When the first attempt that met the fault was sent (epoch ms). */
  readonly since: number;
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

/**
 * What every request of one client knows about reaching the service: a
 * failure of the key or of the service that was remembered (every later
 * request fails with it at once), and the outage in progress, if any.
 */
export class SharedReach {
  #down: ConnectorError | undefined;
  #outage: Outage | undefined;
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** Before an attempt: throws the remembered failure; waits while another request probes an outage (and throws its failure). */
  async mayTry(me: Prober): Promise<void> {
    for (;;) {
      if (this.#down !== undefined) throw this.#down;
      const outage = this.#outage;
      if (outage === undefined || outage.prober === me) return;
      const error = await outage.outcome();
      if (error !== undefined) throw error;
    }
  }

  /** Whether `me`, given a permit after queueing for it, should not send: meanwhile a failure was remembered, or another request probes. */
  held(me: Prober): boolean {
    return this.#down !== undefined || (this.#outage !== undefined && this.#outage.prober !== me);
  }

  /** An attempt of `me` met an unreachable service: the outage it starts (then `me` probes) or joins. */
  unreachable(me: Prober): Outage {
    this.#outage ??= new Outage(me, this.#now());
    return this.#outage;
  }

  /** The service answered (whatever it said), or the prober `me` stopped for another reason: the waiting requests go on. */
  reached(me?: Prober): void {
    if (me !== undefined && this.#outage?.prober !== me) return;
    this.#outage?.over();
    this.#outage = undefined;
  }

  /** A failure every request would meet: remembered, and the outage (if any) ends with it. */
  remember(error: ConnectorError): void {
    this.#down = error;
    this.#outage?.failed(error);
    this.#outage = undefined;
  }
}
