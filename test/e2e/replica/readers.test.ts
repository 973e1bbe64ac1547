/**
 * What a dashboard sees while `replicate` writes, store by store: each
 * stream's rows and its saved state belong together in every snapshot a
 * reader takes (never rows without the state that covers them, never a
 * state without its rows), and the reader is not blocked.
 *
 * The run is the first one into a new store, on data that does not change
 * during it, so the rows a state covers are known exactly: none without a
 * state; with a read in progress (`resume`), the records the service served
 * up to the cursor's last key (the emulator's keyset order, its cursor's
 * payload read by the test); with a read done, all of them. A full-refresh
 * table holds none of its rows without a state, whole pages while its read
 * is in progress, and all of them once it is done.
 *
 * - PostgreSQL: a second session takes REPEATABLE READ snapshots during the
 *   run; a third watches that session never waits for a lock.
 * - SQLite: a read-only connection takes snapshots (one transaction each)
 *   with no busy timeout: being blocked at all would throw. (Only while a
 *   run makes a new file, before there is anything to read, does it meet
 *   the file's lock: switching the file to WAL takes it for a moment.)
 * - DuckDB: its file lock lets no other process open the file while a run
 *   writes it, read-only included (docs/stores-duckdb.md says so): opening
 *   it is refused during the run; after the run is killed mid-way (and
 *   after a run that completes) a read-only open sees whole checkpoints.
 */
import { existsSync, statSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { DuckDBInstance } from '@duckdb/node-api';
import { LISTS, replicate, type Account } from '../../helpers/emulator-runs.js';
import { adminClient, freshDatabase, type TestDatabase } from '../../helpers/postgres.js';
import { withEmulatorAccount } from '../../helpers/suite.js';

/** The streams read incrementally, with their cursor field. */
const CURSORS: Readonly<Record<string, string>> = { contacts: 'updated_at', conversations: 'updated_at', stage_events: 'created_at', deletions: 'deleted_at' };
const FULL_REFRESH = 'pipeline_stages';
/** The runs' page size (small: many checkpoints). */
const PAGE_SIZE = 10;

/** One stream as a reader saw it: its rows, and its saved state (JSON text; undefined: none yet). */
interface Seen {
  readonly count: number;
  readonly state: string | undefined;
}
type Snapshot = Map<string, Seen>;

/** The emulator's keyset order: (cursor field in ms, id). */
function keyAtOrBefore(record: Record<string, unknown>, field: string, lastT: number, lastId: string): boolean {
  const t = Date.parse(String(record[field]));
  if (t !== lastT) return t < lastT;
  return String(record.id) <= lastId;
}

/** The last key a resume cursor's page ended at (the emulator's cursor: base64url JSON payload, then its signature). */
function lastKeyOf(cursor: string): { lastT: number; lastId: string } {
  const payload = JSON.parse(Buffer.from(cursor.slice(0, cursor.indexOf('.')), 'base64url').toString('utf8')) as unknown[];
  return { lastT: payload[5] as number, lastId: payload[6] as string };
}

/** Where a snapshot breaks the rule (empty: rows and states belong together), against the service's data. */
function mismatches(snapshot: Snapshot, truth: Record<string, readonly Record<string, unknown>[]>): string[] {
  const out: string[] = [];
  for (const [stream, field] of Object.entries(CURSORS)) {
    const seen = snapshot.get(stream) ?? { count: 0, state: undefined };
    const records = truth[stream] ?? [];
    let expected = 0;
    if (seen.state !== undefined) {
      const state = JSON.parse(seen.state) as { resume?: { cursor: string } };
      if (state.resume === undefined) expected = records.length;
      else {
        const { lastT, lastId } = lastKeyOf(state.resume.cursor);
        expected = records.filter((r) => keyAtOrBefore(r, field, lastT, lastId)).length;
      }
    }
    if (seen.count !== expected) out.push(`${stream}: ${seen.count} rows with state ${seen.state ?? 'none'} (it covers ${expected})`);
  }
  // A full refresh into a new store adds a page per checkpoint (the rows it does not return go when it completes):
  // none without a state, whole pages while its read is in progress, all of them once it is done.
  const stages = snapshot.get(FULL_REFRESH) ?? { count: 0, state: undefined };
  const all = truth[FULL_REFRESH]?.length ?? 0;
  const reading = stages.state !== undefined && (JSON.parse(stages.state) as { resume?: unknown }).resume !== undefined;
  const fits = stages.state === undefined ? stages.count === 0 : reading ? stages.count > 0 && stages.count < all && stages.count % PAGE_SIZE === 0 : stages.count === all;
  if (!fits) out.push(`${FULL_REFRESH}: ${stages.count} of ${all} rows with state ${stages.state ?? 'none'}`);
  return out;
}

/** How far into the reads a snapshot is: streams with a read in progress. */
const inProgress = (snapshot: Snapshot): number => [...snapshot.values()].filter((s) => s.state?.includes('"resume"')).length;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The service's records of each list, as the emulator holds them. */
function truthOf(account: Account): Record<string, readonly Record<string, unknown>[]> {
  const dump = account.dump() as unknown as Record<string, Record<string, unknown>[]>;
  return Object.fromEntries(LISTS.map((list) => [list, dump[list] ?? []]));
}

/** A run slow enough for a reader to see it mid-way: small pages, one request at a time, some latency. */
const slowConfig = (account: Account, dir: string) => account.config(dir, { page_size: PAGE_SIZE, max_concurrent_requests: 1 });

/** Snapshots taken by `take` until `done`, a few ms apart (the emulator shares this process). */
async function snapshotsUntil(done: () => boolean, take: () => Promise<Snapshot | undefined>): Promise<Snapshot[]> {
  const out: Snapshot[] = [];
  while (!done()) {
    const snapshot = await take();
    if (snapshot) out.push(snapshot);
    await sleep(5);
  }
  return out;
}

/** Check the snapshots: every one whole; some of them mid-read (the reader ran while the run wrote). */
function expectWhole(snapshots: readonly Snapshot[], truth: Record<string, readonly Record<string, unknown>[]>): void {
  const broken = snapshots.flatMap((s, i) => mismatches(s, truth).map((m) => `snapshot ${i}: ${m}`));
  expect(broken).toEqual([]);
  expect(snapshots.filter((s) => inProgress(s) > 0).length).toBeGreaterThanOrEqual(3);
}

// Each store's suite has an emulator, an account and a store of its own, and its run is slowed by the emulator's
// latency: the three run side by side.
describe.concurrent('a reader during a run into PostgreSQL', () => {
  let account: Account;
  let dir: string;
  const databases: TestDatabase[] = [];
  withEmulatorAccount('readers-pg-', { contacts: 300, seed: 71 }, (s) => ({ account, dir } = s));
  afterAll(async () => {
    for (const db of databases.splice(0)) await db.drop();
  });

  it('sees each stream as of its last commit, and never waits for a lock', { timeout: 180_000 }, async () => {
    const db = await freshDatabase('e2e_readers');
    databases.push(db);
    const reader = await adminClient(db.url);
    const watcher = await adminClient(db.url);
    const { rows: pids } = await reader.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const readerPid = pids[0]?.pid;
    account.emulator.control.setLatency(15);
    let done = false;
    let lockWaits = 0;
    let watched = 0;
    const take = async (client: pg.Client): Promise<Snapshot | undefined> => {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      try {
        const { rows: states } = await client.query<{ stream: string; state: string }>('SELECT stream, state FROM data_read._replica_state');
        const snapshot: Snapshot = new Map();
        const byStream = new Map(states.map((r) => [r.stream, r.state]));
        for (const stream of LISTS) {
          const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM data_read."${stream}"`);
          snapshot.set(stream, { count: Number(rows[0]?.n), state: byStream.get(stream) });
        }
        return snapshot;
      } catch (err) {
        // Before the run has made its tables (42P01, 3F000), there is nothing to see yet.
        if (['42P01', '3F000'].includes(String((err as { code?: unknown }).code))) return undefined;
        throw err;
      } finally {
        await client.query('COMMIT').catch(() => undefined);
      }
    };
    const watch = async (): Promise<void> => {
      while (!done) {
        const { rows } = await watcher.query<{ wait: string | null }>('SELECT wait_event_type AS wait FROM pg_stat_activity WHERE pid = $1', [readerPid]);
        watched++;
        if (rows[0]?.wait === 'Lock') lockWaits++;
        await sleep(3);
      }
    };
    try {
      const run = replicate(slowConfig(account, dir), db.url).finally(() => {
        done = true;
      });
      const [result, snapshots] = await Promise.all([run, snapshotsUntil(() => done, () => take(reader)), watch()]);
      expect(result.code, result.stderr).toBe(0);
      const after = await take(reader);
      expect(after).toBeDefined();
      expectWhole([...snapshots, after as Snapshot], truthOf(account));
      expect(inProgress(after as Snapshot)).toBe(0);
      expect(watched).toBeGreaterThan(10);
      expect(lockWaits).toBe(0);
    } finally {
      account.emulator.control.setLatency(0);
      await reader.end();
      await watcher.end();
    }
  });
});

describe.concurrent('a reader during a run into SQLite', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('readers-sqlite-', { contacts: 300, seed: 73 }, (s) => ({ account, dir } = s));

  it('sees each stream as of its last commit, never busy', { timeout: 180_000 }, async () => {
    const path = join(dir, 'read-during.db');
    account.emulator.control.setLatency(15);
    let done = false;
    let reader: DatabaseSync | undefined;
    let seen = 0;
    const take = async (): Promise<Snapshot | undefined> => {
      try {
        // No busy timeout: a reader that had to wait for the writer would fail at once (SQLITE_BUSY).
        reader ??= new DatabaseSync(path, { readOnly: true, timeout: 0 });
        reader.exec('BEGIN');
        try {
          const states = new Map(reader.prepare('SELECT stream, state FROM _replica_state').all().map((r) => [String(r.stream), String(r.state)]));
          const snapshot: Snapshot = new Map();
          for (const stream of LISTS) {
            const row = reader.prepare(`SELECT count(*) AS n FROM "${stream}"`).get();
            snapshot.set(stream, { count: Number(row?.n), state: states.get(stream) });
          }
          seen++;
          return snapshot;
        } finally {
          reader.exec('COMMIT');
        }
      } catch (err) {
        // Before the run has made the file and its tables, there is nothing to see yet.
        // Before anything is there to read, the run makes the file and switches it to WAL, which takes the file's lock for a
        // moment (a reader that opened the new file meets it); from then on, nothing may keep the reader waiting.
        if (seen === 0 && /unable to open database file|no such table|database is locked/.test(String((err as Error).message))) {
          reader?.close();
          reader = undefined;
          return undefined;
        }
        throw err;
      }
    };
    try {
      const run = replicate(slowConfig(account, dir), path).finally(() => {
        done = true;
      });
      const [result, snapshots] = await Promise.all([run, snapshotsUntil(() => done, take)]);
      expect(result.code, result.stderr).toBe(0);
      const after = await take();
      expectWhole([...snapshots, after as Snapshot], truthOf(account));
      expect(inProgress(after as Snapshot)).toBe(0);
    } finally {
      account.emulator.control.setLatency(0);
      reader?.close();
    }
  });
});

describe.concurrent('a reader of a DuckDB file', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('readers-duckdb-', { contacts: 300, seed: 79 }, (s) => ({ account, dir } = s));

  /** A read-only open of the file from this process, and one snapshot; the open's error when it is refused. */
  async function readOnly(path: string): Promise<Snapshot | Error> {
    let instance: DuckDBInstance;
    try {
      instance = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
    } catch (err) {
      return err as Error;
    }
    const connection = await instance.connect();
    try {
      const reader = await connection.runAndReadAll('SELECT stream, state FROM main._replica_state');
      const states = new Map(reader.getRowObjects().map((r) => [String(r.stream), String(r.state)]));
      const snapshot: Snapshot = new Map();
      for (const stream of LISTS) {
        const counted = await connection.runAndReadAll(`SELECT count(*) AS n FROM main."${stream}"`);
        snapshot.set(stream, { count: Number(counted.getRowObjects()[0]?.n), state: states.get(stream) });
      }
      return snapshot;
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  }

  it('is refused while a run writes it (DuckDB\'s file lock); sees whole checkpoints after a kill and after a run', { timeout: 180_000 }, async () => {
    const path = join(dir, 'read-during.duckdb');
    const config = slowConfig(account, dir);
    account.emulator.control.setLatency(25);
    try {
      let writing = false;
      let ended = false;
      // Killed once a group of its checkpoints is committed: DuckDB appends each commit to the file's WAL, which grows
      // past its size when the run said it writes (a progress line at each page keeps the question asked). A time
      // after that line instead (1.2 s) fell before the first commit on a loaded machine: nothing in progress to see.
      const wal = `${path}.wal`;
      const walSize = (): number => (existsSync(wal) ? statSync(wal).size : 0);
      let walAtStart: number | undefined;
      const pastFirstCommit = (text: string): boolean => {
        if (walAtStart === undefined && text.includes('Replicating into')) walAtStart = walSize();
        return walAtStart !== undefined && walSize() > walAtStart;
      };
      const run = replicate(config, path, {
        env: { SOURCE_DATA_READ_PROGRESS_MS: '0' },
        onStderr: (text) => {
          writing ||= /Replicating into/.test(text);
        },
        killWhen: pastFirstCommit,
      }).finally(() => {
        ended = true;
      });
      // Once the run writes (it said so), a reader's open is refused: DuckDB lets no other process in.
      while (!writing && !ended) await sleep(10);
      expect(writing).toBe(true);
      const during = await readOnly(path);
      const killed = await run;
      expect(during).toBeInstanceOf(Error);
      expect((during as Error).message).toMatch(/lock/i);
      expect(killed.killed, killed.stderr).toBe(true);
      // Killed mid-run: whatever is in the file is whole checkpoints.
      const afterKill = await readOnly(path);
      expect(afterKill).not.toBeInstanceOf(Error);
      expect(mismatches(afterKill as Snapshot, truthOf(account))).toEqual([]);
      expect(inProgress(afterKill as Snapshot), JSON.stringify([...(afterKill as Snapshot)]) + killed.stderr.slice(-1500)).toBeGreaterThan(0);
      const again = await replicate(config, path);
      expect(again.code, again.stderr).toBe(0);
      const after = await readOnly(path);
      expect(after).not.toBeInstanceOf(Error);
      expect(mismatches(after as Snapshot, truthOf(account))).toEqual([]);
      expect(inProgress(after as Snapshot)).toBe(0);
    } finally {
      account.emulator.control.setLatency(0);
    }
  });
});
