/** The replica's writer lock: refused while its holder lives and renews it, taken over when it is dead or stale, renewed by a timer. */
import { describe, expect, it, vi } from 'vitest';
import { hostname } from 'node:os';
import { DatabaseSync } from 'node:sqlite';
import { openForWrite } from '../../src/replica/database.js';
import { LockHeldError, acquireLock, lockSettings, releaseLock, renewLock } from '../../src/replica/lock.js';
import { ReplicaStore } from '../../src/replica/store.js';
import { ReplicaWriter } from '../../src/replica/writer.js';
import { replicaRecords, replicaStates } from '../../src/replica/records.js';
import { withTempDatabases } from '../helpers/suite.js';
import { checkpointsOf } from '../helpers/checkpoints.js';
import { contact, iso } from '../helpers/fake-api.js';
import { STREAMS } from '../../src/streams.js';

const newPath = withTempDatabases('lock-');

function newDb(): { path: string; db: DatabaseSync } {
  const path = newPath();
  return { path, db: openForWrite(path) };
}

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const timings = lockSettings({ renewMs: 15_000 });
/** A lock row as another run wrote it. */
function holdAs(db: DatabaseSync, pid: number, host: string, renewedAt: number): void {
  acquireLock(db, 'x', timings, renewedAt); // creates the table (and takes it as this process)
  db.prepare('UPDATE _replica_lock SET pid = ?, host = ?, started_at = ?, renewed_at = ?').run(pid, host, new Date(renewedAt - 5000).toISOString(), new Date(renewedAt).toISOString());
}
const DEAD_PID = 2 ** 22 + 12345; // above any pid_max: no such process

describe('replica writer lock', () => {
  it('a live run on this host: refused at once with a transient_error (exit 75) naming pid, host, start and last renewal', () => {
    const { path, db } = newDb();
    holdAs(db, process.ppid, hostname(), T0);
    let thrown: unknown;
    try {
      acquireLock(db, path, timings, T0 + 59_000);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(LockHeldError);
    expect((thrown as LockHeldError).failureType).toBe('transient_error');
    expect((thrown as Error).message).toBe(
      `Another replicate run is writing "${path}" (pid ${process.ppid} on ${hostname()}, started 2026-03-01T09:59:55.000Z, last renewed 2026-03-01T10:00:00.000Z (59 s ago)). ` +
        'Run again once it has finished (exit 75: a scheduler retries later); a lock that its holder stops renewing is taken over 60 s after its last renewal.',
    );
    db.close();
  });

  it('a run refused for the lock writes nothing into the file, not even its treatments', () => {
    const { path, db } = newDb();
    holdAs(db, process.ppid, hostname(), Date.now());
    db.close();
    expect(() => new ReplicaStore(path, STREAMS, { lock: true, treatments: { record: { 'contacts.email': 'hash' }, key: undefined } })).toThrow(LockHeldError);
    const check = new DatabaseSync(path, { readOnly: true });
    try {
      expect(check.prepare("SELECT name FROM sqlite_schema WHERE name = '_replica_personal_data'").get()).toBeUndefined();
    } finally {
      check.close();
    }
  });

  it('another host renewed within 60 s: refused; not renewed for 60 s: taken over with a WARN naming the old holder and its age', () => {
    const { path, db } = newDb();
    holdAs(db, 4242, 'pod-a-7f9c', T0);
    expect(() => acquireLock(db, path, timings, T0 + 30_000)).toThrow(LockHeldError);
    const taken = acquireLock(db, path, timings, T0 + 60_000);
    expect(taken.takeover).toBe(
      `Took over the writer lock of "${path}": not renewed for 60 s (stale after 60 s), its holder (pid 4242 on pod-a-7f9c, started 2026-03-01T09:59:55.000Z, ` +
        'last renewed 2026-03-01T10:00:00.000Z (60 s ago)) was killed or cut off; continuing from its last commit.',
    );
    expect(db.prepare('SELECT pid, host FROM _replica_lock').get()).toEqual({ pid: process.pid, host: hostname() });
    db.close();
  });

  it('a live run on this host that stopped renewing (frozen) is stale too', () => {
    const { path, db } = newDb();
    holdAs(db, process.ppid, hostname(), T0);
    expect(acquireLock(db, path, timings, T0 + 61_000).takeover).toMatch(/not renewed for 61 s/);
    db.close();
  });

  it('a live run of another process with the same pid and host name (containers sharing the host name, node pid 1 in each): refused, never taken as its own', async () => {
    const { path, db } = newDb();
    acquireLock(db, path, timings, T0);
    // This module loaded afresh is another process's: same pid and host name as the holder, as in two containers on --network host.
    vi.resetModules();
    const other = await import('../../src/replica/lock.js');
    expect(() => other.acquireLock(db, path, timings, T0 + 1000)).toThrow(/^Another replicate run is writing .* \(pid \d+ on /);
    expect(other.renewLock(db, T0 + 2000)).toBe(false);
    expect(other.holdsLock(db)).toBe(false);
    other.releaseLock(db);
    expect(renewLock(db, T0 + 3000)).toBe(true);
    // Not renewed for the staleness limit (its container was killed): taken over then, with the WARN.
    expect(other.acquireLock(db, path, timings, T0 + 63_000).takeover).toMatch(/not renewed for 60 s/);
    expect(renewLock(db, T0 + 64_000)).toBe(false);
    db.close();
  });

  it('a live run that keeps a write transaction open longer than the busy timeout (a migration, a large sweep): refused as transient (75) naming it, not a system error', () => {
    const { path, db } = newDb();
    db.close();
    const holder = new ReplicaStore(path, STREAMS, { lock: true });
    holder.db.exec('BEGIN IMMEDIATE');
    let thrown: unknown;
    try {
      new ReplicaStore(path, STREAMS, { lock: true }).close();
    } catch (err) {
      thrown = err;
    } finally {
      holder.db.exec('ROLLBACK');
    }
    expect(thrown).toBeInstanceOf(LockHeldError);
    expect((thrown as LockHeldError).failureType).toBe('transient_error');
    expect((thrown as Error).message).toMatch(new RegExp(`^Another replicate run is writing ".*" \\(pid ${process.pid} on .*\\) and kept it busy for 5 s\\. Run again once it has finished`));
    // Nothing was taken: the holder still holds its lock.
    expect(holder.confirmLock()).toBe(true);
    holder.close();
  });

  it("a dead run's lock on this host is taken over at once, whatever its age", () => {
    const { path, db } = newDb();
    holdAs(db, DEAD_PID, hostname(), T0);
    expect(acquireLock(db, path, timings, T0 + 1000).takeover).toMatch(new RegExp(`from a run that no longer runs \\(pid ${DEAD_PID} on `));
    db.close();
  });

  it('renewal moves renewed_at; it fails once another run took the lock; release leaves no row', () => {
    const { path, db } = newDb();
    acquireLock(db, path, timings, T0);
    expect(renewLock(db, T0 + 15_000)).toBe(true);
    expect(db.prepare('SELECT renewed_at FROM _replica_lock').get()?.renewed_at).toBe('2026-03-01T10:00:15.000Z');
    db.prepare('UPDATE _replica_lock SET host = ?').run('another-host');
    expect(renewLock(db, T0 + 30_000)).toBe(false);
    db.prepare('UPDATE _replica_lock SET host = ?').run(hostname());
    releaseLock(db);
    expect(db.prepare('SELECT count(*) AS n FROM _replica_lock').get()?.n).toBe(0);
    db.close();
  });

  it('a file locked by an older version (no renewed_at column) gains the column; its start counts as the last renewal', () => {
    const { path, db } = newDb();
    db.exec('CREATE TABLE _replica_lock (id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER NOT NULL, host TEXT NOT NULL, started_at TEXT NOT NULL)');
    db.prepare('INSERT INTO _replica_lock VALUES (1, ?, ?, ?)').run(4242, 'old-host', new Date(T0).toISOString());
    expect(() => acquireLock(db, path, timings, T0 + 10_000)).toThrow(/last renewed 2026-03-01T10:00:00.000Z \(10 s ago\)/);
    expect(acquireLock(db, path, timings, T0 + 60_000).takeover).toMatch(/not renewed for 60 s/);
    db.close();
  });

  it('the store renews its lock on a timer (its interval shortened here through the store\'s settings)', async () => {
    const { path, db } = newDb();
    db.close();
    const store = new ReplicaStore(path, undefined, { lock: { renewMs: 20 } });
    const renewedAt = (): string => String(store.db.prepare('SELECT renewed_at FROM _replica_lock').get()?.renewed_at);
    const first = renewedAt();
    while (renewedAt() === first) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(Date.parse(renewedAt())).toBeGreaterThan(Date.parse(first));
    // Another run takes the lock over: the store is told once and stops renewing.
    let lost = 0;
    store.onLockLost = () => lost++;
    store.db.prepare('UPDATE _replica_lock SET pid = ?').run(DEAD_PID);
    while (lost === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(lost).toBe(1);
    store.close();
  });

  it('a run takes the defaults and this host\'s name; no environment variable changes them', () => {
    const knobs = ['SOURCE_DATA_READ_TEST_LOCK_RENEW_MS', 'SOURCE_DATA_READ_TEST_LOCK_STALE_MS', 'SOURCE_DATA_READ_TEST_HOSTNAME'];
    for (const name of knobs) process.env[name] = name.endsWith('HOSTNAME') ? 'another-host' : '1';
    try {
      expect(lockSettings()).toEqual({ renewMs: 10_000, staleMs: 60_000, host: hostname() });
      // A lock renewed 2 s ago by a run on another host stays fresh, whatever the environment says.
      const { path, db } = newDb();
      holdAs(db, DEAD_PID, 'pod-a', T0);
      expect(() => acquireLock(db, path, undefined, T0 + 2000)).toThrow(LockHeldError);
      db.close();
      const store = new ReplicaStore(newPath(), undefined, { lock: true });
      expect(store.db.prepare('SELECT host FROM _replica_lock').get()?.host).toBe(hostname());
      store.close();
    } finally {
      for (const name of knobs) delete process.env[name];
    }
  });

  it('settings given by the caller: another host name is the lock\'s, and only its holder renews and releases it', () => {
    const { path, db } = newDb();
    const other = lockSettings({ host: 'pod-b', staleMs: 1 });
    acquireLock(db, path, other, T0);
    expect(db.prepare('SELECT host FROM _replica_lock').get()?.host).toBe('pod-b');
    expect(renewLock(db, T0 + 1000)).toBe(false); // this host's name: not the holder
    expect(renewLock(db, T0 + 1000, 'pod-b')).toBe(true);
    releaseLock(db);
    expect(db.prepare('SELECT host FROM _replica_lock').get()?.host).toBe('pod-b');
    releaseLock(db, 'pod-b');
    expect(db.prepare('SELECT host FROM _replica_lock').get()).toBeUndefined();
    db.close();
  });

  /** A store holding the lock, and a writer whose groups stay open until flushed. */
  function lockedWriter(lock: { renewMs?: number } = {}) {
    const { path, db } = newDb();
    db.close();
    const store = new ReplicaStore(path, undefined, { lock });
    const writer = new ReplicaWriter(store, { walThread: null, commitEveryMs: 3_600_000, shortGroupMs: 3_600_000 });
    return { path, store, writer, checkpoint: checkpointsOf(store) };
  }
  const LOST = /Another replicate run took over the writer lock of ".*" \(this run was stalled longer than the lock stays fresh\); this run stopped writing and rolled back what it had not committed/s;

  it('a group opened after another run took the lock over is rolled back at its commit, never committed; the store is told once', async () => {
    const { path, store, writer, checkpoint } = lockedWriter();
    let lost = 0;
    store.onLockLost = () => lost++;
    writer.write(checkpoint('contacts', [contact('c1', 1)], 1));
    writer.flush();
    // This run stalls; another takes the lock over between two groups (it needs BEGIN IMMEDIATE).
    store.db.prepare('UPDATE _replica_lock SET pid = ?').run(DEAD_PID);
    writer.write(checkpoint('contacts', [contact('c2', 2)], 2));
    let thrown: unknown;
    try {
      writer.flush();
    } catch (err) {
      thrown = err;
    }
    expect((thrown as Error).message).toMatch(LOST);
    expect((thrown as LockHeldError).failureType).toBe('transient_error');
    expect(lost).toBe(1);
    expect(() => writer.write(checkpoint('contacts', [contact('c3', 3)], 3))).toThrow(LOST);
    await expect(writer.close()).rejects.toThrow(LOST);
    store.close();
    expect(lost).toBe(1);
    expect(replicaRecords(path).get('contacts')?.map((r) => r.id)).toEqual(['c1']);
    expect(replicaStates(path).get('contacts')).toEqual({ resume: { cursor: 'contacts#1', sync_watermark: iso(1) } });
  });

  it('a loss the renewal timer finds while a group is open: abandon() rolls that group back', async () => {
    const { path, store, writer, checkpoint } = lockedWriter({ renewMs: 20 });
    let lost = 0;
    store.onLockLost = () => {
      lost++;
      writer.abandon();
    };
    writer.write(checkpoint('contacts', [contact('c1', 1)], 1));
    writer.flush();
    store.db.prepare('UPDATE _replica_lock SET pid = ?').run(DEAD_PID);
    writer.write(checkpoint('contacts', [contact('c2', 2)], 2));
    while (lost === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(store.db.isTransaction).toBe(false);
    expect(() => writer.flush()).toThrow(LOST);
    await expect(writer.close()).rejects.toThrow(LOST);
    store.close();
    expect(lost).toBe(1);
    expect(replicaRecords(path).get('contacts')?.map((r) => r.id)).toEqual(['c1']);
  });

  it('giving the lock back at the end checks it first: a lock already taken over is neither released nor its group committed', async () => {
    const { path, store, writer, checkpoint } = lockedWriter();
    let lost = 0;
    store.onLockLost = () => lost++;
    store.db.prepare('UPDATE _replica_lock SET pid = ?').run(DEAD_PID);
    writer.write(checkpoint('contacts', [contact('c1', 1)], 1));
    store.unlock();
    expect(lost).toBe(1);
    await expect(writer.close()).rejects.toThrow(LOST);
    store.close();
    expect(replicaRecords(path).get('contacts') ?? []).toEqual([]);
  });
});
