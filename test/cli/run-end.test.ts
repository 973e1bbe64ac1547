/**
 * The run's end as the command line keeps it (src/cli/run-end.ts): the report
 * exists as soon as a sync command starts, before anything is awaited, so a
 * signal at start-up is recorded and the summary written; the stop handler
 * is there from a command's first moment to the end of its run.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { RunEnd, runCommand } from '../../src/cli/run-end.js';
import { captureStderr } from '../helpers/stderr.js';
import { RunSummarySchema } from '../../src/report/run-summary-schema.js';
import { tempDir } from '../helpers/cli.js';

const dir = tempDir('run-end-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const stderr = captureStderr();
afterEach(() => vi.restoreAllMocks());

describe('RunEnd', () => {
  it('a signal while the report is starting: the summary says interrupted, with the exit status', async () => {
    const path = join(dir, 'early.json');
    const logged: string[] = [];
    const end = new RunEnd((message) => logged.push(message));
    const starting = end.start('read', path);
    // What the signal handler does, before start() has been awaited.
    end.interrupted('SIGTERM');
    end.finish(143);
    await starting;
    const summary = RunSummarySchema.parse(JSON.parse(readFileSync(path, 'utf8')));
    expect(summary).toMatchObject({ command: 'read', status: 'interrupted', exit_code: 143, failure_type: null, streams: [] });
    expect(summary.message).toContain('SIGTERM');
    expect(logged).toEqual([]);
  });

  it('a summary that cannot be written is told in words (a missing directory, a directory), the run going on', () => {
    for (const [path, reason] of [
      [join(dir, 'no-such-dir', 's.json'), 'its directory does not exist'],
      [dir, 'it is a directory'],
    ] as const) {
      const logged: string[] = [];
      const end = new RunEnd((message) => logged.push(message));
      void end.start('read', path);
      end.finish(0);
      expect(logged).toEqual([`Cannot write the run summary to "${path}": ${reason}. Pass a --summary path in a writable directory.`]);
    }
  });

  it('finishes once: a later finish (a second signal) changes nothing', () => {
    const path = join(dir, 'once.json');
    const end = new RunEnd(() => undefined);
    void end.start('replicate', path);
    end.finish(0);
    end.interrupted('SIGINT');
    end.finish(130);
    expect(RunSummarySchema.parse(JSON.parse(readFileSync(path, 'utf8')))).toMatchObject({ status: 'succeeded', exit_code: 0 });
  });
});

describe('runCommand', () => {
  it('listens for SIGTERM from the command\'s first moment: the command\'s signal aborted, the summary interrupted, exit 143; the listener gone after', async () => {
    const path = join(dir, 'command.json');
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    const before = process.listenerCount('SIGTERM');
    let aborted = false;
    const code = await runCommand('test-executable', 'ERROR', 'usage', async ({ end, signal }) => {
      expect(process.listenerCount('SIGTERM')).toBe(before + 1);
      const starting = end.start('read', path);
      process.emit('SIGTERM', 'SIGTERM');
      aborted = signal.aborted;
      await starting;
      await vi.waitFor(() => expect(exit).toHaveBeenCalledWith(143), { timeout: 20_000 });
      return 0;
    });
    expect(aborted).toBe(true);
    expect(exit).toHaveBeenCalledTimes(1);
    // The exit wrote the summary first; the command's own end changes nothing.
    expect(code).toBe(0);
    expect(RunSummarySchema.parse(JSON.parse(readFileSync(path, 'utf8')))).toMatchObject({ status: 'interrupted', exit_code: 143 });
    expect(stderr.join('')).toMatch(/ERROR test-executable: Interrupted by SIGTERM: stopped before the command finished\.\n/);
    expect(process.listenerCount('SIGTERM')).toBe(before);
  });

  it('tells a usage mistake with the usage text, exit 2', async () => {
    const { UsageError } = await import('../../src/cli/usage.js');
    const code = await runCommand('test-executable', 'CRITICAL', 'Usage: test-executable --x', () => Promise.reject(new UsageError('No arguments given.')));
    expect(code).toBe(2);
    expect(stderr.join('')).toMatch(/CRITICAL test-executable: No arguments given\.\n\nUsage: test-executable --x\n$/);
  });
});
