/**
 * Writing --summary FILE: by a temporary file and a rename where that works
 * (never half a file, nothing left behind), in place where it cannot: a file
 * that is not a regular one, or a file bind-mounted on its own (Kubernetes'
 * /dev/termination-log, where a rename onto it fails with EBUSY).
 */
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { namesStdout, summaryWriteMode, writeSummaryFile } from '../../src/cli/summary-file.js';
import { SOURCE_BIN, tempDir, writeJson } from '../helpers/cli.js';

const dir = tempDir('summary-file-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Whether this machine lets a test bind-mount a file in a mount namespace of its own. */
const bindMountWorks = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'true']).status === 0;

describe('namesStdout', () => {
  it("stdout's own names, whatever stdout is; not a file of its own, nor /dev/null", () => {
    for (const name of ['/dev/stdout', '/dev/fd/1', '/proc/self/fd/1']) expect(namesStdout(name), name).toBe(true);
    const path = join(dir, 'elsewhere.json');
    writeFileSync(path, '');
    expect(namesStdout(path)).toBe(false);
    rmSync(path);
    expect(namesStdout('/dev/null')).toBe(false);
  });
});

describe('writeSummaryFile', () => {
  it('replaces the file by a rename: the whole text, a final newline, no temporary file left', () => {
    const path = join(dir, 'summary.json');
    writeFileSync(path, '{"old": true}\n');
    expect(writeSummaryFile(path, '{"new":1}')).toBe('rename');
    expect(readFileSync(path, 'utf8')).toBe('{"new":1}\n');
    expect(readdirSync(dir)).toEqual(['summary.json']);
  });

  it('through a symbolic link (relative, chained, or to a file not there yet): writes the file it names, the link stays', () => {
    const sub = join(dir, 'links');
    mkdirSync(join(sub, 'shared'), { recursive: true });
    writeFileSync(join(sub, 'shared', 'summary.json'), '{"old": true}\n');
    symlinkSync('shared/summary.json', join(sub, 'first'));
    symlinkSync('first', join(sub, 'second'));
    expect(writeSummaryFile(join(sub, 'second'), '{"new":1}')).toBe('rename');
    expect(readFileSync(join(sub, 'shared', 'summary.json'), 'utf8')).toBe('{"new":1}\n');
    expect(readlinkSync(join(sub, 'second'))).toBe('first');
    expect(lstatSync(join(sub, 'first')).isSymbolicLink()).toBe(true);
    symlinkSync('shared/later.json', join(sub, 'dangling'));
    writeSummaryFile(join(sub, 'dangling'), '{"new":2}');
    expect(readFileSync(join(sub, 'shared', 'later.json'), 'utf8')).toBe('{"new":2}\n');
    expect(lstatSync(join(sub, 'dangling')).isSymbolicLink()).toBe(true);
    expect(readdirSync(join(sub, 'shared')).sort()).toEqual(['later.json', 'summary.json']);
    symlinkSync('loop-b', join(sub, 'loop-a'));
    symlinkSync('loop-a', join(sub, 'loop-b'));
    expect(() => writeSummaryFile(join(sub, 'loop-a'), '{}')).toThrow(/ELOOP/);
    rmSync(sub, { recursive: true });
  });

  it('writes in place into what is not a regular file (a device, a pipe)', () => {
    expect(summaryWriteMode('/dev/null')).toBe('in-place');
    expect(writeSummaryFile('/dev/null', '{}')).toBe('in-place');
  });

  it('a directory that does not exist: the cause is thrown (the command says it, its exit status unchanged)', () => {
    expect(() => writeSummaryFile(join(dir, 'no', 'such', 's.json'), '{}')).toThrow(/ENOENT/);
  });

  it.runIf(bindMountWorks)('a file bind-mounted on its own (/dev/termination-log on Kubernetes): written in place by a real run', () => {
    // The run's --summary is a bind mount of `backing`: what it writes lands in `backing`.
    const backing = join(dir, 'termination-log.backing');
    const mounted = join(dir, 'termination-log');
    writeFileSync(backing, '');
    writeFileSync(mounted, '');
    const config = writeJson(dir, 'down.json', { api_key: 'drk_live_summaryFileTestKey123', base_url: 'http://127.0.0.1:9', max_retries: 0 });
    const catalog = join(SOURCE_BIN, '..', '..', 'catalog', 'configured_catalog.json');
    const run = spawnSync(
      'unshare',
      ['--user', '--map-root-user', '--mount', 'sh', '-c', 'mount --bind "$0" "$1" && exec "$2" "$3" read --config "$4" --catalog "$5" --summary "$1"', backing, mounted, process.execPath, SOURCE_BIN, config, catalog],
      { encoding: 'utf8' },
    );
    expect(run.status, run.stderr).toBe(75);
    expect(run.stderr).not.toMatch(/Cannot write the run summary/);
    const summary = JSON.parse(readFileSync(backing, 'utf8')) as { exit_code: number; failure_type: string };
    expect(summary).toMatchObject({ exit_code: 75, failure_type: 'transient_error' });
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});
