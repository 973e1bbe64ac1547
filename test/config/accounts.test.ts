/** The `accounts` list and max_concurrent_accounts (connector contract, "Many accounts"). */
import { describe, expect, it } from 'vitest';
import { entryConfig, parseConfig, parseUserConfig } from '../../src/config/config.js';
import { ConfigError } from '../../src/errors.js';
import { thrown } from '../helpers/thrown.js';

const base = { base_url: 'https://api.example.com' };
const acme = { name: 'acme-br', api_key: 'acme_live_s3cr3tACME' };
const globex = { name: 'globex.mx_2', api_key: 'glob_live_s3cr3tGLOBEX' };

function errorOf(input: unknown): ConfigError {
  const error = thrown(() => parseConfig(input));
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe('accounts', () => {
  it('takes a list of {name, api_key} instead of api_key, with max_concurrent_accounts 4 by default', () => {
    const { config } = parseConfig({ ...base, accounts: [acme, globex] });
    expect(config.api_key).toBeUndefined();
    expect(config.accounts).toEqual([acme, globex]);
    expect(config.max_concurrent_accounts).toBe(4);
    expect(parseConfig({ ...base, accounts: [acme], max_concurrent_accounts: 64 }).config.max_concurrent_accounts).toBe(64);
  });

  it('a string for accounts is told as a string, not also as a list too short or too long (its length)', () => {
    expect(errorOf({ ...base, accounts: '' }).message).toBe('Invalid config: accounts must be a list of {"name", "api_key"} objects (got a string).');
    expect(errorOf({ ...base, accounts: 'x'.repeat(2000) }).message).toBe('Invalid config: accounts must be a list of {"name", "api_key"} objects (got a string).');
  });

  it('warns about a key of an entry it does not take (a setting of one account), as about an unknown top-level key', () => {
    const { config, warnings } = parseConfig({
      ...base,
      accounts: [acme, { ...globex, page_size: 10 }],
      field_treatments: [{ stream: 'contacts', field: 'email', treatment: 'drop', salt: 'x' }],
    });
    expect(config.accounts).toEqual([acme, globex]);
    expect(warnings).toEqual([
      'Unknown config keys ignored: accounts[1].page_size (an entry of accounts takes name, api_key and account_renamed_from; every other setting is shared by all accounts, at the top level); ' +
        'field_treatments[0].salt (an entry of field_treatments takes stream, field and treatment).',
    ]);
    expect(parseConfig({ ...base, accounts: [acme, globex] }).warnings).toEqual([]);
  });

  it('refuses personal-data settings inside an entry of accounts: ignored, what they name would leave the connector', () => {
    const error = errorOf({ ...base, accounts: [acme, { ...globex, personal_data: 'drop', hash_key: 'k'.repeat(40) }] });
    expect(error.message).toBe(
      'Invalid config: accounts[1].personal_data: personal-data settings are shared by all accounts; set personal_data at the top level (an entry of accounts takes name, api_key and account_renamed_from); ' +
        'accounts[1].hash_key: personal-data settings are shared by all accounts; set hash_key at the top level (an entry of accounts takes name, api_key and account_renamed_from).',
    );
    expect(error.message).not.toContain('k'.repeat(40));
    // Told beside the config's other problems.
    const both = errorOf({ ...base, page_size: 0, accounts: [{ ...acme, field_treatments: [] }] }).message;
    expect(both).toContain('page_size');
    expect(both).toContain('accounts[0].field_treatments: personal-data settings are shared by all accounts');
  });

  it("refuses a treatment of account (the entry's name, in the key) and names service_account, where the service's own field goes", () => {
    // The service's `account` is moved to service_account before treatments: one naming `account` treated nothing, and
    // the value it was meant to drop went out as service_account.
    const error = errorOf({ ...base, accounts: [acme], field_treatments: [{ stream: 'contacts', field: 'account', treatment: 'drop' }] });
    expect(error.message).toContain(
      'field_treatments[0] ("contacts"."account"): with accounts, account is the entry\'s name, first in the primary key of contacts, and cannot be treated; ' +
        'a field "account" the service sends is kept as service_account: name service_account to treat it',
    );
    expect(parseConfig({ ...base, accounts: [acme], field_treatments: [{ stream: 'contacts', field: 'service_account', treatment: 'drop' }] }).config.field_treatments).toHaveLength(1);
    // With one api_key, `account` is a field like any other the service may send.
    expect(parseConfig({ ...base, api_key: acme.api_key, field_treatments: [{ stream: 'contacts', field: 'account', treatment: 'drop' }] }).config.field_treatments).toHaveLength(1);
  });

  it('gives each entry a config of its own: its key and rename, every other setting shared', () => {
    const { config } = parseConfig({ ...base, page_size: 50, accounts: [acme, { ...globex, account_renamed_from: 'Globex old' }] });
    const one = entryConfig(config, config.accounts?.[1] ?? acme);
    expect(one).toMatchObject({ api_key: globex.api_key, account_renamed_from: 'Globex old', page_size: 50, base_url: base.base_url });
    expect(one.accounts).toBeUndefined();
    // Its errors name the entry's api_key (the client's keySetting), not a top-level one.
    expect(one.keySetting).toBe('the api_key of the accounts entry "globex.mx_2"');
  });

  it.each([
    [{ ...base, api_key: acme.api_key, accounts: [acme] }, /give either api_key \(one account\) or accounts \(many accounts\), not both/],
    [{ ...base }, /api_key is required.*or accounts/],
    [{ ...base, accounts: [] }, /accounts must hold at least one/],
    [{ ...base, accounts: [acme, { ...globex, name: 'acme-br' }] }, /name "acme-br" is given twice \(entries 0 and 1\)/],
    [{ ...base, accounts: [{ ...acme, name: 'acme br' }] }, /accounts\.0\.name: name must be 1 to 64 characters of A-Z a-z 0-9 _ \. -/],
    [{ ...base, accounts: [{ ...acme, name: 'x'.repeat(65) }] }, /accounts\.0\.name/],
    [{ ...base, accounts: [{ name: 'a' }] }, /accounts\.0\.api_key: api_key is required/],
    [{ ...base, accounts: [{ name: 'a', api_key: 'nope' }] }, /accounts\.0\.api_key: api_key must look like/],
    [{ ...base, accounts: Array.from({ length: 1001 }, (_, i) => ({ name: `a${i}`, api_key: `k_live_${i}` })) }, /accounts holds at most 1000 entries/],
    [{ ...base, accounts: [acme], max_concurrent_accounts: 0 }, /max_concurrent_accounts must be an integer from 1 to 64/],
    [{ ...base, accounts: [acme, { ...globex, api_key: acme.api_key }] }, /accounts\.1\.api_key: entries 0 and 1 give the same api_key/],
    [{ ...base, accounts: [acme], account_renamed_from: 'Old' }, /account_renamed_from applies to one account: with accounts, give it inside the entry/],
  ])('refuses %j', (input, message) => {
    expect(errorOf(input).message).toMatch(message);
  });

  it('takes 1000 entries', () => {
    const accounts = Array.from({ length: 1000 }, (_, i) => ({ name: `a${i}`, api_key: `k_live_${i}` }));
    expect(parseConfig({ ...base, accounts }).config.accounts).toHaveLength(1000);
  });

  it('never prints a key of an entry, even one given in the wrong place or shape', () => {
    const secrets: string[] = [];
    const input = { ...base, accounts: [acme, globex.api_key, { name: 7, api_key: 'zed_live_s3cr3tZED' }] };
    const message = (thrown(() => parseUserConfig(input, { addSecret: (s) => secrets.push(s) }, {})) as Error).message;
    expect(message).toMatch(/accounts\.1/);
    for (const key of [acme.api_key, globex.api_key, 'zed_live_s3cr3tZED']) expect(message).not.toContain(key);
    expect(secrets).toEqual(expect.arrayContaining([acme.api_key, 'zed_live_s3cr3tZED']));
  });

  it('hands the secrets over as given and trimmed: api_key, hash_key, then each entry key, in order', () => {
    const secrets: string[] = [];
    const input = { ...base, api_key: ' top_live_s3cr3t ', hash_key: 'h4sh-s3cr3t-0123456789 ', accounts: [acme, 'no entry', { api_key: 7 }, { name: 'g', api_key: ' g_live_s3cr3t' }] };
    thrown(() => parseUserConfig(input, { addSecret: (s) => secrets.push(s) }, {}));
    expect(secrets).toEqual([' top_live_s3cr3t ', 'top_live_s3cr3t', 'h4sh-s3cr3t-0123456789 ', 'h4sh-s3cr3t-0123456789', acme.api_key, acme.api_key, ' g_live_s3cr3t', 'g_live_s3cr3t']);
  });
});
