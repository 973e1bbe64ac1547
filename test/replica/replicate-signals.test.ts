/**
 * replicate stopped through the run's AbortSignal (src/process/interrupt.ts),
 * in-process against the emulator on 127.0.0.1: it listens to no process
 * signal itself. Stopped mid-run, the writer commits the group it holds, the
 * file is closed and unlocked, the report has what was committed, and the
 * run says so and goes no further; stopped during the account check, nothing
 * is written and no file is made. The real executable under real signals:
 * test/e2e/replica/failures.test.ts, test/e2e/all-faces/run-summary.test.ts.
 */
import { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RunRecorder } from '../../src/report/run-report.js';
import { replicate } from '../../src/replica/command.js';
import { Interrupt } from '../../src/runtime/interrupt.js';
import { LineWriter, StderrLogger } from '../../src/runtime/output.js';
import type { Account } from '../helpers/emulator-runs.js';
import { writeJson } from '../helpers/cli.js';
import { captureStderr } from '../helpers/stderr.js';
import { withEmulatorAccount } from '../helpers/suite.js';

let account: Account;
let dir: string;
withEmulatorAccount('replicate-signals-', { contacts: 300, seed: 5 }, (suite) => ({ account, dir } = suite));
const stderr = captureStderr();
afterEach(() => {
  account.emulator.control.setLatency(0);
  vi.restoreAllMocks();
});

/** The command line's stop handler on an EventEmitter; the exit recorded instead of taken. */
function stopHandler(report: RunRecorder) {
  const signals = new EventEmitter();
  let exited: (code: number) => void = () => undefined;
  const exit = new Promise<number>((resolve) => (exited = resolve));
  const interrupt = new Interrupt({
    out: new LineWriter(new PassThrough()),
    log: (message) => new StderrLogger('source-data-read').log('ERROR', message),
    signals,
    stderr: new PassThrough(),
    onSignal: (signal) => report.interrupted(signal),
    exit: (code) => exited(code),
  }).install();
  return { signal: interrupt.signal, stop: () => signals.emit('SIGTERM', 'SIGTERM'), exit };
}

const settles = async (p: Promise<unknown>, ms: number): Promise<boolean> => {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setTimeout(r, ms));
  return done;
};

/** Stop the run once its report was told the second checkpoint. */
function stopAtSecondCheckpoint(report: RunRecorder, stop: () => void): void {
  let checkpoints = 0;
  const state = report.state.bind(report);
  vi.spyOn(report, 'state').mockImplementation((name, s) => {
    state(name, s);
    if (++checkpoints === 2) setImmediate(stop);
  });
}

describe('replicate stopped through its AbortSignal', () => {
  it('mid-run: the group held committed, the file closed and unlocked, the report told, the run says so and goes no further', async () => {
    const db = join(dir, 'mid-run.db');
    const report = new RunRecorder('replicate');
    const { signal, stop, exit } = stopHandler(report);
    // A stop once the second checkpoint was handed over (the first group may still be open).
    stopAtSecondCheckpoint(report, stop);
    account.emulator.control.setLatency(20);
    const listeners = process.listenerCount('SIGTERM');
    const run = replicate({ logger: new StderrLogger('source-data-read'), report, signal }, account.config(dir, { page_size: 5, max_concurrent_requests: 1 }), db);
    expect(process.listenerCount('SIGTERM')).toBe(listeners);
    expect(await exit).toBe(143);
    expect(await settles(run, 200), 'the run stalls where it was stopped').toBe(false);
    expect(stderr.join('')).toMatch(/WARN source-data-read: Interrupted \(SIGTERM\)\. The replica keeps everything committed so far; run replicate again to continue\.\n/);
    expect(stderr.join('')).not.toMatch(/ERROR/);
    const file = new DatabaseSync(db, { readOnly: true });
    try {
      expect(file.prepare('PRAGMA integrity_check').get()?.integrity_check).toBe('ok');
      expect(file.prepare('SELECT count(*) AS n FROM _replica_lock').get()?.n).toBe(0);
      const rows = Number(file.prepare('SELECT count(*) AS n FROM contacts').get()?.n);
      expect(rows).toBeGreaterThanOrEqual(5);
      const summary = report.finish(143);
      expect(summary).toMatchObject({ status: 'interrupted', exit_code: 143 });
      expect(summary.streams.find((s) => s.name === 'contacts')?.records).toBe(rows);
    } finally {
      file.close();
    }
  });

  it('mid-run with accounts: says only what it kept, not that nothing was written', async () => {
    const db = join(dir, 'mid-run-accounts.db');
    const report = new RunRecorder('replicate');
    const { signal, stop, exit } = stopHandler(report);
    stopAtSecondCheckpoint(report, stop);
    account.emulator.control.setLatency(20);
    const config = writeJson(dir, 'accounts.json', {
      base_url: account.emulator.url,
      page_size: 5,
      max_concurrent_requests: 1,
      accounts: [{ name: 'only', api_key: account.key }],
    });
    const run = replicate({ logger: new StderrLogger('source-data-read'), report, signal }, config, db);
    expect(await exit).toBe(143);
    expect(await settles(run, 200), 'the run stalls where it was stopped').toBe(false);
    const said = stderr.join('');
    expect(said).toMatch(/WARN source-data-read: Interrupted \(SIGTERM\)\. The replica keeps everything committed so far; run replicate again to continue\.\n/);
    // The replica was open and written to: the words of a stop before it opened would be false.
    expect(said).not.toContain('before the replica was opened');
    const file = new DatabaseSync(db, { readOnly: true });
    try {
      expect(file.prepare('SELECT count(*) AS n FROM _replica_lock').get()?.n).toBe(0);
      expect(Number(file.prepare('SELECT count(*) AS n FROM contacts').get()?.n)).toBeGreaterThanOrEqual(5);
    } finally {
      file.close();
    }
  });

  it('during the account check: nothing written, no file made', async () => {
    const db = join(dir, 'early.db');
    const report = new RunRecorder('replicate');
    const { signal, stop, exit } = stopHandler(report);
    account.emulator.control.setLatency(300);
    const run = replicate({ logger: new StderrLogger('source-data-read'), report, signal }, account.config(dir), db);
    setTimeout(stop, 50);
    expect(await exit).toBe(143);
    expect(await settles(run, 400)).toBe(false);
    expect(stderr.join('')).toMatch(/WARN source-data-read: Interrupted \(SIGTERM\) before the replica was opened; nothing was written\.\n/);
    expect(existsSync(db)).toBe(false);
    expect(report.finish(143)).toMatchObject({ status: 'interrupted', exit_code: 143 });
  });
});
