/** The JSON files a user passes, as the editors save them (config/files.ts). */
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJsonFile } from '../../src/config/files.js';
import { readSingerState } from '../../src/protocols/singer/state-input.js';
import { readStateFile } from '../../src/protocols/state-kind.js';
import { tempDir } from '../helpers/cli.js';

describe('a file saved as UTF-8 with a byte order mark (Windows Notepad, PowerShell 5)', () => {
  const dir = tempDir('sdr-bom-');
  const withBom = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, `\uFEFF${text}`, 'utf8');
    return path;
  };

  it('is read as the JSON it holds: config, catalog and state alike', async () => {
    expect(await readJsonFile(withBom('config.json', '{"api_key": "k", "start_date": "2024-01-01"}'), 'config')).toEqual({ api_key: 'k', start_date: '2024-01-01' });
    const states = await readSingerState(withBom('state.json', '{"bookmarks": {"contacts": {"sync_watermark": "2026-01-01T00:00:00.000Z"}}}'), () => undefined);
    expect(states.get('contacts')).toEqual({ sync_watermark: '2026-01-01T00:00:00.000Z' });
  });

  it('is still named for what it is when its JSON is broken', async () => {
    await expect(readJsonFile(withBom('broken.json', '{"api_key": '), 'config')).rejects.toThrow(/The config file ".*broken\.json" is not valid JSON: (?!.*\uFEFF)/);
  });
});

describe("a file saved as UTF-16 with its byte order mark (Windows PowerShell 5's `>` and Out-File)", () => {
  const dir = tempDir('sdr-utf16-');

  it('is read as the JSON it holds, little- or big-endian: config and state alike', async () => {
    const text = '{"api_key": "k", "start_date": "2024-01-01", "note": "é"}';
    const le = join(dir, 'le.json');
    writeFileSync(le, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]));
    expect(await readJsonFile(le, 'config')).toEqual({ api_key: 'k', start_date: '2024-01-01', note: 'é' });
    const be = join(dir, 'be.json');
    writeFileSync(be, Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(text, 'utf16le').swap16()]));
    expect(await readJsonFile(be, 'config')).toEqual({ api_key: 'k', start_date: '2024-01-01', note: 'é' });
    const state = join(dir, 'state.json');
    writeFileSync(state, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('{"bookmarks": {"contacts": {"sync_watermark": "2026-01-01T00:00:00.000Z"}}}', 'utf16le')]));
    expect((await readSingerState(state, () => undefined)).get('contacts')).toEqual({ sync_watermark: '2026-01-01T00:00:00.000Z' });
  });
});

describe('a key given twice in one object', () => {
  const dir = tempDir('sdr-dup-');
  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text, 'utf8');
    return path;
  };

  it('is refused, naming the key by its path and the line of its second occurrence, not read as its last value', async () => {
    // JSON.parse would read page_size 500 and drop 50 without a word.
    await expect(readJsonFile(file('config.json', '{\n  "api_key": "k",\n  "page_size": 50,\n  "page_size": 500\n}'), 'config')).rejects.toThrow(
      /^The config file ".*config\.json" gives "page_size" twice \(again on line 4\); only one would be read\. Keep the one you mean and remove the other\.$/,
    );
    await expect(readJsonFile(file('accounts.json', '{"accounts": [{"name": "a"}, {"name": "b", "api_key": "x", "name": "c"}]}'), 'config')).rejects.toThrow(/gives "accounts\[1\]\.name" twice \(again on line 1\)/);
    // A key written with an escape is the same key.
    await expect(readJsonFile(file('escaped.json', '{"streams": [], "str\\u0065ams": []}'), 'catalog')).rejects.toThrow(/catalog file .* gives "streams" twice/);
  });

  it('in a state file too, one document or JSON lines (a line\'s number is the file\'s)', async () => {
    const twice = '{"bookmarks": {\n  "contacts": {"sync_watermark": "2026-01-01T00:00:00.000Z"},\n  "contacts": {"sync_watermark": "2026-02-01T00:00:00.000Z"}\n}}';
    await expect(readSingerState(file('singer-state.json', twice), () => undefined)).rejects.toThrow(/^The state file ".*singer-state\.json" gives "bookmarks\.contacts" twice \(again on line 3\)/);
    const line = (name: string, extra = ''): string => `{"type": "STATE", "state": {"type": "STREAM", "stream": {"stream_descriptor": {"name": "${name}"}, "stream_state": {"sync_watermark": "2026-01-01T00:00:00.000Z"${extra}}}}}`;
    const lines = `${line('contacts')}\n${line('deletions', ', "sync_watermark": "2026-03-01T00:00:00.000Z"')}\n`;
    await expect(readStateFile(file('airbyte-state.jsonl', lines), { expected: '', writer: 'read' })).rejects.toThrow(/gives "state\.stream\.stream_state\.sync_watermark" twice \(again on line 2\)/);
    // The same stream on two lines is two messages (the last per stream wins, as documented), not a key given twice.
    expect((await readStateFile(file('two-lines.jsonl', `${line('contacts')}\n${line('contacts')}\n`), { expected: '', writer: 'read' })).lines).toBe(true);
  });

  it('leaves alone the same name in different objects, and strings that look like keys', async () => {
    const text = '{"a": {"id": 1}, "b": {"id": 2}, "c": ["id", "id"], "d": "x\\",\\"d\\":1", "e": [{"id": 1}, {"id": 1}]}';
    expect(await readJsonFile(file('fine.json', text), 'config')).toEqual(JSON.parse(text));
  });
});

describe('a file that cannot be read', () => {
  it('says why in words, also for a loop of symbolic links, a path through a file and a path too long', async () => {
    const dir = tempDir('sdr-unreadable-');
    symlinkSync('b.json', join(dir, 'a.json'));
    symlinkSync('a.json', join(dir, 'b.json'));
    writeFileSync(join(dir, 'plain.json'), '{}');
    await expect(readJsonFile(join(dir, 'a.json'), 'config')).rejects.toThrow(/^Cannot read the config file ".*a\.json": its path goes through a loop of symbolic links\.$/);
    await expect(readJsonFile(join(dir, 'plain.json', 'config.json'), 'config')).rejects.toThrow(/: a part of its path is a file, not a directory\.$/);
    await expect(readJsonFile(join(dir, 'x'.repeat(300)), 'state')).rejects.toThrow(/^Cannot read the state file ".*": its path is too long\.$/);
    await expect(readJsonFile(join(dir, 'missing.json'), 'catalog')).rejects.toThrow(/: no such file\.$/);
  });
});
