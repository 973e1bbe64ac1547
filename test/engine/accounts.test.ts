/** engine/accounts.ts and the per-account state shape of engine/state.ts (connector contract, "Many accounts"). */
import { describe, expect, it } from 'vitest';
import { accountStates } from '../../src/engine/accounts.js';
import { parseStreamState } from '../../src/engine/state.js';
import { ConfigError } from '../../src/errors.js';
import { thrown } from '../helpers/thrown.js';

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
