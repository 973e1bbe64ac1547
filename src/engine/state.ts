/**
 * Per-stream state, as the contract defines it:
 *   { sync_watermark?: <instant of a read that reached has_more: false>,
 *     resume?: { cursor, sync_watermark },   (a read in progress)
 *     account?: { name, base_url },          (whose it is: account.ts)
 *     emitted?: <EmittedShape>,              (what the records carried: see StreamState)
 *     tombstones_missed?: { <stream>: <instant> },  (the deletion log's: see StreamState)
 *     tombstones_through?: <ReadPosition> }  (written only: see StreamState)
 * or, with `accounts`, { accounts: { <entry>: <such a state>, ... }, records_written?: <number> }
 * (records_written: written only, see StreamState).
 * The faces wrap it in their own envelopes; this module validates the content.
 */
import { isObject } from '../exact-json.js';
import { z } from 'zod';
import { parseInstant } from '../time.js';
import { ConfigError } from '../errors.js';

const WATERMARK = 'must be an ISO 8601 date-time with zone, as the service wrote it';

const watermark = z.string({ error: WATERMARK }).refine((v) => !Number.isNaN(parseInstant(v)), { message: WATERMARK });

const StreamStateSchema = z.looseObject({
  sync_watermark: watermark.optional(),
  resume: z
    .object(
      {
        cursor: z.string({ error: 'must be a non-empty cursor string' }).min(1, { message: 'must be a non-empty cursor string' }),
        sync_watermark: watermark,
      },
      { error: 'must be an object {"cursor": ..., "sync_watermark": ...}' },
    )
    .optional(),
  emitted: z
    .strictObject(
      {
        only: z.array(z.string()).optional(),
        without: z.array(z.string()).optional(),
        treated: z.record(z.string(), z.string()).optional(),
      },
      { error: 'must be an object {"only"?: [...], "without"?: [...], "treated"?: {...}} as the connector wrote it' },
    )
    .optional(),
  tombstones_missed: z.record(z.string(), watermark, { error: 'must be an object {"<stream>": "<watermark>", ...} as the connector wrote it' }).optional(),
  account: z
    .looseObject(
      {
        // As /v1/me gave it: an account may have an empty name.
        name: z.string({ error: 'must be the account name /v1/me gave' }),
        base_url: z.string({ error: 'must be the base_url the state was read from' }).optional(),
      },
      { error: 'must be an object {"name": ..., "base_url": ...}' },
    )
    .optional(),
});

/** The account a state belongs to: the name /v1/me gave the key that read it, and the address it was read from. */
export interface StateAccount {
  name: string;
  base_url?: string;
}

/**
 * Where a read stands after a page: the cursor of the next page and the
 * read's watermark, or, after its last page, the watermark alone. Never the
 * same twice in one read: the paginator fails a read whose cursor repeats.
 */
export type ReadPosition = { readonly cursor: string; readonly sync_watermark: string } | { readonly sync_watermark: string };

/**
 * What the records of a stream carried, when not every field as received
 * (pipeline.ts): `only` these fields (Airbyte's configured catalog), or
 * `without` these (Singer's deselected fields), and the fields `treated`
 * (field: treatment; personal data). Each list sorted; a key only when it
 * says something.
 */
export interface EmittedShape {
  only?: string[];
  without?: string[];
  treated?: Record<string, string>;
}

export interface StreamState {
  sync_watermark?: string;
  resume?: { cursor: string; sync_watermark: string };
  /** Absent in a state written before states named their account. */
  account?: StateAccount;
  /**
   * What the records read up to this state carried, when not every field as
   * received (Airbyte and Singer; absent: every field, none treated). A run
   * whose records would carry another shape reads the stream in full
   * (sync.ts), so that the rows kept before get the new shape too.
   */
  emitted?: EmittedShape;
  /**
   * The deletion log's, with deletions_as_tombstones: for each stream the
   * log's deletions go to that was not selected while the log was read, the
   * log's watermark from which its tombstones were not emitted. A run that
   * selects that stream again reads the log from there (sync.ts).
   */
  tombstones_missed?: Record<string, string>;
  /** A config with `accounts`: one state per entry (by its name), each without `accounts`; nothing else beside. */
  accounts?: Record<string, StreamState>;
  /**
   * In the checkpoint of a stream that follows a batch of its tombstones
   * (tombstones.ts): the deletion log's position after the page they came
   * from. Written only, never read back (parseStreamState drops it): it makes
   * each such checkpoint differ from the one before, as the Airbyte protocol
   * asks of two STATEs of a stream with records between them.
   */
  tombstones_through?: ReadPosition;
  /**
   * With `accounts`, beside `accounts`: in a STATE that would be the same as
   * the stream's STATE before it, with records between them (the accounts
   * read since ended on the states they started from), the records of the
   * stream the run had written (engine/accounts.ts). Written only, never read
   * back (parseStreamState keeps `accounts` alone): it makes that STATE
   * differ from the one before, as the Airbyte protocol asks.
   */
  records_written?: number;
}

/**
 * Validate one stream's saved state; throws ConfigError naming the stream and
 * the field. A state of a config with `accounts` (`{"accounts": {"<entry>":
 * <that entry's state>, ...}}`) holds one state per entry, each a state of
 * one account as above.
 */
export function parseStreamState(stream: string, input: unknown): StreamState {
  if (isObject(input) && 'accounts' in input) return parseAccountsState(stream, input);
  return parseOneState(`"${stream}"`, input, `state.${stream}`);
}

function parseAccountsState(stream: string, input: Record<string, unknown>): StreamState {
  const mixed = Object.keys(input).filter((key) => key === 'sync_watermark' || key === 'resume' || key === 'account');
  const entries = input.accounts;
  if (typeof entries !== 'object' || entries === null || Array.isArray(entries) || mixed.length > 0) {
    throw new ConfigError(
      `Invalid state for stream "${stream}": ` +
        (mixed.length > 0 ? `it holds both "accounts" and ${mixed.map((k) => `"${k}"`).join(', ')}` : '"accounts" must be an object keyed by the names of the config\'s accounts entries') +
        '. A state of many accounts is {"accounts": {"<name>": {"sync_watermark": ...}, ...}}. Pass the state the connector wrote, or no state to read from start_date.',
      { field: `state.${stream}.accounts` },
    );
  }
  const accounts = Object.entries(entries).map(([name, raw]): [string, StreamState] => {
    if (typeof raw === 'object' && raw !== null && 'accounts' in raw) {
      throw new ConfigError(`Invalid state for stream "${stream}": the state of account "${name}" holds "accounts" again.`, { field: `state.${stream}.accounts.${name}` });
    }
    return [name, parseOneState(`"${stream}" of account "${name}"`, raw, `state.${stream}.accounts.${name}`)];
  });
  // Own properties, whatever the names (an assignment to "__proto__" would set the object's prototype instead). Nothing
  // beside them is read: records_written is written only.
  return { accounts: Object.fromEntries(accounts) };
}

/** One account's state; `label` names it in messages (the stream's name, quoted), `at` is its field. */
function parseOneState(label: string, input: unknown, at: string): StreamState {
  if (input === null || input === undefined) return {};
  if (typeof input !== 'object' || Array.isArray(input)) {
    throw new ConfigError(
      `Invalid state for stream ${label}: a stream's state must be an object such as {"sync_watermark": "2024-01-01T00:00:00.000Z"}, ` +
        `not ${Array.isArray(input) ? 'an array' : typeof input}. Pass the state the connector wrote, or no state to read from start_date.`,
      { field: at },
    );
  }
  // Parsed once a stream: zod's compiled fast path (`new Function`) would cost more to build than it saves.
  const result = StreamStateSchema.safeParse(input, { jitless: true });
  if (!result.success) {
    const issue = result.error.issues[0];
    const field = issue ? issue.path.join('.') : '';
    const what = issue?.message ?? 'invalid';
    throw new ConfigError(
      `Invalid state for stream ${label}: ${field ? `${field} ${what}` : what}. ` +
        'Pass the state the connector wrote, or no state to read from start_date.',
      { field: field ? `${at}.${field}` : at },
    );
  }
  // Keys the Airbyte platform adds (__ab_*) are not state; tombstones_through is written only, never read: both are
  // left out, so a state of nothing else is read as no state, as {} is.
  const keys = Object.keys(input).filter((key) => !key.startsWith('__ab_') && key !== 'tombstones_through');
  if (keys.length > 0 && !keys.some((key) => key === 'sync_watermark' || key === 'resume' || key === 'account')) {
    // Another tool's bookmark (a Singer SDK's replication_key_value, a hand-made syncWatermark): read as no state, it
    // would read the stream again from start_date without a word.
    throw new ConfigError(
      `Invalid state for stream ${label}: it holds none of the connector's keys (it has ${keys.slice(0, 5).map((k) => `"${k}"`).join(', ')}${keys.length > 5 ? ', ...' : ''}). ` +
        'A stream\'s state is {"sync_watermark": "2024-01-01T00:00:00.000Z"} (with "resume" during a read). Pass the state the connector wrote, or no state to read from start_date.',
      { field: at },
    );
  }
  const state: StreamState = {};
  if (result.data.sync_watermark !== undefined) state.sync_watermark = result.data.sync_watermark;
  if (result.data.resume !== undefined) state.resume = result.data.resume;
  const account = result.data.account;
  if (account !== undefined) state.account = account.base_url === undefined ? { name: account.name } : { name: account.name, base_url: account.base_url };
  const emitted = result.data.emitted;
  if (emitted !== undefined) state.emitted = { ...emitted };
  if (result.data.tombstones_missed !== undefined) state.tombstones_missed = { ...result.data.tombstones_missed };
  return state;
}

/**
 * When a complete read reports a watermark earlier than the saved one, the
 * WARN that says so; undefined otherwise. Two causes look the same from here:
 * the service's clock went back (a failover to a lagging replica, a clock
 * fix), or a state edited or copied by hand holds a watermark ahead of the
 * service's. Either way records stamped between the two instants may lie
 * behind both (the read from the saved one did not return them; a read from
 * the reported one would not return those stamped more than the look-back
 * before it): the reader reads the stream again in full in the same sync
 * (reader.ts), from `startDate` when set, and saves that read's watermark.
 */
export function watermarkWentBack(stream: string, saved: string | undefined, reported: string, startDate?: string): string | undefined {
  if (saved === undefined || !(parseInstant(reported) < parseInstant(saved))) return undefined;
  return (
    `${stream}: the service reported sync_watermark ${reported}, earlier than the saved ${saved}: ` +
    "its clock went back (a failover or a clock correction), or the state was edited or copied by hand with a watermark ahead of the service's. " +
    `Records stamped in between may lie behind both, so the stream is read again in full in this sync (${startDate === undefined ? 'its whole history' : `from start_date ${startDate}`}); ` +
    'records may repeat, none are missed.'
  );
}
