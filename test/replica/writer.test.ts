/**
 * The replica's writers: TableWriter (checkpoints grouped into
 * transactions, each whole or not at all) and ReplicaWriter (the groups, the
 * WAL thread: run from the build, dist/replica/wal-thread.js).
 */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { queryOne } from '../helpers/sqlite.js';
import { withTempDatabases } from '../helpers/suite.js';
import { existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, type SQLOutputValue, type StatementSync } from 'node:sqlite';
import { TableWriter } from '../../src/replica/table-writer.js';
import { replicaRecords, replicaStates } from '../../src/replica/records.js';
import { ReplicaStore } from '../../src/replica/store.js';
import { ReplicaWriter, SqliteStore } from '../../src/replica/writer.js';
import { ReplicaSink } from '../../src/replica/sink.js';
import { STREAMS } from '../../src/streams.js';
import { ROOT } from '../helpers/cli.js';
import { contact, conversation, iso } from '../helpers/fake-api.js';
import { checkpointsOf } from '../helpers/checkpoints.js';
import { requireBuild } from '../helpers/emulator-runs.js';

/** What vi.waitFor waits for a thread or a timer: vitest's 1 s is too short on a loaded machine (a worker thread takes longer to start). */
const WAIT = { timeout: 20_000 };

const newDb = withTempDatabases('replica-writer-');

/** A replica with its tables, and checkpoints for it. */
function replica(path: string) {
  const store = new ReplicaStore(path);
  return { store, checkpoint: checkpointsOf(store) };
}

/** Close the replica at `path`: the file keeps no WAL beside it, and holds `contacts` contacts. */
function closeLeavingNoWal(store: ReplicaStore, path: string, contacts: number): void {
  store.close();
  expect(existsSync(`${path}-wal`)).toBe(false);
  expect(replicaRecords(path).get('contacts')).toHaveLength(contacts);
}

/** The commit of a transaction that inserted contact c2 fails: a deferred constraint is checked at COMMIT. */
function failCommitOfC2(db: DatabaseSync): void {
  db.exec('CREATE TABLE parent (id TEXT PRIMARY KEY)');
  db.exec('CREATE TABLE guard (id TEXT REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)');
  db.exec('PRAGMA foreign_keys = ON');
  db.exec("CREATE TRIGGER poison AFTER INSERT ON contacts WHEN NEW.id = 'c2' BEGIN INSERT INTO guard VALUES ('x'); END");
}

describe('TableWriter', () => {
  it('holds several checkpoints in one transaction; a failing one is undone alone, and later ones of its stream are refused', () => {
    const path = newDb();
    const { store, checkpoint } = replica(path);
    store.db.exec("CREATE TRIGGER refuse BEFORE INSERT ON contacts WHEN NEW.id = 'bad' BEGIN SELECT RAISE(ABORT, 'disk on fire'); END");
    const writer = new TableWriter(store.db, store.tables);
    expect(writer.write(checkpoint('contacts', [contact('c1', 1)], 1)).upserted).toBe(1);
    expect(writer.transactionStartedAt).toBeTypeOf('number');
    expect(() => writer.write(checkpoint('contacts', [contact('c2', 2), contact('bad', 2)], 2))).toThrow(/disk on fire/);
    // A later checkpoint of that stream would move its state past the rows just lost: refused.
    expect(() => writer.write(checkpoint('contacts', [contact('c3', 3)], 3))).toThrow(/an earlier checkpoint of contacts could not be written \(disk on fire\)/);
    // Other streams go on, in the same transaction.
    expect(writer.write(checkpoint('conversations', [conversation('v1', 4)], 4)).upserted).toBe(1);
    writer.commit();
    expect(writer.transactionStartedAt).toBeUndefined();
    store.close();
    expect(replicaRecords(path).get('contacts')?.map((r) => r.id)).toEqual(['c1']);
    expect(replicaStates(path).get('contacts')).toEqual({ resume: { cursor: 'contacts#1', sync_watermark: iso(1) } });
    expect(replicaRecords(path).get('conversations')?.map((r) => r.id)).toEqual(['v1']);
  });

  it('stops writing once a commit fails: what that transaction held is gone, so nothing later may be committed', () => {
    const path = newDb();
    const { store, checkpoint } = replica(path);
    failCommitOfC2(store.db);
    const writer = new TableWriter(store.db, store.tables);
    writer.write(checkpoint('contacts', [contact('c1', 1)], 1));
    writer.commit();
    writer.write(checkpoint('contacts', [contact('c2', 2)], 2));
    writer.write(checkpoint('conversations', [conversation('v1', 2)], 2));
    expect(() => writer.commit()).toThrow(/FOREIGN KEY/);
    expect(() => writer.write(checkpoint('conversations', [conversation('v2', 3)], 3))).toThrow(/transaction holding the last checkpoints was lost/);
    store.close();
    expect(replicaRecords(path).get('contacts')?.map((r) => r.id)).toEqual(['c1']);
    expect(replicaRecords(path).get('conversations')).toEqual([]);
    expect(replicaStates(path).get('contacts')).toEqual({ resume: { cursor: 'contacts#1', sync_watermark: iso(1) } });
  });
});

describe('ReplicaWriter', () => {
  it('the file removed or replaced during a run: the next commit fails the run as transient (75), not a silent success on a file no one sees', async () => {
    for (const swap of ['removed', 'replaced'] as const) {
      const path = newDb();
      const { store, checkpoint } = replica(path);
      const writer = new ReplicaWriter(store, { walThread: null, commitEveryMs: 3_600_000, shortGroupMs: 3_600_000 });
      writer.write(checkpoint('contacts', [contact('c1', 1)], 1));
      writer.flush();
      for (const side of ['', '-wal', '-shm']) rmSync(`${path}${side}`, { force: true });
      if (swap === 'replaced') writeFileSync(path, '');
      writer.write(checkpoint('contacts', [contact('c2', 2)], 2));
      let thrown: unknown;
      try {
        writer.flush();
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toMatchObject({ failureType: 'transient_error', message: expect.stringContaining(`was ${swap === 'removed' ? 'removed' : 'replaced by another file'} during the run`) });
      await writer.close().catch(() => undefined);
      store.close();
    }
  });

  const walThread = new URL(`file://${join(ROOT, 'dist', 'replica', 'wal-thread.js')}`);
  beforeAll(() => requireBuild());

  function visible(path: string): number {
    return Number(queryOne(path, 'SELECT count(*) AS n FROM contacts')?.n);
  }

  it('holds checkpoints in one transaction until the group is due or flushed; other connections see whole groups', async () => {
    const path = newDb();
    const { store, checkpoint } = replica(path);
    const writer = new ReplicaWriter(store, { walThread: null, commitEveryMs: 3_600_000, shortGroupMs: 3_600_000 });
    expect(writer.write(checkpoint('contacts', [contact('c1', 1), contact('c2', 1)], 1)).upserted).toBe(2);
    expect(writer.write(checkpoint('conversations', [conversation('v1', 1)], 1)).upserted).toBe(1);
    expect(visible(path)).toBe(0);
    writer.flush();
    expect(visible(path)).toBe(2);
    await writer.close();
    store.close();
    expect(replicaStates(path).get('contacts')).toEqual({ resume: { cursor: 'contacts#1', sync_watermark: iso(1) } });

    // A group that is due is committed by the write that finds it so, or by the timer when no write comes.
    const path2 = newDb();
    const second = replica(path2);
    const eager = new ReplicaWriter(second.store, { walThread: null, commitEveryMs: 0, shortGroupMs: 0 });
    eager.write(second.checkpoint('contacts', [contact('c1', 1)], 1));
    expect(visible(path2)).toBe(1);
    const timed = new ReplicaWriter(second.store, { walThread: null, commitEveryMs: 20, shortGroupMs: 20 });
    timed.write(second.checkpoint('contacts', [contact('c2', 2)], 2));
    await vi.waitFor(() => expect(visible(path2)).toBe(2), WAIT);
    await timed.close();
    await eager.close();
    second.store.close();
  });

  it('keeps a group open for commitEveryMs when its rows share pages, for shortGroupMs when each row changed a page of its own', async () => {
    const path = newDb();
    const { store, checkpoint } = replica(path);
    const writer = new ReplicaWriter(store, { walThread: null, commitEveryMs: 2_000_000, shortGroupMs: 1_000_000 });
    // The savepoint journal of each checkpoint is kept in memory, not in a temporary file.
    expect(store.db.prepare('PRAGMA temp_store').get()?.temp_store).toBe(2);
    const row = (i: number, minute: number) => contact(`c${String(i).padStart(5, '0')}`, minute, { note: 'x'.repeat(400) });
    const pages = (ids: number[], minute: number) => {
      for (let at = 0; at < ids.length; at += 200) writer.write(checkpoint('contacts', ids.slice(at, at + 200).map((i) => row(i, minute)), minute));
      writer.flush();
    };
    const range = (from: number, to: number, step = 1) => Array.from({ length: Math.ceil((to - from) / step) }, (_, k) => from + k * step);
    // The first group is a short one.
    expect(writer.groupTimeMs).toBe(1_000_000);
    // New rows, about six to a page, appended: they share pages, so groups are long.
    pages(range(0, 3000), 1);
    expect(writer.groupTimeMs).toBe(2_000_000);
    // Every tenth row changed: each one rewrites a page of its own, so groups are short.
    pages(range(0, 3000, 10), 2);
    expect(writer.groupTimeMs).toBe(1_000_000);
    pages(range(3000, 4000), 3);
    expect(writer.groupTimeMs).toBe(2_000_000);
    await writer.close();
    store.close();
    const rows = replicaRecords(path).get('contacts') ?? [];
    expect(rows).toHaveLength(4000);
    expect(rows.filter((r) => r.updated_at === iso(2)).map((r) => r.id)).toEqual(range(0, 3000, 10).map((i) => `c${String(i).padStart(5, '0')}`));
  });

  it('starts no WAL thread for a run whose WAL stays small: closing the file copies it', async () => {
    const path = newDb();
    const { store, checkpoint } = replica(path);
    const writer = new ReplicaWriter(store, { walThread, commitEveryMs: 0, shortGroupMs: 0 });
    for (let page = 0; page < 5; page++) writer.write(checkpoint('contacts', [contact(`c${page}`, page)], page));
    expect(writer.walThreadStarted).toBe(false);
    await writer.close();
    closeLeavingNoWal(store, path, 5);
  });

  it('hands the checkpoints to the WAL thread, and leaves no WAL behind once the run closes the file', async () => {
    const path = newDb();
    const { store, checkpoint } = replica(path);
    const writer = new ReplicaWriter(store, { walThread, commitEveryMs: 0, shortGroupMs: 0, walThreadAfterBytes: 0 });
    // The thread starts with the first commit (a run that stops before writing starts none).
    expect(writer.checkpointing).toBe(false);
    writer.write(checkpoint('contacts', [contact('c-first', 0)], 0));
    await vi.waitFor(() => expect(writer.checkpointing).toBe(true), WAIT);
    expect(store.db.prepare('PRAGMA wal_autocheckpoint').get()?.wal_autocheckpoint).toBe(0);
    for (let page = 0; page < 20; page++) {
      writer.write(checkpoint('contacts', Array.from({ length: 100 }, (_, i) => contact(`c${page}-${i}`, page)), page));
    }
    await writer.close();
    expect(writer.checkpointing).toBe(false);
    expect(store.rowCounts().get('contacts')).toBe(2001);
    closeLeavingNoWal(store, path, 2001);
  });

  it('keeps the WAL bounded: past a size, it waits for the WAL thread and the next group starts the WAL over', async () => {
    const path = newDb();
    const { store, checkpoint } = replica(path);
    const writer = new ReplicaWriter(store, { walThread, commitEveryMs: 0, shortGroupMs: 0, walThreadAfterBytes: 0, walRestartBytes: 1 << 20 });
    writer.write(checkpoint('contacts', [contact('c-first', 0)], 0));
    await vi.waitFor(() => expect(writer.checkpointing).toBe(true), WAIT);
    let largest = 0;
    const pages = 180;
    for (let page = 0; page < pages; page++) {
      writer.write(checkpoint('contacts', Array.from({ length: 100 }, (_, i) => contact(`c${page}-${i}`, page, { note: 'x'.repeat(400) })), page));
      largest = Math.max(largest, statSync(`${path}-wal`).size);
    }
    await writer.close();
    const written = statSync(path).size;
    expect(store.rowCounts().get('contacts')).toBe(pages * 100 + 1);
    store.close();
    // Left to grow, the WAL holds every page written (and more: index pages again at each commit).
    // Started over past 1 MB, it stays a small part of that, even when a restart has to wait for a later commit.
    expect(written).toBeGreaterThan(8 << 20);
    expect(largest).toBeLessThan(written / 2);
    expect(replicaRecords(path).get('contacts')).toHaveLength(pages * 100 + 1);
  });

  it("past the WAL's size, a reader's open transaction costs one wait for it, not one at every commit; once it ends the WAL starts over", async () => {
    const path = newDb();
    const { store, checkpoint } = replica(path);
    const writer = new ReplicaWriter(store, { walThread, commitEveryMs: 0, shortGroupMs: 0, walThreadAfterBytes: 0, walRestartBytes: 1 << 20 });
    writer.write(checkpoint('contacts', [contact('c-first', 0)], 0));
    await vi.waitFor(() => expect(writer.checkpointing).toBe(true), WAIT);
    // A try to start the WAL over that a reader still on it holds up has waited for it (RESTART_WAIT_MS): such
    // waits are counted (busy, with the WAL's frames counted: not the WAL thread's pass, which returns at once).
    let restarts = 0;
    let waits = 0;
    const isRestart = (sql: string): boolean => sql.includes('wal_checkpoint(RESTART)');
    const seen = (row: Record<string, SQLOutputValue> | undefined): Record<string, SQLOutputValue> | undefined => {
      restarts++;
      if (Number(row?.busy) !== 0 && Number(row?.checkpointed) >= 0) waits++;
      return row;
    };
    const exec = store.db.exec.bind(store.db);
    const prepare = store.db.prepare.bind(store.db);
    vi.spyOn(store.db, 'exec').mockImplementation((sql: string) => (isRestart(sql) ? void seen(prepare(sql).get()) : exec(sql)));
    vi.spyOn(store.db, 'prepare').mockImplementation((sql: string) => {
      const statement = prepare(sql);
      return isRestart(sql) ? ({ get: () => seen(statement.get()) } as unknown as StatementSync) : statement;
    });
    vi.useFakeTimers({ toFake: ['Date'] });
    let pages = 0;
    try {
      // A dashboard's transaction, left open: it holds its snapshot, and the WAL with it.
      const reader = new DatabaseSync(path, { readOnly: true, timeout: 0 });
      reader.exec('BEGIN');
      expect(reader.prepare('SELECT count(*) AS n FROM contacts').get()?.n).toBe(1);
      const page = (n: number) => checkpoint('contacts', Array.from({ length: 100 }, (_, i) => contact(`c${n}-${i}`, n, { note: 'x'.repeat(400) })), n);
      for (; pages < 30; ) writer.write(page(++pages));
      expect(statSync(`${path}-wal`).size).toBeGreaterThan(3 << 20);
      expect(waits).toBe(1);
      const tried = restarts;
      expect(reader.prepare('SELECT count(*) AS n FROM contacts').get()?.n).toBe(1);
      reader.exec('COMMIT');
      reader.close();
      // Later, with the reader gone: the writer tries again, and the WAL starts over.
      vi.setSystemTime(Date.now() + 60_000);
      // Started over (after a commit; later if the WAL thread's pass was under way), the WAL takes the next pages
      // from its start: its file stops growing.
      let size = statSync(`${path}-wal`).size;
      let startedOver = false;
      for (; pages < 40 && !startedOver; ) {
        writer.write(page(++pages));
        const now = statSync(`${path}-wal`).size;
        startedOver = now <= size;
        size = Math.max(size, now);
      }
      expect(startedOver).toBe(true);
      expect(restarts).toBeGreaterThan(tried);
    } finally {
      vi.useRealTimers();
      vi.restoreAllMocks();
    }
    await writer.close();
    closeLeavingNoWal(store, path, 1 + pages * 100);
  });

  it('a WAL thread that cannot start leaves the checkpoints to the connection, as SQLite does by default', async () => {
    const path = newDb();
    const { store, checkpoint } = replica(path);
    const writer = new ReplicaWriter(store, { walThread: new URL(`file://${join(ROOT, 'no-such-thread.js')}`), commitEveryMs: 0, shortGroupMs: 0, walThreadAfterBytes: 0 });
    writer.write(checkpoint('contacts', [contact('c1', 1)], 1));
    await vi.waitFor(() => expect(store.db.prepare('PRAGMA wal_autocheckpoint').get()?.wal_autocheckpoint).toBe(16_000), WAIT);
    expect(writer.checkpointing).toBe(false);
    writer.write(checkpoint('contacts', [contact('c2', 2)], 2));
    await writer.close();
    store.close();
    expect(replicaRecords(path).get('contacts')?.map((r) => r.id)).toEqual(['c1', 'c2']);
  });

  it('a checkpoint it cannot write is an error naming the database; later ones of that stream are refused, the others go on', async () => {
    const path = newDb();
    const { store, checkpoint } = replica(path);
    store.db.exec("CREATE TRIGGER refuse BEFORE INSERT ON contacts WHEN NEW.id = 'bad' BEGIN SELECT RAISE(ABORT, 'disk on fire'); END");
    const writer = new ReplicaWriter(store, { walThread: null });
    writer.write(checkpoint('contacts', [contact('c1', 1)], 1));
    expect(() => writer.write(checkpoint('contacts', [contact('bad', 2)], 2))).toThrow(new RegExp(`Cannot write the replica database ".*r\\.db": disk on fire`));
    expect(() => writer.write(checkpoint('contacts', [contact('c3', 3)], 3))).toThrow(/an earlier checkpoint of contacts could not be written/);
    writer.write(checkpoint('conversations', [conversation('v1', 3)], 3));
    await writer.close();
    store.close();
    expect(replicaRecords(path).get('contacts')?.map((r) => r.id)).toEqual(['c1']);
    expect(replicaRecords(path).get('conversations')?.map((r) => r.id)).toEqual(['v1']);
  });

  it('another connection writing the file for longer than the busy timeout (sqlite3 in a transaction, a CREATE INDEX): the stream stops as transient (75), naming it', async () => {
    const path = newDb();
    const { store, checkpoint } = replica(path);
    const writer = new ReplicaWriter(store, { walThread: null });
    const other = new DatabaseSync(path);
    other.exec('BEGIN IMMEDIATE');
    let thrown: unknown;
    try {
      writer.write(checkpoint('contacts', [contact('c1', 1)], 1));
    } catch (err) {
      thrown = err;
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(thrown).toMatchObject({ failureType: 'transient_error', message: expect.stringMatching(/^Cannot write the replica database ".*r\.db": another connection kept it busy .* Run replicate again/) });
    writer.write(checkpoint('conversations', [conversation('v1', 2)], 2));
    await writer.close();
    store.close();
    expect(replicaRecords(path).get('conversations')?.map((r) => r.id)).toEqual(['v1']);
  });

  it('a commit that fails loses its group: flush, every later write and close say so', async () => {
    const path = newDb();
    const { store, checkpoint } = replica(path);
    failCommitOfC2(store.db);
    const writer = new ReplicaWriter(store, { walThread: null, commitEveryMs: 3_600_000, shortGroupMs: 3_600_000 });
    writer.write(checkpoint('contacts', [contact('c1', 1)], 1));
    writer.flush();
    writer.write(checkpoint('contacts', [contact('c2', 2)], 2));
    expect(() => writer.flush()).toThrow(/Cannot write the replica database ".*": a commit failed, so the checkpoints since the last commit are not saved \(FOREIGN KEY/);
    expect(() => writer.write(checkpoint('conversations', [conversation('v1', 3)], 3))).toThrow(/a commit failed/);
    await expect(writer.close()).rejects.toThrow(/a commit failed/);
    store.close();
    expect(replicaRecords(path).get('contacts')?.map((r) => r.id)).toEqual(['c1']);
    expect(replicaStates(path).get('contacts')).toEqual({ resume: { cursor: 'contacts#1', sync_watermark: iso(1) } });
  });

  it("counts a group's rows and watermark in the sink's tallies only once committed: a group whose commit fails is not counted", async () => {
    const path = newDb();
    const { store } = replica(path);
    failCommitOfC2(store.db);
    const writer = new ReplicaWriter(store, { walThread: null, commitEveryMs: 3_600_000, shortGroupMs: 3_600_000 });
    const sink = new ReplicaSink(new SqliteStore(store, writer), () => undefined);
    const contacts = STREAMS.find((s) => s.name === 'contacts')!;
    sink.streamStarted(contacts);
    sink.records(contacts, [contact('c1', 1)]);
    sink.state(contacts, { sync_watermark: iso(1) });
    expect(sink.tallies.get('contacts')).toMatchObject({ upserted: 0 });
    expect(sink.tallies.get('contacts')?.savedWatermark).toBeUndefined(); // held in the open group
    writer.flush();
    expect(sink.tallies.get('contacts')).toMatchObject({ upserted: 1, savedWatermark: iso(1) });
    sink.records(contacts, [contact('c2', 2), contact('c3', 2)]);
    sink.state(contacts, { sync_watermark: iso(2) });
    expect(() => writer.flush()).toThrow(/a commit failed/);
    expect(sink.tallies.get('contacts')).toMatchObject({ upserted: 1, savedWatermark: iso(1) });
    await expect(writer.close()).rejects.toThrow(/a commit failed/);
    store.close();
    expect(replicaRecords(path).get('contacts')).toHaveLength(sink.tallies.get('contacts')!.upserted);
  });
});

describe('reading the saved states back', () => {
  it('finds none in a file a run stopped before it made its tables (killed at its start)', () => {
    const path = newDb();
    new DatabaseSync(path).close(); // SQLite made the file; the run was killed before its first statement
    expect(replicaStates(path)).toEqual(new Map());
  });
});
