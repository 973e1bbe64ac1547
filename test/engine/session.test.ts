/**
 * The sync session (engine/session.ts) on the real client, against nock:
 * a rate-limit wait is told on the stream that waits (Airbyte's RUNNING
 * status with quota_reset), whatever the path of the base_url before /v1;
 * the state a run binds to its account is one the next run reads.
 */
import nock from 'nock';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { parseUserConfig } from '../../src/config/config.js';
import { SyncSession } from '../../src/engine/session.js';
import { parseStreamState } from '../../src/engine/state.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { RecordingSink } from '../helpers/recording-sink.js';
import { JSON_HEADERS, PROBLEM_HEADERS, problem, resetNock } from '../client/helpers.js';

const contacts = findStream('contacts') as StreamDefinition;
/** Loopback: a config's plain http:// base_url must be. */
const ORIGIN = 'http://127.0.0.1:9';
const PAGE = { data: [{ id: 'c1', updated_at: '2026-01-01T00:00:00.000Z' }], next_cursor: null, has_more: false, sync_watermark: '2026-03-01T00:00:00.000Z' };

beforeAll(() => nock.disableNetConnect());
afterEach(() => resetNock());
afterAll(() => nock.enableNetConnect());

/** One incremental sync of contacts from `base_url` (its answers set up on nock before): what the session gave its sink. */
async function syncContacts(baseUrl: string, apiKey: string): Promise<RecordingSink> {
  const { config } = parseUserConfig({ api_key: apiKey, base_url: baseUrl, use_service_schema: false }, { addSecret: () => undefined }, {});
  const sink = new RecordingSink();
  const session = await SyncSession.open(config, () => undefined);
  try {
    await session.accountFor(new Map(), [{ stream: contacts, mode: 'incremental' }]);
    const result = await session.run({ streams: [{ stream: contacts, mode: 'incremental' }], states: new Map() }, sink);
    expect(result.failures).toEqual([]);
  } finally {
    await session.close();
  }
  return sink;
}

const me = (accountName: string) => ({ account_name: accountName, scopes: ['data:read'], limits: { per_minute: 600, per_day: 100000 } });

it.each(['', '/data-read'])('a 429 on a list is told as a rate-limit wait of its stream (base_url path "%s")', async (prefix) => {
  nock(ORIGIN).get(`${prefix}/v1/me`).reply(200, me('Acme'), JSON_HEADERS);
  nock(ORIGIN).get(`${prefix}/v1/contacts`).query(true).reply(429, problem(429, 'Too many requests', 'slow down'), { ...PROBLEM_HEADERS, 'retry-after': '1' });
  nock(ORIGIN).get(`${prefix}/v1/contacts`).query(true).reply(200, PAGE, JSON_HEADERS);
  const sink = await syncContacts(`${ORIGIN}${prefix}`, 'drk_live_prefixtest0123456789');
  expect(sink.recordsOf('contacts')).toHaveLength(1);
  expect(sink.events.filter((e) => e.kind === 'running' && e.quotaReset !== undefined)).toHaveLength(1);
});

it('a decimal RateLimit-Reset is told as a quota_reset of whole ms (the protocol\'s integer), not before the reset', async () => {
  const first = { ...PAGE, next_cursor: 'p2', has_more: true };
  nock(ORIGIN).get('/v1/me').reply(200, me('Acme'), JSON_HEADERS);
  nock(ORIGIN).get('/v1/contacts').query(true).reply(200, first, { ...JSON_HEADERS, 'ratelimit-limit': '60', 'ratelimit-remaining': '0', 'ratelimit-reset': '0.5005' });
  nock(ORIGIN).get('/v1/contacts').query(true).reply(200, { ...PAGE, data: [{ id: 'c2', updated_at: '2026-01-01T00:00:00.000Z' }] }, JSON_HEADERS);
  // A first read of two pages reads again from its watermark what changed meanwhile: nothing.
  nock(ORIGIN).get('/v1/contacts').query({ updated_since: PAGE.sync_watermark, limit: '200' }).reply(200, { ...PAGE, data: [] }, JSON_HEADERS);
  const sink = await syncContacts(ORIGIN, 'drk_live_decimalreset0123456');
  expect(sink.recordsOf('contacts')).toHaveLength(2);
  const told = sink.events.flatMap((e) => (e.kind === 'running' && e.quotaReset !== undefined ? [e.quotaReset] : []));
  expect(told).toHaveLength(1);
  expect(Number.isInteger(told[0])).toBe(true);
});

it('a state bound to an account whose /v1/me name is empty is one the next run reads', async () => {
  nock(ORIGIN).get('/v1/me').reply(200, me(''), JSON_HEADERS);
  nock(ORIGIN).get('/v1/contacts').query(true).reply(200, PAGE, JSON_HEADERS);
  const sink = await syncContacts(ORIGIN, 'drk_live_emptyname012345');
  const written = JSON.parse(JSON.stringify(sink.statesOf('contacts').at(-1))) as unknown;
  expect(written).toMatchObject({ sync_watermark: PAGE.sync_watermark, account: { name: '' } });
  expect(parseStreamState('contacts', written)).toMatchObject({ account: { name: '' } });
});
