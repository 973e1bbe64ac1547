/**
 * Whose data a state or a replica holds (connector contract, "Accounts: a
 * replica and a state belong to one account"). A key belongs to one account,
 * which /v1/me names (once a run). Each stream's state says whose it is
 * (`account: {name, base_url}`, added to every state a run writes: see
 * session.ts); the replica records it in its file (replica/account.ts).
 *
 * Something bound to another account is refused (config_error) before
 * anything is read or written: reading an account from another's watermarks
 * skips its records, and a replica would mix both accounts' rows. A state or
 * replica written before this rule (no account in it) is accepted, and bound
 * by the run's saves. A renamed account is not another account: the config's
 * `account_renamed_from` (the former name) confirms it, and the run's saves
 * bind the new name.
 */
import { ConfigError, redact } from '../errors.js';
import { STREAMS } from '../streams.js';
import type { LogLevel } from './sync-sink.js';
import type { StateAccount, StreamState } from './state.js';

/** The account a run reads: the name /v1/me gave its key, and the service's address (the config's base_url). */
export type RunAccount = Required<StateAccount>;

/** A line for the run's log. */
export interface AccountNote {
  readonly level: LogLevel;
  readonly message: string;
}

/**
 * The run's account from what /v1/me said. The name goes into every state
 * (stdout, the replica), which no redaction covers: a service that names the
 * account after one of the config's `secrets` (the key) gets `***` written.
 */
export function runAccount(name: string, baseUrl: string, secrets: readonly string[] = []): RunAccount {
  return { name: redact(name, secrets), base_url: baseUrl.replace(/\/+$/, '') };
}

/**
 * How something bound to `bound` (undefined: bound to nothing yet) stands
 * with the run's account: the same one, not bound yet, the same account
 * renamed (account_renamed_from names `bound`), bound to an account of no
 * name (empty or spaces: taken as this one's, since nothing could confirm a
 * rename from it), or another account.
 */
type Binding = 'same' | 'unbound' | 'renamed' | 'blank' | 'other';

export function bindingOf(bound: string | undefined, current: RunAccount, renamedFrom: string | undefined): Binding {
  if (bound === undefined) return 'unbound';
  if (bound === current.name) return 'same';
  // An account of no name (empty or spaces, as /v1/me may give it) names no one to tell apart, and account_renamed_from
  // (trimmed, empty taken as unset) cannot name it: taken as renamed, with a note ('blank').
  if (bound.trim() === '') return 'blank';
  // The config trims account_renamed_from (a form's stray spaces): a former name with spaces at its ends is matched trimmed.
  return renamedFrom !== undefined && (bound === renamedFrom || bound.trim() === renamedFrom) ? 'renamed' : 'other';
}

/** What a refusal says of its subject beyond the account's name. */
interface Refusal {
  /** "The state", `The replica "r.db"`. */
  readonly subject: string;
  /** Said in parentheses after the bound account's name (the streams it holds), before the address it was read from. */
  readonly detail?: string | undefined;
  /** Said in the same parentheses, after that address (the other accounts of a state). */
  readonly more?: string | undefined;
  /** What would go wrong, and that nothing was done. */
  readonly consequence: string;
  /** What to do instead, as the start of a sentence (the rename's confirmation follows). */
  readonly remedy: string;
  /** The field the error is about. */
  readonly field: string;
  /** The accounts entry whose key reads `current` (a config with accounts): where a rename is confirmed. */
  readonly entry?: string | undefined;
}

/**
 * The refusal of something bound to account `bound` by a run that reads
 * `current`: both accounts named (with the address the bound one was read
 * from when it differs), what would go wrong, what to do, and the one way to
 * confirm a rename.
 */
export function otherAccountError(refusal: Refusal, bound: StateAccount, current: RunAccount, renamedFrom: string | undefined): ConfigError {
  const address = bound.base_url !== undefined && bound.base_url !== current.base_url ? `read from ${bound.base_url}` : undefined;
  const details = [refusal.detail, address, refusal.more].filter((d): d is string => d !== undefined && d !== '');
  const given = renamedFrom === undefined ? '' : ` (account_renamed_from is "${renamedFrom}")`;
  return new ConfigError(
    `${refusal.subject} belongs to account "${bound.name}"${details.length > 0 ? ` (${details.join('; ')})` : ''}, ` +
      `but this config's API key reads account "${current.name}". ${refusal.consequence} ${refusal.remedy}; ` +
      `if "${bound.name}" is this same account, renamed "${current.name}" in Data-Read, ` +
      // As JSON: a name may hold a quote or a backslash, and the user pastes this into the config.
      `confirm the rename with "account_renamed_from": ${JSON.stringify(bound.name)} in ${refusal.entry === undefined ? 'the config' : `the accounts entry "${refusal.entry}"`}${given}.`,
    { field: refusal.field },
  );
}

const streamList = (names: readonly string[]): string => `${names.length === 1 ? 'stream' : 'streams'} ${names.join(', ')}`;

/**
 * Check the saved states of a sync (read, the tap) against the run's
 * account: throws the ConfigError that stops the run when a stream's state
 * belongs to another account; returns what to log about states accepted
 * without their own account's name (written before the rule, or before a
 * confirmed rename). The run's saves bind them (the record pipeline stamps every state).
 * `entry`: the accounts entry the run reads (a config with accounts), which
 * the refusal's advice is about.
 */
export function checkStateAccounts(states: ReadonlyMap<string, StreamState>, current: RunAccount, renamedFrom: string | undefined, entry?: string): AccountNote[] {
  const unbound: string[] = [];
  const renamed: string[] = [];
  const blank = new Map<string, string[]>();
  const other = new Map<string, { account: StateAccount; streams: string[] }>();
  // In the streams table's order, whatever the order of the file.
  const known = STREAMS.map((s) => s.name);
  const names = [...known.filter((n) => states.has(n)), ...[...states.keys()].filter((n) => !known.includes(n))];
  for (const name of names) {
    const state = states.get(name);
    // No state (a null stream_state, Airbyte's reset, or {}): read from start_date, nothing to bind.
    if (state === undefined || Object.keys(state).length === 0) continue;
    const account = state.account;
    const binding = bindingOf(account?.name, current, renamedFrom);
    if (binding === 'unbound') unbound.push(name);
    else if (binding === 'renamed') renamed.push(name);
    else if (binding === 'blank' && account !== undefined) blank.set(account.name, [...(blank.get(account.name) ?? []), name]);
    else if (binding === 'other' && account !== undefined) {
      const entry = other.get(account.name) ?? { account, streams: [] };
      entry.streams.push(name);
      other.set(account.name, entry);
    }
  }
  const [first, ...others] = [...other.values()];
  if (first !== undefined) {
    throw otherAccountError(
      {
        subject: 'The state',
        detail: streamList(first.streams),
        more: others.map((o) => `${streamList(o.streams)} of account "${o.account.name}"`).join('; '),
        consequence: `Reading "${current.name}" from the watermarks of "${first.account.name}" would skip its records: nothing was read.`,
        // An entry of accounts has no state of its own to give: its state is the one kept under its name.
        remedy:
          entry === undefined
            ? `Give "${current.name}" a state of its own (or none: it is then read from start_date)`
            : `Give the accounts entry "${entry}" back the API key of "${first.account.name}", or read "${current.name}" under an entry of a new name ` +
              `(read from start_date; the rows and state of "${entry}" stay: docs/many-accounts.md, "Renaming an entry")`,
        field: 'state',
        entry,
      },
      first.account,
      current,
      renamedFrom,
    );
  }
  const notes: AccountNote[] = [];
  if (renamed.length > 0) {
    notes.push({
      level: 'INFO',
      message:
        `The state of ${streamList(renamed)} belongs to account "${renamedFrom ?? ''}", which account_renamed_from confirms is now "${current.name}": ` +
        `read as "${current.name}"'s; the states this run saves name "${current.name}".`,
    });
  }
  for (const [former, streams] of blank) {
    notes.push({
      level: 'INFO',
      message:
        `The state of ${streamList(streams)} belongs to an account of no name (${JSON.stringify(former)}), which cannot be confirmed as renamed: ` +
        `taken as account "${current.name}"'s; the states this run saves name "${current.name}".`,
    });
  }
  if (unbound.length > 0) {
    notes.push({
      level: 'INFO',
      message:
        `The state of ${streamList(unbound)} names no account (it was written before states named theirs): ` +
        `taken as account "${current.name}"'s; the states this run saves name it.`,
    });
  }
  return notes;
}
