/**
 * The published manifest runs nothing on install: no `prepare` (npm 11 warns
 * about it when the tarball is installed), no install scripts; the build runs
 * on `prepack` instead. Packs the built tree (`npm pack --ignore-scripts`:
 * `npm test` has just built it), reads package.json inside the tarball, then
 * installs the tarball the way a user does and looks for npm's warning.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { generatedArtifacts } from '../../../scripts/artifacts.js';
import { ROOT, tempDir } from '../../helpers/cli.js';

interface Manifest {
  scripts?: Record<string, string>;
  bin?: Record<string, string>;
  dependencies?: Record<string, string>;
  exports?: Record<string, unknown>;
  optionalDependencies?: Record<string, string>;
}

const INSTALL_TIME = ['preinstall', 'install', 'postinstall', 'prepare', 'preprepare', 'postprepare'];

/** npm without the settings of an outer `npm test` (they would change what npm does). */
function npm(args: readonly string[], cwd: string): { status: number | null; stdout: string; output: string } {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.toLowerCase().startsWith('npm_') && key !== 'NODE_ENV') env[key] = value;
  env.npm_config_update_notifier = 'false';
  const run = spawnSync('npm', args, { cwd, env, encoding: 'utf8', timeout: 120_000 });
  return { status: run.status, stdout: run.stdout, output: `${run.stdout}${run.stderr}` };
}

let work: string;
let tarball: string;
let packed: Manifest;
let files: string[];

beforeAll(() => {
  work = tempDir('sdr-manifest-');
  const pack = npm(['pack', '--ignore-scripts', '--json', '--pack-destination', work], ROOT);
  expect(pack.status, pack.output).toBe(0);
  const [info] = JSON.parse(pack.stdout) as [{ filename: string; files: { path: string }[] }];
  tarball = join(work, info.filename);
  files = info.files.map((f) => f.path);
  const unpacked = join(work, 'unpacked');
  spawnSync('mkdir', ['-p', unpacked]);
  const tar = spawnSync('tar', ['-xzf', tarball, '-C', unpacked, 'package/package.json'], { encoding: 'utf8' });
  expect(tar.status, tar.stderr).toBe(0);
  packed = JSON.parse(readFileSync(join(unpacked, 'package', 'package.json'), 'utf8')) as Manifest;
}, 120_000);

describe('the packed package.json', () => {
  it('has no script that runs on install; the build runs on prepack', () => {
    for (const script of INSTALL_TIME) expect(packed.scripts ?? {}, script).not.toHaveProperty(script);
    const source = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;
    // prepack builds what the package holds, the connector; `npm run build` adds the emulator package.
    expect(source.scripts?.prepack).toBe('npm run build:connector');
    expect(source.scripts?.build).toMatch(/^npm run build:connector && /);
    // A fresh clone's `npm ci` builds nothing: the README's commands build first.
    expect(source.scripts?.demo).toMatch(/^npm run build && /);
    expect(source.scripts?.test).toMatch(/^npm run build && /);
  });

  it("depends on undici and zod, and the stores' drivers: pg and pg-copy-streams, @duckdb/node-api as an optional dependency", () => {
    expect(Object.keys(packed.dependencies ?? {}).sort()).toEqual(['pg', 'pg-copy-streams', 'undici', 'zod']);
    // Optional: installed by default (and into the image, whose npm ci --omit=dev keeps it), left out by --omit=optional.
    expect(Object.keys(packed.optionalDependencies ?? {})).toEqual(['@duckdb/node-api']);
  });

  it('holds, beside dist/ and bin/, the generated catalog/ and schemas/ files by name and the listed ones: nothing stray', () => {
    // Named one by one in package.json `files`: a file left in those folders is not published.
    const generated = [...generatedArtifacts().keys()].filter((f) => /^(catalog|schemas)\//.test(f));
    const source = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
    expect(source.files.filter((f) => /^(catalog|schemas)\b/.test(f)).sort()).toEqual(generated.sort());
    const others = files.filter((f) => !f.startsWith('dist/') && !f.startsWith('bin/')).sort();
    expect(others).toEqual([...generated, 'LICENSE', 'README.md', 'icon.svg', 'metadata.yaml', 'package.json'].sort());
  });

  it('holds the connector alone: no emulator code, no OpenAPI document of the emulator', () => {
    expect(files.filter((f) => /emulator|openapi|^packages\//.test(f))).toEqual([]);
  });

  it('has one public module entry, source-data-read/schemas (the zod resource schemas, the emulator builds on them), with its types', () => {
    expect(packed.exports).toEqual({
      './schemas': { types: './dist/schemas/resources.d.ts', default: './dist/schemas/resources.js' },
      './package.json': './package.json',
    });
    expect(files).toEqual(expect.arrayContaining(['dist/schemas/resources.js', 'dist/schemas/resources.d.ts']));
    // The only declarations packed are the entry's.
    expect(files.filter((f) => f.endsWith('.d.ts'))).toEqual(['dist/schemas/resources.d.ts']);
  });

  it('carries the executables with their version check and launcher', () => {
    expect(files).toEqual(expect.arrayContaining(['bin/source-data-read', 'bin/tap-data-read', 'bin/package.json', 'bin/launch.cjs']));
    expect(packed.bin).toEqual({ 'source-data-read': 'bin/source-data-read', 'tap-data-read': 'bin/tap-data-read' });
  });

  it('installs (npm install --omit=dev of the tarball) without an install-script warning, and runs', () => {
    const consumer = join(work, 'consumer');
    spawnSync('mkdir', ['-p', consumer]);
    const install = npm(['install', '--omit=dev', '--no-package-lock', '--no-audit', '--no-fund', tarball], consumer);
    expect(install.status, install.output).toBe(0);
    expect(install.output).not.toMatch(/install.?scripts?|prepare/i);
    expect(readdirSync(join(consumer, 'node_modules', '.bin')).sort()).toEqual(['source-data-read', 'tap-data-read']);
    // Both stores' drivers come with a default install.
    for (const driver of ['pg', 'pg-copy-streams', '@duckdb/node-api']) expect(readdirSync(join(consumer, 'node_modules', driver)), driver).toContain('package.json');
    const version = spawnSync(join(consumer, 'node_modules', '.bin', 'tap-data-read'), ['--version'], { encoding: 'utf8' });
    expect(version.stdout).toMatch(/^tap-data-read \d+\.\d+\.\d+\n$/);
    // The public entry loads from the installed package and parses a record; nothing else of dist/ is reachable.
    const entry = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', "const s = await import('source-data-read/schemas'); console.log(typeof s.Contact.parse); await import('source-data-read/dist/cli/source.js').catch((e) => console.log(e.code));"],
      { cwd: consumer, encoding: 'utf8' },
    );
    expect(entry.stdout, entry.stderr).toBe('function\nERR_PACKAGE_PATH_NOT_EXPORTED\n');
  }, 120_000);
});
