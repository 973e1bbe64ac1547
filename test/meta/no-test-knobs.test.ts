/**
 * Production code honours no test-only knob: no module of src/ names an
 * environment variable meant for tests (`..._TEST_...`), so that nothing a
 * production run inherits (a variable left in a shell, a CI image, a pod
 * spec) can change what it does, such as making a live replica lock look
 * stale. Tests give such settings as parameters (injected clocks, the
 * replica's LockSettings through test/helpers/source-with-settings.ts).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

const SRC = join(ROOT, 'src');
// Spelt in pieces, so that this file would not match itself were it in src/.
const KNOB = new RegExp(['\\b[A-Z0-9_]*', 'TEST', '_[A-Z0-9_]+\\b'].join(''));

describe('src/ reads no test-only environment variable', () => {
  it('no module names one', () => {
    const found: string[] = [];
    for (const file of readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))) {
      const lines = readFileSync(join(SRC, file), 'utf8').split('\n');
      lines.forEach((line, i) => {
        if (KNOB.test(line)) found.push(`${relative(ROOT, join(SRC, file))}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(found).toEqual([]);
  });
});
