/**
 * The repository runs on its own: nothing that `npm test`, `.ci/run`, the
 * scripts or the benchmark run reads a folder beside the checkout (such as a
 * hand-kept checkout of protocol tools). The rule: no tracked file outside
 * the documentation (`*.md`) names such a folder, in code or in comments;
 * docs may say that an outside tool can be run by hand as a cross-check.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

// Spelt in pieces, so that this file does not match itself.
const FOLDER = ['sha', 'red'].join('');
const OUTSIDE = [
  ['..', FOLDER].join('/'),
  [FOLDER, 'tools'].join('/'),
  ['SHARED', 'DIR'].join('_'),
  // The same folder as path segments of a join.
  ...["'", '"'].map((q) => [q + '..' + q, q + FOLDER + q].join(', ')),
];

function trackedFiles(): string[] {
  const run = spawnSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`git ls-files failed in ${ROOT}: ${run.stderr}`);
  return run.stdout.split('\0').filter((f) => f.length > 0);
}

/** What npm test, .ci/run, scripts/ and the benchmark run or read: everything tracked but the docs. */
const isRun = (path: string): boolean => !path.endsWith('.md');

describe('the repository is self-contained', () => {
  it('no tracked file outside the docs reads a folder beside the checkout', () => {
    const files = trackedFiles().filter(isRun);
    expect(files).toEqual(expect.arrayContaining(['package.json', '.ci/run', 'scripts/image-check.sh', 'test/helpers/cli.ts']));
    const hits: string[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = readFileSync(join(ROOT, file), 'utf8');
      } catch {
        continue; // a tracked file deleted in the work tree runs nowhere
      }
      text.split('\n').forEach((line, i) => {
        if (OUTSIDE.some((needle) => line.includes(needle))) hits.push(`${file}:${i + 1}: ${line.trim().slice(0, 160)}`);
      });
    }
    expect(hits).toEqual([]);
  });

  it('finds such a reference where there is one', () => {
    const line = `python3 "${OUTSIDE[0]}/tools/airbyte-check.py" <out.jsonl`;
    expect(OUTSIDE.some((needle) => line.includes(needle))).toBe(true);
    const joined = `const tools = join(ROOT, '..', '${FOLDER}', 'tools');`;
    expect(OUTSIDE.some((needle) => joined.includes(needle))).toBe(true);
  });
});
