/**
 * `source-data-read replicate` end to end, against the emulator: the replica
 * equals the emulator's dump after rounds of changes and deletions, and after
 * SIGKILLs at random points followed by a rerun.
 */
import { describe, expect, it } from 'vitest';
import { queryOne, readDatabase } from '../../helpers/sqlite.js';
import { withEmulatorAccount } from '../../helpers/suite.js';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { replicaStates } from '../../../src/replica/records.js';
import { replicaSummary } from '../../../demo/dashboard.js';
import { changeRound, dumpLists, prng, replicaAsDump, replicate, type Account } from '../../helpers/emulator-runs.js';

/** -wal, -shm or -journal files beside the database. */
function sideFiles(db: string): string[] {
  return ['-wal', '-shm', '-journal'].map((suffix) => `${db}${suffix}`).filter((file) => existsSync(file));
}

function journalMode(db: string): string {
  return String(queryOne(db, 'PRAGMA journal_mode')?.journal_mode);
}

describe('replicate: the replica equals the service', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('replica-e2e-', { contacts: 400 }, (s) => ({ account, dir } = s));

  it('after a first sync and after each of three rounds of changes and deletions', async () => {
    const config = account.config(dir);
    const db = join(dir, 'replica.db');
    const first = await replicate(config, db);
    expect(first.stderr).toMatch(/Replica up to date: contacts \d+ rows/);
    expect(first.code).toBe(0);
    expect(first.stdout).toBe('');
    expect(replicaAsDump(db)).toStrictEqual(dumpLists(account.dump()));
    // Checkpointed and closed cleanly: the replica at rest is one file, and a read-only reader
    // (replicaAsDump, the demo's dashboard), which cannot remove -wal/-shm, does not create them.
    expect(sideFiles(db)).toEqual([]);
    expect(journalMode(db)).toBe('delete');
    // It holds personal data: readable by its owner alone.
    expect((statSync(db).mode & 0o777).toString(8)).toBe('600');

    for (let round = 0; round < 3; round++) {
      changeRound(account);
      const run = await replicate(config, db);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe('');
      const dump = account.dump();
      expect(replicaAsDump(db)).toStrictEqual(dumpLists(dump));
      expect(run.stderr).toMatch(/deletions applied: \d+ rows removed/);
    }
    const states = replicaStates(db);
    for (const stream of ['contacts', 'conversations', 'stage_events', 'deletions']) {
      expect(states.get(stream)?.sync_watermark, stream).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(states.get(stream)?.resume, stream).toBeUndefined();
    }

    // The dashboard agrees with the data.
    const summary = replicaSummary(db);
    const dump = account.dump();
    expect(summary.contacts.total).toBe(dump.contacts.length);
    expect(summary.contacts.byTemperature.reduce((n, c) => n + c.count, 0)).toBe(dump.contacts.length);
    expect(summary.contacts.byStage.reduce((n, c) => n + c.count, 0)).toBe(dump.contacts.length);
    expect(summary.contacts.byStage.some((s) => s.name !== null)).toBe(true);
    expect(summary.conversations.total).toBe(dump.conversations.length);
    expect(sideFiles(db)).toEqual([]);
    expect(summary.conversations.won).toBe(dump.conversations.filter((c) => c.outcome_category === 'converted').length);
    expect(summary.conversations.lost).toBe(dump.conversations.filter((c) => c.outcome_category === 'not_interested').length);
    expect(summary.conversations.medianFirstResponseSeconds).toBeGreaterThan(0);
  });

  it('the tables are typed: TEXT, INTEGER, booleans as 0/1', () => {
    readDatabase(join(dir, 'replica.db'), (db) => {
      const types = Object.fromEntries(db.prepare("SELECT name, type FROM pragma_table_info('contacts')").all().map((r) => [r.name, r.type]));
      expect(types).toMatchObject({ id: 'TEXT', updated_at: 'TEXT', qualification_score: 'INTEGER', do_not_contact: 'INTEGER', _extra: 'TEXT' });
      const flags = db.prepare('SELECT DISTINCT do_not_contact AS v FROM contacts ORDER BY v').all().map((r) => r.v);
      expect(flags.every((v) => v === 0 || v === 1)).toBe(true);
      // The stages' fields are typed columns: the emulator's description declares them.
      const stages = db.prepare('SELECT name, position, _extra FROM pipeline_stages LIMIT 1').get();
      expect(typeof stages?.name).toBe('string');
      expect(typeof stages?.position).toBe('number');
      expect(stages?._extra).toBeNull();
    });
  });
});

describe('replicate: killed at random points, it continues exactly', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('replica-kill-', { contacts: 1500, seed: 23 }, (s) => ({ account, dir } = s));

  it('SIGKILL after random delays and after N bytes of progress, with changes in between, then a run to completion', { timeout: 240_000 }, async () => {
    const seed = Number(process.env.REPLICA_KILL_SEED ?? Date.now() % 100_000);
    const random = prng(seed);
    const config = account.config(dir, { page_size: 20, max_concurrent_requests: 2 });
    const db = join(dir, 'replica.db');
    // Slow the service a little so that a run lasts long enough to be killed in the middle.
    account.emulator.control.setLatency(6);
    const env = { SOURCE_DATA_READ_PROGRESS_MS: '0' };
    const kills: string[] = [];
    let midRun = 0;
    let resumed = 0;
    for (let i = 0; i < 6; i++) {
      const byBytes = i % 2 === 1;
      const point = byBytes ? { killAfterStderrBytes: 200 + Math.floor(random() * 6000) } : { killAfterMs: 250 + Math.floor(random() * 1500) };
      const run = await replicate(config, db, { ...point, env });
      kills.push(`${JSON.stringify(point)} -> ${run.killed ? 'killed' : `exit ${run.code}`}`);
      if (run.killed) midRun++;
      else expect(run.code, run.stderr).toBe(0);
      // A kill may come before the file even exists; once it does, it is sound after every kill,
      // and a kill inside a read leaves a resume cursor, committed with the rows before it.
      if (existsSync(db)) {
        const check = new DatabaseSync(db, { readOnly: true });
        expect(check.prepare('PRAGMA integrity_check').get()?.integrity_check).toBe('ok');
        check.close();
        if (run.killed && [...replicaStates(db).values()].some((st) => st.resume !== undefined)) resumed++;
      }
      if (i % 2 === 1) changeRound(account, 2);
    }
    expect(midRun, `seed ${seed}: ${kills.join('; ')}`).toBeGreaterThanOrEqual(3);
    expect(resumed, `seed ${seed}: ${kills.join('; ')}`).toBeGreaterThanOrEqual(1);
    account.emulator.control.setLatency(0);
    const last = await replicate(config, db, { env });
    expect(last.code, last.stderr).toBe(0);
    expect(last.stderr).toContain('continuing from its saved state');
    const got = replicaAsDump(db);
    const want = dumpLists(account.dump());
    if (process.env.REPLICA_DEBUG) {
      for (const list of Object.keys(want)) {
        const g = new Map((got[list] as { id: string }[]).map((r) => [r.id, JSON.stringify(r)]));
        const w = new Map((want[list] as { id: string }[]).map((r) => [r.id, JSON.stringify(r)]));
        for (const [id, r] of w) if (g.get(id) !== r) console.log(list, 'want', r, '\n   got', g.get(id));
        for (const [id, r] of g) if (!w.has(id)) console.log(list, 'extra', r);
      }
    }
    expect(got, `seed ${seed}: ${kills.join('; ')}`).toStrictEqual(want);
  });
});
