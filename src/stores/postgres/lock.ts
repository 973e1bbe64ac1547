/**
 * One writer per schema: `replicate` holds a session-level advisory lock
 * (`pg_try_advisory_lock`) on a key made from the schema's name, on the
 * connection that writes, for the whole run. The server frees it when that
 * session ends, however it ends: a killed run, a dropped connection or a
 * crashed host never leave a stale lock behind, and the next run takes it
 * at once. A second run meanwhile is refused at once (no wait) with a
 * transient_error (exit 75: a scheduler runs it again later) that names the
 * holder as pg_stat_activity shows it: its application_name (the run's pid
 * and host, connection.ts), the server pid of its session, its client
 * address and since when (a role that may not see other roles' sessions
 * sees the pid only).
 *
 * Advisory locks are per database, and readers take none: dashboards query
 * the tables while the lock is held.
 *
 * A session-level lock keeps a second writer out only if each run has a
 * server session of its own. A connection pooler in transaction or
 * statement mode (PgBouncer's pool_mode, the "pooled" ports of managed
 * services) hands a run's statements to server sessions other clients use
 * between its transactions: a second run may get the first one's session,
 * where the lock, re-entrant, is granted again. A session that already
 * holds the key when a run takes it can only be such a shared one (a new
 * connection holds no lock): the run is refused (78) without taking it.
 * And the run's own transactions may be run on another server session,
 * where the lock is not held: each group's transaction first checks that
 * its session holds it (checkWriterLock), and is refused (78, nothing of it
 * committed) otherwise.
 */
import { createHash } from 'node:crypto';
import type { Client } from 'pg';
import { ConnectorError } from '../../errors.js';
import type { PostgresTarget } from '../target.js';
import { poolerError } from './faults.js';

/** The first half of every key: the connector's own (ASCII "SDRD"), so that its locks do not meet other applications'. */
const KEY_CLASS = 0x53445244;

/** The two 32-bit halves of the advisory lock key of `schema` (both positive, as pg_locks shows them). */
export function advisoryKey(schema: string): readonly [number, number] {
  const digest = createHash('sha256').update(`schema:${schema}`).digest();
  return [KEY_CLASS, digest.readUInt32BE(0) & 0x7fffffff];
}

/** Another run writes the schema: run again later. */
class WriterLockHeldError extends ConnectorError {
  constructor(message: string) {
    super('transient_error', message);
    this.name = 'WriterLockHeldError';
  }
}

interface Holder {
  readonly pid: string;
  readonly application_name: string | null;
  readonly client_addr: string | null;
  readonly backend_start: string | null;
}

/** Who holds the key now, as far as this role may see; undefined when nobody (it was just freed). */
async function holderOf(client: Client, key: readonly [number, number]): Promise<Holder | undefined> {
  const { rows } = await client.query<Holder>(
    `SELECT l.pid::text AS pid, a.application_name, host(a.client_addr) AS client_addr, a.backend_start::text AS backend_start
       FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid
      LIMIT 1`,
    [key[0], key[1]],
  );
  return rows[0];
}

function describeHolder(holder: Holder | undefined): string {
  if (!holder) return 'a session that has just ended';
  const parts = [holder.application_name ? `"${holder.application_name}"` : 'a session', `server pid ${holder.pid}`];
  if (holder.client_addr) parts.push(`from ${holder.client_addr}`);
  if (holder.backend_start) parts.push(`connected since ${holder.backend_start}`);
  return parts.join(', ');
}

/** SQL: whether the session running it holds the key ($1, $2). */
const HELD_HERE = `EXISTS (SELECT 1 FROM pg_locks
   WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND pid = pg_backend_pid()
     AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
     AND classid = $1::bigint::oid AND objid = $2::bigint::oid)`;

const flag = (value: unknown): boolean => value === true || value === 't';

/**
 * Take the writer lock of `target`'s schema on `client`'s session (its
 * server pid returned), or throw WriterLockHeldError naming the holder, or a
 * ConfigError when that session holds it already (a pooler shares it: see
 * above).
 */
export async function takeWriterLock(client: Client, target: PostgresTarget): Promise<string> {
  const key = advisoryKey(target.schema);
  // One statement, so one server session whatever a pooler does; the subquery (kept apart by OFFSET 0) is asked first.
  const { rows } = await client.query<{ held: boolean | string; locked: boolean | string; pid: string }>(
    `SELECT held, CASE WHEN held THEN false ELSE pg_try_advisory_lock($1::int, $2::int) END AS locked, pg_backend_pid()::text AS pid FROM (SELECT ${HELD_HERE} AS held OFFSET 0) s`,
    [key[0], key[1]],
  );
  if (flag(rows[0]?.held)) throw poolerError(target, `The server session this run was given holds the writer lock of the schema "${target.schema}" already`);
  if (flag(rows[0]?.locked)) return String(rows[0]?.pid ?? '');
  const holder = await holderOf(client, key);
  throw new WriterLockHeldError(
    `Another replicate run is writing the schema "${target.schema}" of ${target.display} (${describeHolder(holder)}). ` +
      'Run again once it has finished (exit 75: a scheduler retries later); the server frees its lock as soon as its session ends, even if it was killed.',
  );
}

/**
 * Throw a ConfigError unless the session running this (inside a group's
 * transaction) holds the writer lock of `target`'s schema, which was taken
 * on the server session `lockedOn` (a pid).
 */
export async function checkWriterLock(client: Client, target: PostgresTarget, lockedOn: string): Promise<void> {
  const key = advisoryKey(target.schema);
  const { rows } = await client.query<{ held: boolean | string; pid: string }>(`SELECT ${HELD_HERE} AS held, pg_backend_pid()::text AS pid`, [key[0], key[1]]);
  if (flag(rows[0]?.held)) return;
  throw poolerError(
    target,
    `A transaction of this run was run on a server session (pid ${String(rows[0]?.pid)}) that does not hold the writer lock of the schema "${target.schema}" (taken on server pid ${lockedOn})`,
    'Nothing of that transaction was kept (what was committed before it is whole, and the next run resumes from it). ' +
      `The lock may stay with server pid ${lockedOn} until the pooler closes that connection, and keep the next runs out (75) meanwhile: end it with SELECT pg_terminate_backend(${lockedOn}).`,
  );
}

/** Give the lock back (at the end of a run; a closed session frees it anyway). */
export async function releaseWriterLock(client: Client, target: PostgresTarget): Promise<void> {
  const key = advisoryKey(target.schema);
  await client.query('SELECT pg_advisory_unlock($1, $2)', [key[0], key[1]]);
}
