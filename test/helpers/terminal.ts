/**
 * Running an executable on a pseudo-terminal (pty-run.py) and reading what a
 * person would see there: the status lines drawn in place and the log lines.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './cli.js';

const PTY_RUN = join(ROOT, 'test', 'helpers', 'pty-run.py');

/** Run `command` on a terminal `columns` wide (0: one that reports no width); everything written to the terminal. */
export function onTerminal(columns: number, command: readonly string[]): Promise<{ code: number | null; screen: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', [PTY_RUN, String(columns), ...command], { stdio: ['ignore', 'pipe', 'inherit'] });
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
export function parseScreen(screen: string): { status: string[]; lines: string[] } {
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
