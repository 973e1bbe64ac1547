/**
 * What the engine tells of a run as it goes, to whoever keeps its report
 * (the command line's RunRecorder, src/report/): the streams it plans, the
 * records and checkpoints of each, how each stream ended, the run's
 * failures, and where the request counts and the accounts' outcomes are
 * read at the end. The engine only tells; it never reads a report back.
 */
import type { ConnectorError, FailureType } from '../errors.js';
import type { StreamState } from './state.js';

/**
 * How a stream ended: read to the end, not offered by the service (skipped), failed on its own, stopped by the run's
 * failure, or (with accounts) stopped for an account that failed while another account read it to the end (`partial`).
 */
export type StreamEnd = 'complete' | 'incomplete' | 'stopped' | 'skipped' | 'partial';

/** The request counts the client keeps. */
export interface RunRequestCounts {
  readonly requests: number;
  readonly retries: number;
  readonly rateLimitWaits: number;
  /** Total time of the rate-limit waits (RateLimit-* pacing, Retry-After), ms. */
  readonly rateLimitWaitMs: number;
}

/** How one entry of the config's `accounts` ended. */
export interface AccountOutcome {
  readonly name: string;
  /**
   * succeeded: every stream read; failed: stopped by its own failure (the others went on); incomplete: the run ended
   * before the account did; not_tried: not started, the service having been found down by the accounts before it
   * (service-outage.ts), its state unchanged.
   */
  readonly status: 'succeeded' | 'failed' | 'incomplete' | 'not_tried';
  /** Records emitted for the account, over every stream. */
  readonly records: number;
  readonly failure_type: FailureType | null;
  readonly message: string | null;
}

export interface RunObserver {
  /** Redact the messages it keeps with this (the face's logger's, once the config's secrets are known). */
  setRedact(redact: (text: string) => string): void;
  /** Where the request counts are read from at the end (the session's client). */
  setRequestCounts(counts: () => RunRequestCounts): void;
  /** With accounts in the config: where each account's outcome is read from at the end. */
  setAccounts(accounts: () => AccountOutcome[]): void;
  /** The streams the run means to sync, in order, with the state each starts from (full_refresh streams: none). */
  plan(streams: readonly { readonly name: string; readonly state?: StreamState | undefined }[]): void;
  /** Records that went out for the stream; `tombstones` of them are tombstones. */
  records(name: string, records: number, tombstones?: number): void;
  /** A checkpoint (STATE) of the stream. */
  state(name: string, state: StreamState): void;
  /** The stream ended. */
  streamEnded(name: string, end: StreamEnd, error?: ConnectorError): void;
  /** A failure of the run. */
  fail(error: ConnectorError): void;
}
