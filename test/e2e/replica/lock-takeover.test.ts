/**
 * A `replicate` run killed (SIGKILL, as Kubernetes does to a pod) leaves its
 * writer lock behind; the next run comes from another host name (another
 * pod). While the dead run's lock is fresh the next run is refused with 75;
 * once it is stale (not renewed for the staleness limit, shortened here
 * through the test-only entry point test/helpers/source-with-settings.ts:
 * a production run has no way to shorten it) it is taken over with a WARN
 * naming the old holder, and the replica is completed exactly. The other host
 * name is a new UTS namespace (`unshare --uts`) where the machine allows it,
 * else a host name given through the same entry point. A run stalled (SIGSTOP)
 * while another takes its lock over commits nothing once it runs again and
 * exits 75.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { RunSummarySchema } from '../../../src/report/run-summary-schema.js';
import { startEmulator } from 'data-read-emulator';
import { ROOT, SOURCE_BIN, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';
import { dumpLists, replicaAsDump, replicate, type Account } from '../../helpers/emulator-runs.js';
import { lockHolder } from '../../helpers/sqlite.js';
import { withEmulatorAccount } from '../../helpers/suite.js';
import { replicaStates } from '../../../src/replica/records.js';
import type { LockSettings } from '../../../src/replica/lock.js';

const OTHER_HOST = 'replica-pod-b';
/** Whether this machine lets an unprivileged test enter a new UTS namespace (and name its host). */
const unshareWorks = spawnSync('unshare', ['--user', '--map-root-user', '--uts', 'sh', '-c', `hostname ${OTHER_HOST} && hostname`], { encoding: 'utf8' }).stdout?.trim() === OTHER_HOST;

/** The test-only entry point: source-data-read with writer-lock settings no production run can be given. */
const WITH_SETTINGS = join(ROOT, 'test', 'helpers', 'source-with-settings.ts');

/** `source-data-read replicate ARGS` with these writer-lock settings (through the test-only entry point). */
function replicateWithLock(lock: Partial<LockSettings>, args: readonly string[]): string[] {
  return [process.execPath, WITH_SETTINGS, JSON.stringify({ replicaLock: lock }), 'replicate', ...args];
}

/** `replicate` as run on the host OTHER_HOST, its lock stale after `staleMs` when given. */
function replicateOnOtherHost(args: readonly string[], lock: { staleMs?: number } = {}): Promise<CliResult> {
  const [file, ...argv] = unshareWorks
    ? ['unshare', '--user', '--map-root-user', '--uts', 'sh', '-c', 'hostname "$0" && exec "$@"', OTHER_HOST, ...replicateWithLock(lock, args)]
    : replicateWithLock({ ...lock, host: OTHER_HOST }, args);
  return new Promise((resolve, reject) => {
    const child = spawn(file as string, argv, { env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
  });
}

describe('replicate: a killed run, the next one from another host', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('replica-takeover-', { contacts: 80, seed: 5 }, (suite) => ({ account, dir } = suite));

  it(`SIGKILL mid-run; from ${unshareWorks ? 'a new UTS namespace' : 'a faked host name'}: refused (75) while the lock is fresh, taken over once stale; the replica exact`, async () => {
    const db = join(dir, 'killed.db');
    const config = account.config(dir, { page_size: 5, max_concurrent_requests: 1 });
    account.emulator.control.setLatency(50);
    let killed;
    try {
      const run = replicate(config, db, { env: { SOURCE_DATA_READ_PROGRESS_MS: '0' } });
      let ended = false;
      void run.finally(() => (ended = true));
      let holder: { pid: number; host: string } | undefined;
      while ((holder = lockHolder(db)) === undefined) {
        if (ended) throw new Error('the replicate run ended before it took the lock');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      process.kill(holder.pid, 'SIGKILL');
      killed = await run;
    } finally {
      account.emulator.control.setLatency(0);
    }
    expect(killed.signal).toBe('SIGKILL');
    expect(lockHolder(db)?.host).toBe(hostname()); // left behind

    // Fresh (the default 60 s): another host cannot tell whether the run lives, so it must wait.
    const refusedSummary = join(dir, 'refused.json');
    const refused = await replicateOnOtherHost(['--config', config, '--db', db, '--summary', refusedSummary]);
    expect(refused.code, refused.stderr).toBe(75);
    expect(refused.stderr).toMatch(new RegExp(`Another replicate run is writing ".*killed\\.db" \\(pid \\d+ on ${hostname()}, started .*, last renewed .*\\)`));
    expect(RunSummarySchema.parse(JSON.parse(readFileSync(refusedSummary, 'utf8')))).toMatchObject({ status: 'failed', exit_code: 75, failure_type: 'transient_error' });

    // Stale (the limit shortened for the test): taken over with a WARN naming the old holder and its age.
    const summary = join(dir, 'taken.json');
    const taken = await replicateOnOtherHost(['--config', account.config(dir), '--db', db, '--summary', summary], { staleMs: 1 });
    expect(taken.code, taken.stderr).toBe(0);
    expect(taken.stderr).toMatch(
      new RegExp(`WARN source-data-read: Took over the writer lock of ".*killed\\.db": not renewed for \\d+ s \\(stale after 0 s\\), its holder \\(pid \\d+ on ${hostname()}, started .*, last renewed .* \\(\\d+ s ago\\)\\) was killed or cut off`),
    );
    expect(replicaAsDump(db)).toStrictEqual(dumpLists(account.dump()));
    expect(lockHolder(db)).toBeUndefined();
    const s = RunSummarySchema.parse(JSON.parse(readFileSync(summary, 'utf8')));
    expect(s).toMatchObject({ command: 'replicate', status: 'succeeded', exit_code: 0 });
    expect(s.streams.map((x) => x.status)).toEqual(['complete', 'complete', 'complete', 'complete', 'complete']);
  });
});

/** How many streams have a committed state (read while a run may be writing: WAL). */
function committedStates(db: string): number {
  try {
    const check = new DatabaseSync(db, { readOnly: true });
    try {
      return Number(check.prepare('SELECT count(*) AS n FROM _replica_state').get()?.n);
    } finally {
      check.close();
    }
  } catch {
    return 0; // not created yet, or busy this moment
  }
}

/** When each stream's state was last committed. */
function commitTimes(db: string): Record<string, string> {
  const check = new DatabaseSync(db, { readOnly: true });
  try {
    return Object.fromEntries(check.prepare('SELECT stream, committed_at FROM _replica_state').all().map((r) => [String(r.stream), String(r.committed_at)]));
  } finally {
    check.close();
  }
}

describe('replicate: a stalled run whose lock another run took over', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('replica-stalled-', { contacts: 60, seed: 7 }, (suite) => ({ account, dir } = suite));

  it('commits nothing once it runs again: what it read before the takeover is rolled back, exit 75; the replica is the newer run\'s', async () => {
    const db = join(dir, 'stalled.db');
    const control = account.emulator.control;
    // Slow answers: the stalled run is caught between two groups (a group is committed well before the next page comes).
    control.setLatency(800);
    const stalled = spawn(process.execPath, [SOURCE_BIN, 'replicate', '--config', account.config(dir, { page_size: 5, max_concurrent_requests: 1 }), '--db', db], {
      env: { ...process.env, SOURCE_DATA_READ_PROGRESS_MS: '0' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const err: Buffer[] = [];
    stalled.stderr.on('data', (b: Buffer) => err.push(b));
    const ended = new Promise<number | null>((resolve) => stalled.on('close', (code) => resolve(code)));
    try {
      while (committedStates(db) === 0) {
        if (stalled.exitCode !== null) throw new Error(`the run ended before its first commit: ${Buffer.concat(err).toString('utf8')}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      stalled.kill('SIGSTOP'); // a frozen VM: its lock is no longer renewed
      control.setLatency(0);
      const newer = await replicateOnOtherHost(['--config', account.config(dir), '--db', db], { staleMs: 1 });
      expect(newer.code, newer.stderr).toBe(0);
      expect(newer.stderr).toMatch(/Took over the writer lock/);
      const states = replicaStates(db);
      const committed = commitTimes(db);
      const rows = replicaAsDump(db);
      stalled.kill('SIGCONT');
      const code = await ended;
      const stderr = Buffer.concat(err).toString('utf8');
      expect(code, stderr).toBe(75);
      expect(stderr).toMatch(/ERROR source-data-read: Another replicate run took over the writer lock of ".*stalled\.db" \(this run was stalled longer than the lock stays fresh\); this run stopped writing and rolled back what it had not committed/);
      // Not one group of the stalled run committed once it ran again.
      expect(commitTimes(db)).toStrictEqual(committed);
      expect(replicaStates(db)).toStrictEqual(states);
      expect(replicaAsDump(db)).toStrictEqual(rows);
      expect(rows).toStrictEqual(dumpLists(account.dump()));
    } finally {
      control.setLatency(0);
      if (stalled.exitCode === null && stalled.signalCode === null) {
        stalled.kill('SIGCONT');
        stalled.kill('SIGKILL');
      }
    }
  });
});

describe('replicate: the lock is renewed while the run waits on a rate limit', () => {
  it('renewed_at moves on during the waits (renewal shortened for the test); the summary counts the waits', async () => {
    // A quota of 3 requests a second: the run waits for the window several times.
    const emulator = await startEmulator({ host: '127.0.0.1', port: 0, seed: 9, limits: { perMinute: 3, windowMs: 1000 } });
    const dir = tempDir('replica-renew-');
    try {
      const account = emulator.control.createAccount({ name: 'Renewal test' });
      const key = emulator.control.createKey(account.id).key;
      emulator.control.seed(account.id, { contacts: 20 });
      const config = writeJson(dir, 'config.json', { api_key: key, base_url: emulator.url, page_size: 100, max_concurrent_requests: 1 });
      const db = join(dir, 'renew.db');
      const summary = join(dir, 'summary.json');
      const [node, ...argv] = replicateWithLock({ renewMs: 100 }, ['--config', config, '--db', db, '--summary', summary]);
      const child = spawn(node as string, argv, {
        env: process.env,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      const err: Buffer[] = [];
      child.stderr.on('data', (b: Buffer) => err.push(b));
      let code: number | null | undefined;
      const exited = new Promise<void>((resolve) => child.on('close', (c) => resolve(void (code = c))));
      const renewals = new Set<string>();
      while (code === undefined) {
        try {
          const check = new DatabaseSync(db, { readOnly: true });
          try {
            const row = check.prepare('SELECT renewed_at FROM _replica_lock').get();
            if (row?.renewed_at) renewals.add(String(row.renewed_at));
          } finally {
            check.close();
          }
        } catch {
          // not created yet, or busy this moment
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await exited;
      const stderr = Buffer.concat(err).toString('utf8');
      expect(code, stderr).toBe(0);
      expect(stderr).toMatch(/Pausing requests for/);
      expect(renewals.size).toBeGreaterThanOrEqual(5);
      const s = RunSummarySchema.parse(JSON.parse(readFileSync(summary, 'utf8')));
      expect(s.rate_limit_waits).toBeGreaterThanOrEqual(1);
      expect(s.rate_limit_wait_seconds).toBeGreaterThan(0);
    } finally {
      await emulator.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
