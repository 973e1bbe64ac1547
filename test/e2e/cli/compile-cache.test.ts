/**
 * bin/launch.cjs enables Node's compile cache: V8's compiled code of the
 * connector's modules is kept on disk (the system's temporary directory by
 * default) so that a later run skips compiling them. A directory that cannot
 * be written changes nothing but speed; NODE_DISABLE_COMPILE_CACHE turns it off.
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withTempDir } from '../../helpers/suite.js';
import { ROOT, SOURCE_BIN, runCli } from '../../helpers/cli.js';

let dir: string;
withTempDir('compile-cache-', (d) => (dir = d));

/** Every file under `path`, recursively. */
const filesUnder = (path: string): string[] => readdirSync(path, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name);

const SPEC_LINE = /^\{"type":"SPEC","spec":\{/;

describe('the compile cache of the executables', () => {
  it('fills the directory given by NODE_COMPILE_CACHE; the next run reads it and prints the same', async () => {
    const cache = join(dir, 'cache');
    const first = await runCli(SOURCE_BIN, ['spec'], { env: { NODE_COMPILE_CACHE: cache } });
    expect(first).toMatchObject({ code: 0, stderr: '' });
    expect(first.stdout).toMatch(SPEC_LINE);
    expect(filesUnder(cache).length).toBeGreaterThan(0);
    const second = await runCli(SOURCE_BIN, ['spec'], { env: { NODE_COMPILE_CACHE: cache } });
    expect(second).toMatchObject({ code: 0, stderr: '', stdout: first.stdout });
  });

  it('a directory that cannot be made (under a file): the same output, nothing on stderr', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    const run = await runCli(SOURCE_BIN, ['spec'], { env: { NODE_COMPILE_CACHE: join(file, 'cache') } });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(SPEC_LINE);
  });

  it('NODE_DISABLE_COMPILE_CACHE=1: nothing is written', async () => {
    const cache = join(dir, 'disabled');
    mkdirSync(cache);
    const run = await runCli(SOURCE_BIN, ['spec'], { env: { NODE_COMPILE_CACHE: cache, NODE_DISABLE_COMPILE_CACHE: '1' } });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(filesUnder(cache)).toEqual([]);
  });

  it('is enabled by the launcher, before the compiled entry point is imported', () => {
    const launcher = readLauncher();
    expect(launcher.indexOf('cacheCompiledCode();')).toBeGreaterThan(-1);
    expect(launcher.indexOf('cacheCompiledCode();')).toBeLessThan(launcher.lastIndexOf('start(executable, entry, args'));
  });
});

function readLauncher(): string {
  return readFileSync(join(ROOT, 'bin', 'launch.cjs'), 'utf8');
}
