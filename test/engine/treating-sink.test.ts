import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.js';
import { treatingSink } from '../../src/engine/treating-sink.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { RecordingSink } from '../helpers/recording-sink.js';

const contacts = findStream('contacts') as StreamDefinition;
const base = { api_key: 'drk_live_test', base_url: 'http://127.0.0.1:9' };
const KEY = 'engine-test-key-0123456789';

describe('the engine treats records before the face', () => {
  it('nothing to treat: the face\'s own sink, nothing in between (the fast path costs nothing)', () => {
    const face = new RecordingSink();
    expect(treatingSink(face, parseConfig(base).config, [{ stream: contacts }])).toBe(face);
  });

  it('records and tombstones reach the face treated; ids and cursors untouched', async () => {
    const face = new RecordingSink();
    const { config } = parseConfig({ ...base, personal_data: 'hash', hash_key: KEY, field_treatments: [{ stream: 'contacts', field: 'job_title', treatment: 'drop' }] });
    const sink = treatingSink(face, config, [{ stream: contacts }]);
    await sink.records(contacts, [{ id: 'c1', updated_at: '2024-01-01T00:00:00.000Z', email: 'A@B.CO', job_title: 'CEO', name: null }], 1);
    // A tombstone: every declared field null, the dropped one included (the face declared it).
    await sink.records(contacts, [{ id: 'c2', updated_at: '2024-01-02T00:00:00.000Z', email: null, job_title: null, _ab_cdc_deleted_at: '2024-01-02T00:00:00.000Z' }], 1);
    const records = face.events.flatMap((e) => (e.kind === 'records' ? e.records : []));
    expect(records).toEqual([
      { id: 'c1', updated_at: '2024-01-01T00:00:00.000Z', email: createHmac('sha256', KEY).update('a@b.co').digest('hex'), name: null },
      { id: 'c2', updated_at: '2024-01-02T00:00:00.000Z', email: null, _ab_cdc_deleted_at: '2024-01-02T00:00:00.000Z' },
    ]);
  });
});
