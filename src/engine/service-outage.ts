/**
 * The service down for every account of a run (connector contract, "Many
 * accounts"). Every entry of a config reads the same base_url through the
 * same proxy, each with a client of its own: when the service cannot be
 * reached, each account would spend its whole retry budget on its own
 * (about a minute with the defaults), so 1,000 accounts four at a time would
 * take hours to fail a run that cannot succeed.
 *
 * The rule: once OUTAGE_ACCOUNTS accounts in a row (in the order they ended)
 * failed because the service was down, and none was read since, the accounts
 * not started yet are not tried: each fails at once with a transient_error
 * that names the accounts that found the service down, its state unchanged
 * for the next run. An account that ends any other way (read, or failed for
 * a reason of its own: its key refused, a 404, a state of another account)
 * shows that the service answers, and the count starts again. Accounts
 * already running finish on their own; while one account found the service
 * down and the others running all still wait for its first answer, no other
 * account starts until one of them ends or gets in (SharedOutage.settled),
 * so a run of accounts read four at a time fails in about one account's
 * retries, not two.
 *
 * What counts as the service down, for one account:
 * - no connection could be made at all (refused, host name unknown, host
 *   unreachable, TLS not trusted, a connect timeout, the proxy down): the key
 *   was never sent, so it cannot be about the account;
 * - before the service answered the account's /v1/me (it never got in): a
 *   5xx (503 included) or a timeout past the retries, or a 503 asking to wait
 *   longer than max_wait_seconds. Once an account got in, a 5xx on one of its
 *   streams may be a fault of that account's data: it stops that account
 *   only, as the contract says, and does not count.
 * A 429 is the key's own quota, never the service down.
 */
import { ApiError } from '../client/api-error.js';
import { errorCode } from '../client/retry.js';
import type { ConnectorError } from '../errors.js';

/**
 * Accounts in a row that must find the service down before the accounts not
 * started are not tried: one could be a blip of a minute; two in a row, each
 * past its retries, with none read between them, is an outage.
 */
export const OUTAGE_ACCOUNTS = 2;

/** No connection could be made to the service (or its proxy): the request never reached it. */
export function noConnection(error: ConnectorError): boolean {
  if (!(error instanceof ApiError)) return false;
  if (error.code === 'unreachable') return true;
  return error.code === 'retries_exhausted' && errorCode(error.cause) === 'UND_ERR_CONNECT_TIMEOUT';
}

/** The service itself failed: no connection, or its own 5xx or timeouts past the retries, or a 503 asking for too long a wait. */
export function serviceFault(error: ConnectorError): boolean {
  if (noConnection(error)) return true;
  if (!(error instanceof ApiError)) return false;
  if (error.code === 'retries_exhausted') return error.status === undefined || error.status >= 500;
  return error.code === 'wait_too_long' && error.status === 503;
}

/** Whether an account's failures say the service is down; `gotIn`: the service answered its /v1/me. */
export function foundServiceDown(errors: readonly ConnectorError[], gotIn: boolean): boolean {
  return errors.some(gotIn ? noConnection : serviceFault);
}

/**
 * The accounts of a run that found the service down, in a row, and the
 * accounts running: those whose /v1/me has not answered yet are still trying
 * to get in.
 */
export class SharedOutage {
  readonly #streak: string[] = [];
  #running = 0;
  readonly #connecting = new Set<string>();
  #waiting: (() => void)[] = [];

  /** An account starts (before its /v1/me). */
  started(account: string): void {
    this.#running += 1;
    this.#connecting.add(account);
  }

  /** The service answered the account's /v1/me. */
  gotIn(account: string): void {
    this.#connecting.delete(account);
    this.#changed();
  }

  /** An account ended: `down` when its failure says the service is down (foundServiceDown); any other end starts the count again. */
  ended(account: string, down: boolean): void {
    this.#running -= 1;
    this.#connecting.delete(account);
    if (down) this.#streak.push(account);
    else this.#streak.length = 0;
    this.#changed();
  }

  /**
   * Before another account starts: while one account found the service down
   * and every account running is still trying to get in, they are about to
   * say whether it is down (within their retries): wait until one of them
   * ends or gets in, rather than start one more account on a full retry
   * budget of its own. Not while any account running got in: the service
   * answered it, and waiting for an account that reads for hours would only
   * idle a slot.
   */
  async settled(): Promise<void> {
    while (this.#streak.length > 0 && this.#streak.length < OUTAGE_ACCOUNTS && this.#running > 0 && this.#connecting.size === this.#running) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
  }

  #changed(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const resolve of waiting) resolve();
  }

  /** The accounts that found the service down in a row, once they are enough for the accounts not started to be left untried. */
  witnesses(): readonly string[] | undefined {
    return this.#streak.length >= OUTAGE_ACCOUNTS ? [...this.#streak] : undefined;
  }
}
