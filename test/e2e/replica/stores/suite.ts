/**
 * One end-to-end suite for the three stores of `replicate` (SQLite, a
 * PostgreSQL schema on the tests' real server, a DuckDB file), the same
 * test code for each, against the emulator: the store equals the service
 * after a full run and incremental runs with changes and deletions, and
 * after SIGKILLs at random points; a second writer exits 75 at once; a
 * field the service adds becomes a column; hashed personal data leaves no
 * raw value in the tables; the long pause is healed; a store of one
 * api_key given a config with accounts is refused unchanged. PostgreSQL
 * alone: a wrong password (78, no password in any output), a server that
 * cannot be reached (75). Many accounts into each store: accounts-suite.ts.
 * Run by one file per store (sqlite.test.ts, postgres.test.ts,
 * duckdb.test.ts).
 */
import { existsSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { ExtraField } from 'data-read-emulator';
import { RunSummarySchema } from '../../../../src/report/run-summary-schema.js';
import { changeRound, dumpLists, prng, replicate, type Account } from '../../../helpers/emulator-runs.js';
import { adminClient } from '../../../helpers/postgres.js';
import { writeJson } from '../../../helpers/cli.js';
import type { StoreKind } from '../../../helpers/store-kinds.js';
import { withEmulatorAccount } from '../../../helpers/suite.js';

const DAY_MS = 86_400_000;
/** The column type each store gives an integer field the service adds. */
const INTEGER_TYPE = { sqlite: 'INTEGER', postgres: 'bigint', duckdb: 'BIGINT' } as const;
const TEXT_TYPE = { sqlite: 'TEXT', postgres: 'text', duckdb: 'VARCHAR' } as const;

/**
 * The suites of a store's file run side by side: each has an emulator, an account, a directory and stores of its
 * own, and what it asserts is what its own runs did. The tests of one suite share its account (and change it), so
 * they run one after another: vitest hands a suite's `concurrent` down to its tests, which say IN_TURN.
 *
 * It hands down its `timeout` too, one for every case: a guard against a hang (each connector run has its own, in
 * replicate()), not a bound on speed. The cases are CPU-bound (each run is a connector process) and share the CPU with
 * the cases beside them (up to vitest's maxConcurrency, 5) and with the other worker's file, so how long a case takes
 * depends on what runs beside it more than on its own work: the DuckDB full-disk case takes 5 s alone, 34 s in its
 * file on an idle machine and 61 s at a load of 14-20, where the whole file took 8 minutes. A case's own timeout,
 * sized to its own work, failed it there (the 60-s one of "a key of another account"; the full-disk one's 120 s in
 * CI at a load of 14).
 */
const SIDE_BY_SIDE_MS = 300_000;
export const SIDE_BY_SIDE = { concurrent: true, timeout: SIDE_BY_SIDE_MS } as const;
export const IN_TURN = { concurrent: false } as const;

/** The suite every store passes, the same code for each. */
export function storeSuite(store: StoreKind): void {
  describe(`replicate into ${store.name}`, SIDE_BY_SIDE, () => {
    describe('equals the service', () => {
      let account: Account;
      let dir: string;
      withEmulatorAccount(`stores-${store.name}-`, { contacts: 200, seed: 41 }, (s) => ({ account, dir } = s));

      it('after a full run and after incremental runs with changes and deletions', IN_TURN, async () => {
        const config = account.config(dir);
        const db = await store.fresh(dir, 'exact');
        const first = await replicate(config, db);
        expect(first.code, first.stderr).toBe(0);
        expect(first.stdout).toBe('');
        expect(first.stderr).toMatch(/Replica up to date: contacts \d+ rows/);
        expect(await store.dump(db)).toStrictEqual(dumpLists(account.dump()));
        for (let round = 0; round < 2; round++) {
          changeRound(account);
          const run = await replicate(config, db);
          expect(run.code, run.stderr).toBe(0);
          expect(run.stderr).toContain('continuing from its saved state');
          expect(run.stderr).toMatch(/deletions applied: \d+ rows removed/);
          expect(await store.dump(db)).toStrictEqual(dumpLists(account.dump()));
        }
        const states = await store.states(db);
        for (const stream of ['contacts', 'conversations', 'stage_events', 'deletions']) {
          expect(states.get(stream)?.sync_watermark, stream).toMatch(/^\d{4}-\d\d-\d\dT/);
          expect(states.get(stream)?.resume, stream).toBeUndefined();
        }
      });

      it("a deletion the service stamps before the object's last change, its clock gone back 30 s, removes the row for good", IN_TURN, async () => {
        const config = account.config(dir);
        const db = await store.fresh(dir, 'clock_back');
        const control = account.emulator.control;
        expect((await replicate(config, db)).code).toBe(0);
        const id = (account.dump().contacts[0] as { id: string }).id;
        control.advanceClock(60_000);
        account.mutate({ op: 'update_contacts', ids: [id] });
        control.advanceClock(1000);
        expect((await replicate(config, db)).code).toBe(0);
        // A failover or a clock fix: the deletion is stamped 29 s before the change it follows.
        control.rewindClock(30_000);
        account.mutate({ op: 'delete_contacts', ids: [id] });
        control.advanceClock(1000);
        for (const advance of [0, 3_600_000]) {
          control.advanceClock(advance);
          const run = await replicate(config, db);
          expect(run.code, run.stderr).toBe(0);
          expect(await store.dump(db)).toStrictEqual(dumpLists(account.dump()));
        }
      });

      it('changes and a deletion the service stamps while its clock is back two hours, and changes made during the full read that follows, are in the store after it; that read stopped part-way is continued, and removes the rows the service no longer has', IN_TURN, async () => {
        // Pages of 25: the full read that follows the watermark gone back takes several, and rows change between them.
        const config = account.config(dir, { page_size: 25 });
        const db = await store.fresh(dir, 'clock_went_back');
        const control = account.emulator.control;
        // A contact changed just before a run, and deleted once the clock is back: its deletion is stamped before that change.
        const [gone, ...ids] = account.dump().contacts.slice(0, 6).map((c) => (c as { id: string }).id) as [string, ...string[]];
        account.mutate({ op: 'update_contacts', ids: [gone] });
        expect((await replicate(config, db)).code).toBe(0);
        const saved = (await store.states(db)).get('contacts')?.sync_watermark as string;
        const held = ((await store.dump(db)).contacts as { id: string }[]).map((r) => r.id);
        control.rewindClock(2 * 3_600_000);
        account.mutate({ op: 'update_contacts', ids });
        account.mutate({ op: 'delete_contacts', ids: [gone] });
        control.advanceClock(10 * 60_000);
        const reported = control.now();
        // The contacts on the full read's last pages change once its first page is served (after its WARN): they move
        // past its end, and only its catch-up read returns them; its sweep must not remove their rows.
        const late = (account.dump().contacts as { id: string; updated_at: string }[])
          .toSorted((a, b) => a.updated_at.localeCompare(b.updated_at) || a.id.localeCompare(b.id))
          .slice(-10)
          .map((c) => c.id);
        const pagesOfContacts = (): number => control.stats().byPath['/v1/contacts']?.['200'] ?? 0;
        let changed: Promise<number> | undefined;
        control.setLatency(10);
        const back = await replicate(config, db, {
          onStderr: (text) => {
            if (changed !== undefined || !text.includes('contacts: the service reported sync_watermark')) return;
            const before = pagesOfContacts();
            changed = new Promise((resolve) => {
              const poll = setInterval(() => {
                if (pagesOfContacts() <= before) return;
                clearInterval(poll);
                account.mutate({ op: 'update_contacts', ids: late });
                resolve(pagesOfContacts() - before);
              }, 1);
            });
          },
        });
        control.setLatency(0);
        // Changed after the full read's first page, before its last (8 pages of 25).
        expect(await changed).toBeLessThan(4);
        expect(back.code, back.stderr).toBe(0);
        expect(back.stderr).toContain(`contacts: the service reported sync_watermark ${reported}, earlier than the saved ${saved}: `);
        // Its clock back, the service serves none of the records stamped after its now: the full reads of contacts and
        // conversations remove their rows with the deleted contact's (the next run brings them back); those tables
        // equal what the service serves.
        const truth = dumpLists(account.dump());
        const copy = await store.dump(db);
        expect([copy.contacts, copy.conversations]).toStrictEqual([truth.contacts, truth.conversations]);
        const served = truth.contacts as { id: string }[];
        const removed = held.filter((id) => !served.some((r) => r.id === id)).length;
        expect(removed).toBeGreaterThanOrEqual(1);
        expect(back.stderr.match(/contacts: the full read after the watermark went back removed .*/g)).toEqual([
          `contacts: the full read after the watermark went back removed ${removed} row(s) the service no longer has.`,
        ]);
        // Its catch-up read's watermark is saved: a little after the one reported, still earlier than the one saved before.
        const watermark = Date.parse((await store.states(db)).get('contacts')?.sync_watermark as string);
        expect([watermark >= Date.parse(reported), watermark < Date.parse(saved)]).toEqual([true, true]);
        control.advanceClock(2 * 3_600_000);
        // Changed before this run, deleted below while the clock is back again.
        const deleted = ids[0] as string;
        account.mutate({ op: 'update_contacts', ids: [deleted] });
        const after = await replicate(config, db);
        expect(after.code, after.stderr).toBe(0);
        expect(after.stderr).not.toContain('earlier than the saved');
        expect(await store.dump(db)).toStrictEqual(dumpLists(account.dump()));

        // The clock goes back again; the contact changed before the last run is deleted: its deletion is stamped before
        // that change, and only a full read's sweep removes its row. The run's full read of contacts stops part-way: the
        // service fails its pages from the third on (a 500, no retry). Its checkpoints before are committed, with their
        // marks. The next run continues that read from its cursor, and its end removes the rows it did not mark, not
        // those changed between the runs (moved past its end); once the clock moves on, the store equals the service.
        control.rewindClock(2 * 3_600_000);
        control.advanceClock(10 * 60_000);
        account.mutate({ op: 'delete_contacts', ids: [deleted] });
        const from = pagesOfContacts();
        control.setLatency(20);
        const failing = setInterval(() => {
          if (pagesOfContacts() < from + 3) return;
          clearInterval(failing);
          control.addFault({ kind: '500', every: 1, paths: ['/v1/contacts'] });
        }, 1);
        const stoppedRun = await replicate(account.config(dir, { page_size: 25, max_retries: 0 }), db);
        clearInterval(failing);
        control.clearFaults();
        control.setLatency(0);
        expect(stoppedRun.code, stoppedRun.stderr).toBe(75);
        const stopped = (await store.states(db)).get('contacts');
        expect([stopped?.resume !== undefined, stopped?.sync_watermark]).toEqual([true, undefined]);
        // The streams whose full read is under way, by their marks (the SQLite file drops the table once none is).
        const marked = async (): Promise<unknown[]> => {
          if (store.name !== 'sqlite') return store.rows(db, `SELECT DISTINCT stream FROM ${store.name === 'postgres' ? 'data_read' : 'main'}._replica_full_read`);
          const held = await store.rows(db, "SELECT name FROM sqlite_schema WHERE name = '_replica_full_read'");
          return held.length === 0 ? [] : store.rows(db, 'SELECT DISTINCT stream FROM _replica_full_read');
        };
        expect(await marked()).toEqual([{ stream: 'contacts' }]);
        const before = ((await store.dump(db)).contacts as { id: string }[]).map((r) => r.id);
        // A contact of the read's last page changes between the runs: it moves past the end of the read continued.
        const last = (account.dump().contacts as { id: string; updated_at: string }[]).toSorted((a, b) => a.updated_at.localeCompare(b.updated_at) || a.id.localeCompare(b.id)).at(-1);
        control.advanceClock(1000);
        account.mutate({ op: 'update_contacts', ids: [last?.id as string] });
        const continued = await replicate(config, db);
        expect(continued.code, continued.stderr).toBe(0);
        // Its marks went with its end: none is left for a later read to take as its own.
        expect(await marked()).toEqual([]);
        const now = dumpLists(account.dump()).contacts as { id: string }[];
        expect((await store.dump(db)).contacts).toStrictEqual(now);
        const gone2 = before.filter((id) => !now.some((r) => r.id === id));
        expect(gone2).toContain(deleted);
        expect(continued.stderr.match(/contacts: the full read after the watermark went back removed .*/g)).toEqual([
          `contacts: the full read after the watermark went back removed ${gone2.length} row(s) the service no longer has.`,
        ]);
        control.advanceClock(2 * 3_600_000);
        expect((await replicate(config, db)).code).toBe(0);
        expect(await store.dump(db)).toStrictEqual(dumpLists(account.dump()));
      });

      it('fields the service adds become columns on the next run, two at once', IN_TURN, async () => {
        const config = account.config(dir);
        const db = await store.fresh(dir, 'drift');
        expect((await replicate(config, db)).code).toBe(0);
        const field: ExtraField = { list: 'contacts', name: `score_${store.name}`, type: 'integer' };
        const label: ExtraField = { list: 'contacts', name: `label_${store.name}`, type: 'string' };
        account.emulator.control.addExtraField(field);
        account.emulator.control.addExtraField(label);
        account.mutate({ op: 'update_contacts', count: 30 });
        const summaryFile = join(dir, `drift-${store.name}.json`);
        const run = await replicate(config, db, { args: ['--summary', summaryFile] });
        expect(run.code, run.stderr).toBe(0);
        expect(run.stderr).toContain(field.name);
        expect(await store.columns(db, 'contacts')).toEqual(expect.arrayContaining([field.name, label.name]));
        // The summary lists the change on its stream (and none on the others); the final line names it.
        const summary = RunSummarySchema.parse(JSON.parse(readFileSync(summaryFile, 'utf8')));
        const changes = Object.fromEntries(summary.streams.map((s) => [s.name, s.schema_changes]));
        expect(changes.contacts).toStrictEqual([
          { column: field.name, change: 'added', from_type: null, to_type: INTEGER_TYPE[store.name] },
          { column: label.name, change: 'added', from_type: null, to_type: TEXT_TYPE[store.name] },
        ]);
        for (const stream of ['conversations', 'stage_events', 'deletions', 'pipeline_stages']) expect(changes[stream], stream).toStrictEqual([]);
        expect(run.stderr).toMatch(new RegExp(`Replica up to date: .*schema changes: contacts\\.${field.name} added \\(${INTEGER_TYPE[store.name]}\\), contacts\\.${label.name} added \\(${TEXT_TYPE[store.name]}\\)`));
        // A run that changes nothing lists nothing.
        const quiet = await replicate(config, db, { args: ['--summary', summaryFile] });
        expect(quiet.code, quiet.stderr).toBe(0);
        expect(quiet.stderr).not.toContain('schema changes:');
        for (const s of RunSummarySchema.parse(JSON.parse(readFileSync(summaryFile, 'utf8'))).streams) expect(s.schema_changes, s.name).toStrictEqual([]);
        // Every row equals the service's record; a contact not read again since the field appeared has it not yet
        // (SQLite lists it in the row's _absent; PostgreSQL and DuckDB hold NULL in the new column).
        const held = await store.dump(db);
        const truth = dumpLists(account.dump());
        let readAgain = 0;
        const without = (record: Record<string, unknown>): Record<string, unknown> => {
          const { [field.name]: _added, [label.name]: _label, ...before } = record;
          return before;
        };
        const heldContacts = (held.contacts as Record<string, unknown>[]).map((row) => {
          if (row[field.name] === undefined || row[field.name] === null) return without(row);
          readAgain++;
          return row;
        });
        const contacts = (truth.contacts as Record<string, unknown>[]).map((record, i) => (Object.hasOwn(heldContacts[i] ?? {}, field.name) ? record : without(record)));
        expect(readAgain).toBeGreaterThanOrEqual(20);
        held.contacts = heldContacts;
        expect(held).toStrictEqual({ ...truth, contacts });
      });

      it('a key of another account is refused (78) naming both accounts, nothing changed', IN_TURN, async () => {
        const db = await store.fresh(dir, 'account');
        expect((await replicate(account.config(dir), db)).code).toBe(0);
        const before = await store.dump(db);
        const control = account.emulator.control;
        const other = control.createAccount({ name: 'Another company' });
        control.seed(other.id, { contacts: 10 });
        const config = writeJson(dir, 'other-account.json', { api_key: control.createKey(other.id).key, base_url: account.emulator.url, page_size: 100 });
        const run = await replicate(config, db);
        expect(run.code, run.stderr).toBe(78);
        expect(run.stderr).toContain('"Replica test"');
        expect(run.stderr).toContain('"Another company"');
        expect(await store.dump(db)).toStrictEqual(before);
        // The same store given a config with accounts (this key as one entry): its rows cannot be told apart by account.
        const many = writeJson(dir, 'as-accounts.json', { base_url: account.emulator.url, page_size: 100, accounts: [{ name: 'main', api_key: account.key }] });
        const refused = await replicate(many, db);
        expect(refused.code, refused.stderr).toBe(78);
        expect(refused.stderr).toMatch(/built from a config with one api_key .*"accounts"/);
        expect(await store.dump(db)).toStrictEqual(before);
      });

      it('a second writer exits 75 at once, naming the first; the store stays exact', IN_TURN, async () => {
        const config = account.config(dir, { page_size: 10, max_concurrent_requests: 1 });
        const db = await store.fresh(dir, 'writers');
        // Slow enough that the first run is still writing when the second process has started, on a busy machine too;
        // fast again once the second has ended.
        account.emulator.control.setLatency(60);
        let second: Promise<Awaited<ReturnType<typeof replicate>>> | undefined;
        const first = replicate(config, db, {
          onStderr: (text) => {
            if (second !== undefined || !/Replicating into/.test(text)) return;
            second = replicate(config, db);
            void second.finally(() => account.emulator.control.setLatency(0));
          },
        });
        const one = await first;
        account.emulator.control.setLatency(0);
        expect(second).toBeDefined();
        const two = await (second as Promise<Awaited<ReturnType<typeof replicate>>>);
        expect(one.code, one.stderr).toBe(0);
        expect(two.code, two.stderr).toBe(75);
        expect(two.stderr).toMatch(/another|Another|locked|lock/);
        expect(await store.dump(db)).toStrictEqual(dumpLists(account.dump()));
      });
    });

    describe('killed at random points', () => {
      let account: Account;
      let dir: string;
      withEmulatorAccount(`stores-kill-${store.name}-`, { contacts: 500, seed: 43 }, (s) => ({ account, dir } = s));

      it('SIGKILLs mid-run with changes in between, then a run to completion: exact', async () => {
        const seed = Number(process.env.REPLICA_KILL_SEED ?? Date.now() % 100_000);
        const random = prng(seed);
        const config = account.config(dir, { page_size: 20, max_concurrent_requests: 2 });
        const db = await store.fresh(dir, 'kill');
        account.emulator.control.setLatency(6);
        const env = { SOURCE_DATA_READ_PROGRESS_MS: '0' };
        const kills: string[] = [];
        let midRun = 0;
        const served = (): number => account.emulator.control.stats().total;
        for (let i = 0; i < 4; i++) {
          // Kill points counted in the emulator's answers, so that they fall inside the run however fast the machine is:
          // the first run (a full read) makes about 125 requests, a later one at least 7 (/v1/me, the description, a
          // page of each stream). A time or a stderr size would let a fast machine finish first.
          const requests = 2 + Math.floor(random() * (i === 0 ? 100 : 5));
          const run = await replicate(config, db, { killAtServed: { served, at: served() + requests }, env });
          kills.push(`after ${requests} requests -> ${run.killed ? 'killed' : `exit ${run.code}`}`);
          if (run.killed) midRun++;
          else expect(run.code, run.stderr).toBe(0);
          if (i % 2 === 1) changeRound(account, 2);
        }
        expect(midRun, `seed ${seed}: ${kills.join('; ')}`).toBeGreaterThanOrEqual(2);
        account.emulator.control.setLatency(0);
        const last = await replicate(config, db, { env });
        expect(last.code, last.stderr).toBe(0);
        const held = await store.dump(db);
        // One row per id in every table (DuckDB's tables have no key constraint: the writes keep them unique).
        for (const [list, records] of Object.entries(held)) expect(new Set(records.map((r) => (r as { id: unknown }).id)).size, list).toBe(records.length);
        expect(held, `seed ${seed}: ${kills.join('; ')}`).toStrictEqual(dumpLists(account.dump()));
      });
    });

    describe('personal data hashed', () => {
      let account: Account;
      let dir: string;
      withEmulatorAccount(`stores-hash-${store.name}-`, { contacts: 60, seed: 47 }, (s) => ({ account, dir } = s));

      it('no raw value in the tables; a run with other treatments is refused (78), nothing changed', async () => {
        const db = await store.fresh(dir, 'hashed');
        const hashKey = 'k3y-for-the-stores-suite-0123456789abcdef';
        const run = await replicate(account.config(dir, { personal_data: 'hash', hash_key: hashKey }), db);
        expect(run.code, run.stderr).toBe(0);
        const held = JSON.stringify(await store.dump(db));
        const emails = account.dump().contacts.map((c) => (c as Record<string, unknown>).email).filter((e): e is string => typeof e === 'string' && e !== '');
        expect(emails.length).toBeGreaterThan(10);
        for (const email of emails) expect(held).not.toContain(email);
        const before = await store.dump(db);
        const other = await replicate(account.config(dir), db);
        expect(other.code, other.stderr).toBe(78);
        expect(other.stderr).toMatch(/other personal-data treatments/);
        expect(await store.dump(db)).toStrictEqual(before);
      });
    });

    describe('after a pause longer than the deletion retention', () => {
      let account: Account;
      let dir: string;
      withEmulatorAccount(`stores-pause-${store.name}-`, { contacts: 120, seed: 53 }, (s) => ({ account, dir } = s));

      it('reads contacts and conversations in full and removes what the service no longer has', async () => {
        const control = account.emulator.control;
        const config = account.config(dir, { page_size: 20 });
        const db = await store.fresh(dir, 'pause');
        expect((await replicate(config, db)).code).toBe(0);
        control.advanceClock(10 * DAY_MS);
        const gone = account.dump().contacts.slice(0, 4).map((c) => c.id);
        account.mutate({ op: 'delete_contacts', ids: gone });
        control.advanceClock(95 * DAY_MS);
        account.mutate({ op: 'update_contacts', count: 5 });
        const run = await replicate(config, db);
        expect(run.code, run.stderr).toBe(0);
        expect(run.stderr).toMatch(/WARN/);
        const held = await store.dump(db);
        const truth = dumpLists(account.dump());
        for (const list of ['contacts', 'conversations', 'stage_events', 'pipeline_stages']) expect(held[list], list).toStrictEqual(truth[list]);
        const ids = new Set((held.contacts as { id: string }[]).map((c) => c.id));
        for (const id of gone) expect(ids.has(id)).toBe(false);
      });
    });

    describe('a long-pause heal that fails part-way', () => {
      let account: Account;
      let dir: string;
      withEmulatorAccount(`stores-pause-resume-${store.name}-`, { contacts: 120, seed: 59 }, (s) => ({ account, dir } = s));

      it('is continued by the next run from its last committed checkpoint, and removes what neither part returned, not a row changed in between', async () => {
        const control = account.emulator.control;
        const config = account.config(dir, { page_size: 10, max_retries: 0 });
        const db = await store.fresh(dir, 'pause-resume');
        expect((await replicate(config, db)).code).toBe(0);
        control.advanceClock(10 * DAY_MS);
        const gone = account.dump().contacts.slice(0, 3).map((c) => c.id);
        account.mutate({ op: 'delete_contacts', ids: gone.slice(0, 2) });
        control.advanceClock(95 * DAY_MS);
        // The heal's last page of contacts fails (500, no retries): the pages before it are committed, then the run stops.
        const byChange = (account.dump().contacts as { id: string; updated_at: string }[]).toSorted((a, b) => a.updated_at.localeCompare(b.updated_at) || a.id.localeCompare(b.id));
        control.setFaults([{ kind: '500', every: Math.ceil(byChange.length / 10), paths: ['/v1/contacts'], times: 1 }]);
        const failed = await replicate(config, db);
        control.clearFaults();
        expect(failed.code, failed.stderr).toBe(75);
        // Deleted since: a contact the stopped heal had read (the first page); the deletion log, read after the heal, removes it.
        account.mutate({ op: 'delete_contacts', ids: gone.slice(2) });
        // Changed since: a contact of that last page, which moves past the end of the read the next run continues (one
        // page): only a read from its watermark after it returns that contact, which its sweep must not remove.
        control.advanceClock(1000);
        account.mutate({ op: 'update_contacts', ids: [byChange.at(-1)?.id as string] });
        const summaryFile = join(dir, `pause-resume-${store.name}.json`);
        const run = await replicate(config, db, { args: ['--summary', summaryFile] });
        expect(run.code, run.stderr).toBe(0);
        expect(run.stderr).toMatch(/Continuing the full read of contacts that a stopped run began/);
        // The two contacts deleted in the gap went with the heal; the third, with the deletion log.
        expect(run.stderr).toMatch(/ removed \d+ row\(s\) the service no longer has \(contacts 2, conversations \d+\)/);
        const contacts = RunSummarySchema.parse(JSON.parse(readFileSync(summaryFile, 'utf8'))).streams.find((s) => s.name === 'contacts');
        expect(contacts?.records).toBeLessThan(40);
        const held = await store.dump(db);
        const truth = dumpLists(account.dump());
        for (const list of ['contacts', 'conversations', 'stage_events', 'pipeline_stages']) expect(held[list], list).toStrictEqual(truth[list]);
      });
    });

    describe('a full read stopped in its catch-up read', () => {
      let account: Account;
      let dir: string;
      withEmulatorAccount(`stores-catch-up-${store.name}-`, { contacts: 80, seed: 61 }, (s) => ({ account, dir } = s));
      const byChange = (): { id: string; updated_at: string }[] =>
        (account.dump().contacts as { id: string; updated_at: string }[]).toSorted((a, b) => a.updated_at.localeCompare(b.updated_at) || a.id.localeCompare(b.id));

      /**
       * A run whose full read of contacts, begun once stderr says `begins`, stops in its catch-up read: the 15 contacts
       * of the read's last pages change once its first page is served (they move past its end, and its catch-up read
       * returns them in two pages of 10), and the catch-up read's second page fails (500, no retries), its first page
       * committed. `before`: the run's contacts requests before that full read. Checks that the run stopped there.
       */
      const stopInCatchUp = async (config: string, db: string, begins: string, before: number): Promise<void> => {
        const control = account.emulator.control;
        const watermark = control.now();
        const served = byChange();
        control.setFaults([{ kind: '500', every: before + Math.ceil((served.length - 15) / 10) + 2, paths: ['/v1/contacts'], times: 1 }]);
        const pagesOfContacts = (): number => control.stats().byPath['/v1/contacts']?.['200'] ?? 0;
        let changed: Promise<number> | undefined;
        control.setLatency(10);
        const run = await replicate(config, db, {
          onStderr: (text) => {
            if (changed !== undefined || !text.includes(begins)) return;
            const at = pagesOfContacts();
            changed = new Promise((resolve) => {
              const poll = setInterval(() => {
                if (pagesOfContacts() <= at) return;
                clearInterval(poll);
                account.mutate({ op: 'update_contacts', ids: served.slice(-15).map((c) => c.id) });
                resolve(pagesOfContacts() - at);
              }, 1);
            });
          },
        });
        control.setLatency(0);
        control.clearFaults();
        // Changed before the full read reached them (its seventh page).
        expect(await changed).toBeLessThan(5);
        expect(run.code, run.stderr).toBe(75);
        // Stopped in the catch-up read: its resume cursor is of a read later than the full read (the changes' stamps).
        expect(Date.parse((await store.states(db)).get('contacts')?.resume?.sync_watermark as string)).toBeGreaterThan(Date.parse(watermark));
        // A contact due on the catch-up read's second page changes between the runs: it moves past that read's end.
        control.advanceClock(1000);
        account.mutate({ op: 'update_contacts', ids: [byChange().at(-1)?.id as string] });
      };

      it('after a watermark gone back, is continued by the next run as that full read, which removes a contact deleted while the clock was back', IN_TURN, async () => {
        const control = account.emulator.control;
        const config = account.config(dir, { page_size: 10, max_retries: 0 });
        const db = await store.fresh(dir, 'catch-up');
        // A contact changed just before a run, and deleted once the clock is back: its deletion is stamped before that
        // change, and only the sweep of the full read that follows the watermark gone back removes its row.
        const gone = (account.dump().contacts[0] as { id: string }).id;
        account.mutate({ op: 'update_contacts', ids: [gone] });
        expect((await replicate(config, db)).code).toBe(0);
        control.rewindClock(2 * 3_600_000);
        account.mutate({ op: 'delete_contacts', ids: [gone] });
        control.advanceClock(10 * 60_000);
        // Its read from the saved watermark takes one page, which reports an earlier one: the full read follows.
        await stopInCatchUp(config, db, 'contacts: the service reported sync_watermark', 1);
        const before = ((await store.dump(db)).contacts as { id: string }[]).map((r) => r.id);
        expect(before).toContain(gone);
        const continued = await replicate(config, db);
        expect(continued.code, continued.stderr).toBe(0);
        const now = dumpLists(account.dump()).contacts as { id: string }[];
        expect((await store.dump(db)).contacts).toStrictEqual(now);
        expect(before.filter((id) => !now.some((r) => r.id === id))).toEqual([gone]);
        expect(continued.stderr.match(/contacts: the full read after the watermark went back removed .*/g)).toEqual([
          'contacts: the full read after the watermark went back removed 1 row(s) the service no longer has.',
        ]);
        control.advanceClock(2 * 3_600_000);
        expect((await replicate(config, db)).code).toBe(0);
        expect(await store.dump(db)).toStrictEqual(dumpLists(account.dump()));
      });

      it('of a long-pause heal, is continued by the next heal, which removes what no part of it returned', IN_TURN, async () => {
        const control = account.emulator.control;
        const config = account.config(dir, { page_size: 10, max_retries: 0 });
        const db = await store.fresh(dir, 'catch-up-heal');
        expect((await replicate(config, db)).code).toBe(0);
        control.advanceClock(10 * DAY_MS);
        account.mutate({ op: 'delete_contacts', ids: byChange().slice(0, 2).map((c) => c.id) });
        control.advanceClock(95 * DAY_MS);
        await stopInCatchUp(config, db, 'Reading contacts and conversations in full', 0);
        const run = await replicate(config, db);
        expect(run.code, run.stderr).toBe(0);
        expect(run.stderr).toMatch(/Continuing the full read of contacts that a stopped run began/);
        expect(run.stderr).toMatch(/ removed \d+ row\(s\) the service no longer has \(contacts 2, conversations \d+\)/);
        // The deletions table keeps the log's records past the service's retention.
        const held = await store.dump(db);
        const truth = dumpLists(account.dump());
        for (const list of ['contacts', 'conversations', 'stage_events', 'pipeline_stages']) expect(held[list], list).toStrictEqual(truth[list]);
      });
    });

    describe('a full-refresh read that fails part-way', () => {
      let account: Account;
      let dir: string;
      withEmulatorAccount(`stores-stages-${store.name}-`, { contacts: 20, seed: 5 }, (s) => ({ account, dir } = s));

      it('keeps every pipeline stage the store had, and the next run replaces them', async () => {
        const control = account.emulator.control;
        const config = account.config(dir, { page_size: 2, max_retries: 0 });
        const db = await store.fresh(dir, 'stages');
        expect((await replicate(config, db)).code).toBe(0);
        const before = account.dump().pipeline_stages;
        expect(before.length).toBeGreaterThan(4);
        expect((await store.dump(db)).pipeline_stages).toStrictEqual(before);
        // The second page of pipeline_stages fails (500, no retries): the stream fails after its first page.
        control.setFaults([{ kind: '500', every: 2, paths: ['/v1/pipeline_stages'], times: 1 }]);
        const failed = await replicate(config, db);
        control.clearFaults();
        expect(failed.code, failed.stderr).toBe(75);
        expect((await store.dump(db)).pipeline_stages).toStrictEqual(before);
        // A stage removed: the next complete read drops it.
        control.removePipelineStage(account.accountId, String(before[0]?.id));
        const run = await replicate(config, db);
        expect(run.code, run.stderr).toBe(0);
        expect((await store.dump(db)).pipeline_stages).toStrictEqual(dumpLists(account.dump()).pipeline_stages);
      });
    });
  });
}

/** PostgreSQL alone: its server's faults. */
export function postgresFaults(postgres: StoreKind): void {
  describe('replicate into PostgreSQL: faults', SIDE_BY_SIDE, () => {
    let account: Account;
    let dir: string;
    withEmulatorAccount('stores-pg-faults-', { contacts: 20, seed: 59 }, (s) => ({ account, dir } = s));

    it('a wrong password: 78, naming the refused login, the password in no output', IN_TURN, async () => {
      const url = new URL(await postgres.fresh(dir, 'password'));
      const wrong = 'not-the-Password-42';
      url.password = wrong;
      const run = await replicate(account.config(dir), url.toString());
      expect(run.code, run.stderr).toBe(78);
      expect(run.stderr).toMatch(/password|login|authentication/i);
      expect(run.stderr).toContain('***');
      expect(`${run.stdout}${run.stderr}`).not.toContain(wrong);
    });

    it('rows the server refuses at commit (a trigger): the run fails naming the stream, its state kept, the rest written; then exact', IN_TURN, async () => {
      const url = await postgres.fresh(dir, 'refused_stream');
      const config = account.config(dir);
      const ids = async (list: string): Promise<string[]> => ((await postgres.dump(url))[list] ?? []).map((r) => String((r as { id: unknown }).id)).sort();
      const truth = (list: string): string[] => (dumpLists(account.dump())[list] ?? []).map((r) => String((r as { id: unknown }).id)).sort();
      const first = await replicate(config, url);
      expect(first.code, first.stderr).toBe(0);
      const contactsBefore = await ids('contacts');
      const stateBefore = (await postgres.states(url)).get('contacts');
      const admin = await adminClient(url);
      try {
        await admin.query("CREATE FUNCTION data_read.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no new contacts'; END $$");
        await admin.query('CREATE TRIGGER refuse BEFORE INSERT ON data_read.contacts FOR EACH ROW EXECUTE FUNCTION data_read.refuse()');
        account.mutate({ op: 'create_contacts', count: 3, withConversation: true });
        const refused = await replicate(config, url);
        expect(refused.code, refused.stderr).toBe(70);
        expect(refused.stderr).toMatch(/Replication incomplete: 1 stream\(s\) failed: contacts \(.*no new contacts/);
        expect(await ids('contacts')).toEqual(contactsBefore);
        expect((await postgres.states(url)).get('contacts')).toEqual(stateBefore);
        expect(await ids('conversations')).toEqual(truth('conversations'));
        await admin.query('DROP TRIGGER refuse ON data_read.contacts');
        const again = await replicate(config, url);
        expect(again.code, again.stderr).toBe(0);
        expect(await ids('contacts')).toEqual(truth('contacts'));
      } finally {
        await admin.end();
      }
    });

    it("with accounts, rows one account's part cannot write (a trigger): that account and stream named, the others written, its state kept; then exact", IN_TURN, async () => {
      const url = await postgres.fresh(dir, 'refused_part');
      const control = account.emulator.control;
      const other = control.createAccount({ name: 'Other' });
      const otherKey = control.createKey(other.id).key;
      control.seed(other.id, { contacts: 20 });
      const config = writeJson(dir, 'refused-part.json', {
        base_url: account.emulator.url,
        page_size: 25,
        accounts: [
          { name: 'main', api_key: account.key },
          { name: 'other', api_key: otherKey },
        ],
      });
      const contactIds = async (entry: string): Promise<string[]> =>
        ((await postgres.accounts(url)).contacts ?? [])
          .filter((r) => r.account === entry)
          .map((r) => String(r.id))
          .sort();
      const truth = (id: string): string[] => (dumpLists(control.dump(id)).contacts ?? []).map((r) => String((r as { id: unknown }).id)).sort();
      const first = await replicate(config, url);
      expect(first.code, first.stderr).toBe(0);
      const otherState = (await postgres.accountStates(url)).get('contacts')?.accounts?.other;
      const otherRows = await contactIds('other');

      const admin = await adminClient(url);
      try {
        await admin.query("CREATE FUNCTION data_read.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.account = 'other' THEN RAISE EXCEPTION 'not for other'; END IF; RETURN NEW; END $$");
        await admin.query('CREATE TRIGGER refuse BEFORE INSERT ON data_read.contacts FOR EACH ROW EXECUTE FUNCTION data_read.refuse()');
        account.mutate({ op: 'create_contacts', count: 5 });
        control.mutate(other.id, { op: 'create_contacts', count: 5 });
        const summary = join(dir, 'refused-part-summary.json');
        const refused = await replicate(config, url, { args: ['--summary', summary] });
        expect(refused.code, refused.stderr).toBe(70);
        const error = refused.stderr.split('\n').find((l) => l.includes('Replication incomplete')) ?? '';
        expect(error, refused.stderr).toMatch(/1 of 2 accounts failed .*account "other": contacts: .*not for other/);
        const accounts = (JSON.parse(readFileSync(summary, 'utf8')) as { accounts: { name: string; status: string }[] }).accounts;
        expect(accounts.map((a) => [a.name, a.status])).toEqual([
          ['main', 'succeeded'],
          ['other', 'failed'],
        ]);
        expect(await contactIds('main')).toEqual(truth(account.accountId));
        expect(await contactIds('other')).toEqual(otherRows);
        const states = (await postgres.accountStates(url)).get('contacts')?.accounts;
        expect(states?.other).toEqual(otherState);
        expect(states?.main).toBeDefined();

        await admin.query('DROP TRIGGER refuse ON data_read.contacts');
        const again = await replicate(config, url);
        expect(again.code, again.stderr).toBe(0);
        expect(await contactIds('other')).toEqual(truth(other.id));
        expect(await contactIds('main')).toEqual(truth(account.accountId));
      } finally {
        await admin.end();
      }
    });

    it('a missing database: 78, naming the database', IN_TURN, async () => {
      const url = new URL(await postgres.fresh(dir, 'missing'));
      url.pathname = '/no_such_database_here';
      const run = await replicate(account.config(dir), url.toString());
      expect(run.code, run.stderr).toBe(78);
      expect(run.stderr).toContain('no_such_database_here');
    });

    it('the connection dropped mid-run (the server ends the session): 75, nothing half-written; the next run is exact', IN_TURN, async () => {
      const url = await postgres.fresh(dir, 'dropped');
      const database = new URL(url).pathname.slice(1);
      const config = account.config(dir, { page_size: 5, max_concurrent_requests: 1 });
      account.mutate({ op: 'create_contacts', count: 200, withConversation: true });
      account.emulator.control.setLatency(15);
      const admin = await adminClient(url);
      let terminated = 0;
      let asked = false;
      try {
        const run = await replicate(config, url, {
          onStderr: (text) => {
            if (asked || !/Replicating into/.test(text)) return;
            asked = true;
            // Once the run has committed something, its session is ended by the server, as a restart or a failover would.
            const end = async (): Promise<void> => {
              for (let i = 0; i < 200 && terminated === 0; i++) {
                const { rows } = await admin.query<{ n: string }>('SELECT count(*) AS n FROM data_read._replica_state').catch(() => ({ rows: [{ n: '0' }] }));
                if (Number(rows[0]?.n) > 0) {
                  const ended = await admin.query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name LIKE 'source-data-read%'",
                    [database],
                  );
                  terminated = ended.rowCount ?? 0;
                } else await new Promise((r) => setTimeout(r, 25));
              }
            };
            void end();
          },
        });
        expect(terminated, run.stderr).toBeGreaterThan(0);
        expect(run.code, run.stderr).toBe(75);
        // The advice to run again, once: the store's own words say it.
        expect(run.stderr.split('\n').find((line) => line.includes('Replication stopped'))?.match(/run (replicate )?again/gi)).toHaveLength(1);
      } finally {
        await admin.end();
        account.emulator.control.setLatency(0);
      }
      const again = await replicate(config, url);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toContain('continuing from its saved state');
      expect(await postgres.dump(url)).toStrictEqual(dumpLists(account.dump()));
    });

    it('a server that cannot be reached: 75', IN_TURN, async () => {
      const run = await replicate(account.config(dir), 'postgresql://someone:secret-pw@127.0.0.1:1/analytics?connect_timeout=2');
      expect(run.code, run.stderr).toBe(75);
      expect(`${run.stdout}${run.stderr}`).not.toContain('secret-pw');
    });
  });
}

/** DuckDB alone: its optional package missing. */
export function duckdbWithoutPackage(): void {
  describe('replicate into DuckDB without its optional package', SIDE_BY_SIDE, () => {
    let account: Account;
    let dir: string;
    withEmulatorAccount('stores-no-driver-', { contacts: 10, seed: 67 }, (s) => ({ account, dir } = s));

    it('is a config_error (78) naming the package, and creates no file', async () => {
      // The package made unresolvable, as after npm install --omit=optional.
      const hook = join(dir, 'no-duckdb.mjs');
      writeFileSync(
        hook,
        "import { registerHooks } from 'node:module';\n" +
          'registerHooks({ resolve(specifier, context, next) {\n' +
          "  if (specifier === '@duckdb/node-api') throw Object.assign(new Error(`Cannot find package '${specifier}'`), { code: 'ERR_MODULE_NOT_FOUND' });\n" +
          '  return next(specifier, context);\n' +
          '} });\n',
      );
      const db = join(dir, 'none.duckdb');
      const run = await replicate(account.config(dir), db, { env: { NODE_OPTIONS: `--import=${pathToFileURL(hook).href}` } });
      expect(run.code, run.stderr).toBe(78);
      expect(run.stderr).toContain('@duckdb/node-api');
      expect(existsSync(db)).toBe(false);
      // A run into SQLite under the same hook never needs it.
      expect((await replicate(account.config(dir), join(dir, 'plain.db'), { env: { NODE_OPTIONS: `--import=${pathToFileURL(hook).href}` } })).code).toBe(0);
    });
  });
}

/** DuckDB alone: no room left for its WAL (a real ENOSPC from the kernel: the WAL's name a link to /dev/full). */
export function duckdbFullDisk(duckdb: StoreKind): void {
  describe('replicate into DuckDB on a full disk', SIDE_BY_SIDE, () => {
    let account: Account;
    let dir: string;
    withEmulatorAccount('stores-duckdb-full-', { contacts: 60, seed: 71 }, (s) => ({ account, dir } = s));

    it('is transient (75) saying the disk is full, keeps what was committed, and the next run with room ends exact', async () => {
      const config = account.config(dir);
      const db = await duckdb.fresh(dir, 'full');
      expect((await replicate(config, db)).code).toBe(0);
      const before = await duckdb.dump(db);
      changeRound(account);
      // Writes to /dev/full fail with ENOSPC: the store's next commit finds no room, as on a full disk.
      const wal = `${db.replace(/^duckdb:/, '')}.wal`;
      rmSync(wal, { force: true }); // a WAL the last run may have left
      symlinkSync('/dev/full', wal);
      const full = await replicate(config, db);
      unlinkSync(wal);
      expect(full.code, full.stderr).toBe(75);
      expect(full.stderr).toMatch(/The disk holding the DuckDB store ".*full\.duckdb" is full: .*No space left on device.* What was committed before is kept\. Free some space there, then run replicate again/);
      expect(full.stderr).not.toMatch(/report|bug/i);
      // The run's last words give the advice once.
      expect(full.stderr.split('\n').find((line) => line.includes('Replication stopped'))?.match(/run replicate again/gi)).toHaveLength(1);
      expect(await duckdb.dump(db)).toStrictEqual(before);
      const next = await replicate(config, db);
      expect(next.code, next.stderr).toBe(0);
      expect(await duckdb.dump(db)).toStrictEqual(dumpLists(account.dump()));
    });
  });
}
