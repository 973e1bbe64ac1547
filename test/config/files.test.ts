/** The JSON files a user passes, as the editors save them (config/files.ts). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJsonFile } from '../../src/config/files.js';
import { readSingerState } from '../../src/protocols/singer/state-input.js';
import { tempDir } from '../helpers/cli.js';

describe('a file saved as UTF-8 with a byte order mark (Windows Notepad, PowerShell 5)', () => {
  const dir = tempDir('sdr-bom-');
  const withBom = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, `\uFEFF${text}`, 'utf8');
    return path;
  };

  it('is read as the JSON it holds: config, catalog and state alike', () => {
    expect(readJsonFile(withBom('config.json', '{"api_key": "k", "start_date": "2024-01-01"}'), 'config')).toEqual({ api_key: 'k', start_date: '2024-01-01' });
    const states = readSingerState(withBom('state.json', '{"bookmarks": {"contacts": {"sync_watermark": "2026-01-01T00:00:00.000Z"}}}'), () => undefined);
    expect(states.get('contacts')).toEqual({ sync_watermark: '2026-01-01T00:00:00.000Z' });
  });

  it('is still named for what it is when its JSON is broken', () => {
    expect(() => readJsonFile(withBom('broken.json', '{"api_key": '), 'config')).toThrow(/The config file ".*broken\.json" is not valid JSON: (?!.*\uFEFF)/);
  });
});
