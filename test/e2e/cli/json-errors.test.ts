/**
 * A config (or state) file that is not valid JSON is refused with the reason
 * and, where Node gives one, the position, but never with the excerpt of the
 * text Node quotes for an unexpected token: a config's text holds the API key,
 * which cannot be redacted before it has been parsed.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withTempDir } from '../../helpers/suite.js';
import { jsonSyntaxError } from '../../../src/config/files.js';
import { ROOT, SOURCE_BIN, TAP_BIN, runCli } from '../../helpers/cli.js';
import { replicate } from '../../helpers/emulator-runs.js';

const SECRET = 'drk_live_CANARYsecret0123456789';
const UNQUOTED_KEY = `{"api_key": ${SECRET}, "base_url": "http://127.0.0.1:9"}`;

let dir: string;
withTempDir('json-errors-', (d) => (dir = d));

describe('jsonSyntaxError', () => {
  const messageOf = (text: string): string => {
    try {
      JSON.parse(text);
    } catch (err) {
      return jsonSyntaxError(err);
    }
    throw new Error('parsed');
  };

  it('drops the quoted excerpt of an unexpected token, keeps the token', () => {
    expect(messageOf(UNQUOTED_KEY)).toBe("Unexpected token 'd'");
  });

  it('keeps the messages that give a position and quote nothing', () => {
    expect(messageOf(`{"api_key": "${SECRET}" "b": 1}`)).toMatch(/^Expected ',' or '}' after property value in JSON at position \d+ \(line 1 column \d+\)$/);
    expect(messageOf('{"a": 1')).toMatch(/^Expected ',' or '}' after property value in JSON at position 7/);
  });
});

describe('the executables, given a config whose key is not quoted', () => {
  const config = (): string => {
    const path = join(dir, 'config.json');
    writeFileSync(path, UNQUOTED_KEY);
    return path;
  };

  it('check: FAILED naming the file and the token, not the key', async () => {
    const run = await runCli(SOURCE_BIN, ['check', '--config', config()]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/config file .* is not valid JSON: Unexpected token 'd'\./);
    expect(run.stdout + run.stderr).not.toContain('CANARY');
  });

  it('read, the tap and replicate: the same, nowhere the key', async () => {
    const runs = [
      await runCli(SOURCE_BIN, ['read', '--config', config(), '--catalog', join(ROOT, 'catalog', 'configured_catalog.json')]),
      await runCli(TAP_BIN, ['--config', config()]),
      await replicate(config(), join(dir, 'r.db')),
    ];
    for (const run of runs) {
      expect(run.code).toBe(78);
      expect(run.stdout + run.stderr).toMatch(/is not valid JSON: Unexpected token 'd'/);
      expect(run.stdout + run.stderr).not.toContain('CANARY');
    }
  });
});
