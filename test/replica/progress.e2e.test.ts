/**
 * What a person at a terminal sees while `replicate` runs: the real
 * executable on a pseudo-terminal (test/helpers/pty-run.py) of a given width,
 * against an emulator whose rate limit makes the run wait. The status line is
 * redrawn in place and fits the width, the wait and its end are shown, and
 * the log lines and the final summary keep every character, also when the
 * terminal reports a width of 0.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator, type Emulator } from '../../src/emulator/server.js';
import { ROOT, SOURCE_BIN, tempDir, writeJson } from '../helpers/cli.js';
import { requireBuild } from './helpers.js';

const PTY_RUN = join(ROOT, 'test', 'helpers', 'pty-run.py');

function onTerminal(columns: number, args: readonly string[]): Promise<{ code: number | null; screen: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', [PTY_RUN, String(columns), process.execPath, SOURCE_BIN, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    const guard = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(guard);
      resolve({ code, screen: Buffer.concat(out).toString('utf8') });
    });
  });
}

/**
 * The status lines drawn in place and the log lines. Every drawing starts
 * with \r and erase-line and ends without a newline; a log line is printed
 * after the same \r and erase-line (the status line cleared) and ends in one.
 */
function parse(screen: string): { status: string[]; lines: string[] } {
  const status: string[] = [];
  const lines: string[] = [];
  const [head = '', ...segments] = screen.split('\r\x1b[K');
  for (const text of [head, ...segments].map((s, i) => (i === 0 ? `${s}\n` : s))) {
    const parts = text.split(/\r?\n/);
    if (parts.length === 1) {
      if (text !== '') status.push(text);
    } else lines.push(...parts.filter((l) => l !== ''));
  }
  return { status, lines };
}

describe('replicate on a terminal', () => {
  let emulator: Emulator;
  let dir: string;
  let config: string;
  beforeAll(async () => {
    requireBuild();
    // A real clock and a small per-window limit: the client waits for the window several times.
    emulator = await startEmulator({ host: '127.0.0.1', port: 0, seed: 5, limits: { perMinute: 4, windowMs: 1200, perDay: 1_000_000 } });
    const account = emulator.control.createAccount({ name: 'Terminal test' });
    const { key } = emulator.control.createKey(account.id);
    emulator.control.seed(account.id, { contacts: 150 });
    dir = tempDir('replica-tty-');
    config = writeJson(dir, 'config.json', { api_key: key, base_url: emulator.url, page_size: 100 });
  });
  afterAll(async () => {
    await emulator?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const columns of [60, 0]) {
    it(`a terminal ${columns === 0 ? 'that reports width 0' : `${columns} columns wide`}: one status line in place, fitted, the wait shown; log lines whole`, { timeout: 120_000 }, async () => {
      const { code, screen } = await onTerminal(columns, ['replicate', '--config', config, '--db', join(dir, `replica-${columns}.db`)]);
      const { status, lines } = parse(screen);
      expect(code, screen).toBe(0);
      const width = (columns === 0 ? 80 : columns) - 1;
      expect(status.length, screen).toBeGreaterThan(0);
      for (const line of status) expect(line.length, line).toBeLessThanOrEqual(width);
      expect(status.some((l) => /^rate limit: (\w+(, \w+)* waiting )?\d+ s(, until \d\d:\d\d:\d\dZ)?/.test(l)), status.join('\n')).toBe(true);
      expect(status.some((l) => /contacts \d+/.test(l) || /done: .*contacts \d+/.test(l) || /\d+ done/.test(l)), status.join('\n')).toBe(true);
      // Log lines are printed whole, each on its own line, the status line cleared first.
      const summary = lines.find((l) => l.includes('Replica up to date:'));
      expect(summary, screen).toMatch(/INFO source-data-read: Replica up to date: contacts \d+ rows \(\d+ read\), .*; requests \d+, retries \d+, rate-limit waits [1-9]\d*; [\d.]+ s; .*replica-\d+\.db \d+ KB\.$/);
      expect(lines.find((l) => l.includes('Connected to account'))).toMatch(/Connected to account "Terminal test".*Replicating into .*replica-\d+\.db\.$/);
      for (const line of lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z (INFO|WARN|ERROR) source-data-read: /);
    });
  }
});
