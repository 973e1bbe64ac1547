import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { configJsonSchema, futureStartDate, parseConfig, type Config } from '../../src/config/config.js';
import { ROOT } from '../helpers/cli.js';
import { ConfigError } from '../../src/errors.js';

const good = { api_key: 'acme_live_s3cr3tKEY', base_url: 'https://api.example.com' };

function errorOf(input: unknown): ConfigError {
  try {
    parseConfig(input);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('parseConfig', () => {
  it('applies the documented defaults', () => {
    const { config, unknownKeys } = parseConfig({ ...good, extra: 1 });
    expect(config).toMatchObject({ page_size: 200, max_concurrent_requests: 2, request_timeout_seconds: 60, max_retries: 8, max_wait_seconds: 900, deletions_as_tombstones: false, use_service_schema: true });
    expect(unknownKeys).toEqual(['extra']);
  });

  it('accepts loopback over plain http and YYYY-MM-DD or zoned start dates', () => {
    for (const base_url of ['http://127.0.0.1:8080', 'http://localhost:1', 'http://[::1]:9']) expect(() => parseConfig({ ...good, base_url })).not.toThrow();
    for (const start_date of ['2024-01-01', '2024-01-01T00:00:00Z', '2024-01-01T03:00:00.123+03:00', '2024-01-01T03:00:00+0300', '2024-02-29T23:59:59.999999999-0530', '0001-01-01']) {
      expect(() => parseConfig({ ...good, start_date }), start_date).not.toThrow();
    }
  });

  it('takes an empty start_date as none, as its description says ("leave empty"): Airbyte\'s form sends "" for a cleared field', () => {
    for (const start_date of ['', '  ']) expect(parseConfig({ ...good, start_date }).config.start_date, JSON.stringify(start_date)).toBeUndefined();
  });

  // Every optional text setting, as Airbyte's form sends it once the user cleared it: none, as if not given.
  const entry = { name: 'acme', api_key: good.api_key };
  it.each([
    ['hash_key', { ...good, hash_key: '' }, (c: Config) => c.hash_key],
    ['account_renamed_from', { ...good, account_renamed_from: '' }, (c: Config) => c.account_renamed_from],
    ['account_renamed_from (spaces)', { ...good, account_renamed_from: '  ' }, (c: Config) => c.account_renamed_from],
    ['proxy_url', { ...good, proxy_url: '' }, (c: Config) => c.proxy_url],
    ['ca_certificate', { ...good, ca_certificate: '' }, (c: Config) => c.ca_certificate],
    ['api_key beside accounts', { base_url: good.base_url, api_key: '', accounts: [entry] }, (c: Config) => c.api_key],
    ['an entry\'s account_renamed_from', { base_url: good.base_url, accounts: [{ ...entry, account_renamed_from: '' }] }, (c: Config) => c.accounts?.[0]?.account_renamed_from],
  ])('takes an empty %s as not set', (_name, input, value) => {
    expect(value(parseConfig(input).config)).toBeUndefined();
  });

  it('an empty api_key without accounts is a missing one', () => {
    expect(errorOf({ ...good, api_key: '' }).message).toBe(errorOf({ base_url: good.base_url }).message);
  });

  it.each([
    [{ base_url: good.base_url }, 'api_key', /api_key is required/],
    [{ ...good, api_key: 42 }, 'api_key', /api_key/],
    [{ ...good, api_key: 'not-a-key' }, 'api_key', /api_key must look like <prefix>_live_<secret>/],
    [{ api_key: good.api_key }, 'base_url', /base_url is required/],
    [{ ...good, base_url: 'not a url' }, 'base_url', /base_url must be a URL/],
    [{ ...good, base_url: 'ftp://api.example.com' }, 'base_url', /base_url must start with https:\/\//],
    [{ ...good, base_url: 'http://api.example.com' }, 'base_url', /base_url must use https:\/\/ for a remote host/],
    [{ ...good, base_url: 'https://api.example.com/v1' }, 'base_url', /drop the trailing \/v1/],
    [{ ...good, page_size: 0 }, 'page_size', /page_size must be an integer from 1 to 200/],
    [{ ...good, page_size: 201 }, 'page_size', /page_size must be an integer from 1 to 200/],
    [{ ...good, page_size: '50' }, 'page_size', /page_size must be an integer from 1 to 200/],
    [{ ...good, page_size: 2.5 }, 'page_size', /page_size must be an integer from 1 to 200/],
    [{ ...good, max_concurrent_requests: 0 }, 'max_concurrent_requests', /max_concurrent_requests must be an integer from 1 to 16/],
    [{ ...good, max_concurrent_requests: 17 }, 'max_concurrent_requests', /max_concurrent_requests must be an integer from 1 to 16/],
    [{ ...good, request_timeout_seconds: 0 }, 'request_timeout_seconds', /request_timeout_seconds must be an integer from 1 to 600/],
    [{ ...good, max_retries: -1 }, 'max_retries', /max_retries must be an integer from 0 to 50/],
    [{ ...good, max_wait_seconds: 0 }, 'max_wait_seconds', /max_wait_seconds must be an integer from 1 to 86400/],
    [{ ...good, start_date: 'yesterday' }, 'start_date', /start_date must be YYYY-MM-DD or an ISO 8601 date-time with zone/],
    [{ ...good, start_date: '2024-02-30' }, 'start_date', /start_date must be YYYY-MM-DD/],
    [{ ...good, start_date: '2024-01-01T00:00:00' }, 'start_date', /start_date must be YYYY-MM-DD or an ISO 8601 date-time with zone/],
    [{ ...good, start_date: '0000-01-01' }, 'start_date', /start_date must be YYYY-MM-DD or an ISO 8601 date-time with zone.*\(got "0000-01-01"\): year 0000 does not exist/],
    [{ ...good, start_date: '2024-13-01T00:00:00Z' }, 'start_date', /\(got "2024-13-01T00:00:00Z"\): there is no month 13/],
    [{ ...good, start_date: '2023-02-29T00:00:00Z' }, 'start_date', /February 2023 has no day 29/],
    [{ ...good, start_date: '2024-01-01T24:00:00Z' }, 'start_date', /24:00:00 is not a time of day/],
    [{ ...good, start_date: '2024-01-01T00:00:00+2400' }, 'start_date', /\+2400 is not a UTC offset/],
    [{ ...good, start_date: '2024-01-01T00:00:00+02' }, 'start_date', /start_date must be YYYY-MM-DD or an ISO 8601 date-time with zone/],
    [{ ...good, deletions_as_tombstones: 'yes' }, 'deletions_as_tombstones', /deletions_as_tombstones must be true or false/],
    [[], 'config', /config must be a JSON object/],
    ['x', 'config', /config must be a JSON object/],
    [null, 'config', /config must be a JSON object/],
  ])('rejects %j naming the field %s', (input, field, message) => {
    const err = errorOf(input);
    expect(err.fields).toEqual([field]);
    expect(err.field).toBe(field);
    expect(err.message).toMatch(message);
  });

  it('names every bad field at once', () => {
    expect(errorOf({ api_key: 'x', page_size: 0, start_date: 'soon' }).fields).toEqual(['api_key', 'base_url', 'start_date', 'page_size']);
  });

  it('echoes a wrong value with its JSON type, never the value of a secret key', () => {
    expect(errorOf({ ...good, page_size: '200' }).message).toBe('Invalid config: page_size must be an integer from 1 to 200 (got the string "200").');
    expect(errorOf({ ...good, page_size: 500, max_retries: null }).message).toBe(
      'Invalid config: page_size must be an integer from 1 to 200 (got the number 500); max_retries must be an integer from 0 to 50 (got null).',
    );
    expect(errorOf({ ...good, deletions_as_tombstones: 'yes', personal_data: 'hsh', field_treatments: { contacts: 'drop' } }).message).toBe(
      'Invalid config: deletions_as_tombstones must be true or false (got the string "yes"); personal_data must be one of keep, hash, drop (got the string "hsh"); ' +
        'field_treatments must be a list of {stream, field, treatment} (got an object: {"contacts":"drop"}).',
    );
    expect(errorOf({ ...good, field_treatments: [{ stream: 'contacts', field: 3, treatment: 'drop' }] }).message).toContain('field must be a field name (got the number 3)');
    // A value whose text is part of a number in the message (0 in 200) is still said.
    expect(errorOf({ ...good, page_size: 0 }).message).toBe('Invalid config: page_size must be an integer from 1 to 200 (got the number 0).');
    // Secrets: the type of a wrong-typed value, nothing of the value.
    const secret = errorOf({ ...good, api_key: 123456789, hash_key: ['k3y-s3cr3t-v4lue'], proxy_url: 98765 }).message;
    expect(secret).toContain('api_key must be a string: the account API key, <prefix>_live_<secret> (got a number)');
    expect(secret).toContain('hash_key must be a string (got an array)');
    expect(secret).toContain('proxy_url must be a string: http://[user:password@]host:port (got a number)');
    for (const value of ['123456789', 'k3y-s3cr3t-v4lue', '98765']) expect(secret).not.toContain(value);
    expect(errorOf({ ...good, hash_key: 'short-s3cret' }).message).not.toContain('short-s3cret');
  });

  it('says a number too large to be read is one (not "null", as JSON writes Infinity), and a problem found twice once', () => {
    // What JSON.parse makes of 1e400, and of 12345678901234567890 (an integer too large for the range check and the integer check).
    expect(errorOf({ ...good, page_size: Infinity }).message).toBe('Invalid config: page_size must be an integer from 1 to 200 (got a number too large to be read).');
    expect(errorOf({ ...good, start_date: -Infinity }).message).toContain('start_date must be a string: YYYY-MM-DD or an ISO 8601 date-time with zone (got a number too large to be read)');
    expect(errorOf({ ...good, max_retries: 12345678901234567890 }).message).toBe(
      'Invalid config: max_retries must be an integer from 0 to 50 (got the number 12345678901234567000).',
    );
  });

  it("says a secret holding Airbyte's mask (**********) is the mask, not the secret: a key to enter again", () => {
    const mask = '**********';
    for (const [key, extra] of [
      ['api_key', {}],
      ['hash_key', { personal_data: 'hash' }],
      ['proxy_url', {}],
    ] as const) {
      const error = errorOf({ ...good, ...extra, [key]: mask });
      expect(error.message, key).toMatch(new RegExp(`^Invalid config: ${key} holds only asterisks, the mask Airbyte shows in place of a saved secret, not the secret itself: enter .* again in the source's settings\\.$`));
      expect(error.fields).toEqual([key]);
    }
    const entries = errorOf({ base_url: good.base_url, accounts: [{ name: 'a', api_key: good.api_key }, { name: 'b', api_key: ` ${mask} ` }] });
    expect(entries.message).toMatch(/^Invalid config: accounts\.1\.api_key holds only asterisks, the mask Airbyte shows in place of a saved secret/);
    expect(entries.fields).toEqual(['accounts.1.api_key']);
  });

  it('never repeats the api_key in an error message', () => {
    const { message } = errorOf({ api_key: 'canary_live_CANARY123secret', base_url: 'nope' });
    expect(message).not.toContain('CANARY123secret');
  });

  it('never repeats the password of a base_url it cannot read as a URL', () => {
    // A password with a "/" (base64) or a typo elsewhere makes the address unreadable; the message quotes it without its credentials.
    for (const base_url of ['https://gate:pa/ss0rdS3CRET@api.example.com', 'https://gate:pass0rdS3CRET@api example.com', 'https://p@ss:w0rdS3CRET@api.example .com']) {
      const { message } = errorOf({ ...good, base_url });
      expect(message).toMatch(/base_url must be a URL/);
      expect(message).not.toContain('S3CRET');
      expect(message).toContain('https://***@');
    }
  });
});

describe('futureStartDate', () => {
  const now = Date.UTC(2026, 10, 21, 22, 0);
  it('accepts a start date up to a day ahead (users ahead of UTC typing today), refuses more', () => {
    expect(futureStartDate(undefined, now)).toBeUndefined();
    expect(futureStartDate('2026-11-22', now)).toBeUndefined(); // 2 h ahead: today in UTC+10
    expect(futureStartDate('2026-11-22T21:59:00Z', now)).toBeUndefined();
    expect(futureStartDate('2026-11-23T08:00:00+1000', now)).toBeUndefined(); // 22:00Z, exactly a day ahead
    expect(futureStartDate('2026-11-23', now)).toMatch(/^start_date is in the future \(2026-11-23, more than a day ahead of now, 2026-11-21T22:00:00.000Z\)/);
  });
});

describe('configJsonSchema', () => {
  it('the SPEC (as checked in) takes "" for every optional text setting, as the config does', () => {
    const spec = JSON.parse(readFileSync(join(ROOT, 'catalog', 'spec.json'), 'utf8')) as { connectionSpecification: { properties: Record<string, { type?: string; enum?: unknown[]; items?: { properties: Record<string, { type?: string }>; required?: string[] } }> } };
    const validate = new Ajv({ strict: false }).compile(spec.connectionSpecification);
    const properties = spec.connectionSpecification.properties;
    const entry = { name: 'acme', api_key: good.api_key };
    const optional = Object.entries(properties).filter(([name, p]) => p.type === 'string' && p.enum === undefined && name !== 'base_url').map(([name]) => name);
    expect(optional.sort()).toEqual(['account_renamed_from', 'api_key', 'ca_certificate', 'hash_key', 'proxy_url', 'start_date']);
    for (const name of optional) {
      const config = name === 'api_key' ? { base_url: good.base_url, api_key: '', accounts: [entry] } : { ...good, [name]: '' };
      expect(validate(config), `${name}: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(() => parseConfig(config), name).not.toThrow();
    }
    const items = properties.accounts?.items;
    const entryOptional = Object.entries(items?.properties ?? {}).filter(([name, p]) => p.type === 'string' && !(items?.required ?? []).includes(name)).map(([name]) => name);
    expect(entryOptional).toEqual(['account_renamed_from']);
    const withEntry = { base_url: good.base_url, accounts: [{ ...entry, account_renamed_from: '' }] };
    expect(validate(withEntry), JSON.stringify(validate.errors)).toBe(true);
  });

  it('marks the key secret and orders every property', () => {
    const schema = configJsonSchema() as { required: string[]; properties: Record<string, { order?: number; airbyte_secret?: boolean; description?: string }> };
    // api_key or accounts (many accounts): the config's check says which is missing.
    expect(schema.required).toEqual(['base_url']);
    expect(schema.properties.api_key?.airbyte_secret).toBe(true);
    const orders = Object.values(schema.properties).map((p) => p.order);
    expect(new Set(orders).size).toBe(orders.length);
    for (const prop of Object.values(schema.properties)) expect(prop.description).toBeTruthy();
  });

  it('shows the key in Airbyte\'s form, not under its collapsed "Optional fields"', () => {
    // api_key is optional in the schema only because accounts may replace it; Airbyte's
    // form folds every optional field away unless it says always_show.
    const schema = configJsonSchema() as { required: string[]; properties: Record<string, { always_show?: boolean }> };
    expect(schema.required).not.toContain('api_key');
    expect(schema.properties.api_key?.always_show).toBe(true);
  });

  it('says every pattern in words (pattern_descriptor, which Airbyte\'s form shows beside the field), not only as a regex', () => {
    const patterns: string[] = [];
    const visit = (node: unknown, at: string): void => {
      if (typeof node !== 'object' || node === null) return;
      const prop = node as Record<string, unknown>;
      if (typeof prop.pattern === 'string') {
        patterns.push(at);
        expect(prop.pattern_descriptor, at).toEqual(expect.any(String));
      }
      for (const [key, value] of Object.entries(prop)) visit(value, `${at}.${key}`);
    };
    visit(configJsonSchema(), 'spec');
    expect(patterns.length).toBeGreaterThan(0);
  });
});
