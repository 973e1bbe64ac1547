/**
 * The executables as sh runs them from PATH (their second line has sh start
 * Node): the Node flags and MALLOC_ARENA_MAX they pass, a user's own
 * MALLOC_ARENA_MAX kept. A stand-in `node` first on PATH prints what it was
 * given; a real run shows Node reading the file as JavaScript.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/cli.js';

const BINS = ['source-data-read', 'tap-data-read'] as const;
const dir = mkdtempSync(join(tmpdir(), 'sdr-launchers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Prints the MALLOC_ARENA_MAX it sees, then its arguments, one a line.
const standIn = join(dir, 'node');
writeFileSync(standIn, '#!/bin/sh\nprintf "%s\\n" "MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX-unset}" "$@"\n');
chmodSync(standIn, 0o755);
// Loaded by the real Node before the executable: what Node's environment holds.
const preload = join(dir, 'arenas.cjs');
writeFileSync(preload, 'process.stderr.write(`MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX}\\n`);\n');
const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

/** `sh BIN ARGS` with `env` (MALLOC_ARENA_MAX removed unless given), the stand-in Node first on PATH. */
function launch(bin: string, args: readonly string[], env: Record<string, string> = {}): string[] {
  const base = { ...process.env };
  delete base.MALLOC_ARENA_MAX;
  const script = join(ROOT, 'bin', bin);
  const run = spawnSync('sh', [script, ...args], { encoding: 'utf8', env: { ...base, PATH: `${dir}${delimiter}${process.env.PATH ?? ''}`, ...env } });
  expect(run.status, run.stderr).toBe(0);
  return run.stdout.split('\n').slice(0, -1);
}

describe.each(BINS)('bin/%s run by sh', (bin) => {
  const script = join(ROOT, 'bin', bin);

  it('starts Node with the memory flags, on itself, with the arguments as given, and two malloc arenas', () => {
    expect(launch(bin, ['read', '--config', 'a b.json', ''])).toEqual([
      'MALLOC_ARENA_MAX=2',
      '--max-semi-space-size=2',
      '--heap-growing-percent=10',
      script,
      'read',
      '--config',
      'a b.json',
      '',
    ]);
  });

  it("keeps the user's own MALLOC_ARENA_MAX", () => {
    expect(launch(bin, ['spec'], { MALLOC_ARENA_MAX: '8' })[0]).toBe('MALLOC_ARENA_MAX=8');
    expect(launch(bin, ['spec'], { MALLOC_ARENA_MAX: '1' })[0]).toBe('MALLOC_ARENA_MAX=1');
  });

  it('runs as JavaScript under the real Node, MALLOC_ARENA_MAX in its environment', () => {
    const run = spawnSync('sh', [script, '--version'], {
      encoding: 'utf8',
      env: { ...process.env, MALLOC_ARENA_MAX: '', PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`, NODE_OPTIONS: `--require ${preload}` },
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe(`${bin} ${version}\n`);
    expect(run.stderr).toBe('MALLOC_ARENA_MAX=2\n');
  });
});
