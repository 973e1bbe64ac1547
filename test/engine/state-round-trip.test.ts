/**
 * A state a run writes is a state the next run reads: what the service may
 * send (the API description's types) and the state's own check agree. Runs
 * through the real client (nock), as the service's answers reach it (the
 * account's name: session.test.ts).
 */
import nock from 'nock';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { readStream } from '../../src/engine/reader.js';
import { parseStreamState } from '../../src/engine/state.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { RecordingSink } from '../helpers/recording-sink.js';
import { BASE, JSON_HEADERS, harness, resetNock } from '../client/helpers.js';

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

it('what the records carried and the tombstones a stream missed are read back as written; another shape is refused naming the field', () => {
  const written = {
    sync_watermark: '2026-03-01T10:00:00.000Z',
    account: { name: 'Acme' },
    emitted: { only: ['email', 'name'], treated: { phone: 'hash' } },
    tombstones_missed: { contacts: '2026-02-01T10:00:00.000Z' },
  };
  expect(parseStreamState('deletions', JSON.parse(JSON.stringify(written)))).toEqual(written);
  expect(parseStreamState('contacts', { accounts: { 'acme-br': written } })).toEqual({ accounts: { 'acme-br': written } });
  expect(() => parseStreamState('contacts', { ...written, emitted: { only: 'email' } })).toThrow(/Invalid state for stream "contacts": emitted\.only /);
  expect(() => parseStreamState('deletions', { ...written, tombstones_missed: { contacts: 'yesterday' } })).toThrow(/tombstones_missed\.contacts must be an ISO 8601 date-time/);
});
