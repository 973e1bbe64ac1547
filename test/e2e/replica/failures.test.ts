/** `replicate` failures: exit 78/75/70 (by failure type) with a message naming the cause, nothing on stdout, never a stack trace. */
import { describe, expect, it } from 'vitest';
import { withEmulatorAccount } from '../../helpers/suite.js';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { SOURCE_BIN, runCli, writeJson } from '../../helpers/cli.js';
import { dumpLists, replicaAsDump, replicate, type Account } from '../../helpers/emulator-runs.js';
import { lockHolder, queryOne } from '../../helpers/sqlite.js';

const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at .+:\d+:\d+/);

/**
 * Poll until `ready()` holds, for as long as `run` (the replicate run it waits
 * on) goes on: no count or clock bounds the wait (vitest's test timeout does);
 * a run that ends first fails the test with `what`.
 */
async function whileRunning(run: Promise<unknown>, what: string, ready: () => boolean): Promise<void> {
  let ended = false;
  void run.finally(() => {
    ended = true;
  });
  while (!ready()) {
    if (ended) throw new Error(`the replicate run ended before ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Whether `db` has at least `n` contacts committed. */
function hasRows(db: string, n: number): boolean {
  if (!existsSync(db)) return false;
  try {
    return Number(queryOne(db, 'SELECT count(*) AS n FROM contacts')?.n) >= n;
  } catch {
    return false; // the table is not created yet
  }
}

describe('replicate: errors', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('replica-cli-', { contacts: 60, seed: 3 }, (s) => ({ account, dir } = s));

  it('an invalid config', async () => {
    const config = writeJson(dir, 'bad.json', { api_key: 'nope', base_url: 'ftp://x' });
    const run = await replicate(config, join(dir, 'a.db'));
    expect(run.code).toBe(78);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/ERROR source-data-read: Cannot replicate: Invalid config: api_key must look like <prefix>_live_<secret>/);
    noStack(run.stderr);
  });

  it('a key the service refuses (401), without printing the key', async () => {
    const key = 'drk_live_notAKeyOfThisService123';
    const config = writeJson(dir, 'badkey.json', { api_key: key, base_url: account.emulator.url });
    const run = await replicate(config, join(dir, 'b.db'));
    expect(run.code).toBe(78);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/Cannot replicate: .*401/);
    expect(run.stderr).not.toContain(key);
    noStack(run.stderr);
    // The description, asked for alongside the account, says nothing of its own, and no file is made.
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(existsSync(join(dir, 'b.db'))).toBe(false);
  });

  it('a service that cannot be reached', async () => {
    const config = writeJson(dir, 'down.json', { api_key: account.key, base_url: 'http://127.0.0.1:9', max_retries: 0 });
    const run = await replicate(config, join(dir, 'c.db'));
    expect(run.code).toBe(75);
    expect(run.stderr).toMatch(/Cannot replicate: Cannot reach the Data-Read API at http:\/\/127\.0\.0\.1:9/);
    noStack(run.stderr);
  });

  it('a database file in a folder that does not exist: names the folder and its first missing parent, creates nothing', async () => {
    const db = join(dir, 'no', 'such', 'dir', 'r.db');
    const run = await replicate(account.config(dir), db);
    expect(run.code).toBe(78);
    expect(run.stderr).toContain(
      `Cannot replicate: Cannot create the replica database "${db}": its folder "${join(dir, 'no', 'such', 'dir')}" does not exist (nor does "${join(dir, 'no')}"). ` +
        `Create it first (mkdir -p "${join(dir, 'no', 'such', 'dir')}"), or give --db a file in an existing folder.`,
    );
    expect(run.stderr).not.toContain('unable to open');
    expect(existsSync(join(dir, 'no'))).toBe(false);
    noStack(run.stderr);
  });

  it('a database file that cannot be opened', async () => {
    const db = join(dir, 'folder.db');
    mkdirSync(db);
    const run = await replicate(account.config(dir), db);
    expect(run.code).toBe(78);
    expect(run.stderr).toMatch(/Cannot replicate: Cannot open the replica database ".*folder\.db"/);
    noStack(run.stderr);
  });

  it('usage mistakes: no --db, or a --state the replica does not take', async () => {
    const noDb = await runCli(SOURCE_BIN, ['replicate', '--config', account.config(dir)]);
    expect(noDb.code).toBe(2);
    expect(noDb.stderr).toContain('replicate needs --db TARGET (a SQLite or DuckDB file, or a postgresql:// URL)');
    const withState = await runCli(SOURCE_BIN, ['replicate', '--config', account.config(dir), '--db', join(dir, 'd.db'), '--state', 'x.json']);
    expect(withState.code).toBe(2);
    expect(withState.stderr).toContain('replicate takes no --catalog or --state');
  });

  it('a second run on a file another run is writing', async () => {
    const db = join(dir, 'busy.db');
    const config = account.config(dir, { page_size: 5 });
    const control = account.emulator.control;
    // The first run holds its lock while its list requests are held back; no clock decides who runs first.
    const listed = (): number => Object.entries(control.stats().byPath).filter(([path]) => path !== '/v1/me').reduce((n, [, counts]) => n + Object.values(counts).reduce((a, b) => a + b, 0), 0);
    control.resetStats();
    control.setFaults([{ kind: 'slow', every: 1, slowMs: 1_000, paths: ['/v1/contacts', '/v1/conversations', '/v1/stage_events', '/v1/deletions', '/v1/pipeline_stages'] }]);
    try {
      const first = replicate(config, db, { env: { SOURCE_DATA_READ_PROGRESS_MS: '0' } });
      while (listed() === 0) await new Promise((resolve) => setTimeout(resolve, 20)); // the first run is reading: its lock is held
      const second = await replicate(config, db);
      control.clearFaults();
      const firstDone = await first;
      // Refused at once with "run again later", naming the holder; the first run is unharmed and its replica exact.
      expect(second.code).toBe(75);
      expect(second.stderr).toMatch(
        /Cannot replicate: Another replicate run is writing ".*busy\.db" \(pid \d+ on .+, started \d{4}-\d\d-\d\dT[\d:.]+Z, last renewed \d{4}-\d\d-\d\dT[\d:.]+Z \(\d+ s ago\)\)\. Run again once it has finished/,
      );
      expect(firstDone.code, firstDone.stderr).toBe(0);
      expect(replicaAsDump(db)).toStrictEqual(dumpLists(account.dump()));
    } finally {
      control.clearFaults();
    }
  });

  it('a stop signal mid-run: the checkpoints the writer holds are committed, exit 143, and the next run completes the replica', async () => {
    const db = join(dir, 'stopped.db');
    const config = account.config(dir, { page_size: 5, max_concurrent_requests: 1 });
    account.emulator.control.setLatency(60);
    let stopped: Awaited<ReturnType<typeof replicate>>;
    try {
      const run = replicate(config, db, { env: { SOURCE_DATA_READ_PROGRESS_MS: '0' } });
      await whileRunning(run, 'it took the lock', () => lockHolder(db) !== undefined);
      // Once a few pages have been read, stop it the way a service manager does.
      await whileRunning(run, 'it committed 10 contacts', () => hasRows(db, 10));
      const holder = lockHolder(db);
      if (holder === undefined) throw new Error('the replicate run released its lock before it was stopped');
      process.kill(holder.pid, 'SIGTERM');
      stopped = await run;
    } finally {
      account.emulator.control.setLatency(0);
    }
    expect(stopped.code).toBe(143);
    expect(stopped.stderr).toMatch(/WARN source-data-read: Interrupted \(SIGTERM\)\. The replica keeps everything committed so far; run replicate again to continue\./);
    noStack(stopped.stderr);
    const check = new DatabaseSync(db, { readOnly: true });
    expect(check.prepare('PRAGMA integrity_check').get()?.integrity_check).toBe('ok');
    expect(check.prepare('SELECT count(*) AS n FROM _replica_lock').get()?.n).toBe(0);
    check.close();
    const again = await replicate(account.config(dir), db);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('continuing from its saved state');
    expect(replicaAsDump(db)).toStrictEqual(dumpLists(account.dump()));
  });

  it('a service error on one stream: exit 75 (transient) naming the stream and the cause; the next run completes the replica', async () => {
    const config = account.config(dir, { max_retries: 0, page_size: 10 });
    const db = join(dir, 'e.db');
    account.emulator.control.setFaults([{ kind: '500', every: 1, paths: ['/v1/conversations'], times: 1 }]);
    const failed = await replicate(config, db);
    account.emulator.control.clearFaults();
    expect(failed.code).toBe(75);
    expect(failed.stdout).toBe('');
    expect(failed.stderr).toMatch(/Replication incomplete: 1 stream\(s\) failed: conversations \(.*500/);
    noStack(failed.stderr);
    const again = await replicate(config, db);
    expect(again.code, again.stderr).toBe(0);
    expect(replicaAsDump(db)).toStrictEqual(dumpLists(account.dump()));
  });
});
