/**
 * No test asserts a wall-clock bound: how long something took depends on the
 * machine and its load, so time figures belong in the bench (`npm run bench`)
 * and the reliability report (`npm run reliability`), not in `npm test`.
 * This scans the tests and their support code for an upper bound on a
 * measured time (an `expect(...)` of a clock difference or a *Ms / elapsed /
 * duration value with toBeLessThan), and for a problem recorded when a
 * measured time is over a limit. A lower bound on a deliberate delay (the
 * emulator's slow fault, a real one-second Retry-After) stays allowed: a
 * slower machine only makes it pass more easily.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

const TIME = /Date\.now\(\)|performance\.now\(\)|hrtime|\b\w*(?:Ms|MS|Millis|Seconds|elapsed|Elapsed|duration|Duration|took)\b|\bms\b|\bseconds\b/;

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...files(path));
    else if (/\.ts$/.test(name)) out.push(path);
  }
  return out;
}

/** Upper bounds on measured time in one file's text: `file:line: text` for each. */
export function wallClockBounds(text: string, file = ''): string[] {
  const found: string[] = [];
  for (const [index, line] of text.split('\n').entries()) {
    const at = `${file}:${index + 1}: ${line.trim()}`;
    const bound = /expect\((.*)\)(?:\.not)?\.toBeLessThan(?:OrEqual)?\(/.exec(line);
    if (bound && TIME.test(bound[1] as string)) found.push(at);
    const problem = /if \((.*)\)\s*problems\.push/.exec(line);
    if (problem && /[<>]/.test(problem[1] as string) && TIME.test(problem[1] as string)) found.push(at);
  }
  return found;
}

describe('npm test asserts no wall-clock bound', () => {
  it('none in test/ and the test support code (test/helpers/, the reliability harness in reliability/)', () => {
    const scanned = [...files(join(ROOT, 'test')), ...files(join(ROOT, 'reliability'))].filter((f) => !f.endsWith('no-wall-clock.test.ts'));
    expect(scanned.length).toBeGreaterThan(50);
    expect(scanned.some((f) => relative(ROOT, f).startsWith('reliability/'))).toBe(true);
    expect(scanned.flatMap((f) => wallClockBounds(readFileSync(f, 'utf8'), relative(ROOT, f)))).toEqual([]);
  });

  it('the scan finds the bounds it is for', () => {
    const bounds = [
      'expect(ms).toBeLessThan(15_000);',
      'expect(Date.now() - started).toBeLessThan(380);',
      'expect(r.stopMs).toBeLessThanOrEqual(2000);',
      'expect(r.ms).toBeLessThan(CONTRACT_BOUND_MS);',
      'if (run.ms > CONTRACT_BOUND_MS) problems.push(`took ${run.ms} ms`);',
      'if (!(exitAfterCloseMs < 5_000)) problems.push(`exit ${exitAfterCloseMs} ms after`);',
      'expect(performance.now() - t0).toBeLessThanOrEqual(100);',
    ];
    for (const line of bounds) expect(wallClockBounds(line), line).toHaveLength(1);
    const allowed = [
      'expect(Date.now() - t0).toBeGreaterThanOrEqual(390);',
      'expect(w).toBeLessThanOrEqual(1000);',
      'expect(h.reset).toBeLessThanOrEqual(60);',
      'expect(r.throttled).toBeLessThanOrEqual(1);',
      'if (requestsAfterClose > 5) problems.push(`${requestsAfterClose} requests`);',
    ];
    for (const line of allowed) expect(wallClockBounds(line), line).toEqual([]);
  });
});
