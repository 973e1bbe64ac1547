/**
 * A state a run writes is a state the next run reads: what the service may
 * send (the API description's types) and the state's own check agree. Runs
 * through the real client (nock), as the service's answers reach it.
 */
import nock from 'nock';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { parseUserConfig } from '../../src/config/config.js';
import { readStream } from '../../src/engine/reader.js';
import { SyncSession } from '../../src/engine/session.js';
import { parseStreamState } from '../../src/engine/state.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { RecordingSink } from '../helpers/recording-sink.js';
import { BASE, JSON_HEADERS, harness, resetNock } from '../client/helpers.js';

/** A loopback origin: a config's plain http:// base_url must be one. */
const LOOPBACK = 'http://127.0.0.1:9';

const contacts = findStream('contacts') as StreamDefinition;

beforeAll(() => nock.disableNetConnect());
afterEach(() => resetNock());
afterAll(() => nock.enableNetConnect());

/** The last state the run wrote of contacts, as the next run gets it (JSON). */
const lastState = (sink: RecordingSink): unknown => JSON.parse(JSON.stringify(sink.statesOf('contacts').at(-1))) as unknown;

it('a sync_watermark with more than nine fraction digits', async () => {
  const watermark = '2026-03-01T10:00:00.1234567890Z';
  nock(BASE)
    .get('/v1/contacts')
    .query(true)
    .reply(200, { data: [{ id: 'c1', updated_at: '2026-03-01T09:00:00.000Z' }], next_cursor: null, has_more: false, sync_watermark: watermark }, JSON_HEADERS);
  const { client } = harness();
  const sink = new RecordingSink();
  try {
    expect(await readStream(contacts, { client, sink, pageSize: 200, startDate: undefined, state: {} })).toEqual({ kind: 'complete', state: { sync_watermark: watermark } });
  } finally {
    await client.close();
  }
  expect(parseStreamState('contacts', lastState(sink))).toMatchObject({ sync_watermark: watermark });
});

it('an account whose /v1/me name is empty', async () => {
  nock(LOOPBACK).get('/v1/me').reply(200, { account_name: '', scopes: ['data:read'], limits: { per_minute: 600, per_day: 100000 } }, JSON_HEADERS);
  nock(LOOPBACK)
    .get('/v1/contacts')
    .query(true)
    .reply(200, { data: [{ id: 'c1', updated_at: '2026-01-01T00:00:00.000Z' }], next_cursor: null, has_more: false, sync_watermark: '2026-03-01T00:00:00.000Z' }, JSON_HEADERS);
  const { config } = parseUserConfig({ api_key: 'drk_live_emptyname012345', base_url: LOOPBACK, use_service_schema: false }, { addSecret: () => undefined }, {});
  const sink = new RecordingSink();
  const session = await SyncSession.open(config, () => undefined);
  try {
    await session.accountFor(new Map(), [{ stream: contacts, mode: 'incremental' }]);
    const result = await session.run({ streams: [{ stream: contacts, mode: 'incremental' }], states: new Map() }, sink);
    expect(result.failures).toEqual([]);
  } finally {
    await session.close();
  }
  const written = lastState(sink);
  expect(written).toMatchObject({ sync_watermark: '2026-03-01T00:00:00.000Z', account: { name: '' } });
  expect(parseStreamState('contacts', written)).toMatchObject({ account: { name: '' } });
});
