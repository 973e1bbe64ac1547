/**
 * Vitest's global set-up: one temporary directory for the whole test run.
 * TMPDIR points into it for every test file and every process the tests
 * start, so whatever a test leaves there (a folder of a failed test, the
 * files of a killed process) is removed with it when the run ends.
 */
import { chmodSync, lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Give back the owner's permissions a test took away (a read-only folder), so that the folder can be removed; links are not followed. */
function writable(path: string): void {
  try {
    const stats = lstatSync(path);
    if (!stats.isDirectory()) return;
    chmodSync(path, 0o700);
    for (const name of readdirSync(path)) writable(join(path, name));
  } catch {
    // gone already, or not ours: rmSync says what is left
  }
}

export function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'sdr-tests-'));
  // As /tmp itself: tests run the connector as another user too (uid 65534), which must reach and use it.
  chmodSync(dir, 0o1777);
  process.env.TMPDIR = dir;
  return () => {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      writable(dir);
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch (err) {
        process.stderr.write(`Could not remove the test run's temporary folder ${dir}: ${err instanceof Error ? err.message : String(err)}\n`);
      }
    }
  };
}
