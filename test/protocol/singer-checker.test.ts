/**
 * The Singer checker (test/helpers/protocol/singer.ts): a well-formed tap
 * output passes with no warning, and each rule, broken once, fails (or warns)
 * naming the line and the rule.
 */
import { describe, expect, it } from 'vitest';
import { checkSinger } from '../helpers/protocol/singer.js';

type Message = Record<string, unknown>;
const jsonl = (messages: readonly (Message | string)[]): string => messages.map((m) => (typeof m === 'string' ? m : JSON.stringify(m))).join('\n') + '\n';
const jsonSchema = {
  type: 'object',
  properties: { id: { type: 'integer' }, updated_at: { type: ['null', 'string'], format: 'date-time' }, score: { type: ['null', 'integer'] } },
};
const schema = (extra: Message = {}): Message => ({ type: 'SCHEMA', stream: 'contacts', schema: jsonSchema, key_properties: ['id'], bookmark_properties: ['updated_at'], ...extra });
const record = (data: Message, extra: Message = {}): Message => ({ type: 'RECORD', stream: 'contacts', record: data, time_extracted: '2026-01-02T03:04:05.678Z', ...extra });
const state = (value: unknown): Message => ({ type: 'STATE', value });
const bookmarks = { bookmarks: { contacts: { sync_watermark: '2026-01-02T03:04:05.678Z' } }, currently_syncing: null };
const good = (): Message[] => [schema(), record({ id: 1, updated_at: '2026-01-01T00:00:00Z', score: null }), record({ id: 2, updated_at: null }), state(bookmarks)];

const errorsOf = (messages: readonly (Message | string)[]): string[] => checkSinger(jsonl(messages)).errors;

describe('the Singer checker', () => {
  it('passes a well-formed tap output, with its counts and no warning', () => {
    expect(checkSinger(jsonl(good()))).toEqual({ n_errors: 0, errors: [], counts: { SCHEMA: 1, RECORD: 2, STATE: 1 }, warnings: [] });
  });

  it('accepts a resume checkpoint, a stream being synced, blank lines and lower-case types', () => {
    const resume = { bookmarks: { contacts: { resume: { cursor: 'c-1', sync_watermark: '2026-01-02T03:04:05Z' } } }, currently_syncing: 'contacts' };
    expect(errorsOf([...good(), '', { ...state(resume), type: 'state' }])).toEqual([]);
  });

  it.each<[string, (Message | string)[], RegExp]>([
    ['a line that is not JSON', [...good(), 'INFO starting'], /^line 5: not JSON \(/],
    ['a line that is not an object', [...good(), '"STATE"'], /^line 5: not a JSON object$/],
    ['an unknown type', [...good(), { type: 'METRIC' }], /^line 5: unknown or missing type "METRIC"$/],
    ['a missing type', [...good(), { stream: 'contacts' }], /^line 5: unknown or missing type undefined$/],
    ['a SCHEMA without key_properties', [{ type: 'SCHEMA', stream: 'contacts', schema: jsonSchema }], /^line 1: SCHEMA missing key_properties$/],
    ['a SCHEMA without schema', [{ type: 'SCHEMA', stream: 'contacts', key_properties: [] }], /^line 1: SCHEMA missing schema$/],
    ['key_properties that are not a list', [schema({ key_properties: 'id' })], /^line 1: key_properties must be a list of property names$/],
    ['bookmark_properties that are not a list', [schema({ bookmark_properties: 'updated_at' })], /^line 1: bookmark_properties must be a list of property names$/],
    ['a key property the schema lacks', [schema({ key_properties: ['uuid'] })], /^line 1: "uuid" not a top-level property of contacts$/],
    ['a bookmark property the schema lacks', [schema({ bookmark_properties: ['modified'] })], /^line 1: "modified" not a top-level property of contacts$/],
    ['a schema that does not compile', [schema({ schema: { type: 'object', properties: { id: { type: 'integer' } }, inclusion: 'available' } })], /^line 1: the schema of contacts does not compile: .*inclusion/],
    ['a RECORD before its SCHEMA', [record({ id: 1 }), ...good()], /^line 1: RECORD for "contacts" before its SCHEMA$/],
    ['a RECORD without record', [schema(), { type: 'RECORD', stream: 'contacts' }], /^line 2: RECORD needs stream and object record$/],
    ['a RECORD against its schema', [schema(), record({ id: 1, score: 1.5 })], /^line 2: contacts: 1\.5 is not of type 'null', 'integer' at score$/],
    ['a date-time that is not one', [schema(), record({ id: 1, updated_at: 'yesterday' })], /^line 2: contacts: "yesterday" must match format "date-time" at updated_at$/],
    ['a null key', [schema(), record({ id: null })], /^line 2: contacts: null or missing key \{"id":null\}$/],
    ['a missing key', [schema(), record({ updated_at: null })], /^line 2: contacts: null or missing key \{"id":null\}$/],
    ['a bad time_extracted', [schema(), record({ id: 1 }, { time_extracted: '2026-01-02 03:04' })], /^line 2: bad time_extracted "2026-01-02 03:04"$/],
    ['a STATE without value', [...good(), { type: 'STATE' }], /^line 5: STATE missing value$/],
    ['a STATE value without bookmarks', [...good(), state({ contacts: {} })], /^line 5: STATE: value.bookmarks must be an object of per-stream states$/],
    ['a STATE value that is not an object', [...good(), state('x')], /^line 5: STATE: value must be an object/],
    ['a bookmark with a bad watermark', [...good(), state({ bookmarks: { contacts: { sync_watermark: 12 } } })], /^line 5: STATE: bookmark of "contacts": sync_watermark 12 is not an ISO 8601 instant with zone$/],
    ['a bookmark with a bad resume', [...good(), state({ bookmarks: { contacts: { resume: { cursor: '' } } } })], /^line 5: STATE: bookmark of "contacts": resume.cursor must be a non-empty string$/],
    ['a currently_syncing that is not a name', [...good(), state({ ...bookmarks, currently_syncing: 3 })], /^line 5: STATE: currently_syncing must be null or a stream name$/],
  ])('fails %s', (_, messages, error) => {
    expect(errorsOf(messages)).toEqual(expect.arrayContaining([expect.stringMatching(error)]));
  });

  it('warns of duplicate keys and of an output that does not end with a STATE', () => {
    const summary = checkSinger(jsonl([...good(), record({ id: 1 }), record({ id: 1 })]));
    expect(summary.n_errors).toBe(0);
    expect(summary.warnings).toEqual(['contacts: 2 duplicate primary-key record(s)', 'last message is not a STATE (targets echo nothing / lose progress)']);
  });
});
