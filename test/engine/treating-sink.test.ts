import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.js';
import { RecordPipeline } from '../../src/engine/pipeline.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { RecordingSink } from '../helpers/recording-sink.js';

const contacts = findStream('contacts') as StreamDefinition;
const base = { api_key: 'drk_live_test', base_url: 'http://127.0.0.1:9' };
const KEY = 'engine-test-key-0123456789';

describe('the record pipeline selects, treats and checks records before the face', () => {
  it('nothing to select or treat: the page reaches the face as read', async () => {
    const face = new RecordingSink();
    const pipeline = new RecordPipeline(face, { config: parseConfig(base).config, streams: [{ stream: contacts }] });
    const record = { id: 'c1', updated_at: '2024-01-01T00:00:00.000Z', email: 'A@B.CO' };
    await pipeline.records(contacts, [record], 1);
    expect(face.recordsOf('contacts')).toEqual([{ id: 'c1', updated_at: '2024-01-01T00:00:00.000Z', email: 'A@B.CO' }]);
  });

  it('selects before it treats, checks what goes on, and counts records and tombstones into the report', async () => {
    const face = new RecordingSink();
    const { config } = parseConfig({ ...base, hash_key: KEY, field_treatments: [{ stream: 'contacts', field: 'email', treatment: 'hash' }] });
    const counts = new Map<string, number>();
    const pipeline = new RecordPipeline(face, { config, streams: [{ stream: contacts, fields: new Set(['email', 'phone']) }], counts });
    await pipeline.streamStarted(contacts);
    // phone is not a string: the check names it without quoting the (personal) value.
    await pipeline.records(contacts, [{ id: 'c1', updated_at: '2024-01-01T00:00:00.000Z', email: 'A@B.CO', name: 'Ana', phone: 5551234 }], 1);
    await pipeline.tombstones(contacts, [{ id: 'c2', updated_at: '2024-01-02T00:00:00.000Z', email: null, name: null, _ab_cdc_deleted_at: '2024-01-02T00:00:00.000Z' }], 1);
    expect(face.recordsOf('contacts')).toEqual([
      { id: 'c1', updated_at: '2024-01-01T00:00:00.000Z', email: createHmac('sha256', KEY).update('a@b.co').digest('hex'), phone: 5551234 },
      { id: 'c2', updated_at: '2024-01-02T00:00:00.000Z', email: null, _ab_cdc_deleted_at: '2024-01-02T00:00:00.000Z' },
    ]);
    expect(counts.get('contacts')).toBe(2);
    const warning = pipeline.misfits(contacts) ?? '';
    expect(warning).toMatch(/^contacts: a value does not fit the declared type; .*phone is declared string or null but got an integer \(its value not shown: personal data in record c1\)/);
    expect(warning).not.toContain('5551234');
  });

  it('records and tombstones reach the face treated; ids and cursors untouched', async () => {
    const face = new RecordingSink();
    const { config } = parseConfig({ ...base, personal_data: 'hash', hash_key: KEY, field_treatments: [{ stream: 'contacts', field: 'job_title', treatment: 'drop' }] });
    const sink = new RecordPipeline(face, { config, streams: [{ stream: contacts }] });
    await sink.records(contacts, [{ id: 'c1', updated_at: '2024-01-01T00:00:00.000Z', email: 'A@B.CO', job_title: 'CEO', name: null }], 1);
    // A tombstone: every declared field null, the dropped one included (the face declared it).
    await sink.tombstones(contacts, [{ id: 'c2', updated_at: '2024-01-02T00:00:00.000Z', email: null, job_title: null, _ab_cdc_deleted_at: '2024-01-02T00:00:00.000Z' }], 1);
    const records = face.events.flatMap((e) => (e.kind === 'records' ? e.records : []));
    expect(records).toEqual([
      { id: 'c1', updated_at: '2024-01-01T00:00:00.000Z', email: createHmac('sha256', KEY).update('a@b.co').digest('hex'), name: null },
      { id: 'c2', updated_at: '2024-01-02T00:00:00.000Z', email: null, _ab_cdc_deleted_at: '2024-01-02T00:00:00.000Z' },
    ]);
  });
});
