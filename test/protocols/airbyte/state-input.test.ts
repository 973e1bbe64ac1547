/** The --state file of read: its two forms (one JSON document, JSON lines) and the shapes accepted in each. */
import { describe, expect, it } from 'vitest';
import { parseAirbyteState, readAirbyteStateFile } from '../../../src/protocols/airbyte/state-input.js';
import { tempDir, writeJson } from '../../helpers/cli.js';

const stream = (name: string, wm: string): Record<string, unknown> => ({ type: 'STREAM', stream: { stream_descriptor: { name }, stream_state: { sync_watermark: wm } } });
const message = (name: string, wm: string): string => JSON.stringify({ type: 'STATE', state: { ...stream(name, wm), sourceStats: { recordCount: 1 } } });
const dir = tempDir('sdr-state-');

async function parse(text: string, warnings: string[] = [], incremental?: string[]): Promise<Map<string, unknown>> {
  const file = await readAirbyteStateFile(writeJson(dir, 'state.json', text));
  return parseAirbyteState(file.value, (w) => warnings.push(w), { lines: file.lines, ...(incremental ? { incremental: new Set(incremental) } : {}) });
}

describe('--state of read', () => {
  it('STATE lines: the last of each stream wins, in file order', async () => {
    const text = [message('contacts', '2025-01-01T00:00:00Z'), message('deletions', '2025-01-02T00:00:00Z'), message('contacts', '2025-01-03T00:00:00Z'), ''].join('\n');
    expect(await parse(text)).toEqual(new Map([
      ['deletions', { sync_watermark: '2025-01-02T00:00:00Z' }],
      ['contacts', { sync_watermark: '2025-01-03T00:00:00Z' }],
    ]));
  });

  it('the array Airbyte passes, pretty-printed or not, and a single message (enveloped or bare)', async () => {
    const array = [stream('contacts', '2025-01-01T00:00:00Z'), stream('stage_events', '2025-01-02T00:00:00Z')];
    expect((await parse(JSON.stringify(array, null, 2))).size).toBe(2);
    expect((await parse(JSON.stringify(array))).size).toBe(2);
    expect((await parse('[]')).size).toBe(0);
    expect(await parse(message('contacts', '2025-01-01T00:00:00Z'))).toEqual(new Map([['contacts', { sync_watermark: '2025-01-01T00:00:00Z' }]]));
    expect((await parse(JSON.stringify(stream('contacts', '2025-01-01T00:00:00Z')))).size).toBe(1);
  });

  it('a single message for one of several incremental streams: a warning names the others', async () => {
    const warnings: string[] = [];
    await parse(message('contacts', '2025-01-01T00:00:00Z'), warnings, ['contacts', 'deletions', 'stage_events']);
    expect(warnings).toEqual([expect.stringMatching(/^The state file holds one STATE message, of stream "contacts"; deletions, stage_events have no state and are read from start_date\./)]);
  });

  it('a single message whose state holds only tombstones_through (no state): the warning counts its stream among those without one', async () => {
    const only = (name: string): string =>
      JSON.stringify({ type: 'STATE', state: { type: 'STREAM', stream: { stream_descriptor: { name }, stream_state: { tombstones_through: { sync_watermark: '2025-01-01T00:00:00Z' } } } } });
    const warnings: string[] = [];
    expect(await parse(only('contacts'), warnings, ['contacts', 'deletions'])).toEqual(new Map([['contacts', {}]]));
    expect(warnings).toEqual([expect.stringMatching(/^The state file holds one STATE message, of stream "contacts", which holds no watermark; contacts, deletions have no state and are read from start_date\./)]);
    const alone: string[] = [];
    await parse(only('contacts'), alone, ['contacts']);
    expect(alone).toEqual([expect.stringMatching(/^The state file holds one STATE message, of stream "contacts", which holds no watermark; contacts has no state and is read from start_date\./)]);
  });

  it('anything else: a config error showing the shapes accepted', async () => {
    const expected = /Expected the state Airbyte passes, a JSON array .* a single STATE message .* or the STATE lines of a read's output, one a line \(grep/;
    for (const text of ['{}', '"contacts"', 'null', '{"contacts": {"sync_watermark": "2025-01-01T00:00:00Z"}}']) await expect(parse(text), text).rejects.toThrow(expected);
    await expect(parse('[\n  {"type": "STREAM",\n')).rejects.toThrow(/neither one JSON document nor JSON lines: Unexpected end of JSON input|neither one JSON document nor JSON lines: .*JSON/);
    await expect(parse(`${message('contacts', '2025-01-01T00:00:00Z')}\n{"type":"LOG","log":{"level":"INFO","message":"x"}}\n`)).rejects.toThrow(/line 2 is a LOG message, not a STATE/);
    await expect(parse('')).rejects.toThrow(/is empty \(did the read it came from write no STATE line\?\)\. Expected/);
  });

  it("the Singer tap's state or output: refused as the tap's, with how its bookmarks become Airbyte's", async () => {
    const value = { bookmarks: { contacts: { sync_watermark: '2025-01-01T00:00:00Z' } }, currently_syncing: null };
    const singer = /, not Airbyte state\. Expected the state Airbyte passes.* A bookmark of the tap is its stream's stream_state as it is/;
    await expect(parse(JSON.stringify(value))).rejects.toThrow(/^Invalid state: the file holds the Singer tap's state \(an object with the keys "bookmarks", "currently_syncing"\), not Airbyte state\./);
    await expect(parse(JSON.stringify({ singer_state: value }))).rejects.toThrow(singer);
    await expect(parse(JSON.stringify({ type: 'STATE', value }))).rejects.toThrow(/^Invalid state: the STATE message is a STATE of the Singer tap \(tap-data-read\), not Airbyte state\./);
    const run = [JSON.stringify({ type: 'SCHEMA', stream: 'contacts', schema: {}, key_properties: ['id'] }), JSON.stringify({ type: 'STATE', value })].join('\n');
    await expect(parse(run)).rejects.toThrow(/^Invalid state: line 1 is a SCHEMA message of the Singer tap \(tap-data-read\): the file is its output, not Airbyte state\./);
  });
});

