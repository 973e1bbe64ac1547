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
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, lstatSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SOURCE_BIN, runCli } from '../../helpers/cli.js';
import { withEmulatorAccount } from '../../helpers/suite.js';
import { dumpLists, replicaAsDump, replicate, type Account, type RunResult } from '../../helpers/emulator-runs.js';
import { storeKinds } from '../../helpers/store-kinds.js';

let account: Account;
let dir: string;

withEmulatorAccount('file-system-', { contacts: 30, seed: 83 }, (s) => ({ account, dir } = s), {
  beforeRemove: (d) => {
    chmodSync(d, 0o755);
    for (const entry of readdirSync(d)) if (lstatSync(join(d, entry)).isDirectory()) chmodSync(join(d, entry), 0o755);
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

describe('replicate into a SQLite replica past the file size limit (ulimit -f: RLIMIT_FSIZE)', () => {
  it.runIf(process.platform === 'linux')(
    'is refused (78) naming the limit, when the store is created and mid-run; what was committed stays, and the next run without the limit ends exact',
    { timeout: 120_000 },
    async () => {
      const config = account.config(dir);
      const folder = join(dir, 'sqlite-size-limit');
      mkdirSync(folder);
      const db = join(folder, 'replica.db');
      // `ulimit -f` counts 512-byte blocks in sh. The finished replica of this account is 140 KiB (asserted at the end), so
      // a run under 125 KiB cannot end whatever the timing: its WAL or, when the WAL is copied into it, the file reaches it.
      const midRun = 250;
      const fresh = join(folder, 'fresh.db');
      const walReached = await replicateWithSizeLimit(config, fresh, midRun);
      expect(walReached.code, walReached.stderr).toBe(78);
      expect(walReached.stderr).toMatch(new RegExp(`fresh\\.db(-wal)?" reached the file size limit of this process \\(${midRun * 512} bytes: ulimit -f, RLIMIT_FSIZE\\)`));
      expect(walReached.stderr).not.toMatch(/disk I\/O error/);
      // 1 KiB is reached by the new file's first page, 50 KiB while the tables are made, 125 KiB after checkpoints were committed.
      for (const blocks of [2, 100, midRun]) {
        const run = await replicateWithSizeLimit(config, db, blocks);
        expect(run.code, run.stderr).toBe(78);
        expect(run.stderr).toMatch(
          new RegExp(`Cannot write the replica database ".*replica\\.db": ".*replica\\.db(-wal|-journal)?" reached the file size limit of this process \\(${blocks * 512} bytes: ulimit -f, RLIMIT_FSIZE\\)`),
        );
        expect(run.stderr).not.toMatch(/disk I\/O error|\n\s+at /);
      }
      const next = await replicate(config, db);
      expect(next.code, next.stderr).toBe(0);
      expect(replicaAsDump(db)).toStrictEqual(dumpLists(account.dump()));
      expect(statSync(db).size).toBeGreaterThan(midRun * 512);
    },
  );
});

describe('replicate into a DuckDB store past the file size limit (ulimit -f: RLIMIT_FSIZE)', () => {
  it.runIf(process.platform === 'linux')(
    'is refused (78) naming the limit, when the file is created and mid-run; the next run without the limit ends exact',
    { timeout: 120_000 },
    async () => {
      const config = account.config(dir);
      const folder = join(dir, 'duckdb-size-limit');
      mkdirSync(folder);
      const db = join(folder, 'store.duckdb');
      // 512-byte blocks: 2 KiB is reached by the new file's headers, 20 KiB by the WAL of the first checkpoints.
      for (const blocks of [4, 40]) {
        const run = await replicateWithSizeLimit(config, db, blocks);
        expect(run.code, run.stderr).toBe(78);
        expect(run.stderr).toContain(`Cannot write the DuckDB store "${db}": a file of it reached the file size limit of this process (${blocks * 512} bytes: ulimit -f, RLIMIT_FSIZE)`);
        expect(run.stderr).not.toMatch(/\n\s+at /);
      }
      const next = await replicate(config, db);
      expect(next.code, next.stderr).toBe(0);
      expect(await duckdb.dump(db)).toStrictEqual(dumpLists(account.dump()));
    },
  );
});

// Root writes through file permissions: as root, the runs that must not write go as nobody (uid 65534).
const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;
/** The uid the runs go as, which the messages name. */
const runner = asRoot ? NOBODY : (process.getuid?.() ?? -1);

/** The account's config, where the runner can read it (the test folder open to it). */
function runnersConfig(): string {
  chmodSync(dir, 0o755);
  const config = account.config(dir);
  chmodSync(config, 0o644);
  return config;
}

/** `folder` made writable for the runner: its own when the tests run as root. */
function givenToRunner(folder: string): void {
  if (asRoot) chownSync(folder, NOBODY, NOBODY);
  else chmodSync(folder, 0o755);
}

/** `replicate` as the runner: nobody when the tests run as root, else this user. */
function replicateAsRunner(config: string, db: string): Promise<RunResult> {
  return runCli(SOURCE_BIN, ['replicate', '--config', config, '--db', db], asRoot ? { uid: NOBODY } : {}).then((run) => ({ ...run, killed: false }));
}

describe('replicate into a DuckDB file in a folder the run may not write into', () => {
  it('is refused (78) naming the folder and what DuckDB makes there; nothing is created or changed', { timeout: 120_000 }, async () => {
    const config = runnersConfig();
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

describe('replicate into a SQLite replica through a symbolic link', () => {
  // SQLite follows the link: the database is the file it names, and the -wal and -shm go beside that file.
  it('writes the file the link names, checked where that file is; a new one is 0600; the link stays a link', { timeout: 120_000 }, async () => {
    const config = runnersConfig();
    const links = join(dir, 'links');
    const real = join(dir, 'real');
    const closed = join(dir, 'closed');
    for (const folder of [links, real, closed]) mkdirSync(folder);
    givenToRunner(real);
    // A link in a folder the run may not write into, to a file in one it may: the replica is written.
    symlinkSync(join(real, 'replica.db'), join(links, 'replica.db'));
    // A link to a file not there yet: it is created where the link points, 0600.
    symlinkSync(join(real, 'new.db'), join(links, 'new.db'));
    // A link from a writable folder to a file in one the run may not write into: refused, naming that folder.
    symlinkSync(join(closed, 'replica.db'), join(real, 'closed.db'));
    chmodSync(links, asRoot ? 0o755 : 0o555);
    const first = await replicateAsRunner(config, join(links, 'replica.db'));
    expect(first.code, first.stderr).toBe(0);
    expect(lstatSync(join(links, 'replica.db')).isSymbolicLink()).toBe(true);
    expect(replicaAsDump(join(real, 'replica.db'))).toStrictEqual(dumpLists(account.dump()));
    const made = await replicateAsRunner(config, join(links, 'new.db'));
    expect(made.code, made.stderr).toBe(0);
    expect(lstatSync(join(links, 'new.db')).isSymbolicLink()).toBe(true);
    expect(statSync(join(real, 'new.db')).mode & 0o777).toBe(0o600);
    expect(readdirSync(links).sort()).toEqual(['new.db', 'replica.db']);

    if (!asRoot) chmodSync(closed, 0o555); // root-owned 755 is read-only for nobody already
    const refused = await replicateAsRunner(config, join(real, 'closed.db'));
    expect(refused.code, refused.stderr).toBe(78);
    expect(refused.stderr).toMatch(
      new RegExp(`Cannot write the replica database ".*closed\\.db" \\(a symbolic link to ".*closed/replica\\.db"\\): its directory ".*closed" \\(owned by uid \\d+, mode [57]55\\) is not writable`),
    );
    expect(readdirSync(closed)).toEqual([]);
    chmodSync(links, 0o755);
    chmodSync(closed, 0o755);
  });

  it('a loop of links: refused (78), saying so', async () => {
    const a = join(dir, 'loop-a.db');
    const b = join(dir, 'loop-b.db');
    symlinkSync(b, a);
    symlinkSync(a, b);
    const run = await replicate(account.config(dir), a);
    expect(run.code, run.stderr).toBe(78);
    expect(run.stderr).toMatch(/Cannot open the replica database ".*loop-a\.db": its path goes through a loop of symbolic links\./);
  });
});

/**
 * `script` (sh) run in a mount namespace of its own with a tmpfs of `kib`
 * KiB mounted on the folder `$MNT` (made in `dir`), the connector's command
 * line in `$NODE` and `$BIN`; what it prints on stdout is returned. As root,
 * `unshare -m`; otherwise in a user namespace as well (`unshare -Urm`,
 * which Linux allows an unprivileged user unless the machine forbids it).
 * Nothing of the tmpfs outlives the script: it copies out what the test
 * reads.
 */
function inTmpfs(kib: number, script: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const mnt = join(dir, `tmpfs-${kib}`);
  mkdirSync(mnt, { recursive: true });
  return new Promise((resolve, reject) => {
    const child = spawn('unshare', [asRoot ? '-m' : '-Urm', 'sh', '-c', `mount -t tmpfs -o size=${kib}k tmpfs "$MNT" && ${script}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, MNT: mnt, NODE: process.execPath, BIN: SOURCE_BIN },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Whether this machine lets the tests mount a tmpfs in a mount namespace of their own (as root, or in a user namespace,
 * which some distributions forbid an unprivileged user), as test/cli/summary-file.test.ts asks for its bind mount.
 * CI runs as root, where it does.
 */
const tmpfsWorks = spawnSync('unshare', [asRoot ? '-m' : '-Urm', 'sh', '-c', 'd="$(mktemp -d)" && mount -t tmpfs -o size=64k tmpfs "$d" && umount "$d" && rmdir "$d"']).status === 0;

describe('replicate into a new SQLite replica on a full disk (a tmpfs in a mount namespace: unshare)', () => {
  it.runIf(tmpfsWorks)('is transient (75) saying the disk is full, leaves nothing, and the next run with room ends exact', { timeout: 120_000 }, async () => {
    const config = account.config(dir);
    const out = join(dir, 'full-copy.db');
    const run = await inTmpfs(
      4096,
      // The tmpfs filled (dd stops at its end), the run refused; then room made, the run again, its replica copied out.
      `dd if=/dev/zero of="$MNT/fill" bs=4096 2>/dev/null; ` +
        `"$NODE" "$BIN" replicate --config "${config}" --db "$MNT/replica.db" 2>&1; echo "first=$?"; ls -A "$MNT"; ` +
        `rm "$MNT/fill"; "$NODE" "$BIN" replicate --config "${config}" --db "$MNT/replica.db" 2>&1; echo "next=$?"; cp "$MNT/replica.db" "${out}"`,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/ERROR source-data-read: Cannot replicate: The disk holding the replica database ".*replica\.db" is full .*What was committed before is kept\. Free some space there, then run replicate again/);
    expect(run.stdout).not.toMatch(/cannot be used as a replica database|\n\s+at /);
    expect(run.stdout).toMatch(/\nfirst=75\nfill\n/);
    expect(run.stdout).toMatch(/\nnext=0\n/);
    expect(replicaAsDump(out)).toStrictEqual(dumpLists(account.dump()));
  });
});

describe('replicate into a file whose name, or a name the store makes beside it, is too long (NAME_MAX: 255 bytes)', () => {
  it('is refused (78) saying which name is too long; nothing is created', { timeout: 120_000 }, async () => {
    const config = account.config(dir);
    const folder = join(dir, 'long-names');
    mkdirSync(folder);
    const cases = [
      // The file's own name.
      { db: join(folder, `${'a'.repeat(253)}.db`), too: /its name is too long/ },
      // 254 bytes: the file fits, its -wal and -shm do not.
      { db: join(folder, `${'b'.repeat(251)}.db`), too: /"b+\.db-wal", which SQLite makes beside it, is too long/ },
      // 252 bytes: the file fits, DuckDB's .wal and .tmp do not.
      { db: join(folder, `${'c'.repeat(245)}.duckdb`), too: /"c+\.duckdb\.wal", which DuckDB makes beside it, is too long/ },
    ];
    for (const { db, too } of cases) {
      const run = await replicate(config, db);
      expect(run.code, run.stderr).toBe(78);
      expect(run.stderr).toMatch(too);
      expect(run.stderr).toMatch(/\(ENAMETOOLONG\)\. Give --db a shorter name\./);
      expect(run.stderr).not.toMatch(/Unexpected error|\n\s+at /);
      expect(readdirSync(folder)).toEqual([]);
    }
  });
});

describe('replicate into a --db that is a directory', () => {
  it('is refused (78) saying so; the directory is left as it was', async () => {
    for (const name of ['folder.db', 'folder.duckdb']) {
      const db = join(dir, name);
      mkdirSync(db);
      const run = await replicate(account.config(dir), db);
      expect(run.code, run.stderr).toBe(78);
      expect(run.stderr).toMatch(/Cannot replicate: Cannot open the (?:replica database|DuckDB file) ".*folder\.(?:db|duckdb)": it is a directory\. Give --db the path of a file/);
      expect(readdirSync(db)).toEqual([]);
    }
  });
});

describe('replicate into a DuckDB file through a symbolic link', () => {
  // Its WAL and temporary folder go beside the file the link names, as SQLite's do: whichever path a run is given,
  // the next run finds the WAL a killed one left, and a folder holding only the link need not be writable.
  it('writes the file the link names, its WAL and temporary folder beside it; nothing beside the link', { timeout: 120_000 }, async () => {
    const config = runnersConfig();
    const links = join(dir, 'duck-links');
    const real = join(dir, 'duck-real');
    for (const folder of [links, real]) mkdirSync(folder);
    givenToRunner(real);
    symlinkSync(join(real, 'store.duckdb'), join(links, 'store.duckdb'));
    chmodSync(links, asRoot ? 0o755 : 0o555);
    const run = await replicateAsRunner(config, join(links, 'store.duckdb'));
    expect(run.code, run.stderr).toBe(0);
    expect(readdirSync(links)).toEqual(['store.duckdb']);
    expect(lstatSync(join(links, 'store.duckdb')).isSymbolicLink()).toBe(true);
    expect(statSync(join(real, 'store.duckdb')).mode & 0o777).toBe(0o600);
    expect(await duckdb.dump(join(real, 'store.duckdb'))).toStrictEqual(dumpLists(account.dump()));
    chmodSync(links, 0o755);
  });
});
