/**
 * Many accounts in one run (connector contract, "Many accounts"): a config
 * with `accounts` is read one entry at a time, up to max_concurrent_accounts
 * entries at once, each by a session of its own (session.ts: its own client,
 * so its own key, pacer and rate budget, its own /v1/me and account binding).
 * Each account's engine events go through a lane that:
 * - puts the entry's name in the `account` field of every record (a field
 *   `account` the service sent itself was moved to `service_account` by the
 *   session's pipeline, before selection and treatments: pipeline.ts);
 * - keeps the entry's state of each stream and hands the face one state per
 *   stream holding every account's, `{"accounts": {"<entry>": <a state of one
 *   account>, ...}}`: the states of accounts not read (yet, or any more: an
 *   entry removed from the config) are carried over as they were. That state
 *   grows with the accounts (about 170 bytes each), so the face is not handed
 *   one per page of any account (1,000 accounts would write gigabytes of
 *   state a sync) but on the cadence of StateCadence below; a face with a sink
 *   per account (the replica: a state row per stream and account) gets every
 *   checkpoint of that account, with that account's state alone;
 * - prefixes its log lines with the account.
 * The face sees one stream per resource: STARTED when the first account
 * starts it, COMPLETE once every account read it to its end, INCOMPLETE when
 * one did not. One account failing (its key refused, a service fault past
 * its retries, a state of another account) stops only that account; once
 * every account ended, one error names each failed account and why, with the
 * most actionable failure type (config_error, then transient_error, then
 * system_error). The service itself down is another matter: once accounts in
 * a row found it so, an account not started yet is not tried this run (a
 * transient_error, its state unchanged), unless the evidence was the
 * service's own errors and one request of its own to /v1/me (a probe) is
 * answered: then it is read as usual (service-outage.ts).
 */
import { ApiError } from '../client/api-error.js';
import { NOT_FOUND_ADVICE } from '../client/policy.js';
import { entryConfig, type AccountEntry, type Config } from '../config/config.js';
import { andList, ConfigError, ConnectorError, toConnectorError } from '../errors.js';
import { mostActionable } from '../runtime/exit-status.js';
import { bindingOf, type RunAccount } from './account.js';
import { ACCOUNT_FIELD } from '../schemas/json-schema.js';
import { isDeletionLog, type StreamDefinition } from '../streams.js';
import type { Data, LogLevel, SyncSink } from './sync-sink.js';
import type { CountObserver } from './pipeline.js';
import type { AccountOutcome, RunObserver, RunRequestCounts } from './run-observer.js';
import { SyncSession, addRequestCounts, summaryLine, type RequestCounts, type SessionRequest } from './session.js';
import { PROBE_TIMEOUT_SECONDS, SharedOutage, probeAccount, probeCause, probeOutcome, probeSettles, serviceDownBy } from './service-outage.js';
import type { CheckResult } from './connect.js';
import type { StateAccount, StreamState } from './state.js';

/** A failure of one account: of one stream, or of the whole account (stream undefined). */
interface AccountFailure {
  readonly account: string;
  readonly stream: StreamDefinition | undefined;
  readonly error: ConnectorError;
}

interface AccountsResult {
  /** Every failure, by account, in the order they happened. */
  readonly failures: readonly AccountFailure[];
  /** The one error naming each failed account, when one failed. */
  readonly error: ConnectorError | undefined;
  readonly accounts: readonly AccountOutcome[];
}

/**
 * The per-account states of a run's input, by stream then entry. A stream's
 * state must be one of many accounts (`{"accounts": {...}}`) or empty: a
 * state of one account is refused (which entry's it is cannot be told), with
 * the shape to put it in.
 */
export function accountStates(states: ReadonlyMap<string, StreamState>, entries: readonly AccountEntry[]): Map<string, Map<string, StreamState>> {
  const out = new Map<string, Map<string, StreamState>>();
  for (const [stream, state] of states) {
    if (state.accounts === undefined) {
      if (Object.keys(state).length === 0) continue;
      const owner = state.account?.name === undefined ? '' : ` (of account "${state.account.name}")`;
      throw new ConfigError(
        `The state of stream "${stream}" is the state of one account${owner}, but the config lists accounts: a state of many accounts holds one state per entry, ` +
          `{"accounts": {"<name>": <that account's state>, ...}}. To go on from it, put it under the name of its entry ` +
          `(e.g. {"accounts": {"${entries[0]?.name ?? 'name'}": {"sync_watermark": ...}}}), or pass no state to read every account from start_date.`,
        { field: `state.${stream}` },
      );
    }
    out.set(stream, new Map(Object.entries(state.accounts)));
  }
  return out;
}

/**
 * What a face does per account beyond the lane (the replica: a sink per
 * account, the account bound to its entry in the store, the long-pause heal
 * and the resumed read of each account).
 */
interface AccountLanes {
  /**
   * The sink of one account's records, checkpoints (each with the stream's
   * state of that account alone, `{"accounts": {"<entry>": <its state>}}`)
   * and stream starts and stops; the face's emitter
   * (default) still hears the streams as the face sees them and the logs.
   */
  sinkFor?(entry: AccountEntry): SyncSink;
  /**
   * Read one account with its session, once its /v1/me and states were
   * checked (default: one `session.run(request, lane, observer)`). A throw
   * is that account's failure. A stream ended more than once (a heal pass,
   * then the ordinary one) counts once for the face, failed if any pass failed.
   */
  read?(entry: AccountEntry, session: SyncSession, request: SessionRequest, lane: SyncSink, observer: CountObserver | undefined): Promise<void>;
}

/**
 * When a stream's state of every account is written, with `accounts` and a
 * face without a sink per account (Airbyte read, the tap). A checkpoint of
 * one account (after each of its pages) only updates the stream's state in
 * memory; the stream's STATE is written
 * - once `records` records or `checkpoints` checkpoints of the stream (over
 *   every account) were taken since its last STATE: a run killed at any
 *   moment re-reads at most about that much of each stream (plus the pages in
 *   flight), duplicates the destination upserts;
 * - when the stream ends for the face (every account ended it: COMPLETE or
 *   INCOMPLETE), so every record is covered before the stream's last status
 *   and the run's end, whether it ends well, by a failure or by a rate limit
 *   too long to wait for;
 * - before a STATE of the deletion log, for every stream its tombstones went
 *   to since that stream's last STATE: they are committed before the log's
 *   state moves past them (tombstones.ts). Not for the other streams: a STATE
 *   of theirs then, with 1,000 accounts, would cost 170 KB for nothing;
 * - in the last words of a run stopped by SIGTERM or SIGINT (unsentStates).
 * Not when an account's read of the stream completes: with 1,000 accounts
 * that is 1,000 STATEs of the stream, each of every account's state (about
 * 170 KB), 0.85 GB a sync over five streams, however little was read.
 * 10,000 records are 50 pages of the default size; a STATE of 1,000 accounts
 * is then at most ~2 % of the bytes of the records it follows (~1 KB each),
 * and a kill costs at most a minute or so of reading again. 1,000 checkpoints
 * bound the re-reading of accounts with little to read (one page each) to
 * 1,000 requests, one STATE per 1,000 of them.
 */
export const STATE_CADENCE = { records: 10_000, checkpoints: 1_000 } as const;

/** What a stream took since its last STATE. */
interface StateCadence {
  records: number;
  /** Checkpoints of any account not yet in a STATE written (none: nothing to write). */
  checkpoints: number;
  /** Whether tombstones came since the last STATE (a STATE of the deletion log then waits for one of the stream). */
  tombstones: boolean;
  /** The last STATE written of the stream (JSON, without records_written), to write no identical one. */
  written: string | undefined;
}

/** The records one account sent so far, and how it ended. */
interface AccountTrack {
  readonly name: string;
  records: number;
  ended: 'succeeded' | 'failed' | 'not_tried' | undefined;
  readonly errors: ConnectorError[];
}

/** A stream across accounts: how many accounts have yet to end it, and how those that did ended. */
interface StreamTrack {
  started: boolean;
  remaining: number;
  failed: boolean;
  read: boolean;
  /** Whether an account's service did not offer it (a 404 on an optional stream): the face then hears it skipped, read or not by others. */
  skipped: boolean;
}

/** What the face's summary line says of each account's failure; `message` gives an error's words, by default its message. */
function accountMessage(
  errors: readonly ConnectorError[],
  failures: readonly AccountFailure[],
  message: (error: ConnectorError, stream: StreamDefinition | undefined) => string = (error) => error.message,
): string {
  const said = new Set<string>();
  const parts: string[] = [];
  for (const error of errors) {
    const stream = failures.find((f) => f.error === error)?.stream;
    const text = `${stream === undefined ? '' : `${stream.name}: `}${message(error, stream)}`;
    if (!said.has(text)) parts.push(text);
    said.add(text);
  }
  return parts.join('; ');
}

/**
 * An error kept past its account's end has its stack made text now: until
 * it is read, V8 keeps the frames' functions and receivers alive, and those
 * are the account's client and session (its pacer, its connection pool and
 * their parsers, some 250 KB). A run of many accounts that all fail (a
 * service gone, keys revoked) would hold every one of them to its end.
 */
function settleStack(error: Error): void {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth += 1) void e.stack;
}

const MESSAGE_MAX = 300;
const shorten = (text: string): string => (text.length <= MESSAGE_MAX ? text : `${text.slice(0, MESSAGE_MAX - 1)}…`);

/** `"a"`, `"a" and "b"`, `"a", "b" and "c"`; past `most` names, `"a", "b" and 3 more`. */
function named(names: readonly string[], most: number): string {
  const quoted = names.slice(0, most).map((n) => `"${n}"`);
  const more = names.length - quoted.length;
  if (more > 0) return `${quoted.join(', ')} and ${more} more`;
  return andList(quoted);
}

/**
 * The sync of every entry of a config with `accounts`, for a face (Airbyte
 * read, the tap). `report`: the command's run report, fed with the streams as
 * the face sees them, the records of every account, and one entry per
 * account.
 */
export class AccountsRun {
  readonly #config: Config;
  readonly #entries: readonly AccountEntry[];
  readonly #report: RunObserver | undefined;
  readonly #signal: AbortSignal | undefined;
  readonly #tracks: Map<string, AccountTrack>;
  readonly #failures: AccountFailure[] = [];
  readonly #counts = new Map<string, number>();
  /** The request counts of sessions closed, and the sessions open. */
  #closedStats: RunRequestCounts = { requests: 0, retries: 0, rateLimitWaits: 0, rateLimitWaitMs: 0 };
  readonly #open = new Set<SyncSession>();
  /** The entries that read each stream to its end (not skipped) in this run: the base_url serves it. */
  readonly #readStreams = new Map<string, Set<string>>();
  /** The streams with a checkpoint not yet written, and their state of every account, while run() runs (for unsentStates). */
  #unsent: (() => [StreamDefinition, StreamState][]) | undefined;

  constructor(config: Config, report?: RunObserver, signal?: AbortSignal) {
    if (config.accounts === undefined) throw new Error('AccountsRun needs a config with accounts');
    this.#config = config;
    this.#entries = config.accounts;
    this.#report = report;
    this.#signal = signal;
    this.#tracks = new Map(this.#entries.map((e) => [e.name, { name: e.name, records: 0, ended: undefined, errors: [] }]));
    report?.setRequestCounts(() => this.#requestCounts());
    report?.setAccounts(() => this.accountSummaries());
  }

  #requestCounts(): RunRequestCounts {
    let total = this.#closedStats;
    for (const session of this.#open) total = addRequestCounts(total, session.clientStats);
    return total;
  }

  /** What the run cost in requests, over every account. */
  get stats(): RequestCounts {
    const { requests, retries, rateLimitWaits } = this.#requestCounts();
    return { requests, retries, rateLimitWaits };
  }

  /** Records per stream so far, over every account. */
  get records(): ReadonlyMap<string, number> {
    return this.#counts;
  }

  /** One entry per account of the config, in its order. */
  accountSummaries(): AccountOutcome[] {
    return [...this.#tracks.values()].map((t) => {
      const type = mostActionable(t.errors.map((e) => e.failureType));
      const message = t.errors.length === 0 ? null : shorten(this.#accountMessage(t));
      return {
        name: t.name,
        status: t.ended ?? 'incomplete',
        records: t.records,
        failure_type: type ?? null,
        message,
      };
    });
  }

  #accountMessage(track: AccountTrack): string {
    return accountMessage(track.errors, this.#failures, (error, stream) => this.#advised(track.name, error, stream));
  }

  /**
   * An error's words for the account `entry`. A 404 advises to check base_url; every account reads the same base_url,
   * so once another account read the stream (or any stream) from it in this run, the path is there and the advice
   * would mislead: it then says so, and points at the account's own access or plan.
   */
  #advised(entry: string, error: ConnectorError, stream: StreamDefinition | undefined): string {
    if (!(error instanceof ApiError) || error.code !== 'not_found' || !error.message.includes(NOT_FOUND_ADVICE)) return error.message;
    const others = (names: Iterable<string> | undefined): string[] => [...(names ?? [])].filter((n) => n !== entry);
    const same = stream === undefined ? [] : others(this.#readStreams.get(stream.name));
    if (same.length > 0) {
      return error.message.replace(
        NOT_FOUND_ADVICE,
        `The path exists at this base_url: ${same.length === 1 ? 'account' : 'accounts'} ${named(same, 3)} read ${stream?.name ?? ''} from it in this run. ` +
          "This account's access is the likely cause: its plan may not include that resource, or it is switched off for the account; " +
          'ask an account administrator.',
      );
    }
    const any = [...new Set(others([...this.#readStreams.values()].flatMap((s) => [...s])))];
    if (any.length === 0) return error.message;
    return error.message.replace(
      NOT_FOUND_ADVICE,
      `${any.length === 1 ? 'Account' : 'Accounts'} ${named(any, 3)} ${any.length === 1 ? 'was' : 'were'} read from this base_url in this run, so base_url is likely right: ` +
        "this account's access or plan is the likely cause; ask an account administrator.",
    );
  }

  /** "records: contacts 10, ...; accounts: 3 (1 failed: b); requests: ..." */
  summary(): string {
    const failed = [...this.#tracks.values()].filter((t) => t.ended === 'failed').map((t) => t.name);
    const untried = [...this.#tracks.values()].filter((t) => t.ended === 'not_tried').length;
    const how = [...(failed.length > 0 ? [`${failed.length} failed: ${failed.join(', ')}`] : []), ...(untried > 0 ? [`${untried} not tried`] : [])];
    return summaryLine(this.#counts, this.stats, `accounts: ${this.#tracks.size}${how.length > 0 ? ` (${how.join('; ')})` : ''}; `);
  }

  /**
   * Read every account: `request.states` are the run's input states (each
   * stream's of many accounts, see accountStates), `emitter` the face's sink,
   * `observer` the progress line. Throws a ConfigError, before the face is
   * told anything, when a state is of one account.
   */
  async run(
    request: SessionRequest,
    emitter: SyncSink,
    observer?: CountObserver,
    lanes: AccountLanes = {},
    cadence: { readonly records: number; readonly checkpoints: number } = STATE_CADENCE,
  ): Promise<AccountsResult> {
    const input = accountStates(request.states, this.#entries);
    const configured = new Set(this.#entries.map((e) => e.name));
    // The order of each stream's accounts in a state: the config's, then the entries no longer in it.
    const removed = [...new Set([...input.values()].flatMap((m) => [...m.keys()]))].filter((name) => !configured.has(name));
    const order = [...this.#entries.map((e) => e.name), ...removed];
    if (removed.length > 0) {
      await emitter.log(
        'INFO',
        `The state holds ${removed.length === 1 ? 'an account' : 'accounts'} no longer in the config (${removed.join(', ')}): not read; ` +
          'their states are kept as they are in every state this run writes (remove them from the state to forget them).',
      );
    }
    const streams = new Map<string, StreamTrack>(request.streams.map(({ stream }) => [stream.name, { started: false, remaining: this.#entries.length, failed: false, read: false, skipped: false }]));
    const combined = new Map<string, Map<string, StreamState>>(request.streams.map(({ stream }) => [stream.name, new Map(input.get(stream.name) ?? [])]));
    const report = this.#report;

    const stateOf = (name: string): StreamState => {
      const byAccount = combined.get(name) ?? new Map<string, StreamState>();
      // Own properties, whatever the entries' names (an assignment to "__proto__" would set the prototype instead).
      return { accounts: Object.fromEntries(order.flatMap((entry) => (byAccount.has(entry) ? [[entry, byAccount.get(entry) as StreamState]] : []))) };
    };

    // The face's STATE cadence (STATE_CADENCE); unused with a sink per account, which gets every checkpoint.
    const cadences = new Map<string, StateCadence>(request.streams.map(({ stream }) => [stream.name, { records: 0, checkpoints: 0, tombstones: false, written: undefined }]));
    const definitions = new Map(request.streams.map(({ stream }) => [stream.name, stream]));
    /** The stream's state of every account, when a checkpoint of it was not written yet; marks it written. */
    const takeUnsent = (stream: StreamDefinition): StreamState | undefined => {
      const c = cadences.get(stream.name);
      if (c === undefined || c.checkpoints === 0) return undefined;
      const records = c.records;
      c.records = 0;
      c.checkpoints = 0;
      c.tombstones = false;
      const value = stateOf(stream.name);
      // Two checkpoints of one read never hold the same position; a complete read that reported the watermark it started
      // from does (a full refresh, a service whose watermark did not move), and a STATE identical to the one before says
      // nothing new. Unless records came since: a STATE must follow them, and two identical STATEs of a stream with
      // records between them are what the Airbyte protocol forbids. That one then says how many records of the stream the
      // run had written (written only: the state reader drops it).
      const text = JSON.stringify(value);
      if (text === c.written && records === 0) return undefined;
      if (text === c.written) value.records_written = this.#counts.get(stream.name) ?? 0;
      c.written = text;
      return value;
    };
    const writeState = async (stream: StreamDefinition): Promise<void> => {
      // The deletion log's state moves past tombstones only once the states of the streams they went to are written.
      if (isDeletionLog(stream)) for (const other of definitions.values()) if (cadences.get(other.name)?.tombstones === true) await writeState(other);
      const value = takeUnsent(stream);
      if (value === undefined) return;
      await emitter.state(stream, value);
      report?.state(stream.name, value);
    };
    // The deletion log's last, as writeState orders them: its state moves past tombstones only after theirs.
    this.#unsent = () =>
      [...definitions.values()]
        .sort((a, b) => Number(isDeletionLog(a)) - Number(isDeletionLog(b)))
        .flatMap((stream): [StreamDefinition, StreamState][] => {
          const value = takeUnsent(stream);
          return value === undefined ? [] : [[stream, value]];
        });

    const started = async (stream: StreamDefinition): Promise<void> => {
      const track = streams.get(stream.name);
      if (track === undefined || track.started) return;
      track.started = true;
      if (!this.#counts.has(stream.name)) this.#counts.set(stream.name, 0);
      observer?.started(stream.name);
      await emitter.streamStarted(stream);
    };

    const ended = async (stream: StreamDefinition, how: 'complete' | 'skipped' | 'failed'): Promise<void> => {
      const track = streams.get(stream.name);
      if (track === undefined) return;
      await started(stream);
      track.remaining -= 1;
      if (how === 'failed') track.failed = true;
      if (how === 'complete') track.read = true;
      if (how === 'skipped') track.skipped = true;
      if (track.remaining > 0) return;
      // Every record of the stream is covered before its last status.
      await writeState(stream);
      if (track.failed) {
        observer?.ended(stream.name, 'failed');
        // The accounts that read it to the end had their records emitted and their states saved: partly done, not nothing.
        report?.streamEnded(stream.name, track.read ? 'partial' : 'stopped');
        await emitter.streamStopped(stream);
      } else {
        observer?.ended(stream.name, 'complete');
        // Skipped for the face when any account skipped it: the Singer tap then activates no table version, which would remove
        // that account's rows from the target (they keep theirs, as with one account, or an account that failed).
        await emitter.streamComplete(stream, !track.read || track.skipped);
        report?.streamEnded(stream.name, track.read ? 'complete' : 'skipped');
      }
    };

    // The service account each entry reads (its base URL and name), and the first entry that read it.
    const readers = new Map<string, string>();
    const sameAccountAs = async (entry: AccountEntry, account: RunAccount | undefined, lane: SyncSink): Promise<void> => {
      if (account === undefined) return;
      const key = JSON.stringify([account.base_url, account.name]);
      const first = readers.get(key);
      if (first === undefined) {
        readers.set(key, entry.name);
        return;
      }
      // Two keys of one account (one key in two entries is refused with the config). Only a warning: /v1/me names the
      // account, and two accounts may bear one name.
      await lane.log(
        'WARN',
        `entries "${first}" and "${entry.name}" read an account of the same name, "${account.name}": if it is one account (two keys of it), ` +
          'its records come twice, once under each entry\'s name. Keep one entry for it.',
      );
    };

    // The service account each entry no longer in the config read, as its state names it (the first stream's that does).
    const formerAccounts = new Map<string, StateAccount>();
    for (const name of removed) {
      for (const byEntry of input.values()) {
        const account = byEntry.get(name)?.account;
        if (account !== undefined) {
          formerAccounts.set(name, account);
          break;
        }
      }
    }
    /**
     * An entry renamed in the config (same key, same account) is read in full under its new name while the rows and state
     * of its former name stay: the account's rows then sit under both names. Entry names are kept by design (the state is
     * kept under them), so this is only said, never undone.
     */
    const formerEntryOf = async (entry: AccountEntry, account: RunAccount | undefined, lane: SyncSink): Promise<void> => {
      if (account === undefined) return;
      for (const [former, bound] of formerAccounts) {
        if (bound.base_url !== undefined && bound.base_url.replace(/\/+$/, '') !== account.base_url) continue;
        const binding = bindingOf(bound.name, account, entry.account_renamed_from);
        if (binding !== 'same' && binding !== 'renamed') continue;
        await lane.log(
          'WARN',
          `it reads an account of the same name, "${account.name}" at ${account.base_url}, as entry "${former}", which is no longer in the config ` +
            `(its state names that account). If "${entry.name}" is "${former}" renamed, the account is read in full under "${entry.name}" ` +
            `while the rows and state of "${former}" stay: its rows sit under both names. Rename the entry back to "${former}" (it goes on ` +
            `from its state), or remove the rows whose account is "${former}" and "${former}"'s state (docs/many-accounts.md, "Renaming an entry").`,
        );
      }
    };

    /** One account, read; `known`: the answer of its probe to take as its /v1/me (probeSettles). */
    const runOne = async (entry: AccountEntry, known: CheckResult | undefined): Promise<void> => {
      const track = this.#tracks.get(entry.name) as AccountTrack;
      const ends = new Set<string>();
      const sink = lanes.sinkFor?.(entry);
      // A stream this account ended already (a heal pass before the ordinary one): counted once for the face.
      const end = (stream: StreamDefinition, how: 'complete' | 'skipped' | 'failed'): Promise<void> | undefined => {
        if (ends.has(stream.name)) {
          if (how === 'failed') {
            const t = streams.get(stream.name);
            if (t !== undefined) t.failed = true;
          }
          return undefined;
        }
        ends.add(stream.name);
        return ended(stream, how);
      };
      const fail = (stream: StreamDefinition | undefined, error: ConnectorError): void => {
        settleStack(error);
        track.errors.push(error);
        this.#failures.push({ account: entry.name, stream, error });
      };
      const prefix = (message: string): string => `Account "${entry.name}": ${message}`;
      const lane: SyncSink = {
        streamStarted: async (stream) => {
          await sink?.streamStarted(stream);
          await started(stream);
        },
        streamRunning: (stream, quotaReset) => emitter.streamRunning(stream, quotaReset),
        readWatermark: (stream, watermark) => (sink ?? emitter).readWatermark?.(stream, watermark),
        readRestarted: (stream) => sink?.readRestarted?.(stream),
        rereadInFull: (stream) => sink?.rereadInFull?.(stream),
        records: async (stream, records: readonly Data[], extractedAt, tombstones = 0) => {
          // A field `account` the service sent itself was moved to service_account by the session's pipeline, before selection.
          for (const record of records) record[ACCOUNT_FIELD] = entry.name;
          await (sink ?? emitter).records(stream, records, extractedAt, tombstones);
          const c = cadences.get(stream.name);
          if (c !== undefined) {
            c.records += records.length;
            if (tombstones > 0) c.tombstones = true;
          }
          track.records += records.length;
          this.#counts.set(stream.name, (this.#counts.get(stream.name) ?? 0) + records.length);
          report?.records(stream.name, records.length, tombstones);
        },
        state: async (stream, state) => {
          combined.get(stream.name)?.set(entry.name, state);
          if (sink !== undefined) {
            // The account's own state, in the shape of many: every account's, made for each checkpoint of each, would cost the square of the accounts.
            const value: StreamState = { accounts: Object.fromEntries([[entry.name, state]]) };
            await sink.state(stream, value);
            report?.state(stream.name, value);
            return;
          }
          const c = cadences.get(stream.name);
          if (c === undefined) return;
          c.checkpoints += 1;
          if (c.records >= cadence.records || c.checkpoints >= cadence.checkpoints) await writeState(stream);
        },
        streamComplete: async (stream, skipped) => {
          if (skipped !== true) {
            const readers = this.#readStreams.get(stream.name) ?? new Set<string>();
            this.#readStreams.set(stream.name, readers.add(entry.name));
          }
          await sink?.streamComplete(stream, skipped);
          await end(stream, skipped === true ? 'skipped' : 'complete');
        },
        streamIncomplete: async (stream, error) => {
          await sink?.streamStopped(stream);
          fail(stream, error);
          await end(stream, 'failed');
        },
        streamStopped: async (stream) => {
          await sink?.streamStopped(stream);
          await end(stream, 'failed');
        },
        runFailed: (error) => fail(undefined, error),
        log: (level: LogLevel, message: string) => emitter.log(level, prefix(message)),
      };
      const accountObserver: CountObserver | undefined = observer && {
        started: () => undefined,
        counted: (stream, n) => observer.counted(stream, n),
        waiting: (stream, until) => observer.waiting(stream, until),
        ended: () => undefined,
      };
      const states = new Map<string, StreamState>();
      for (const { stream } of request.streams) {
        const state = input.get(stream.name)?.get(entry.name);
        if (state !== undefined) states.set(stream.name, state);
      }
      let session: SyncSession | undefined;
      try {
        session = await SyncSession.open(entryConfig(this.#config, entry), (level, message) => lane.log(level, message), undefined, this.#signal, { moveServiceAccount: true });
        this.#open.add(session);
        for (const note of await session.accountFor(states, request.streams, known)) await lane.log(note.level, note.message);
        if (session.account !== undefined) outage.gotIn(entry.name);
        await sameAccountAs(entry, session.account, lane);
        await formerEntryOf(entry, session.account, lane);
        if (lanes.read === undefined) await session.run({ ...request, states }, lane, accountObserver);
        else await lanes.read(entry, session, { ...request, states }, lane, accountObserver);
      } catch (err) {
        // Whatever stopped this account before or while it read (a state of another account, start_date ahead), it is this account's.
        const error = toConnectorError(err);
        fail(undefined, error);
      } finally {
        if (session !== undefined) {
          this.#open.delete(session);
          this.#closedStats = addRequestCounts(this.#closedStats, session.clientStats);
          await session.close().catch(() => undefined);
        }
      }
      // Told first, before anything below can throw: accounts waiting to start wait for it (SharedOutage.settled). Whether
      // the service answered its /v1/me: before it did, the service's own 5xx past the retries says it is down.
      outage.ended(entry.name, track.errors.length === 0 ? undefined : serviceDownBy(track.errors, session?.account !== undefined));
      // Every stream the account did not end (it stopped before reading it) ends as failed for it.
      for (const { stream } of request.streams) if (!ends.has(stream.name)) await ended(stream, 'failed');
      track.ended = track.errors.length === 0 ? 'succeeded' : 'failed';
    };

    // The service found down by the accounts before: an account not started yet is not tried, or probed first (service-outage.ts).
    const outage = new SharedOutage();
    const base = this.#config.base_url.replace(/\/+$/, '');
    const probeSeconds = Math.min(this.#config.request_timeout_seconds, PROBE_TIMEOUT_SECONDS);
    /** Why the accounts not started are not tried (or probed), and whether they are probed, as last said. */
    let why: string | undefined;
    let said: string | undefined;
    /**
     * Say once, when an outage is first found or the way changes, what becomes of the `left` accounts not started yet. An
     * outage is told by its first two witnesses (they stay first while it lasts): the accounts running when it was found,
     * ending one after the other, add witnesses to it, and say nothing new.
     */
    const announce = async (witnesses: readonly string[], probing: boolean, left: number): Promise<void> => {
      why = `accounts ${named(witnesses, 2)} found the Data-Read API at ${base} unavailable and no account was read since`;
      const outage = JSON.stringify([probing, witnesses.slice(0, 2)]);
      if (said === outage || left === 0) return;
      said = outage;
      const one = left === 1;
      const accounts = one ? 'The account not started yet' : `The ${left} accounts not started yet`;
      await emitter.log(
        'WARN',
        probing
          ? `${accounts} ${one ? 'is' : 'are each'} probed first: ${why}, with errors of the service's own (a 5xx or no answer past their retries), ` +
              `which may be theirs alone. Each sends one request to /v1/me with its own key, without retries, waiting at most ${probeSeconds} s: ` +
              'one that meets a 5xx is not tried this run (its state unchanged, the next run reads it); the first answered otherwise is read as usual, ' +
              'and so are the accounts after it.'
          : `${accounts} ${one ? 'is' : 'are'} not tried this run: ${why}. ` +
              `${one ? 'Its state is' : 'Their states are'} unchanged; the next run reads ${one ? 'it' : 'them'}.`,
      );
    };
    /** An account not tried (witnesses were announced); `probed`: its probe's failure. */
    const notTried = async (entry: AccountEntry, probed: CheckResult | undefined): Promise<void> => {
      const track = this.#tracks.get(entry.name) as AccountTrack;
      const probe = probed === undefined ? '' : `; one request of its own to /v1/me, without retries, failed too (${probeCause(probed)})`;
      const error = new ConnectorError('transient_error', `Not tried: ${why ?? ''}${probe}. Its state is unchanged; the next run reads it.`);
      track.errors.push(error);
      this.#failures.push({ account: entry.name, stream: undefined, error });
      for (const { stream } of request.streams) await ended(stream, 'failed');
      track.ended = 'not_tried';
    };
    /** The probe of an account (service-outage.ts), its requests counted with the run's. */
    const probe = async (entry: AccountEntry): Promise<CheckResult> => {
      const { check, stats } = await probeAccount(entryConfig(this.#config, entry), this.#signal);
      this.#closedStats = addRequestCounts(this.#closedStats, stats);
      return check;
    };

    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < this.#entries.length) {
        await outage.settled();
        // The reader of the output went away: what the accounts not started would read could reach no one.
        if (next >= this.#entries.length || emitter.outputClosed?.() === true) return;
        const entry = this.#entries[next++] as AccountEntry;
        const before = outage.witnesses();
        let known: CheckResult | undefined;
        let probed: CheckResult | undefined;
        if (before !== undefined && outage.probing()) {
          await announce(before, true, this.#entries.length - next + 1);
          const check = await probe(entry);
          const how = probeOutcome(check);
          if (how === 'answered') {
            outage.answered();
            if (probeSettles(check)) known = check;
            await emitter.log(
              'INFO',
              `Account "${entry.name}": the Data-Read API answered its /v1/me after accounts ${named(before, 2)} found it unavailable: ` +
                'it and the accounts after it are read as usual.',
            );
          } else {
            probed = check;
            // No answer at all: the accounts after it are not probed. (Cleared meanwhile by another account: read as usual.)
            if (how === 'silent' && outage.witnesses() !== undefined) outage.silent(entry.name);
          }
        }
        const witnesses = outage.witnesses();
        if (witnesses !== undefined) {
          await announce(witnesses, outage.probing(), this.#entries.length - next + (probed === undefined ? 1 : 0));
          await notTried(entry, probed);
          continue;
        }
        outage.started(entry.name);
        await runOne(entry, known);
      }
    };
    const workers = Math.max(1, Math.min(this.#config.max_concurrent_accounts, this.#entries.length));
    await Promise.all(Array.from({ length: workers }, worker));
    // The reader of the output went away: the streams the accounts not started would have ended are unfinished.
    if (emitter.outputClosed?.() === true) {
      for (const [name, track] of streams) if (track.remaining > 0) report?.streamEnded(name, track.read ? 'partial' : 'incomplete');
    }
    // Every stream ended for the face with its STATE; a checkpoint left (none expected) is written all the same.
    for (const stream of definitions.values()) await writeState(stream);
    this.#unsent = undefined;

    const failed = [...this.#tracks.values()].filter((t) => t.errors.length > 0 && t.ended !== 'not_tried');
    const untried = [...this.#tracks.values()].filter((t) => t.ended === 'not_tried').map((t) => t.name);
    let error: ConnectorError | undefined;
    if (failed.length + untried.length > 0) {
      const type = mostActionable([...this.#tracks.values()].flatMap((t) => t.errors.map((e) => e.failureType))) ?? 'system_error';
      const ok = this.#tracks.size - failed.length - untried.length;
      // The accounts not tried are named together, once: with 1,000 accounts, a sentence each would bury the failures.
      const one = untried.length === 1;
      const untriedPart =
        untried.length === 0
          ? []
          : [`${one ? 'account' : 'accounts'} ${named(untried, 20)} not tried (${why ?? ''}): ${one ? 'its state is' : 'their states are'} unchanged, the next run reads ${one ? 'it' : 'them'}.`];
      const message =
        `${failed.length} of ${this.#tracks.size} accounts failed` +
        (untried.length > 0 ? ` and ${untried.length} ${one ? 'was' : 'were'} not tried` : '') +
        (ok === 1 ? ' (the other one was read and its state saved)' : ok > 1 ? ` (the other ${ok} were read and their states saved)` : '') +
        `: ${[...failed.map((t) => `account "${t.name}": ${this.#accountMessage(t)}`), ...untriedPart].join('; ')}`;
      error = new ConnectorError(type, message);
      report?.fail(error);
      await emitter.runFailed(error, []);
    }
    return { failures: this.#failures, error, accounts: this.accountSummaries() };
  }

  /**
   * For the last words of a run stopped by a signal: the accounts that failed
   * before it, each with why, and those not tried, as a sentence; undefined
   * when none. The error that names them is said once every account ended,
   * which the signal forestalls: without these words, why an account failed
   * (its key revoked, say) would be in no line of the run.
   */
  failedSoFar(): string | undefined {
    const tracks = [...this.#tracks.values()];
    const failed = tracks.filter((t) => t.errors.length > 0 && t.ended !== 'not_tried');
    const untried = tracks.filter((t) => t.ended === 'not_tried').map((t) => t.name);
    if (failed.length + untried.length === 0) return undefined;
    const one = untried.length === 1;
    const parts = failed.map((t) => `account "${t.name}": ${this.#accountMessage(t)}`);
    if (untried.length > 0) {
      parts.push(`${one ? 'account' : 'accounts'} ${named(untried, 20)} not tried (the Data-Read API was found unavailable): ${one ? 'its state is' : 'their states are'} unchanged`);
    }
    return (
      `Before it, ${failed.length} of ${this.#tracks.size} accounts failed` +
      (untried.length > 0 ? ` and ${untried.length} ${one ? 'was' : 'were'} not tried` : '') +
      `: ${parts.join('; ')}`
    );
  }

  /**
   * For the last words of a run stopped by a signal: each stream's state of
   * every account, for the streams with a checkpoint not written yet (each
   * covers only records already handed to the face); they count as written.
   */
  unsentStates(): [StreamDefinition, StreamState][] {
    return this.#unsent?.() ?? [];
  }

  close(): Promise<void> {
    return Promise.all([...this.#open].map((s) => s.close())).then(() => undefined);
  }
}
