/**
 * Whose a state is (src/engine/account.ts): a state of another account is
 * refused with a message naming both accounts and the one way to confirm a
 * rename; states without an account, or of the former name account_renamed_from
 * confirms, are accepted with a note; every state a run writes names its account.
 */
import { describe, expect, it } from 'vitest';
import { bindingOf, checkStateAccounts, otherAccountError, runAccount } from '../../src/engine/account.js';
import { RecordPipeline } from '../../src/engine/pipeline.js';
import { parseStreamState, type StreamState } from '../../src/engine/state.js';
import { ConfigError } from '../../src/errors.js';
import { parseConfig } from '../../src/config/config.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { thrown } from '../helpers/thrown.js';
import { RecordingSink } from '../helpers/recording-sink.js';

const URL = 'https://api.example.com';
const globex = runAccount('Globex', `${URL}/`);
const acme = { name: 'Acme', base_url: URL };
const W = '2026-01-02T03:04:05.000Z';

describe('runAccount', () => {
  it('keeps the name as /v1/me gave it and the base_url without a trailing slash', () => {
    expect(globex).toEqual({ name: 'Globex', base_url: URL });
    expect(runAccount('Globex', 'https://gw.example.com/data-read//')).toEqual({ name: 'Globex', base_url: 'https://gw.example.com/data-read' });
  });

  it('never carries a secret of the config: a service naming the account after the key gets *** in every state', () => {
    const key = 'drk_live_s3cr"et\\key';
    expect(runAccount(`acct ${key}`, URL, [key]).name).toBe('acct ***');
    expect(runAccount(`acct ${JSON.stringify(key).slice(1, -1)}`, URL, [key]).name).toBe('acct ***');
  });
});

describe('bindingOf', () => {
  it('tells the same account, none yet, a confirmed rename and another account apart', () => {
    expect(bindingOf('Globex', globex, undefined)).toBe('same');
    expect(bindingOf(undefined, globex, undefined)).toBe('unbound');
    expect(bindingOf('Acme', globex, 'Acme')).toBe('renamed');
    expect(bindingOf('Acme', globex, undefined)).toBe('other');
    expect(bindingOf('Acme', globex, 'Initech')).toBe('other');
    // A name differs by one letter's case: another name.
    expect(bindingOf('globex', globex, undefined)).toBe('other');
  });
});

describe('checkStateAccounts', () => {
  const states = (entries: Record<string, StreamState>): Map<string, StreamState> => new Map(Object.entries(entries));

  it("refuses another account's state, naming both accounts, its streams in the streams table's order, and the rename's confirmation", () => {
    const error = thrown(() =>
      checkStateAccounts(states({ deletions: { sync_watermark: W, account: acme }, contacts: { sync_watermark: W, account: acme } }), globex, undefined),
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).fields).toEqual(['state']);
    expect((error as Error).message).toBe(
      'The state belongs to account "Acme" (streams contacts, deletions), but this config\'s API key reads account "Globex". ' +
        'Reading "Globex" from the watermarks of "Acme" would skip its records: nothing was read. ' +
        'Give "Globex" a state of its own (or none: it is then read from start_date); ' +
        'if "Acme" is this same account, renamed "Globex" in Data-Read, confirm the rename with "account_renamed_from": "Acme" in the config.',
    );
  });

  it('of an accounts entry: says to put the key back or read the account under a new entry, and to confirm a rename inside the entry', () => {
    // account_renamed_from at the top level of a config with accounts is refused: the rename is confirmed in the entry.
    const message = (thrown(() => checkStateAccounts(states({ contacts: { sync_watermark: W, account: acme } }), globex, undefined, 'acme-br')) as Error).message;
    expect(message).toBe(
      'The state belongs to account "Acme" (stream contacts), but this config\'s API key reads account "Globex". ' +
        'Reading "Globex" from the watermarks of "Acme" would skip its records: nothing was read. ' +
        'Give the accounts entry "acme-br" back the API key of "Acme", or read "Globex" under an entry of a new name (read from start_date; ' +
        'the rows and state of "acme-br" stay: docs/many-accounts.md, "Renaming an entry"); ' +
        'if "Acme" is this same account, renamed "Globex" in Data-Read, confirm the rename with "account_renamed_from": "Acme" in the accounts entry "acme-br".',
    );
  });

  it('names the address the state was read from when it is not the config\'s, another account too, and what account_renamed_from says', () => {
    const message = (thrown(() =>
      checkStateAccounts(
        states({
          contacts: { sync_watermark: W, account: { name: 'Acme', base_url: 'https://staging.example.com' } },
          conversations: { sync_watermark: W, account: { name: 'Initech', base_url: URL } },
          deletions: { sync_watermark: W, account: globex },
        }),
        globex,
        'Initrode',
      ),
    ) as Error).message;
    expect(message).toMatch(/^The state belongs to account "Acme" \(stream contacts; read from https:\/\/staging\.example\.com; stream conversations of account "Initech"\), /);
    expect(message).toMatch(/confirm the rename with "account_renamed_from": "Acme" in the config \(account_renamed_from is "Initrode"\)\.$/);
  });

  it('accepts states of the same account silently, and says which states it took as this account\'s', () => {
    expect(checkStateAccounts(states({ contacts: { sync_watermark: W, account: globex } }), globex, undefined)).toEqual([]);
    expect(checkStateAccounts(new Map(), globex, undefined)).toEqual([]);
    const notes = checkStateAccounts(
      states({ contacts: { sync_watermark: W }, stage_events: { sync_watermark: W, account: acme }, deletions: { sync_watermark: W, account: globex } }),
      globex,
      'Acme',
    );
    expect(notes).toEqual([
      {
        level: 'INFO',
        message:
          'The state of stream stage_events belongs to account "Acme", which account_renamed_from confirms is now "Globex": read as "Globex"\'s; the states this run saves name "Globex".',
      },
      {
        level: 'INFO',
        message: 'The state of stream contacts names no account (it was written before states named theirs): taken as account "Globex"\'s; the states this run saves name it.',
      },
    ]);
  });

  it('confirms the rename of a former name with spaces at its ends, given as the refusal spells it (the config trims the setting)', () => {
    const former = { name: 'Acme Brazil ', base_url: URL };
    const given = states({ contacts: { sync_watermark: W, account: former } });
    const refusal = (thrown(() => checkStateAccounts(given, globex, undefined)) as Error).message;
    expect(refusal).toContain('confirm the rename with "account_renamed_from": "Acme Brazil " in the config');
    const { config } = parseConfig({ api_key: 'acme_live_s3cr3tKEY', base_url: URL, account_renamed_from: 'Acme Brazil ' });
    expect(checkStateAccounts(given, globex, config.account_renamed_from).map((n) => n.message)).toEqual([
      'The state of stream contacts belongs to account "Acme Brazil", which account_renamed_from confirms is now "Globex": read as "Globex"\'s; the states this run saves name "Globex".',
    ]);
  });

  it('takes a state of an account whose name was empty or spaces (no account_renamed_from can name it) as renamed, and says so', () => {
    for (const former of ['', '   ']) {
      const given = states({ contacts: { sync_watermark: W, account: { name: former, base_url: URL } } });
      const { config } = parseConfig({ api_key: 'acme_live_s3cr3tKEY', base_url: URL, account_renamed_from: former });
      for (const renamedFrom of [undefined, config.account_renamed_from]) {
        expect(checkStateAccounts(given, globex, renamedFrom).map((n) => n.message)).toEqual([
          `The state of stream contacts belongs to an account of no name (${JSON.stringify(former)}), which cannot be confirmed as renamed: taken as account "Globex"'s; the states this run saves name "Globex".`,
        ]);
      }
    }
    expect(bindingOf('  ', runAccount('', URL), undefined)).toBe('blank');
    expect(bindingOf('', runAccount('', URL), undefined)).toBe('same');
  });

  it('spells the rename\'s confirmation as JSON a config can hold, whatever the former name holds (quotes, a backslash)', () => {
    const former = { name: 'Acme "BR" \\ Sul', base_url: URL };
    const refusal = (thrown(() => checkStateAccounts(states({ contacts: { sync_watermark: W, account: former } }), globex, undefined)) as Error).message;
    const snippet = /confirm the rename with (.*) in the config\.$/.exec(refusal)?.[1] ?? '';
    expect(JSON.parse(`{${snippet}}`)).toEqual({ account_renamed_from: former.name });
  });

  it('says nothing of a stream given no state: a null stream_state (Airbyte\'s reset) or {} is read from start_date', () => {
    const reset = new Map([['contacts', parseStreamState('contacts', null)], ['conversations', parseStreamState('conversations', {})]]);
    expect(checkStateAccounts(reset, globex, undefined)).toEqual([]);
  });
});

describe('otherAccountError', () => {
  it('says the subject, both accounts, the consequence, the remedy and the confirmation, in that order', () => {
    const error = otherAccountError({ subject: 'The thing', consequence: 'It would break.', remedy: 'Do this', field: 'api_key' }, acme, globex, undefined);
    expect(error.message).toBe(
      'The thing belongs to account "Acme", but this config\'s API key reads account "Globex". It would break. Do this; ' +
        'if "Acme" is this same account, renamed "Globex" in Data-Read, confirm the rename with "account_renamed_from": "Acme" in the config.',
    );
    expect(error.fields).toEqual(['api_key']);
  });
});

describe('the state of a stream', () => {
  it('keeps the account it names; a state without one is still valid; a malformed one is refused naming the field', () => {
    expect(parseStreamState('contacts', { sync_watermark: W, account: { name: 'Acme', base_url: URL, extra: 1 } })).toEqual({ sync_watermark: W, account: acme });
    expect(parseStreamState('contacts', { sync_watermark: W, account: { name: 'Acme' } })).toEqual({ sync_watermark: W, account: { name: 'Acme' } });
    expect(parseStreamState('contacts', { sync_watermark: W })).toEqual({ sync_watermark: W });
    expect(() => parseStreamState('contacts', { sync_watermark: W, account: 'Acme' })).toThrow(
      /^Invalid state for stream "contacts": account must be an object \{"name": \.\.\., "base_url": \.\.\.\}\./,
    );
    // An account may have an empty name (/v1/me's account_name is any string): the state keeps it as given.
    expect(parseStreamState('contacts', { sync_watermark: W, account: { name: '' } })).toEqual({ sync_watermark: W, account: { name: '' } });
    expect(() => parseStreamState('contacts', { sync_watermark: W, account: { name: 42 } })).toThrow(
      /^Invalid state for stream "contacts": account\.name must be the account name \/v1\/me gave\./,
    );
  });
});

describe('a state of another shape', () => {
  it("is refused naming its keys when it holds none of the connector's, never read as no state", () => {
    expect(() => parseStreamState('contacts', { syncWatermark: W })).toThrow(/^Invalid state for stream "contacts": it holds none of the connector's keys \(it has "syncWatermark"\)\. A stream's state is \{"sync_watermark"/);
    expect(() => parseStreamState('contacts', { replication_key: 'updated_at', replication_key_value: W })).toThrow(/it has "replication_key", "replication_key_value"/);
    expect(() => parseStreamState('contacts', { accounts: { acme: { syncWatermark: W } } })).toThrow(/stream "contacts" of account "acme": it holds none of the connector's keys/);
  });

  it('is no state when empty or holding only what the Airbyte platform adds (__ab_*); unknown keys beside a watermark are kept out', () => {
    expect(parseStreamState('contacts', {})).toEqual({});
    expect(parseStreamState('contacts', { __ab_no_cursor_state_message: true })).toEqual({});
    expect(parseStreamState('contacts', { sync_watermark: W, note: 'x' })).toEqual({ sync_watermark: W });
  });

  it('reads a state carrying tombstones_through (written after tombstones, never read) as if it were not there', () => {
    const through = { cursor: 'c2', sync_watermark: W };
    expect(parseStreamState('contacts', { sync_watermark: W, account: { name: 'Acme', base_url: URL }, tombstones_through: through })).toEqual({ sync_watermark: W, account: acme });
    expect(parseStreamState('contacts', { accounts: { acme: { sync_watermark: W, tombstones_through: { sync_watermark: W } } } })).toEqual({ accounts: { acme: { sync_watermark: W } } });
    // Alone it is no state, as {} is (a target checkpointed after its tombstones before its first read: nothing read yet).
    expect(parseStreamState('contacts', { tombstones_through: through })).toEqual({});
    // Beside another tool's bookmark it saves nothing: still refused, naming the bookmark's keys.
    expect(() => parseStreamState('contacts', { tombstones_through: through, replication_key_value: W })).toThrow(/it holds none of the connector's keys \(it has "replication_key_value"\)\./);
  });
});

describe('the record pipeline stamps the account', () => {
  it('passes every state on with the run\'s account in it, replacing the one a saved state carried', async () => {
    const recording = new RecordingSink();
    const sink = new RecordPipeline(recording, { config: { personal_data: 'keep', field_treatments: [] }, streams: [], account: globex });
    const contacts = findStream('contacts') as StreamDefinition;
    await sink.state(contacts, { resume: { cursor: 'c1', sync_watermark: W } });
    await sink.state(contacts, { sync_watermark: W, account: acme });
    expect(recording.statesOf('contacts')).toEqual([
      { resume: { cursor: 'c1', sync_watermark: W }, account: globex },
      { sync_watermark: W, account: globex },
    ]);
  });
});
