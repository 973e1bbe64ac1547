/**
 * The image check (scripts/image-check.sh) is wired as docs/docker.md says: the
 * npm script, the command .ci/run runs, shell syntax, and every check it
 * lists defined. The check itself needs root and a Docker engine of its own:
 * .ci/run runs it after the tests.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/cli.js';

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const scripts = ['scripts/image-check.sh', ...readdirSync(join(ROOT, 'scripts', 'image-check')).map((f) => `scripts/image-check/${f}`)];

describe('scripts/image-check.sh', () => {
  it('is `npm run image-check`, the command docs/docker.md gives and .ci/run runs after the tests', () => {
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(pkg.scripts['image-check']).toBe('bash scripts/image-check.sh');
    expect(read('docs/docker.md')).toContain('scripts/with-node npm run image-check');
    const ci = read('.ci/run');
    expect(ci).toMatch(/scripts\/with-node npm run --silent image-check/);
    expect(ci.indexOf('part "tests" scripts/with-node npm test')).toBeGreaterThan(0);
    expect(ci.indexOf('part "tests"')).toBeLessThan(ci.indexOf('part "image check"'));
  });

  it.each(scripts)('%s is valid bash', (script) => {
    const run = spawnSync('bash', ['-n', join(ROOT, script)], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it('defines every check it runs, and checks outputs with the project\'s own protocol checker', () => {
    const runs = read('scripts/image-check/runs.sh');
    const list = /^IMAGE_CHECKS=\(([^)]*)\)/m.exec(runs)?.[1]?.trim().split(/\s+/) ?? [];
    expect(list).toEqual(expect.arrayContaining(['user', 'airbyte', 'singer', 'restricted', 'stop']));
    for (const name of list) expect(runs).toMatch(new RegExp(`^image_check_${name}\\(\\) \\{`, 'm'));
    const main = read('scripts/image-check.sh');
    expect(main).toContain('PROTOCOL_CHECK="$ROOT/.build/dev/scripts/protocol-check.js"');
    expect(main).toContain('(cd "$ROOT" && npm run --silent build:dev)');
    expect(runs).toMatch(/^protocol_checker\(\) \{ # airbyte\|singer NAME\n {2}"\$ROOT\/scripts\/with-node" node "\$PROTOCOL_CHECK" "\$1"/m);
  });

  it('starts dockerd without touching the host network and stops it on exit', () => {
    const engine = read('scripts/image-check/engine.sh');
    for (const flag of ['--iptables=false', '--ip6tables=false', '--bridge=none', '--ip-forward=false', '--storage-driver overlay2', '--data-root']) {
      expect(engine).toContain(flag);
    }
    expect(read('scripts/image-check.sh')).toMatch(/^trap cleanup EXIT$/m);
  });
});
