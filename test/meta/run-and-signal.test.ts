/**
 * runAndSignal (test/helpers/cli.ts), which the interrupt tests stop their
 * processes with, signals on a match however the pipe cut the output into
 * chunks: where a chunk ends depends on how fast the writer and the test
 * run, so a match cut in two must still count.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runAndSignal, tempDir } from '../helpers/cli.js';

const dir = tempDir('sdr-run-and-signal-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('runAndSignal', () => {
  it('sends the signal on a match that came in two chunks', async () => {
    // The line in two writes, apart in time: two chunks. Then the process would go on for 10 s (ending with 0).
    const script = join(dir, 'split.mjs');
    writeFileSync(script, `process.stdout.write('{"type":"ST');\nsetTimeout(() => process.stdout.write('ATE"}\\n'), 200);\nsetTimeout(() => {}, 10_000);\n`);
    const run = await runAndSignal(script, [], { signal: 'SIGTERM' });
    expect({ signalled: run.signalled, code: run.code, signal: run.signal }).toEqual({ signalled: true, code: null, signal: 'SIGTERM' });
    expect(run.stdout).toBe('{"type":"STATE"}\n');
  });
});
