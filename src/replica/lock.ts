/**
 * One writer per replica: two `replicate` runs on the same file (a cron job
 * that overlaps the previous one) would each commit what they read, and the
 * later commit of an older read could put back an older version of a row.
 * The lock is a row in the database naming the writing process (pid, host,
 * a random id of the process, start) and when it last renewed it: the
 * holder renews it every RENEW_MS (at least every 15 s, rate-limit waits
 * included: a timer, not the reads).
 *
 * A lock is taken over, with a warning naming its old holder and its age:
 * at once when its holder ran on this host and no longer runs (killed); and
 * whoever held it (this host or another: a Kubernetes pod killed on another
 * node, another UTS host name) when it has not been renewed for STALE_MS.
 * Otherwise (a live run on this host, or another host's run renewed within
 * STALE_MS) the run is refused at once with a transient_error (exit 75: run
 * again later) naming pid, host, start and last renewal. Ages are told by the
 * clocks of the hosts that share the file: they must agree to within seconds.
 *
 * The intervals and the host name are LockSettings, given by the caller:
 * a run uses the defaults and this host's name, and nothing it reads (no
 * environment variable, no file) changes them, so nothing can make a live
 * lock look stale in production. Tests pass other settings through the
 * store (no test waits 60 s; a test poses as another host where it cannot
 * `unshare --uts`). The replica needs a local file system (SQLite's WAL does
 * not work across hosts over NFS).
 */
import { randomUUID } from 'node:crypto';
import { hostname as osHostname } from 'node:os';
import type { DatabaseSync } from 'node:sqlite';
import { ConnectorError } from '../errors.js';
import { BUSY_TIMEOUT_MS } from './database.js';

const LOCK_TABLE = '_replica_lock';

/**
 * This process among those that show the same pid and host name: processes
 * in containers that share the host's name (`--network host`, Kubernetes'
 * hostNetwork) each have their own pid namespace, where node is pid 1 in
 * every one. The lock row is this process's only when it holds this id too.
 */
const RUN_ID = randomUUID();

/** How often the holder renews its lock. */
const RENEW_MS = 10_000;
/** A lock not renewed for this long is stale, whoever holds it. */
const STALE_MS = 60_000;

export interface LockSettings {
  /** How often the holder renews its lock, ms. */
  readonly renewMs: number;
  /** A lock not renewed for this long is stale, ms. */
  readonly staleMs: number;
  /** The host name the lock is taken under: this host's. */
  readonly host: string;
}

/** The settings of a run: RENEW_MS, STALE_MS and this host's name, each unless the caller (a test) gives another. */
export function lockSettings(given: Partial<LockSettings> = {}): LockSettings {
  return { renewMs: given.renewMs ?? RENEW_MS, staleMs: given.staleMs ?? STALE_MS, host: given.host ?? osHostname() };
}

/** The lock is held by a live run: run again later. */
export class LockHeldError extends ConnectorError {
  constructor(message: string) {
    super('transient_error', message);
    this.name = 'LockHeldError';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}

function seconds(ms: number): string {
  return `${Math.max(0, Math.round(ms / 1000))} s`;
}

/** The lock table, with renewed_at and run_id (a file written by a version without them gains the columns). */
function ensureLockTable(db: DatabaseSync): void {
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${LOCK_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER NOT NULL, host TEXT NOT NULL, started_at TEXT NOT NULL, renewed_at TEXT, run_id TEXT)`,
  );
  const columns = db.prepare(`PRAGMA table_info(${LOCK_TABLE})`).all().map((c) => String(c.name));
  if (!columns.includes('renewed_at')) db.exec(`ALTER TABLE ${LOCK_TABLE} ADD COLUMN renewed_at TEXT`);
  if (!columns.includes('run_id')) db.exec(`ALTER TABLE ${LOCK_TABLE} ADD COLUMN run_id TEXT`);
}

/** SQLite's "database is locked": another connection held the write lock past the busy timeout. */
const SQLITE_BUSY = 5;

/**
 * The refusal of a run that could not even look at the lock: another
 * connection kept the file's write lock past BUSY_TIMEOUT_MS (the holder
 * migrating a large table, sweeping one, or copying a large WAL at its
 * end). Its lock row, read outside the write lock, names it when there is
 * one. Undefined for any other error.
 */
function busyError(db: DatabaseSync, path: string, err: unknown): LockHeldError | undefined {
  if ((err as { errcode?: unknown }).errcode !== SQLITE_BUSY) return undefined;
  const busy = `kept it busy for ${seconds(BUSY_TIMEOUT_MS)}. Run again once it has finished (exit 75: a scheduler retries later).`;
  let row: Record<string, unknown> | undefined;
  try {
    row = db.prepare(`SELECT pid, host, started_at, renewed_at FROM ${LOCK_TABLE} WHERE id = 1`).get();
  } catch {
    // no lock table yet: the writer is not a replicate run that holds the lock
  }
  if (row === undefined) return new LockHeldError(`Another connection is writing "${path}" (a replicate run, or another program) and ${busy}`);
  const renewedAt = row.renewed_at === null || row.renewed_at === undefined ? row.started_at : row.renewed_at;
  return new LockHeldError(`Another replicate run is writing "${path}" (pid ${String(row.pid)} on ${String(row.host)}, started ${String(row.started_at)}, last renewed ${String(renewedAt)}) and ${busy}`);
}

interface AcquiredLock {
  /** The warning to log when a stale or dead run's lock was taken over (names the old holder and its age). */
  readonly takeover: string | undefined;
}

/**
 * Take the replica's writer lock, or throw LockHeldError (transient_error)
 * naming the run that holds it.
 */
export function acquireLock(db: DatabaseSync, path: string, settings: LockSettings = lockSettings(), now: number = Date.now()): AcquiredLock {
  try {
    ensureLockTable(db);
    db.exec('BEGIN IMMEDIATE');
  } catch (err) {
    throw busyError(db, path, err) ?? err;
  }
  try {
    const row = db.prepare(`SELECT pid, host, started_at, renewed_at, run_id FROM ${LOCK_TABLE} WHERE id = 1`).get();
    let takeover: string | undefined;
    if (row) {
      const pid = Number(row.pid);
      const host = String(row.host);
      const startedAt = String(row.started_at);
      const renewedAt = row.renewed_at === null || row.renewed_at === undefined ? startedAt : String(row.renewed_at);
      const age = now - Date.parse(renewedAt);
      const holder = `pid ${pid} on ${host}, started ${startedAt}, last renewed ${renewedAt} (${seconds(age)} ago)`;
      const here = host === settings.host;
      // Another process with this pid (another pid namespace) is alive to this one: only its staleness tells.
      const mine = here && pid === process.pid && row.run_id === RUN_ID;
      if (!mine) {
        if (here && !alive(pid)) {
          takeover = `Took over the writer lock of "${path}" from a run that no longer runs (${holder}): it was killed or crashed; continuing from its last commit.`;
        } else if (!(age < settings.staleMs)) {
          takeover =
            `Took over the writer lock of "${path}": not renewed for ${seconds(age)} (stale after ${seconds(settings.staleMs)}), ` +
            `its holder (${holder}) was killed or cut off; continuing from its last commit.`;
        } else {
          throw new LockHeldError(
            `Another replicate run is writing "${path}" (${holder}). Run again once it has finished (exit 75: a scheduler retries later); ` +
              `a lock that its holder stops renewing is taken over ${seconds(settings.staleMs)} after its last renewal.`,
          );
        }
      }
    }
    const at = new Date(now).toISOString();
    db.prepare(`INSERT OR REPLACE INTO ${LOCK_TABLE} (id, pid, host, started_at, renewed_at, run_id) VALUES (1, ?, ?, ?, ?, ?)`).run(process.pid, settings.host, at, at, RUN_ID);
    db.exec('COMMIT');
    return { takeover };
  } catch (err) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw err;
  }
}

/**
 * Renew the lock (this process's row). Within the writer's open group of
 * checkpoints the renewal is committed with it (a group stays open for
 * under a second); otherwise on its own. False when the row is no longer
 * this process's: another run took the lock over.
 */
export function renewLock(db: DatabaseSync, now: number = Date.now(), host: string = osHostname()): boolean {
  const result = db.prepare(`UPDATE ${LOCK_TABLE} SET renewed_at = ? WHERE id = 1 AND pid = ? AND host = ? AND run_id = ?`).run(new Date(now).toISOString(), process.pid, host, RUN_ID);
  return Number(result.changes) > 0;
}

/**
 * Whether this process still holds the lock, read without writing (the
 * writer asks it in each group's transaction, just before its COMMIT: a group
 * opened after a takeover is rolled back, never committed).
 */
export function holdsLock(db: DatabaseSync, host: string = osHostname()): boolean {
  return db.prepare(`SELECT 1 AS held FROM ${LOCK_TABLE} WHERE id = 1 AND pid = ? AND host = ? AND run_id = ?`).get(process.pid, host, RUN_ID) !== undefined;
}

/** The error of a run whose lock another run took over (it was stalled past the staleness limit): exit 75. */
export function lockLostError(path: string): ConnectorError {
  return new ConnectorError(
    'transient_error',
    `Another replicate run took over the writer lock of "${path}" (this run was stalled longer than the lock stays fresh); ` +
      'this run stopped writing and rolled back what it had not committed. Everything committed before is kept; that run continues from it.',
  );
}

/** Give the lock back (only if this process holds it). */
export function releaseLock(db: DatabaseSync, host: string = osHostname()): void {
  try {
    db.prepare(`DELETE FROM ${LOCK_TABLE} WHERE id = 1 AND pid = ? AND host = ? AND run_id = ?`).run(process.pid, host, RUN_ID);
  } catch {
    // a lock left behind is taken over by the next run
  }
}
