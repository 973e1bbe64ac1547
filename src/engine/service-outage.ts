/**
 * The service down for every account of a run (connector contract, "Many
 * accounts"). Every entry of a config reads the same base_url through the
 * same proxy, each with a client of its own: when the service cannot be
 * reached, each account would spend its whole retry budget on its own
 * (about a minute with the defaults), so 1,000 accounts four at a time would
 * take hours to fail a run that cannot succeed.
 *
 * The rule: once OUTAGE_ACCOUNTS accounts in a row (in the order they ended)
 * failed because the service was down, and none was read since, the service
 * is taken to be down. An account that ends any other way (read, or failed
 * for a reason of its own: its key refused, a 404, a state of another
 * account) shows that the service answers, and the count starts again.
 * Accounts already running finish on their own; while one account found the
 * service down and the others running all still wait for its first answer,
 * no other account starts until one of them ends or gets in
 * (SharedOutage.settled), so a run of accounts read four at a time fails in
 * about one account's retries, not two.
 *
 * What then becomes of an account not started yet depends on the evidence:
 * - no connection at all (the last account that found the service down, or
 *   a probe below, could not connect): it is not tried. It fails at once
 *   with a transient_error that names the accounts that found the service
 *   down, its state unchanged for the next run;
 * - the service's own errors (a 5xx or a timeout past the retries, before
 *   /v1/me answered): those can be the errors of the accounts that met them
 *   (a tenant broken on the service's side), and skipping every account
 *   after them would leave them unread at every run, for ever. So the
 *   account is probed first: one GET /v1/me with its key, no retries, at
 *   most PROBE_TIMEOUT_SECONDS (probeAccount). Answered with anything but a
 *   5xx (a 401 and a 429 included: the service answered), the count starts
 *   again and the account is read as usual, with the probe's answer as its
 *   /v1/me (one /v1/me per account, as the contract allows). A 5xx: it is
 *   not tried, as above, and the next account is probed. No answer at all
 *   (no connection, or none within the bound): the probing account joins the
 *   accounts that found the service down, and the accounts after it are not
 *   tried without a probe. A real outage of 200 accounts then costs one
 *   account's retries plus one quick request per account (a 5xx), or plus one
 *   bounded wait (no answer), not 200 accounts' retries.
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
import type { Config } from '../config/config.js';
import type { ConnectorError } from '../errors.js';
import type { CheckResult } from './connect.js';
import { requestCountsOf } from './session.js';
import type { RunRequestCounts } from './run-observer.js';

/**
 * Accounts in a row that must find the service down before the accounts not
 * started are not tried (or probed first): one could be a blip of a minute;
 * two in a row, each past its retries, with none read between them, is an
 * outage.
 */
export const OUTAGE_ACCOUNTS = 2;

/**
 * The longest wait for the answer to a probe, seconds (request_timeout_seconds
 * when shorter). /v1/me is the service's smallest answer: a service that
 * cannot give it in 10 s is not going to read an account, and a probe that
 * waits no longer costs a run at most that once (the first probe with no
 * answer ends the probing).
 */
export const PROBE_TIMEOUT_SECONDS = 10;

/** No connection could be made to the service (or its proxy): the request never reached it. */
function noConnection(error: ConnectorError): boolean {
  if (!(error instanceof ApiError)) return false;
  if (error.code === 'unreachable') return true;
  return error.code === 'retries_exhausted' && errorCode(error.cause) === 'UND_ERR_CONNECT_TIMEOUT';
}

/** The service itself failed: no connection, or its own 5xx or timeouts past the retries, or a 503 asking for too long a wait. */
function serviceFault(error: ConnectorError): boolean {
  if (noConnection(error)) return true;
  if (!(error instanceof ApiError)) return false;
  if (error.code === 'retries_exhausted') return error.status === undefined || error.status >= 500;
  return error.code === 'wait_too_long' && error.status === 503;
}

/**
 * How an account's failures say the service is down, if they do:
 * `unreachable` no connection could be made at all; `failing` the service's
 * own errors (its 5xx or timeouts past the retries, before the account's
 * /v1/me answered). `gotIn`: the service answered its /v1/me (then only no
 * connection at all counts).
 */
type DownEvidence = 'unreachable' | 'failing';

export function serviceDownBy(errors: readonly ConnectorError[], gotIn: boolean): DownEvidence | undefined {
  if (errors.some(noConnection)) return 'unreachable';
  if (!gotIn && errors.some(serviceFault)) return 'failing';
  return undefined;
}

/**
 * What a probe's answer says: `answered` the service answered it (anything
 * but a 5xx: the account is read as usual); `failing` a 5xx (a 503 asking for
 * a long wait included); `silent` no answer at all (no connection, or none
 * within the probe's bound).
 */
type ProbeOutcome = 'answered' | 'failing' | 'silent';

export function probeOutcome(check: CheckResult): ProbeOutcome {
  const error = check.error;
  if (check.ok || error === undefined || !serviceFault(error)) return 'answered';
  if (noConnection(error) || (error instanceof ApiError && error.status === undefined)) return 'silent';
  return 'failing';
}

/** What a probe's failure was, in a few words for a message: "HTTP 503", "no connection", "no answer". */
export function probeCause(check: CheckResult): string {
  const error = check.error;
  if (error === undefined) return check.message;
  if (noConnection(error)) return 'no connection could be made';
  if (error instanceof ApiError && error.status !== undefined) return `HTTP ${error.status}`;
  return 'no answer';
}

/**
 * Whether an account goes on from its probe's answer as from its own /v1/me
 * (the session then sends none): a success, or a failure a retry would not
 * change (a key refused, a key without data:read). A 429 or a 5xx was only
 * one attempt: the account's own /v1/me, with its retries, asks again.
 */
export function probeSettles(check: CheckResult): boolean {
  if (check.ok) return true;
  const error = check.error;
  if (error === undefined) return true;
  return !(error instanceof ApiError && (error.code === 'retries_exhausted' || error.code === 'wait_too_long' || error.code === 'unreachable'));
}

/**
 * The probe of one account, after accounts before it found the service down
 * with the service's own errors: one GET /v1/me with the account's key (its
 * `config`, an entry's: entryConfig), no retries, at most
 * PROBE_TIMEOUT_SECONDS; a client of its own, closed before it returns. Its
 * notes (a proxy's route) are the account's session's to say. `signal`: the
 * run's stop.
 */
export async function probeAccount(config: Config, signal: AbortSignal | undefined): Promise<{ check: CheckResult; stats: RunRequestCounts }> {
  const { clientFromConfig, verifyAccount } = await import('./connect.js');
  const client = clientFromConfig(
    config,
    { signal },
    {
      maxRetries: 0,
      retryLimit: 'no retries: a probe, the accounts before it having found the service down',
      timeoutMs: Math.min(config.request_timeout_seconds, PROBE_TIMEOUT_SECONDS) * 1000,
      maxConcurrent: 1,
      stopNote: '',
    },
  );
  try {
    const check = await verifyAccount(client, config);
    return { check, stats: requestCountsOf(client.stats) };
  } finally {
    await client.close().catch(() => undefined);
  }
}

/**
 * The accounts of a run that found the service down, in a row, and the
 * accounts running: those whose /v1/me has not answered yet are still trying
 * to get in.
 */
export class SharedOutage {
  readonly #streak: string[] = [];
  /** The evidence of the last account that found the service down (or of a probe with no answer). */
  #evidence: DownEvidence | undefined;
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

  /** An account ended: `down` when its failure says the service is down (serviceDownBy); any other end starts the count again. */
  ended(account: string, down: DownEvidence | undefined): void {
    this.#running -= 1;
    this.#connecting.delete(account);
    if (down !== undefined) this.#found(account, down);
    else this.#clear();
    this.#changed();
  }

  /** The probe of an account not started (probeAccount) had an answer: the service answers, the count starts again. */
  answered(): void {
    this.#clear();
    this.#changed();
  }

  /** The probe of an account had no answer at all: it found the service down too, and the accounts after it are not probed. */
  silent(account: string): void {
    this.#found(account, 'unreachable');
    this.#changed();
  }

  #found(account: string, evidence: DownEvidence): void {
    this.#streak.push(account);
    this.#evidence = evidence;
  }

  #clear(): void {
    this.#streak.length = 0;
    this.#evidence = undefined;
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

  /** The accounts that found the service down in a row, once they are enough for the accounts not started to be left untried (or probed). */
  witnesses(): readonly string[] | undefined {
    return this.#streak.length >= OUTAGE_ACCOUNTS ? [...this.#streak] : undefined;
  }

  /** With witnesses: whether an account not started is probed first (the service's own errors), rather than not tried (no connection at all). */
  probing(): boolean {
    return this.witnesses() !== undefined && this.#evidence === 'failing';
  }
}
