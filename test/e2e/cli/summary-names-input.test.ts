/**
 * `--summary FILE` naming a file the command reads or keeps (its --config,
 * --catalog, --properties, --state, or replicate's --db): a usage mistake,
 * refused before the run, and that file left as it was. Written, the summary
 * would replace the replica, the state or the config holding the API key.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SOURCE_BIN, TAP_BIN, runCli, tempDir } from '../../helpers/cli.js';

const dir = tempDir('summary-names-input-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('--summary naming a file of the command', () => {
  it('replicate --db, read --state, the tap --config or --catalog (by another name too): exit 2, the file unchanged', async () => {
    const config = file('config.json', '{"api_key": "drk_live_summaryNamesInput123", "base_url": "http://127.0.0.1:9", "max_retries": 0}\n');
    const db = file('replica.db', 'SQLite format 3\u0000 (the replica)');
    const state = file('state.json', '[{"type": "STREAM"}]\n');
    const catalog = file('catalog.json', '{"streams": []}\n');
    symlinkSync('state.json', join(dir, 'state-link.json'));
    const runs: readonly (readonly [string, readonly string[], string, string])[] = [
      [SOURCE_BIN, ['replicate', '--config', config, '--db', db, '--summary', db], db, 'db'],
      [SOURCE_BIN, ['replicate', '--config', config, '--db', `duckdb:${db}`, '--summary', db], db, 'db'],
      [SOURCE_BIN, ['read', '--config', config, '--catalog', catalog, '--state', state, '--summary', join(dir, 'state-link.json')], state, 'state'],
      [TAP_BIN, ['--config', config, '--summary', config], config, 'config'],
      [TAP_BIN, ['--config', config, '--catalog', catalog, '--summary', join(dir, '.', 'catalog.json')], catalog, 'catalog'],
      // With a usage mistake beside it too (its summary is written where --summary says).
      [SOURCE_BIN, ['replicate', '--config', config, '--db', db, '--summary', db, '--bogus'], db, 'db'],
    ];
    for (const [bin, args, target, flag] of runs) {
      const before = readFileSync(target);
      const run = await runCli(bin, args);
      const what = args.join(' ');
      expect(run.code, `${what}\n${run.stderr}`).toBe(2);
      expect(readFileSync(target), what).toEqual(before);
      if (!args.includes('--bogus')) expect(run.stderr, what).toMatch(new RegExp(`--summary names the file of --${flag}`));
    }
  });
  it('replicate --db naming a replica not made yet, --summary the same file by another name (a linked folder, a link): exit 2, nothing written there', async () => {
    const config = file('config-new.json', '{"api_key": "drk_live_summaryNamesInput123", "base_url": "http://127.0.0.1:9", "max_retries": 0}\n');
    mkdirSync(join(dir, 'data'));
    symlinkSync('data', join(dir, 'data-link'));
    symlinkSync(join('data', 'new.db'), join(dir, 'new-link.db'));
    const db = join(dir, 'data', 'new.db');
    for (const summary of [join(dir, 'data-link', 'new.db'), join(dir, 'new-link.db')]) {
      const run = await runCli(SOURCE_BIN, ['replicate', '--config', config, '--db', db, '--summary', summary]);
      expect(run.code, `--summary ${summary}\n${run.stderr}`).toBe(2);
      expect(run.stderr).toMatch(/--summary names the file of --db/);
      expect(existsSync(db), `--summary ${summary}`).toBe(false);
    }
  });
});
