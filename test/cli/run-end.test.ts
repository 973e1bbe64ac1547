/**
 * The run's end as the command line keeps it (src/cli/run-end.ts): the report
 * exists as soon as a sync command starts, before anything is awaited, so a
 * signal at start-up is recorded and the summary written.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RunEnd } from '../../src/cli/run-end.js';
import { RunSummarySchema } from '../../src/engine/run-summary-schema.js';
import { tempDir } from '../helpers/cli.js';

const dir = tempDir('run-end-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

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
