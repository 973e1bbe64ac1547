/**
 * What a person at a terminal sees while `replicate` runs: the real
 * executable on a pseudo-terminal (test/helpers/pty-run.py) of a given width,
 * against an emulator whose rate limit makes the run wait. The status line is
 * redrawn in place and fits the width, the wait and its end are shown, and
 * the log lines and the final summary keep every character, also when the
 * terminal reports a width of 0.
 */
import { describe, expect, it } from 'vitest';
import { withRateLimitedEmulator } from '../../helpers/suite.js';
import { join } from 'node:path';
import { SOURCE_BIN } from '../../helpers/cli.js';
import { onTerminal, parseScreen } from '../../helpers/terminal.js';

describe.concurrent('replicate on a terminal', () => {
  let dir: string;
  let configOfNewKey: (name: string) => string;
  // A real clock and a small per-window limit: the client waits for the window several times. Each width has a key of
  // its own (the limit is per key): the runs wait on their windows side by side, each as if alone.
  withRateLimitedEmulator('replica-tty-', { contacts: 150, seed: 5 }, (s) => ({ dir, configOfNewKey } = s));

  for (const columns of [60, 0]) {
    it(`a terminal ${columns === 0 ? 'that reports width 0' : `${columns} columns wide`}: one status line in place, fitted, the wait shown; log lines whole`, { timeout: 120_000 }, async () => {
      const { code, screen } = await onTerminal(columns, [process.execPath, SOURCE_BIN, 'replicate', '--config', configOfNewKey(`config-${columns}`), '--db', join(dir, `replica-${columns}.db`)]);
      const { status, lines } = parseScreen(screen);
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
