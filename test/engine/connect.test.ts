/**
 * The client options of short, interactive commands (check, discover) against
 * those of a sync: what each command's client is built with.
 */
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigSchema, entryConfig, parseConfig, type Config } from '../../src/config/config.js';
import { clientFromConfig, interactivePatience, verifyAccount } from '../../src/engine/connect.js';
import { BASE, PROBLEM_HEADERS, failure, harness, problem, resetNock } from '../client/helpers.js';

beforeAll(() => nock.disableNetConnect());
afterEach(() => resetNock());
afterAll(() => nock.enableNetConnect());

const config = ConfigSchema.parse({ api_key: 'drk_live_test', base_url: 'http://127.0.0.1:9', max_retries: 8, max_wait_seconds: 900 });

describe('interactivePatience (check, discover)', () => {
  it('few retries, short waits, one connection, no word of a saved state', () => {
    expect(interactivePatience(config)).toMatchObject({ maxRetries: 2, maxWaitSeconds: 30, retryMaxMs: 5000, stopNote: '', maxConcurrent: 1 });
    expect(interactivePatience({ ...config, max_retries: 0, max_wait_seconds: 5 })).toMatchObject({ maxRetries: 0, maxWaitSeconds: 5 });
  });
});

describe('the retry limit a check names', () => {
  /** The error of GET /v1/me answering 500 every time, through a client with `config`'s interactive options. */
  async function meFailure(maxRetries: number): Promise<Error> {
    nock(BASE).persist().get('/v1/me').reply(500, problem(500, 'Internal Server Error', 'x'), PROBLEM_HEADERS);
    const { retryBaseMs: _base, retryMaxMs: _max, ...patience } = interactivePatience({ ...config, max_retries: maxRetries });
    const h = harness(patience);
    try {
      return await failure(() => h.client.me());
    } finally {
      await h.client.close();
    }
  }

  it('max_retries 8: 3 attempts, the most check and discover make, and the 8 said to be for syncs', async () => {
    const err = await meFailure(8);
    expect(err.message).toMatch(
      /did not succeed in 3 attempts over \d+ ms \(1 \+ 2 retries, the most check and discover make; max_retries 8 applies to syncs\); last cause: HTTP 500/,
    );
    expect(err.message).not.toContain('(max_retries 2)');
  });

  it('max_retries 1 (fewer than the cap): the config is the limit, and says so', async () => {
    expect(interactivePatience({ ...config, max_retries: 1 }).retryLimit).toBeUndefined();
    expect((await meFailure(1)).message).toMatch(/did not succeed in 2 attempts over \d+ ms \(1 \+ max_retries 1\); last cause/);
  });
});

describe('the setting a refused key names', () => {
  /** verifyAccount's message with /v1/me answering 401, through the client clientFromConfig builds of `one`. */
  async function refusedWith(one: Config): Promise<string> {
    nock(BASE).get('/v1/me').reply(401, problem(401, 'Unauthorized', 'Revoked.'), PROBLEM_HEADERS);
    const client = clientFromConfig(one);
    try {
      return (await verifyAccount(client, one)).message;
    } finally {
      await client.close();
    }
  }

  it('api_key for a config of one key; the entry\'s api_key for an entry of accounts', async () => {
    expect(await refusedWith({ ...config, base_url: BASE })).toMatch(/Check api_key in the config .*put it in api_key\./);
    const many = parseConfig({ base_url: 'https://api.example.com', accounts: [{ name: 'acme-br', api_key: 'acme_live_one' }, { name: 'acme-mx', api_key: 'acme_live_two' }] }).config;
    const message = await refusedWith({ ...entryConfig(many, many.accounts?.[1] as NonNullable<Config['accounts']>[number]), base_url: BASE });
    expect(message).toMatch(/Check the api_key of the accounts entry "acme-mx" in the config .*put it in the api_key of the accounts entry "acme-mx"\./);
    expect(message).not.toContain('Check api_key');
  });
});
