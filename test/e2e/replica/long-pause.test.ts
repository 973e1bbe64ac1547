/**
 * A pause longer than the service keeps deletions, end to end: replicate; 10 days later contacts and conversations are deleted; 95 days
 * after that (the emulator's clock moves, not the machine's) `replicate` reads
 * contacts and conversations in full, removes the rows the service no longer
 * has with one WARN, and the replica equals the service. A SIGKILL in the
 * middle of that heal leaves the old rows and the deletion log's old state;
 * the next run heals again.
 */
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { replicaStates } from '../../../src/replica/records.js';
import { SOURCE_BIN } from '../../helpers/cli.js';
import { dumpLists, replicaAsDump, replicate, type Account } from '../../helpers/emulator-runs.js';
import { readDatabase } from '../../helpers/sqlite.js';
import { withEmulatorAccount } from '../../helpers/suite.js';

const DAY_MS = 86_400_000;
const COMPARED = ['contacts', 'conversations', 'stage_events', 'pipeline_stages'] as const;

function objects(lists: Record<string, unknown[]>): Record<string, unknown[]> {
  return Object.fromEntries(COMPARED.map((name) => [name, lists[name] ?? []]));
}

function ids(db: string, table: string): Set<string> {
  return readDatabase(db, (handle) => new Set(handle.prepare(`SELECT id FROM "${table}"`).all().map((r) => String(r.id))));
}

/** The stream's saved state as the replica holds it, read while a run may be writing (WAL). */
function savedState(db: string, stream: string): Record<string, unknown> | undefined {
  return readDatabase(db, (handle) => {
    const row = handle.prepare('SELECT state FROM _replica_state WHERE stream = ?').get(stream);
    return row ? (JSON.parse(String(row.state)) as Record<string, unknown>) : undefined;
  }, 5000);
}

/** Run replicate and SIGKILL it once `ready()` says so (polled); resolves with its stderr. */
function replicateKilledWhen(config: string, db: string, ready: () => boolean): Promise<{ killed: boolean; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SOURCE_BIN, 'replicate', '--config', config, '--db', db], { stdio: ['ignore', 'ignore', 'pipe'] });
    const err: Buffer[] = [];
    let killed = false;
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const poll = setInterval(() => {
      try {
        if (!killed && ready()) killed = child.kill('SIGKILL');
      } catch {
        // the file is being created or locked for a moment: poll again
      }
    }, 5);
    child.on('error', reject);
    child.on('close', () => {
      clearInterval(poll);
      resolve({ killed, stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

describe('replicate after a pause longer than the deletion retention', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('replica-pause-', { contacts: 150, seed: 23 }, (suite) => ({ account, dir } = suite));

  it('heals: rows deleted in the gap are removed with one WARN, the replica equals the service; a kill mid-heal changes nothing', { timeout: 240_000 }, async () => {
    const control = account.emulator.control;
    const config = account.config(dir, { page_size: 10 });
    const db = join(dir, 'replica.db');
    const first = await replicate(config, db);
    expect(first.code, first.stderr).toBe(0);

    control.advanceClock(10 * DAY_MS);
    const dump = account.dump();
    const contacts = dump.contacts.slice(0, 4).map((c) => c.id);
    const withConversations = new Set(dump.conversations.map((c) => c.contact_id));
    const conversations = dump.conversations.filter((c) => !contacts.includes(c.contact_id)).slice(0, 4).map((c) => c.id);
    account.mutate({ op: 'delete_contacts', ids: contacts });
    account.mutate({ op: 'delete_conversations', ids: conversations });
    control.advanceClock(95 * DAY_MS);
    account.mutate({ op: 'update_contacts', count: 5 });
    const truth = account.dump();
    const gone = (list: 'contacts' | 'conversations') => [...ids(db, list)].filter((id) => !truth[list].some((r) => r.id === id));
    const goneBefore = gone('contacts').length + gone('conversations').length;
    expect(goneBefore).toBeGreaterThanOrEqual(8);
    expect(contacts.some((id) => withConversations.has(id)) || goneBefore > 8).toBe(true);
    const deletionsBefore = savedState(db, 'deletions');

    // Killed once the heal has committed a checkpoint of contacts (a full read under way: a resume cursor, no watermark).
    control.setLatency(50);
    const killed = await replicateKilledWhen(config, db, () => {
      const state = savedState(db, 'contacts');
      return state !== undefined && state.sync_watermark === undefined && state.resume !== undefined;
    });
    control.setLatency(0);
    expect(killed.killed, killed.stderr).toBe(true);
    expect(killed.stderr).toMatch(/deletions: the saved watermark \S+ is 105 days old on the service's clock/);
    expect(savedState(db, 'deletions')).toEqual(deletionsBefore);
    expect(gone('contacts').length + gone('conversations').length).toBe(goneBefore);

    const healed = await replicate(config, db);
    expect(healed.code, healed.stderr).toBe(0);
    const warnings = healed.stderr.split('\n').filter((l) => /\bWARN/.test(l));
    // The killed run's writer lock is taken over with a WARN of its own (its holder is dead); the gap is one more.
    expect(warnings.filter((l) => /Took over the writer lock/.test(l))).toHaveLength(1);
    warnings.splice(warnings.findIndex((l) => /Took over the writer lock/.test(l)), 1);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/is 105 days old on the service's clock/);
    expect(warnings[0]).toContain(`removed ${goneBefore} row(s) the service no longer has`);
    expect(objects(replicaAsDump(db))).toStrictEqual(objects(dumpLists(account.dump())));
    const states = replicaStates(db);
    for (const stream of ['contacts', 'conversations', 'deletions']) expect(states.get(stream)?.sync_watermark, stream).toBe(control.now());

    // The next run finds no gap: no WARN, one request for the service's clock, nothing read in full.
    const next = await replicate(config, db);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).not.toMatch(/\bWARN/);
    expect(objects(replicaAsDump(db))).toStrictEqual(objects(dumpLists(account.dump())));
  });
});

describe('replicate when the deletion log passes its retention during the run', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('replica-pause-edge-', { contacts: 40, seed: 9 }, (suite) => ({ account, dir } = suite));

  it('the log is left unread (75, its state unchanged), and the next run heals: the row deleted in the gap goes', { timeout: 120_000 }, async () => {
    const control = account.emulator.control;
    const config = account.config(dir, { page_size: 20 });
    const db = join(dir, 'replica.db');
    expect((await replicate(config, db)).code).toBe(0);
    const gone = account.dump().contacts[0]?.id ?? '';
    account.mutate({ op: 'delete_contacts', ids: [gone] });
    // A minute short of where the connector counts a gap (the retention less an hour, for a day short across a
    // daylight-saving change, and the 5-minute look-back): the run's look at the service's clock finds none.
    control.advanceClock(90 * DAY_MS - 66 * 60_000);
    const deletionsBefore = savedState(db, 'deletions');
    // That look (a one-record read of /v1/deletions) is answered slowly; meanwhile 75 minutes pass, and the
    // deletion above falls out of the service's log before the run reads it.
    control.setFaults([{ kind: 'slow', every: 1, times: 1, paths: ['/v1/deletions'], slowMs: 1500 }]);
    const running = replicate(config, db);
    while (control.faults().rules[0]?.fired !== 1) await new Promise((resolve) => setTimeout(resolve, 5));
    control.advanceClock(75 * 60_000);
    const raced = await running;
    control.clearFaults();
    expect(raced.code, raced.stderr).toBe(75);
    expect(raced.stderr).toMatch(/ERROR source-data-read: deletions: the saved watermark \S+ became older than the service's 90-day retention of deletions during this run.*Run again: the next run reads contacts and conversations in full/);
    expect(savedState(db, 'deletions')).toEqual(deletionsBefore);

    const healed = await replicate(config, db);
    expect(healed.code, healed.stderr).toBe(0);
    expect(healed.stderr).toMatch(/removed \d+ row\(s\) the service no longer has \(contacts 1, /);
    expect(objects(replicaAsDump(db))).toStrictEqual(objects(dumpLists(account.dump())));
  });
});

/** The ids the full read of `stream` under way has marked (none when no read is under way). */
function marked(db: string, stream: string): string[] {
  return readDatabase(db, (handle) => {
    if (handle.prepare("SELECT 1 AS x FROM sqlite_schema WHERE name = '_replica_full_read'").get() === undefined) return [];
    return handle.prepare('SELECT id FROM _replica_full_read WHERE stream = ?').all(stream).map((r) => String(r.id));
  }, 5000);
}

/** Records of `stream` a run read, from its --summary file. */
function readIn(summaryFile: string, stream: string): number {
  const summary = JSON.parse(readFileSync(summaryFile, 'utf8')) as { streams: { name: string; records: number }[] };
  return summary.streams.find((s) => s.name === stream)?.records ?? 0;
}

describe('replicate: a heal stopped part-way', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('replica-pause-resume-', { contacts: 200, seed: 29 }, (suite) => ({ account, dir } = suite));

  /**
   * A replica 105 days behind (two contacts deleted in the gap) whose heal was SIGKILLed once it had marked 60
   * contacts: its config, file, and the contacts still in the replica, marked by the heal or not.
   */
  async function killedHeal(name: string): Promise<{ config: string; db: string; marked: string[]; unmarked: string[] }> {
    const control = account.emulator.control;
    const config = account.config(dir, { page_size: 10 });
    const db = join(dir, `${name}.db`);
    const first = await replicate(config, db);
    expect(first.code, first.stderr).toBe(0);
    control.advanceClock(10 * DAY_MS);
    account.mutate({ op: 'delete_contacts', ids: account.dump().contacts.slice(0, 2).map((c) => c.id) });
    control.advanceClock(95 * DAY_MS);
    control.setLatency(30);
    const killed = await replicateKilledWhen(config, db, () => marked(db, 'contacts').length >= 60);
    control.setLatency(0);
    expect(killed.killed, killed.stderr).toBe(true);
    const marks = new Set(marked(db, 'contacts'));
    const live = new Set(account.dump().contacts.map((c) => c.id));
    const held = [...ids(db, 'contacts')].filter((id) => live.has(id));
    return { config, db, marked: held.filter((id) => marks.has(id)), unmarked: held.filter((id) => !marks.has(id)) };
  }

  it('is continued by the next run from its last checkpoint; the sweep removes what neither part returned', { timeout: 180_000 }, async () => {
    const { config, db, marked: read, unmarked } = await killedHeal('continued');
    expect(read.length).toBeGreaterThanOrEqual(50);
    // Deleted since the stopped run: one it had read (the deletion log, read after the heal, removes it), one it had not (swept).
    account.mutate({ op: 'delete_contacts', ids: [read[0] ?? '', unmarked[0] ?? ''] });
    const summaryFile = join(dir, 'continued.json');
    const healed = await replicate(config, db, { args: ['--summary', summaryFile] });
    expect(healed.code, healed.stderr).toBe(0);
    expect(healed.stderr).toMatch(/Continuing the full read of contacts that a stopped run began/);
    // The contacts it had read are not read again (only those after its last checkpoint, and a look-back's few).
    expect(readIn(summaryFile, 'contacts')).toBeLessThan(account.dump().contacts.length - 40);
    expect(objects(replicaAsDump(db))).toStrictEqual(objects(dumpLists(account.dump())));
    expect(marked(db, 'contacts')).toEqual([]);
  });

  it('is read again from the start, its marks cleared, when the service refuses its resume cursor', { timeout: 180_000 }, async () => {
    const { config, db, marked: read } = await killedHeal('refused');
    // One the stopped run had read goes: a mark kept would spare it from the sweep (the deletion log removes it later).
    account.mutate({ op: 'delete_contacts', ids: [read[0] ?? ''] });
    const handle = new DatabaseSync(db);
    const state = JSON.parse(String(handle.prepare("SELECT state FROM _replica_state WHERE stream = 'contacts'").get()?.state)) as {
      resume: { cursor: string; sync_watermark: string };
    };
    handle.prepare("UPDATE _replica_state SET state = ? WHERE stream = 'contacts'").run(JSON.stringify({ resume: { ...state.resume, cursor: `${state.resume.cursor}x` } }));
    handle.close();
    const healed = await replicate(config, db);
    expect(healed.code, healed.stderr).toBe(0);
    expect(healed.stderr).toMatch(/contacts: the service rejected the saved resume cursor .*restarting the read from the start/);
    // Swept by the heal: the two deleted in the gap, and the one deleted since the stopped run.
    expect(healed.stderr).toMatch(/removed \d+ row\(s\) the service no longer has \(contacts 3, /);
    expect(objects(replicaAsDump(db))).toStrictEqual(objects(dumpLists(account.dump())));
  });

  it('is read again from the start when it began longer ago than the service keeps deletions', { timeout: 180_000 }, async () => {
    const { config, db, marked: read } = await killedHeal('months-later');
    // One the stopped run had read goes, and its deletion falls out of the service's log before the next run.
    account.mutate({ op: 'delete_contacts', ids: [read[0] ?? ''] });
    account.emulator.control.advanceClock(91 * DAY_MS);
    const healed = await replicate(config, db);
    expect(healed.code, healed.stderr).toBe(0);
    expect(healed.stderr).toMatch(/The full read of contacts that a stopped run began \(watermark \S+\) is older than the service's 90-day retention/);
    expect(healed.stderr).not.toMatch(/Continuing the full read/);
    expect(objects(replicaAsDump(db))).toStrictEqual(objects(dumpLists(account.dump())));
  });
});
