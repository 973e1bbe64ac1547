/**
 * `--summary` naming a named pipe (a FIFO): written into it when a process
 * reads it; when none does, the run ends as it would have, the summary said
 * not written (a pipe nobody reads), instead of waiting forever on the pipe
 * for a reader that may never come.
 */
import { execFileSync } from 'node:child_process';
import { createReadStream, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, SOURCE_BIN, TAP_BIN, runCli, tempDir, writeJson } from '../../helpers/cli.js';

const dir = tempDir('summary-pipe-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A service that cannot be reached (a closed port) and no retry: the run ends at once, 75. */
const config = writeJson(dir, 'down.json', { api_key: 'drk_live_summaryPipeTestKey1234', base_url: 'http://127.0.0.1:9', max_retries: 0 });
const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');

function fifo(name: string): string {
  const path = join(dir, name);
  execFileSync('mkfifo', [path]);
  return path;
}

describe('--summary naming a named pipe', () => {
  it('no process reads it: read and the tap end with their own status, the summary said not written', async () => {
    for (const [bin, args, level] of [
      [SOURCE_BIN, ['read', '--config', config, '--catalog', CATALOG], 'ERROR'],
      [TAP_BIN, ['--config', config], 'CRITICAL'],
    ] as const) {
      const path = fifo(`unread-${level}`);
      // runCli's guard (SIGKILL after 60 s) only ends a run that would never end: it is not what the test measures.
      const run = await runCli(bin, [...args, '--summary', path]);
      expect(run.signal, run.stderr.slice(-800)).toBeNull();
      expect(run.code, run.stderr.slice(-800)).toBe(75);
      expect(run.stderr).toContain(`${level} ${bin === TAP_BIN ? 'tap-data-read' : 'source-data-read'}: Cannot write the run summary to "${path}": it is a pipe no process reads.`);
    }
  });

  it('a process reads it: the summary goes through the pipe', async () => {
    const path = fifo('read');
    const chunks: Buffer[] = [];
    const reader = createReadStream(path);
    reader.on('data', (b) => chunks.push(b as Buffer));
    const ended = new Promise((resolve) => reader.on('end', resolve));
    const run = await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', CATALOG, '--summary', path]);
    await ended;
    expect(run.code, run.stderr.slice(-800)).toBe(75);
    expect(run.stderr).not.toContain('Cannot write the run summary');
    expect(JSON.parse(Buffer.concat(chunks).toString('utf8'))).toMatchObject({ command: 'read', exit_code: 75, failure_type: 'transient_error' });
  });
});
