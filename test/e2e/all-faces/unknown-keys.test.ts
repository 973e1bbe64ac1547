/**
 * A misspelled optional key (`page_sise`) is ignored with the same warning by
 * every command of both executables: `check` and `discover` (a LOG WARN before
 * their answer, valid for the Airbyte protocol), `read`, `replicate`, and the
 * tap's `--discover` and sync (on stderr). The warning names the key meant.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { withEmulatorAccount } from '../../helpers/suite.js';
import { ROOT, SOURCE_BIN, TAP_BIN, parseLines, protocolCheck, runCli, writeJson } from '../../helpers/cli.js';
import { replicate, type Account } from '../../helpers/emulator-runs.js';

const WARNING = 'Unknown config keys ignored: page_sise (did you mean page_size?).';
let account: Account;
let dir: string;
let config: string;

withEmulatorAccount('unknown-keys-', { contacts: 10, seed: 73 }, (s) => ({ account, dir } = s));
beforeAll(async () => {
  config = account.config(dir, { page_sise: 50 });
});

const warnings = (stdout: string): string[] =>
  parseLines(stdout).flatMap((m) => (m.type === 'LOG' && (m.log as { level: string }).level === 'WARN' ? [(m.log as { message: string }).message] : []));

describe('a misspelled key: every command warns the same way', () => {
  for (const [command, answer] of [
    ['check', 'CONNECTION_STATUS'],
    ['discover', 'CATALOG'],
  ] as const) {
    it(`${command}: one LOG WARN first, the ${answer} last, and the output stays valid Airbyte protocol`, async () => {
      const run = await runCli(SOURCE_BIN, [command, '--config', config]);
      expect(run.code).toBe(0);
      expect(protocolCheck('airbyte', run.stdout).errors).toEqual([]);
      const lines = parseLines(run.stdout);
      // Between them, one INFO on the service's description (check: the schema drift; discover: the merge).
      expect(lines.map((m) => m.type)).toEqual(['LOG', 'LOG', answer]);
      expect(lines[1]).toMatchObject({ log: { level: 'INFO' } });
      expect(warnings(run.stdout)).toEqual([WARNING]);
      if (command === 'check') expect(lines[2]).toMatchObject({ connectionStatus: { status: 'SUCCEEDED' } });
    });
  }

  it('read: the same LOG WARN', async () => {
    const run = await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', join(ROOT, 'catalog', 'configured_catalog.json')]);
    expect(run.code).toBe(0);
    expect(warnings(run.stdout)).toContain(WARNING);
  });

  it('replicate: the same warning on stderr', async () => {
    const run = await replicate(config, join(dir, 'r.db'));
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(` WARN source-data-read: ${WARNING}`);
  });

  it('the tap, --discover and sync: the same warning on stderr', async () => {
    const discover = await runCli(TAP_BIN, ['--config', config, '--discover']);
    expect(discover.code).toBe(0);
    expect(discover.stderr).toContain(` WARNING tap-data-read: ${WARNING}`);
    const sync = await runCli(TAP_BIN, ['--config', config]);
    expect(sync.code).toBe(0);
    expect(sync.stderr).toContain(` WARNING tap-data-read: ${WARNING}`);
  });

  it('a required key misspelled: the refusal names the key meant', async () => {
    const bad = writeJson(dir, 'bad.json', { api_key: account.key, base_ur: account.emulator.url });
    const run = await runCli(SOURCE_BIN, ['check', '--config', bad]);
    expect(run.code).toBe(0);
    const [status] = parseLines(run.stdout) as [{ connectionStatus: { status: string; message: string } }];
    expect(status.connectionStatus.status).toBe('FAILED');
    expect(status.connectionStatus.message).toContain('"base_ur" (did you mean base_url?)');
  });
});
