/**
 * What a person at a terminal sees while `read` or the tap runs with stdout
 * sent to a file: the real executables on a pseudo-terminal
 * (test/helpers/pty-run.py), against an emulator whose short rate-limit
 * window makes the run wait several times. stderr shows a status line (records
 * per stream, the rate-limit wait and the time it ends, requests), the wait
 * announced and then said to be over, and, for `read`, what its LOG messages
 * say; stdout stays valid protocol. In a pipe, `read` leaves stderr empty.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withRateLimitedEmulator } from '../../helpers/suite.js';
import { ROOT, SOURCE_BIN, TAP_BIN, protocolCheck, runCli, writeJson } from '../../helpers/cli.js';
import { onTerminal, parseScreen } from '../../helpers/terminal.js';

const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');
const COLUMNS = 120;
let dir: string;
let configOfNewKey: (name: string) => string;

// A real clock and a small per-window limit: the client waits for the window several times. Each test has a key of
// its own (the limit is per key): the tests wait on their windows side by side, each as if alone.
withRateLimitedEmulator('terminal-', { contacts: 120, seed: 9 }, (s) => ({ dir, configOfNewKey } = s));

/** Run `bin args > file` on the terminal: stdout to the file, stderr to the terminal. */
function withStdoutTo(file: string, bin: string, args: readonly string[]): string[] {
  const quoted = [process.execPath, bin, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
  return ['sh', '-c', `exec ${quoted} > '${file}'`];
}

const LOG_LINE = (prog: string): RegExp => new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z (INFO|WARN|WARNING|ERROR|CRITICAL|DEBUG) ${prog}: `);

describe.concurrent('on a terminal, with stdout to a file', () => {
  it('read: a status line with the records per stream and the rate-limit wait with its end; the logs told too; stdout valid Airbyte', { timeout: 120_000 }, async () => {
    const config = configOfNewKey('read-config');
    const out = join(dir, 'read.jsonl');
    const { code, screen } = await onTerminal(COLUMNS, withStdoutTo(out, SOURCE_BIN, ['read', '--config', config, '--catalog', CATALOG]));
    expect(code, screen).toBe(0);
    expect(protocolCheck('airbyte', readFileSync(out, 'utf8')).errors).toEqual([]);
    const { status, lines } = parseScreen(screen);
    for (const line of status) expect(line.length, line).toBeLessThan(COLUMNS);
    // The wait and when it ends, on the status line; the figures of the streams.
    expect(status.some((l) => /^rate limit: [\w, ]+ waiting \d+ s, until \d\d:\d\d:\d\dZ/.test(l)), status.join('\n')).toBe(true);
    expect(status.some((l) => /\bcontacts \d+/.test(l)), status.join('\n')).toBe(true);
    expect(status.some((l) => /\d+ req/.test(l)), status.join('\n')).toBe(true);
    // The wait announced (a LOG message, told here too), then said to be over.
    expect(lines.some((l) => / INFO source-data-read: Pausing requests for [\d.]+ m?s, until \d{4}-\d\d-\d\dT[\d:.]+Z: /.test(l)), screen).toBe(true);
    expect(lines.some((l) => / INFO source-data-read: The rate-limit wait is over \(it ended at \d\d:\d\d:\d\dZ\); reading again\.$/.test(l)), screen).toBe(true);
    expect(lines.at(-1)).toMatch(/ INFO source-data-read: Sync finished: records: contacts \d+, conversations \d+, stage_events \d+, deletions \d+, pipeline_stages \d+; requests: \d+, retries: 0, rate-limit waits: [1-9]\d*\.$/);
    for (const line of lines) expect(line).toMatch(LOG_LINE('source-data-read'));
  });

  it('the tap: the same status line under its log lines; stdout valid Singer', { timeout: 120_000 }, async () => {
    const config = configOfNewKey('tap-config');
    const out = join(dir, 'tap.jsonl');
    const { code, screen } = await onTerminal(COLUMNS, withStdoutTo(out, TAP_BIN, ['--config', config]));
    expect(code, screen).toBe(0);
    expect(protocolCheck('singer', readFileSync(out, 'utf8')).errors).toEqual([]);
    const { status, lines } = parseScreen(screen);
    expect(status.some((l) => /^rate limit: [\w, ]+ waiting \d+ s, until \d\d:\d\d:\d\dZ/.test(l)), status.join('\n')).toBe(true);
    expect(status.some((l) => /\bcontacts \d+/.test(l)), status.join('\n')).toBe(true);
    expect(lines.some((l) => / INFO tap-data-read: The rate-limit wait is over \(it ended at \d\d:\d\d:\d\dZ\); reading again\.$/.test(l)), screen).toBe(true);
    expect(lines.at(-1)).toMatch(/ INFO tap-data-read: Sync finished: records: contacts \d+, /);
    for (const line of lines) expect(line).toMatch(LOG_LINE('tap-data-read'));
  });

  it('check and discover tell their warnings there too (a misspelled key)', async () => {
    const typo = writeJson(dir, 'typo.json', { ...(JSON.parse(readFileSync(configOfNewKey('typo-config'), 'utf8')) as object), page_sise: 50 });
    for (const command of ['check', 'discover']) {
      const out = join(dir, `${command}.jsonl`);
      const { code, screen } = await onTerminal(COLUMNS, withStdoutTo(out, SOURCE_BIN, [command, '--config', typo]));
      expect(code, screen).toBe(0);
      // Then one INFO on the service's description: check's schema drift, discover's merge.
      expect(parseScreen(screen).lines).toEqual([
        expect.stringMatching(/ WARN source-data-read: Unknown config keys ignored: page_sise \(did you mean page_size\?\)\.$/),
        expect.stringMatching(command === 'check' ? / INFO source-data-read: Schema drift: / : / INFO source-data-read: Stream schemas: /),
      ]);
      expect(protocolCheck('airbyte', readFileSync(out, 'utf8')).errors).toEqual([]);
    }
  });

  it('in a pipe, read leaves stderr to what stops it: nothing here', async () => {
    const run = await runCli(SOURCE_BIN, ['read', '--config', configOfNewKey('pipe-config'), '--catalog', CATALOG]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
  });
});
