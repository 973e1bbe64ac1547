/**
 * engine/accounts.ts and the per-account state shape of engine/state.ts (connector contract, "Many accounts");
 * the records of a run of many accounts, against nock.
 */
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseUserConfig } from '../../src/config/config.js';
import { AccountsRun, accountStates } from '../../src/engine/accounts.js';
import { parseStreamState } from '../../src/engine/state.js';
import { ConfigError } from '../../src/errors.js';
import { builtInSchema, recordJsonSchema, type JsonSchema } from '../../src/schemas/json-schema.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { thrown } from '../helpers/thrown.js';
import { RecordingSink } from '../helpers/recording-sink.js';
import { JSON_HEADERS, resetNock } from '../client/helpers.js';

const W = '2026-01-01T00:00:00.000Z';
const entries = [{ name: 'acme', api_key: 'a_live_1' }, { name: 'globex', api_key: 'g_live_2' }];

describe('the state of many accounts', () => {
  it('holds one state of one account per entry, each validated as such', () => {
    const state = parseStreamState('contacts', {
      accounts: { acme: { sync_watermark: W, account: { name: 'Acme', base_url: 'https://x' } }, globex: { resume: { cursor: 'c', sync_watermark: W } }, gone: {} },
    });
    expect(state).toEqual({ accounts: { acme: { sync_watermark: W, account: { name: 'Acme', base_url: 'https://x' } }, globex: { resume: { cursor: 'c', sync_watermark: W } }, gone: {} } });
  });

  it.each([
    [{ accounts: [] }, /"accounts" must be an object keyed by the names/],
    [{ accounts: {}, sync_watermark: W }, /holds both "accounts" and "sync_watermark"/],
    [{ accounts: { acme: { accounts: {} } } }, /the state of account "acme" holds "accounts" again/],
    [{ accounts: { acme: { sync_watermark: 'yesterday' } } }, /Invalid state for stream "contacts" of account "acme": sync_watermark must be an ISO 8601/],
  ])('refuses %j', (input, message) => {
    expect(() => parseStreamState('contacts', input)).toThrow(message);
  });

  it('keeps the state of an entry named __proto__ (the names\' pattern allows it) as an own field', () => {
    const saved = JSON.parse(`{"accounts": {"__proto__": {"sync_watermark": "${W}"}, "acme": {}}}`) as unknown;
    const state = parseStreamState('contacts', saved);
    expect(Object.keys(state.accounts ?? {})).toEqual(['__proto__', 'acme']);
    expect(JSON.parse(JSON.stringify(state))).toEqual(saved);
    const entries = [{ name: '__proto__', api_key: 'drk_live_aaaaaaaaaaaa' }, { name: 'acme', api_key: 'drk_live_bbbbbbbbbbbb' }];
    expect(accountStates(new Map([['contacts', state]]), entries).get('contacts')?.get('__proto__')).toEqual({ sync_watermark: W });
  });

  it('accountStates: the states by stream and entry; empty states skipped; a state of one account refused, with the shape to use', () => {
    const states = new Map([
      ['contacts', { accounts: { acme: { sync_watermark: W } } }],
      ['deletions', {}],
    ]);
    const byStream = accountStates(states, entries);
    expect([...byStream.keys()]).toEqual(['contacts']);
    expect(byStream.get('contacts')?.get('acme')).toEqual({ sync_watermark: W });
    const error = thrown(() => accountStates(new Map([['contacts', { sync_watermark: W, account: { name: 'Acme' } }]]), entries));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/The state of stream "contacts" is the state of one account \(of account "Acme"\).*\{"accounts": \{"acme": \{"sync_watermark": \.\.\.\}\}\}/);
  });
});

describe('records of many accounts, against nock', () => {
  beforeAll(() => nock.disableNetConnect());
  afterEach(() => resetNock());
  afterAll(() => nock.enableNetConnect());
  const origin = 'http://127.0.0.1:9';
  const contacts = findStream('contacts') as StreamDefinition;
  const ACME = { name: 'acme', api_key: 'drk_live_acmeacme0123456789' };

  /**
   * A run of contacts for `entries`, each key's /v1/me answering Acme and its one page holding `data`; `selection`
   * as a face gives it, `extra` config settings. The recording sink, after checking the run ended without error.
   */
  async function run(entries: readonly object[], data: readonly object[], selection: { fields?: Set<string>; excluded?: Set<string> } = {}, extra: Record<string, unknown> = {}): Promise<RecordingSink> {
    nock(origin).get('/v1/me').times(entries.length).reply(200, { account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 600, per_day: 100000 } }, JSON_HEADERS);
    const page = { data, next_cursor: null, has_more: false, sync_watermark: W };
    nock(origin).get('/v1/contacts').query(true).times(entries.length).reply(200, page, JSON_HEADERS);
    const { config } = parseUserConfig({ accounts: entries, base_url: origin, use_service_schema: false, max_concurrent_accounts: 1, ...extra }, { addSecret: () => undefined }, {});
    const sink = new RecordingSink();
    const result = await new AccountsRun(config).run({ streams: [{ stream: contacts, mode: 'incremental', ...selection }], states: new Map() }, sink);
    expect(result.error).toBeUndefined();
    return sink;
  }
  const warnings = (sink: RecordingSink): string[] => sink.events.flatMap((e) => (e.kind === 'log' && e.level === 'WARN' ? [e.message] : []));

  it("keep a field `account` the service sent, as service_account, and say so: the entry's name takes `account`", async () => {
    const sink = await run([ACME], [{ id: 'c1', updated_at: W, account: 'svc-7' }, { id: 'c2', updated_at: W }]);
    expect(sink.recordsOf('contacts')).toEqual([
      { id: 'c1', updated_at: W, account: 'acme', service_account: 'svc-7' },
      { id: 'c2', updated_at: W, account: 'acme' },
    ]);
    expect(warnings(sink)).toEqual([expect.stringMatching(/contacts: the service sent a field "account" of its own.*kept as "service_account"/)]);
  });

  it('two entries reading an account of the same name are both read, with one WARN naming both entries and the account', async () => {
    // Two keys of one account would read it twice.
    const sink = await run([ACME, { name: 'acme-again', api_key: 'drk_live_acmeagain0123456789' }], [{ id: 'c1', updated_at: W }]);
    expect(sink.recordsOf('contacts')).toHaveLength(2);
    expect(warnings(sink)).toEqual([expect.stringMatching(/^Account "acme-again": entries "acme" and "acme-again" read an account of the same name, "Acme".*Keep one entry/)]);
  });

  describe('a field `account` the service sent is moved to service_account before selection and treatments', () => {
    const sent = [{ id: 'c1', updated_at: W, account: 'ana.souza@example.com' }];

    it('left out of an Airbyte configured stream: not emitted', async () => {
      expect((await run([ACME], sent, { fields: new Set(['account', 'id', 'updated_at']) })).recordsOf('contacts')).toEqual([{ id: 'c1', updated_at: W, account: 'acme' }]);
    });

    it('deselected in a Singer catalog: not emitted', async () => {
      expect((await run([ACME], sent, { excluded: new Set(['service_account']) })).recordsOf('contacts')).toEqual([{ id: 'c1', updated_at: W, account: 'acme' }]);
    });

    it('dropped or hashed by field_treatments: its value never emitted', async () => {
      const drop = [{ stream: 'contacts', field: 'service_account', treatment: 'drop' }];
      expect((await run([ACME], sent, {}, { field_treatments: drop })).recordsOf('contacts')).toEqual([{ id: 'c1', updated_at: W, account: 'acme' }]);
      const hash = [{ stream: 'contacts', field: 'service_account', treatment: 'hash' }];
      const [hashed] = (await run([ACME], sent, {}, { field_treatments: hash, hash_key: 'a-long-enough-hash-key-0123456789' })).recordsOf('contacts') as Record<string, unknown>[];
      expect(hashed?.account).toBe('acme');
      expect(typeof hashed?.service_account).toBe('string');
      expect(JSON.stringify(hashed)).not.toContain('ana.souza');
    });
  });
});

describe('the schema of many accounts', () => {
  it("declares `account` as the entry's name, and a field `account` the service describes as service_account", () => {
    const contacts = findStream('contacts') as StreamDefinition;
    const base = structuredClone(builtInSchema(contacts));
    (base.properties as Record<string, JsonSchema>).account = { type: ['null', 'integer'], description: 'the service own' };
    const schema = recordJsonSchema(contacts, { base, accountField: true });
    const properties = schema.properties as Record<string, JsonSchema>;
    expect(Object.keys(properties)[0]).toBe('account');
    expect(properties.account).toMatchObject({ type: 'string' });
    expect(properties.service_account).toEqual({ type: ['null', 'integer'], description: 'the service own' });
    expect(schema.required).toEqual(['account', 'id', 'updated_at']);
  });
});
