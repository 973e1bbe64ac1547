import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import { parseSingerState, readSingerState } from '../../../src/protocols/singer/state-input.js';
import { tempDir, writeJson } from '../../helpers/cli.js';
import { thrown } from '../../helpers/thrown.js';

const W = '2026-03-01T10:00:00.000Z';
const W0 = '2026-02-01T10:00:00.000Z';

describe('--state', () => {
  it('reads the bookmarks of a STATE value, including resume cursors', async () => {
    const states = parseSingerState(
      { bookmarks: { contacts: { sync_watermark: W }, deletions: { sync_watermark: W, resume: { cursor: 'c1', sync_watermark: W } } }, currently_syncing: 'deletions' },
      () => undefined,
    );
    expect(Object.fromEntries(states)).toEqual({
      contacts: { sync_watermark: W },
      deletions: { sync_watermark: W, resume: { cursor: 'c1', sync_watermark: W } },
    });
  });

  it('accepts a whole STATE message and an empty object', async () => {
    expect(parseSingerState({ type: 'STATE', value: { bookmarks: { contacts: { sync_watermark: W } } } }, () => undefined).get('contacts')).toEqual({ sync_watermark: W });
    expect(parseSingerState({}, () => undefined).size).toBe(0);
  });

  it('drops bookmarks of unknown streams with a warning', async () => {
    const warnings: string[] = [];
    const states = parseSingerState({ bookmarks: { invoices: { x: 1 }, contacts: {} } }, (m) => warnings.push(m));
    expect([...states.keys()]).toEqual(['contacts']);
    expect(warnings[0]).toContain('"invoices"');
  });

  it('rejects a bad bookmark, naming the stream and the field', async () => {
    expect(() => parseSingerState({ bookmarks: { contacts: { sync_watermark: 'yesterday' } } }, () => undefined)).toThrow(ConfigError);
    expect(thrown(() => parseSingerState({ bookmarks: { contacts: { sync_watermark: 'yesterday' } } }, () => undefined))).toMatchObject({ fields: ['state.contacts.sync_watermark'] });
    expect(thrown(() => parseSingerState({ bookmarks: [] }, () => undefined))).toMatchObject({ fields: ['state.bookmarks'] });
    expect(() => parseSingerState({ bookmarks: { contacts: { sync_watermark: 'yesterday' } } }, () => undefined)).toThrow(/"contacts": sync_watermark/);
    expect(() => parseSingerState([], () => undefined)).toThrow(/^Invalid state: the file holds an empty array, not the tap's state\. Expected the value of the last STATE message/);
    expect(() => parseSingerState({ bookmarks: [] }, () => undefined)).toThrow(/"bookmarks" must be an object/);
  });

  it("takes the state inside Meltano's wrapper, as `meltano state get` prints it", async () => {
    const value = { bookmarks: { contacts: { sync_watermark: W } }, currently_syncing: null };
    expect(Object.fromEntries(parseSingerState({ singer_state: value }, () => undefined))).toEqual({ contacts: { sync_watermark: W } });
    expect(parseSingerState({ singer_state: {} }, () => undefined).size).toBe(0);
    expect(() => parseSingerState({ singer_state: 'x' }, () => undefined)).toThrow(/^Invalid state: "singer_state" \(Meltano's wrapper\) must hold the tap's state, an object, not a string\./);
  });

  it('{} and a value with nothing but currently_syncing are no state; another object is refused with its keys', async () => {
    expect(parseSingerState({}, () => undefined).size).toBe(0);
    expect(parseSingerState({ currently_syncing: null }, () => undefined).size).toBe(0);
    expect(() => parseSingerState({ api_key: 'k', base_url: 'u' }, () => undefined)).toThrow(
      /^Invalid state: the file holds an object with the keys "api_key", "base_url", without "bookmarks": not the tap's state\. Expected .* or \{\} for no state\.$/,
    );
  });

  it('refuses Airbyte state, saying what the tap keeps instead', async () => {
    const stream = { type: 'STREAM', stream: { stream_descriptor: { name: 'contacts' }, stream_state: { sync_watermark: W } } };
    const airbyte = /Airbyte state, which source-data-read read takes, not the tap\. The tap keeps its own state, the value of its last STATE message: \{"bookmarks": .*Each stream_state of Airbyte is that stream's bookmark as it is/;
    for (const input of [[stream], stream, { type: 'STATE', state: stream }]) expect(() => parseSingerState(input, () => undefined), JSON.stringify(input)).toThrow(airbyte);
    expect(() => parseSingerState([stream], () => undefined)).toThrow(/the file holds a JSON array of Airbyte per-stream states/);
    expect(() => parseSingerState({ type: 'STATE', state: stream }, () => undefined)).toThrow(/the file holds an Airbyte STATE message:/);
  });

  it('refuses a message other than STATE', async () => {
    expect(() => parseSingerState({ type: 'RECORD', stream: 'contacts', record: { id: 'a' } }, () => undefined)).toThrow(/^Invalid state: the file holds a Singer RECORD message, not a state\./);
  });
});

describe('--state file', () => {
  const dir = tempDir('tap-state-');
  const stateLine = (wm: string): string => JSON.stringify({ type: 'STATE', value: { bookmarks: { contacts: { sync_watermark: wm } }, currently_syncing: null } });
  const file = (name: string, lines: string[]): string => writeJson(dir, name, lines.join('\n'));
  const read = (path: string) => readSingerState(path, () => undefined);

  it('one document, pretty-printed or not', async () => {
    const value = { bookmarks: { contacts: { sync_watermark: W } }, currently_syncing: null };
    expect((await read(file('pretty.json', [JSON.stringify({ singer_state: value }, null, 2)]))).get('contacts')).toEqual({ sync_watermark: W });
    expect((await read(file('line.json', [stateLine(W), '']))).get('contacts')).toEqual({ sync_watermark: W });
  });

  it("a whole run's output: refused, naming the last STATE's line and a command that keeps it", async () => {
    const run = [
      JSON.stringify({ type: 'SCHEMA', stream: 'contacts', schema: {}, key_properties: ['id'] }),
      JSON.stringify({ type: 'RECORD', stream: 'contacts', record: { id: 'a' } }),
      stateLine(W),
      '',
      JSON.stringify({ type: 'RECORD', stream: 'contacts', record: { id: 'b' } }),
      stateLine(W),
      '',
    ];
    const path = file('run 1.jsonl', run);
    await expect(read(path)).rejects.toThrow(
      `Invalid state: the file "${path}" holds the output of a whole tap run (5 lines: 1 SCHEMA, 2 RECORD, 2 STATE), not one state. ` +
        `The tap resumes from the last STATE, whose bookmarks hold every stream's: line 6. Keep only that line and pass the new file: \`sed -n 6p '${path}' > state.json\`, then --state state.json.`,
    );
    await expect(read(file('states.jsonl', [stateLine(W0), stateLine(W)]))).rejects.toThrow(/holds 2 states, one a line, not one state\. .*: line 2\. .*`sed -n 2p .*states\.jsonl > state\.json`, then --state state\.json\.$/);
    await expect(read(file('records.jsonl', [run[1] as string, run[4] as string]))).rejects.toThrow(/holds 2 JSON lines \(2 RECORD\) and no STATE message: nothing to resume from\./);
  });

  it('Airbyte STATE lines and the output of read: refused as Airbyte state', async () => {
    const airbyte = JSON.stringify({ type: 'STATE', state: { type: 'STREAM', stream: { stream_descriptor: { name: 'contacts' }, stream_state: { sync_watermark: W } } } });
    const record = JSON.stringify({ type: 'RECORD', record: { stream: 'contacts', data: { id: 'a' }, emitted_at: 1 } });
    await expect(read(file('ab-states.jsonl', [airbyte, airbyte]))).rejects.toThrow(/^Invalid state: the file holds 2 Airbyte STATE lines \(as read writes them\): Airbyte state/);
    await expect(read(file('ab-run.jsonl', [record, airbyte]))).rejects.toThrow(/^Invalid state: the file holds the output of source-data-read read \(2 lines: 1 RECORD, 1 STATE\): Airbyte state/);
  });

  it('an empty file or broken JSON: the shapes the tap takes', async () => {
    await expect(read(file('empty.json', ['']))).rejects.toThrow(/is empty \(did the tap run it came from write no STATE line\?\)\. Expected the value of the last STATE message/);
    await expect(read(file('broken.json', ['{"bookmarks": {'])) ).rejects.toThrow(/is not valid JSON: .*\. Expected the value of the last STATE message/);
  });
});

