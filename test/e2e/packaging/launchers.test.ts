/**
 * The executables as sh runs them from PATH (their second line has sh start
 * Node): the Node flags and MALLOC_ARENA_MAX they pass (the memory flags for
 * a sync only), a user's own MALLOC_ARENA_MAX kept. A stand-in `node` first
 * on PATH prints what it was given; a real run shows Node reading the file
 * as JavaScript.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/cli.js';

const BINS = ['source-data-read', 'tap-data-read'] as const;
/** Per executable, command lines of a sync (the memory flags) and of a short command (none). */
const RUNS: Record<(typeof BINS)[number], { readonly sync: readonly string[][]; readonly short: readonly string[][] }> = {
  'source-data-read': {
    sync: [['replicate', '--config', 'c.json', '--db', 'r.db'], ['--config', 'c.json', 'read', '--catalog', 'k.json']],
    short: [['spec'], ['check', '--config', 'c.json'], ['--config', 'c.json', 'discover'], ['--help'], ['--version'], ['help']],
  },
  'tap-data-read': {
    sync: [['--config', 'c.json'], ['--config', 'c.json', '--catalog', 'k.json', '--state', 's.json']],
    short: [['--config', 'c.json', '--discover'], ['--about', '--format', 'json'], ['--help'], ['-h'], ['--version']],
  },
};
const MEMORY_FLAGS = ['--max-semi-space-size=2', '--heap-growing-percent=10'];
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

  it('starts a sync with the memory flags, on itself, with the arguments as given, and two malloc arenas', () => {
    const sync = bin === 'source-data-read' ? ['read'] : [];
    expect(launch(bin, [...sync, '--config', 'a b.json', ''])).toEqual(['MALLOC_ARENA_MAX=2', ...MEMORY_FLAGS, script, ...sync, '--config', 'a b.json', '']);
    for (const args of RUNS[bin].sync) expect(launch(bin, args)).toEqual(['MALLOC_ARENA_MAX=2', ...MEMORY_FLAGS, script, ...args]);
  });

  it('starts a short command without the memory flags (it starts sooner), with two malloc arenas', () => {
    for (const args of RUNS[bin].short) expect(launch(bin, args)).toEqual(['MALLOC_ARENA_MAX=2', script, ...args]);
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
