import { describe, expect, it } from 'vitest';
import { TombstoneEmitter } from '../../src/engine/tombstones.js';
import { RecordPipeline } from '../../src/engine/pipeline.js';
import { runSync } from '../../src/engine/sync.js';
import { ConfigSchema } from '../../src/config/config.js';
import { AIRBYTE_DELETED_AT } from '../../src/protocols/airbyte/protocol.js';
import { recordJsonSchema } from '../../src/schemas/json-schema.js';
import { STREAMS, findDeletionLog, findStream, type DeletionLogStream, type StreamDefinition } from '../../src/streams.js';
import { RecordingSink } from '../helpers/recording-sink.js';
import { FakeApi, deletion } from '../helpers/fake-api.js';

const contacts = findStream('contacts') as StreamDefinition;
const LOG = findDeletionLog() as DeletionLogStream;
const propertiesOf = (s: StreamDefinition) => Object.keys(recordJsonSchema(s).properties as object);
/** The record pipeline (nothing to select or treat) in front of a recording emitter: the way tombstones go. */
const through = (sink: RecordingSink) => new RecordPipeline(sink, { config: { personal_data: 'keep', field_treatments: [] }, streams: [] });
/** The deletion log's position after a page with more to come. */
const NEXT = { cursor: 'c2', sync_watermark: '2026-03-01T00:00:00.000Z' };

describe('TombstoneEmitter', () => {
  it('turns a deletion into a tombstone of the deleted object: id, updated_at = deleted_at, the deleted-at column, other fields null', async () => {
    const emitter = new TombstoneEmitter(LOG, new Set(['contacts', 'conversations', 'deletions']), AIRBYTE_DELETED_AT, propertiesOf);
    const sink = new RecordingSink();
    await emitter.emit(through(sink), [deletion('d1', 'contact', 'c1', 5), deletion('d2', 'conversation', 'v1', 6)], 0, NEXT);
    const [tombstone] = sink.recordsOf('contacts');
    expect(tombstone).toMatchObject({ id: 'c1', updated_at: '2026-01-01T00:05:00.000Z', [AIRBYTE_DELETED_AT]: '2026-01-01T00:05:00.000Z', name: null, email: null });
    expect(Object.keys(tombstone ?? {}).sort()).toEqual([...propertiesOf(contacts), AIRBYTE_DELETED_AT].sort());
    expect(sink.recordsOf('conversations').map((r) => r.id)).toEqual(['v1']);
    expect(emitter.unknownTypesWarning()).toBeUndefined();
  });

  it('counts unknown object_type values (and records it cannot use) and reports them once, without guessing', async () => {
    const emitter = new TombstoneEmitter(LOG, new Set(['contacts', 'deletions']), AIRBYTE_DELETED_AT, propertiesOf);
    const sink = new RecordingSink();
    await emitter.emit(through(sink), [deletion('d1', 'widget', 'x', 1), deletion('d2', 'widget', 'y', 2), deletion('d3', null, 'z', 3)], 0, NEXT);
    await emitter.emit(through(sink), [{ id: 'd4', object_id: 'w', deleted_at: '2026-01-01T00:00:00.000Z' }, { id: 'd5', object_type: 'contact', deleted_at: '2026-01-01T00:00:00.000Z' }], 0, NEXT);
    await emitter.emit(through(sink), [deletion('d6', 'conversation', 'v1', 4)], 0, NEXT); // known type, stream not selected: silently nothing
    expect(sink.recordsOf('contacts')).toEqual([]);
    expect(sink.recordsOf('conversations')).toEqual([]);
    expect(emitter.unknownTypesWarning()).toBe(
      '4 deletion record(s) had an object_type the connector does not know ("widget": 2, null: 1, (missing): 1); ' +
        '1 deletion record(s) lacked object_id or deleted_at: they are kept in the deletions stream but no tombstone was emitted for them.',
    );
  });

  it('follows each batch of tombstones with a checkpoint of the target stream when asked to', async () => {
    const saved = { sync_watermark: '2026-01-01T00:00:00.000Z' };
    const emitter = new TombstoneEmitter(LOG, new Set(['contacts']), AIRBYTE_DELETED_AT, propertiesOf, (s) => (s.name === 'contacts' ? saved : undefined));
    const sink = new RecordingSink();
    await emitter.emit(through(sink), [deletion('d1', 'contact', 'c1', 5)], 0, NEXT);
    expect(sink.events.map((e) => e.kind)).toEqual(['records', 'state']);
    expect(sink.statesOf('contacts')).toEqual([{ ...saved, tombstones_through: NEXT }]);
  });

  it('never repeats a stream\'s checkpoint unchanged after its tombstones, however many pages the deletion log takes', async () => {
    // Each page of the log yields tombstones of both streams; the targets have saved states of their own.
    const service = new FakeApi();
    service.set('/v1/contacts', []).set('/v1/conversations', []).set('/v1/stage_events', []).set('/v1/pipeline_stages', []);
    service.set('/v1/deletions', [1, 2, 3].flatMap((n) => [deletion(`d${n}c`, 'contact', `c${n}`, n), deletion(`d${n}v`, 'conversation', `v${n}`, n)]));
    const sink = new RecordingSink();
    const config = ConfigSchema.parse({ api_key: 'sdr_live_test', base_url: 'http://127.0.0.1:1', page_size: 2, deletions_as_tombstones: true });
    const saved = { sync_watermark: '2026-01-01T00:00:00.000Z' };
    await runSync({
      config, client: service, sink, states: new Map([['contacts', saved], ['conversations', saved]]),
      streams: STREAMS.map((stream) => ({ stream, mode: stream.cursorField ? 'incremental' : 'full_refresh' })),
      tombstones: { column: AIRBYTE_DELETED_AT, properties: propertiesOf },
    });
    expect(sink.recordsOf('contacts').map((r) => r.id)).toEqual(['c1', 'c2', 'c3']);
    // Per stream, no STATE equal to its previous one with RECORDs of the stream between them.
    const last = new Map<string, { state: string; records: number }>();
    const repeats: string[] = [];
    for (const event of sink.events) {
      if (event.kind === 'records') {
        const seen = last.get(event.stream);
        if (seen) seen.records += event.records.length;
      } else if (event.kind === 'state') {
        const state = JSON.stringify(event.state);
        const seen = last.get(event.stream);
        if (seen && seen.state === state && seen.records > 0) repeats.push(`${event.stream}: ${state}`);
        last.set(event.stream, { state, records: 0 });
      }
    }
    expect(repeats).toEqual([]);
    // How far each batch reaches: the log's position after its page, the last page's its watermark alone.
    expect(sink.statesOf('contacts').slice(0, 3)).toEqual([
      { ...saved, tombstones_through: { cursor: 'c2', sync_watermark: service.watermark } },
      { ...saved, tombstones_through: { cursor: 'c4', sync_watermark: service.watermark } },
      { ...saved, tombstones_through: { sync_watermark: service.watermark } },
    ]);
  });

  it('runSync reads deletions first and reports unknown types once at the end', async () => {
    const service = new FakeApi();
    service.set('/v1/contacts', []).set('/v1/conversations', []).set('/v1/stage_events', []).set('/v1/pipeline_stages', []);
    service.set('/v1/deletions', [deletion('d1', 'contact', 'c1', 5), deletion('d2', 'widget', 'x', 6), deletion('d3', 'widget', 'y', 7)]);
    const sink = new RecordingSink();
    const config = ConfigSchema.parse({ api_key: 'sdr_live_test', base_url: 'http://127.0.0.1:1', page_size: 1, deletions_as_tombstones: true });
    await runSync({
      config, client: service, sink, states: new Map(),
      streams: STREAMS.map((stream) => ({ stream, mode: stream.cursorField ? 'incremental' : 'full_refresh' })),
      tombstones: { column: AIRBYTE_DELETED_AT, properties: propertiesOf },
    });
    expect(service.calls[0]?.path).toBe('/v1/deletions');
    expect(sink.recordsOf('contacts').map((r) => r.id)).toEqual(['c1']);
    const warnings = sink.logs('WARN').filter((w) => w.includes('object_type'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('"widget": 2');
  });
});
