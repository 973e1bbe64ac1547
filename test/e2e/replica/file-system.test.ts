/**
 * `replicate` and the file system its --db is on, through the real
 * executable: a file whose creation fails (a size limit or a full disk), a
 * folder the run may not write into, a path through a symbolic link, a name
 * too long for the files the store makes beside it. Each is refused with a
 * message naming the path and the cause, with the exit status of what the
 * user must do (78 for what the user must fix, 75 for what a later run gets
 * past), and leaves nothing that keeps the next run from working.
 *
 * The size limit is the shell's `ulimit -f` (RLIMIT_FSIZE: a write past it
 * fails with EFBIG, which Node ignores as a signal), so no mount is needed.
 * Permissions: as root (CI), the runs that must not write go as nobody
 * (uid 65534), for whom a root-owned 755 folder is read-only.
 */
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SOURCE_BIN } from '../../helpers/cli.js';
import { withEmulatorAccount } from '../../helpers/suite.js';
import { dumpLists, replicate, type Account, type RunResult } from '../../helpers/emulator-runs.js';
import { storeKinds } from '../../helpers/store-kinds.js';

let account: Account;
let dir: string;

withEmulatorAccount('file-system-', { contacts: 30, seed: 83 }, (s) => ({ account, dir } = s), {
  beforeRemove: (d) => {
    chmodSync(d, 0o755);
    for (const entry of readdirSync(d)) chmodSync(join(d, entry), 0o755);
  },
});

const duckdb = storeKinds().find((kind) => kind.name === 'duckdb')!;

/** `replicate` with the shell's file size limit set to `kib` KiB: every write past it fails (EFBIG). */
function replicateWithSizeLimit(config: string, db: string, kib: number): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', `ulimit -f ${kib} && exec "$0" "$@"`, process.execPath, SOURCE_BIN, 'replicate', '--config', config, '--db', db], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, killed: false }));
  });
}

describe('replicate into a new DuckDB file that cannot be created whole', () => {
  it('leaves no file behind, and the next run with room ends exact', { timeout: 120_000 }, async () => {
    const config = account.config(dir);
    const folder = join(dir, 'size-limit');
    mkdirSync(folder);
    const db = join(folder, 'new.duckdb');
    // 2 KiB: DuckDB's first write of a new file (its headers) does not fit.
    const refused = await replicateWithSizeLimit(config, db, 2);
    expect(refused.code, refused.stderr).not.toBe(0);
    expect(refused.stderr).toContain(`"${db}"`);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    expect(readdirSync(folder)).toEqual([]);
    const next = await replicate(config, db);
    expect(next.code, next.stderr).toBe(0);
    expect(statSync(db).mode & 0o777).toBe(0o600);
    expect(await duckdb.dump(db)).toStrictEqual(dumpLists(account.dump()));
  });
});

// Root writes through file permissions: as root, the runs that must not write go as nobody (uid 65534).
const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;
/** The uid the runs go as, which the messages name. */
const runner = asRoot ? NOBODY : (process.getuid?.() ?? -1);

/** `replicate` as the runner: nobody when the tests run as root, else this user. */
function replicateAsRunner(config: string, db: string): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SOURCE_BIN, 'replicate', '--config', config, '--db', db], {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, killed: false }));
  });
}

describe('replicate into a DuckDB file in a folder the run may not write into', () => {
  it('is refused (78) naming the folder and what DuckDB makes there; nothing is created or changed', { timeout: 120_000 }, async () => {
    chmodSync(dir, 0o755);
    const config = account.config(dir);
    chmodSync(config, 0o644);
    const folder = join(dir, 'ro-duckdb');
    mkdirSync(folder);
    const db = join(folder, 'store.duckdb');
    expect((await replicate(config, db)).code).toBe(0);
    if (asRoot) chownSync(db, NOBODY, NOBODY); // the file is the runner's: only its folder keeps the run out
    chmodSync(folder, asRoot ? 0o755 : 0o555); // root-owned 755: read-only for nobody
    const before = readFileSync(db);
    for (const path of [db, join(folder, 'new.duckdb')]) {
      const run = await replicateAsRunner(config, path);
      expect(run.code, run.stderr).toBe(78);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(
        new RegExp(
          `Cannot replicate: Cannot write the DuckDB file ".*": its directory ".*ro-duckdb" \\(owned by uid \\d+, mode [57]55\\) is not writable by the user ` +
            `the connector runs as, uid ${runner} \\(EACCES\\), and DuckDB needs to create ".*\\.duckdb\\.wal" and the folder ".*\\.duckdb\\.tmp" beside the file\\. Make it writable for uid ${runner} `,
        ),
      );
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
    expect(readdirSync(folder)).toEqual(['store.duckdb']);
    expect(readFileSync(db).equals(before)).toBe(true);
    chmodSync(folder, 0o755);
  });
});
