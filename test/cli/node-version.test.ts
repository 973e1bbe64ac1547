/**
 * On a Node.js older than 22 both executables say so in one line on stderr
 * (and how to get a newer one) and exit 1, before loading any of their code.
 * Runs with every old Node found on this machine (the system's /usr/bin/node
 * is Node 20 here; OLD_NODE=/path/to/node adds another); without one the
 * case is skipped, loudly.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, SOURCE_BIN, TAP_BIN, tempDir } from '../helpers/cli.js';

function major(node: string): number | undefined {
  const run = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' });
  return run.status === 0 ? Number(run.stdout.trim().split('.')[0]) : undefined;
}

/** Every Node.js binary older than 22 on this machine: PATH, the usual system places, and OLD_NODE. */
function oldNodes(): { path: string; major: number }[] {
  const candidates = [
    ...(process.env.OLD_NODE ? [process.env.OLD_NODE] : []),
    ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'node')),
    '/usr/bin/node', '/usr/local/bin/node', '/bin/node',
  ];
  const seen = new Set<string>();
  const found: { path: string; major: number }[] = [];
  for (const candidate of candidates) {
    if (!existsSync(candidate)) continue;
    const real = realpathSync(candidate);
    if (seen.has(real) || real === realpathSync(process.execPath)) continue;
    seen.add(real);
    const m = major(candidate);
    if (m !== undefined && m < 22) found.push({ path: candidate, major: m });
  }
  return found;
}

const OLD = oldNodes();
if (OLD.length === 0) {
  console.warn('SKIPPED: no Node.js older than 22 on this machine (PATH, /usr/bin/node, /usr/local/bin/node, OLD_NODE): the version check of bin/ is not exercised.');
}

const RUNS: readonly (readonly [string, string, readonly string[]])[] = [
  ['source-data-read', SOURCE_BIN, ['spec']],
  ['source-data-read', SOURCE_BIN, ['replicate', '--config', 'config.json', '--db', 'replica.db']],
  ['source-data-read', SOURCE_BIN, ['--version']],
  ['source-data-read', SOURCE_BIN, []],
  ['tap-data-read', TAP_BIN, ['--about']],
  ['tap-data-read', TAP_BIN, ['--config', 'config.json', '--discover']],
];

describe.skipIf(OLD.length === 0)('an old Node.js: one line saying Node 22 or newer is needed', () => {
  it.each(OLD.map((n) => [`${n.path} (Node ${n.major})`, n.path] as const))('%s', (_label, node) => {
    for (const [name, bin, args] of RUNS) {
      const run = spawnSync(node, [bin, ...args], { cwd: ROOT, encoding: 'utf8' });
      const what = `${name} ${args.join(' ')}`;
      expect(run.status, what).toBe(1);
      expect(run.stdout, what).toBe('');
      const lines = run.stderr.split('\n').filter((l) => l !== '');
      expect(lines, what).toHaveLength(1);
      expect(lines[0], what).toMatch(new RegExp(`^${name}: Node\\.js 22 or newer is needed; this is Node\\.js \\d+\\.\\d+\\.\\d+ \\(`));
      // From a checkout: the way out is scripts/with-node, with the same command to paste.
      expect(lines[0], what).toContain(`scripts/with-node bin/${name}${args.length > 0 ? ` ${args.join(' ')}` : ''}.`);
    }
  });

  it('installed without scripts/ (the npm package): how to install a newer Node', () => {
    const node = (OLD[0] as { path: string }).path;
    const pkg = tempDir('sdr-oldnode-');
    cpSync(join(ROOT, 'bin'), join(pkg, 'bin'), { recursive: true });
    for (const name of ['source-data-read', 'tap-data-read']) {
      const run = spawnSync(node, [join(pkg, 'bin', name), '--help'], { cwd: pkg, encoding: 'utf8' });
      expect(run.status).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(new RegExp(`^${name}: Node\\.js 22 or newer is needed; .*Please install Node\\.js 22 or newer from https://nodejs\\.org/.*\\n$`));
    }
  });
});

describe('the executables start with the version check, in syntax any Node.js parses', () => {
  it('bin/ is CommonJS and loads dist/ only after the check', () => {
    for (const bin of [SOURCE_BIN, TAP_BIN]) {
      const run = spawnSync(process.execPath, ['--check', bin], { encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
    }
    // No import statement, no top-level await: launch.cjs checks the version, then import()s dist/.
    expect(spawnSync('grep', ['-lE', '^(import|export) |await ', SOURCE_BIN, TAP_BIN, join(ROOT, 'bin', 'launch.cjs')], { encoding: 'utf8' }).stdout).toBe('');
    expect(readFileSync(join(ROOT, 'bin', 'package.json'), 'utf8')).toMatch(/"type": "commonjs"/);
  });
});
