/**
 * scripts/replay-image.sh: the image's build and runtime steps replayed in a
 * temporary folder (no Docker engine here), then spec, check, discover and a
 * read against the emulator through the Dockerfile's exact ENTRYPOINT, the
 * Singer face, and a plain `npm install --omit=dev` of the packed tarball.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../../helpers/cli.js';

interface Summary {
  ok: boolean;
  entrypoint: string[];
  airbyte_entrypoint: string;
  tarball: { name: string; bytes: number; files: string[] };
  checks: Record<string, { n_errors: number; errors: string[]; records?: Record<string, number> } | null>;
}

// The image's npm ci and the consumer's install each bring @duckdb/node-api's binary (a 24 MB download, 68 MB installed).
const TIMEOUT_MS = 240_000;
let work: string;
let result: { code: number | null; stdout: string; stderr: string };

function runScript(dir: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // The image's build stage has no NODE_ENV and no npm settings of an outer `npm test`.
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key === 'NODE_ENV' || key === 'NODE_OPTIONS' || key.toLowerCase().startsWith('npm_')) continue;
    env[key] = value;
  }
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(ROOT, 'scripts', 'replay-image.sh'), dir], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGTERM'), TIMEOUT_MS - 5_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  work = tempDir('sdr-replay-');
  result = await runScript(work);
}, TIMEOUT_MS);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

function summary(): Summary {
  const lastLine = result.stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(lastLine) as Summary;
}

describe('the image, replayed (scripts/replay-image.sh)', () => {
  it('runs every step to the end', () => {
    expect(result.code, result.stderr.slice(-4000)).toBe(0);
    expect(summary().ok).toBe(true);
  });

  it('ran the ENTRYPOINT that AIRBYTE_ENTRYPOINT names', () => {
    const s = summary();
    expect(s.entrypoint).toEqual(['/usr/local/bin/node', '--max-semi-space-size=2', '--heap-growing-percent=10', '/airbyte/integration_code/bin/source-data-read']);
    expect(s.airbyte_entrypoint).toBe(s.entrypoint.join(' '));
  });

  it('spec, check, discover and read passed the Airbyte protocol check, and the read carried records', () => {
    const { checks } = summary();
    for (const name of ['spec', 'check', 'discover', 'read', 'consumer-spec']) {
      expect(checks[name], name).toBeTruthy();
      expect(checks[name]?.errors, name).toEqual([]);
    }
    const records = Object.values(checks.read?.records ?? {});
    expect(records.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    expect(checks.tap?.errors ?? []).toEqual([]);
  });

  it('packed a small tarball of what runs, without tests, sources or the emulator', () => {
    const { tarball } = summary();
    // A guard against packing what does not run (source maps, fixtures, a folder of node_modules), which the list of
    // files below names too; not a budget of the product's own code: the executables' bundle (dist/cli/, with undici
    // and zod inside) and the rest are about 630 KB packed.
    expect(tarball.bytes).toBeLessThan(800_000);
    expect(tarball.files).toEqual(
      expect.arrayContaining([
        'package.json', 'README.md', 'LICENSE', 'metadata.yaml', 'icon.svg',
        'bin/source-data-read', 'bin/tap-data-read', 'dist/cli/source.js', 'dist/cli/tap.js', 'dist/schemas/resources.js', 'dist/schemas/resources.d.ts',
        'catalog/spec.json', 'catalog/configured_catalog.json', 'schemas/contacts.json',
      ]),
    );
    for (const file of tarball.files.filter((f) => !/^dist\/.*\.d\.ts$/.test(f))) {
      expect(file).not.toMatch(/^(src|test|bench|scripts|docs|packages|dist\/tools)\/|\.ts$|\.test\.js$|\.map$|^tsconfig|^vitest|^\.ci|emulator|openapi/);
    }
  });
});
