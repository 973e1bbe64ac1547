/**
 * The Airbyte checker (test/helpers/protocol/airbyte.ts): a well-formed read
 * passes with the summary the tests use, and each rule, broken once, fails
 * with an error that names the line and the rule.
 */
import { describe, expect, it } from 'vitest';
import { checkAirbyte } from '../helpers/protocol/airbyte.js';

type Message = Record<string, unknown>;
const jsonl = (messages: readonly (Message | string)[]): string => messages.map((m) => (typeof m === 'string' ? m : JSON.stringify(m))).join('\n') + '\n';
const status = (name: string, value: string): Message => ({
  type: 'TRACE',
  trace: { type: 'STREAM_STATUS', emitted_at: 1, stream_status: { stream_descriptor: { name }, status: value } },
});
const record = (stream: string, id: number): Message => ({ type: 'RECORD', record: { stream, data: { id }, emitted_at: 1_700_000_000_000 } });
const state = (name: string, streamState: unknown, extra: Message = {}): Message => ({
  type: 'STATE',
  state: { type: 'STREAM', stream: { stream_descriptor: { name }, stream_state: streamState }, sourceStats: { recordCount: 1 }, ...extra },
});
const account = { name: 'Acme', base_url: 'https://api.example.com' };
const watermark = { sync_watermark: '2026-01-02T03:04:05.678Z', account };
const good = (): Message[] => [status('contacts', 'STARTED'), status('contacts', 'RUNNING'), record('contacts', 1), state('contacts', watermark), status('contacts', 'COMPLETE')];

/** The errors of a good read with `change` applied to its messages. */
const errorsOf = (change: (messages: Message[]) => (Message | string)[]): string[] => checkAirbyte(jsonl(change(good()))).errors;

describe('the Airbyte checker', () => {
  it('passes a well-formed read and sums it up', () => {
    const summary = checkAirbyte(jsonl(good()));
    expect(summary).toEqual({
      n_errors: 0,
      errors: [],
      messages: { TRACE: 3, RECORD: 1, STATE: 1 },
      records: { contacts: 1 },
      final_status: { contacts: 'COMPLETE' },
      last_state: { contacts: watermark },
    });
  });

  it('passes spec, check and discover output, and a resume checkpoint', () => {
    const spec = { type: 'SPEC', spec: { connectionSpecification: { type: 'object' } } };
    const check = { type: 'CONNECTION_STATUS', connectionStatus: { status: 'SUCCEEDED' } };
    const catalog = { type: 'CATALOG', catalog: { streams: [{ name: 'contacts', json_schema: {}, supported_sync_modes: ['incremental'] }] } };
    expect(checkAirbyte(jsonl([spec, check, catalog])).errors).toEqual([]);
    const resume = { ...watermark, resume: { cursor: 'c-1', sync_watermark: '2026-01-02T03:04:05+02:00' }, account };
    expect(errorsOf((m) => [...m.slice(0, 3), state('contacts', resume), ...m.slice(3)])).toEqual([]);
    expect(checkAirbyte('').n_errors).toBe(0);
  });

  it.each<[string, (m: Message[]) => (Message | string)[], RegExp]>([
    ['an empty line', (m) => [m[0]!, '', ...m.slice(1)], /^line 2: empty line on stdout$/],
    ['a line that is not JSON', (m) => [...m, 'Traceback (most recent call last):'], /^line 6: not JSON: "Traceback/],
    ['a line that is not an object', (m) => [...m, '[1]'], /^line 6: not a JSON object$/],
    ['an unknown type', (m) => [...m, { type: 'DEBUG', debug: {} }], /^line 6: must be equal to one of the allowed values at \/type$/],
    ['a RECORD whose emitted_at is not an integer', (m) => [...m.slice(0, 2), { type: 'RECORD', record: { stream: 'contacts', data: {}, emitted_at: 1.5 } }, ...m.slice(3)], /^line 3: must be integer at \/record\/emitted_at$/],
    ['a RECORD without its record', (m) => [...m.slice(0, 2), { type: 'RECORD' }, ...m.slice(3)], /^line 3: RECORD without its "record"$/],
    ['a LOG without its log', (m) => [...m, { type: 'LOG' }], /^line 6: LOG without its "log"$/],
    ['a TRACE ERROR without its error', (m) => [...m, { type: 'TRACE', trace: { type: 'ERROR', emitted_at: 1 } }], /^line 6: TRACE ERROR without its "error"$/],
    ['a STATE STREAM without its stream', (m) => [...m, { type: 'STATE', state: { type: 'STREAM', sourceStats: { recordCount: 0 } } }], /^line 6: STATE STREAM without its "stream"$/],
    ['a STATE that is not per stream', (m) => [...m, { type: 'STATE', state: { type: 'LEGACY', data: {}, sourceStats: { recordCount: 0 } } }], /^line 6: STATE type "LEGACY", expected STREAM$/],
    ['a STATE without sourceStats', (m) => [...m.slice(0, 3), { type: 'STATE', state: { type: 'STREAM', stream: { stream_descriptor: { name: 'contacts' }, stream_state: watermark } } }, m[4]!], /^line 4: STATE without sourceStats$/],
    ['a stream state that is not an object', (m) => [...m.slice(0, 3), state('contacts', 'x'), m[4]!], /^line 4: STATE of "contacts": a stream's state must be an object/],
    ['a watermark without zone', (m) => [...m.slice(0, 3), state('contacts', { sync_watermark: '2026-01-02T03:04:05', account }), m[4]!], /^line 4: STATE of "contacts": sync_watermark "2026-01-02T03:04:05" is not an ISO 8601 instant with zone$/],
    ['a resume without cursor', (m) => [...m.slice(0, 3), state('contacts', { resume: { sync_watermark: watermark.sync_watermark }, account }), m[4]!], /^line 4: STATE of "contacts": resume.cursor must be a non-empty string$/],
    ['a resume that is not an object', (m) => [...m.slice(0, 3), state('contacts', { resume: 'c-1', account }), m[4]!], /^line 4: STATE of "contacts": resume must be an object/],
    ['a tombstones_through without its watermark', (m) => [...m.slice(0, 3), state('contacts', { ...watermark, tombstones_through: { cursor: 'c-1' } }), m[4]!], /^line 4: STATE of "contacts": tombstones_through.sync_watermark undefined is not an ISO 8601 instant with zone$/],
    ['a STATE that does not say whose it is', (m) => [...m.slice(0, 3), state('contacts', { sync_watermark: watermark.sync_watermark }), m[4]!], /^line 4: STATE of "contacts": no account \(every state the connector writes says whose it is\)$/],
    ['an account without its name', (m) => [...m.slice(0, 3), state('contacts', { ...watermark, account: { base_url: account.base_url } }), m[4]!], /^line 4: STATE of "contacts": account.name must be the account's name, a non-empty string$/],
    ['an account that is not an object', (m) => [...m.slice(0, 3), state('contacts', { ...watermark, account: 'Acme' }), m[4]!], /^line 4: STATE of "contacts": account must be an object/],
    ['an account without its address', (m) => [...m.slice(0, 3), state('contacts', { ...watermark, account: { name: 'Acme' } }), m[4]!], /^line 4: STATE of "contacts": account.base_url undefined is not the http\(s\) address/],
    ['a RECORD before STARTED', (m) => [record('contacts', 0), ...m], /^line 1: RECORD for "contacts" before its STREAM_STATUS STARTED$/],
    ['a RECORD between STARTED and RUNNING', (m) => [m[0]!, m[2]!, m[1]!, ...m.slice(3)], /^line 2: RECORD for "contacts" before its STREAM_STATUS RUNNING$/],
    ['a RECORD after COMPLETE', (m) => [...m, record('contacts', 2)], /^line 6: RECORD for "contacts" after its final STREAM_STATUS COMPLETE$/],
    ['a first status other than STARTED', (m) => m.slice(1), /^contacts: first status RUNNING, expected STARTED$/],
    ['no final status', (m) => m.slice(0, 4), /^contacts: last status RUNNING, expected COMPLETE or INCOMPLETE$/],
    ['COMPLETE without RUNNING', (m) => [m[0]!, ...m.slice(2)], /^contacts: COMPLETE without RUNNING$/],
    ['two final statuses', (m) => [...m, status('contacts', 'INCOMPLETE')], /^contacts: more than one final status$/],
    ['STARTED twice', (m) => [m[0]!, ...m.slice(0, 4), m[4]!], /^contacts: STARTED more than once$/],
    [
      'a STATE of a stream repeated unchanged after RECORDs of that stream',
      (m) => [...m.slice(0, 4), record('contacts', 2), state('contacts', { account, sync_watermark: watermark.sync_watermark }), m[4]!],
      /^line 6: STATE of "contacts" identical to its STATE of line 4, with 1 RECORD\(s\) of "contacts" between them$/,
    ],
  ])('fails %s', (_, change, error) => {
    expect(errorsOf(change)).toEqual(expect.arrayContaining([expect.stringMatching(error)]));
  });

  it('passes a STATE repeated with no RECORD of its stream between, and STATEs that differ', () => {
    const other = [status('stage_events', 'STARTED'), status('stage_events', 'RUNNING'), record('stage_events', 1)];
    // Nothing of the stream in between (another stream's RECORDs do not count): no record counts to confuse.
    expect(errorsOf((m) => [...m.slice(0, 4), ...other, state('contacts', watermark), m[4]!, status('stage_events', 'COMPLETE')])).toEqual([]);
    const through = { ...watermark, tombstones_through: { cursor: 'c-2', sync_watermark: watermark.sync_watermark } };
    expect(errorsOf((m) => [...m.slice(0, 4), record('contacts', 2), state('contacts', through), m[4]!])).toEqual([]);
  });

  it('counts every error and lists the first 50', () => {
    const summary = checkAirbyte(jsonl(Array.from({ length: 60 }, () => 'not json')));
    expect(summary.n_errors).toBe(60);
    expect(summary.errors).toHaveLength(50);
  });
});
