/**
 * Many accounts (a config with `accounts`) into each of the three stores of
 * `replicate` (SQLite, a PostgreSQL schema on the tests' real server, a
 * DuckDB file), the same test code for each, against one emulator serving
 * several accounts: every table keyed by (account, id), each account exact
 * after full and incremental runs with changes and deletions, states and
 * `--summary` per account; one key revoked (the others exact, 78 naming
 * the entry); an entry bound to its account; killed then resumed; the long
 * pause healed per account; an entry renamed, then the removal
 * docs/many-accounts.md gives for the store run as written; and a store of
 * the other kind of config refused unchanged (a store of one api_key given
 * accounts: suite.ts). Run by one file per store (sqlite.test.ts, ...).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LISTS, changeRound, dumpLists, replicate, type Account } from '../../../helpers/emulator-runs.js';
import { SOURCE_BIN, runCli, writeJson } from '../../../helpers/cli.js';
import type { StoreKind } from '../../../helpers/store-kinds.js';
import { withEmulatorAccount } from '../../../helpers/suite.js';
import { IN_TURN, SIDE_BY_SIDE } from './suite.js';

const DAY_MS = 86_400_000;

/** The entries each store binds to an account (the SQLite file's _replica_account; account:NAME facts elsewhere). */
const BINDINGS: Readonly<Record<StoreKind['name'], string>> = {
  sqlite: 'SELECT entry FROM _replica_account',
  postgres: "SELECT substr(key, 9) AS entry FROM data_read._replica_metadata WHERE key LIKE 'account:%'",
  duckdb: "SELECT substr(key, 9) AS entry FROM main._replica_metadata WHERE key LIKE 'account:%'",
};

/**
 * Many accounts into a store, the same code for each. `renameRemoval`: the
 * store's statements of docs/many-accounts.md ("Renaming an entry") that
 * remove the former entry "acme-br", read by the store's test file.
 */
export function accountsSuite(store: StoreKind, renameRemoval: string): void {
  describe(`replicate with accounts into ${store.name}`, SIDE_BY_SIDE, () => {
    describe('many accounts', () => {
      let account: Account;
      let dir: string;
      withEmulatorAccount(`stores-accounts-${store.name}-`, { contacts: 40, seed: 71 }, (s) => ({ account, dir } = s));
      let files = 0;

      interface Tenant {
        readonly entry: string;
        readonly id: string;
        readonly key: string;
        readonly keyId?: string;
      }
      const tenant = (entry: string, name: string, contacts: number): Tenant => {
        const control = account.emulator.control;
        const created = control.createAccount({ name });
        const { key, id: keyId } = control.createKey(created.id);
        control.seed(created.id, { contacts });
        return { entry, id: created.id, key, keyId };
      };
      const asAccount = (t: Tenant): Account => ({
        ...account,
        accountId: t.id,
        key: t.key,
        mutate: (m) => void account.emulator.control.mutate(t.id, m),
        dump: () => account.emulator.control.dump(t.id),
      });
      const configOf = (tenants: readonly Tenant[], extra: Record<string, unknown> = {}): string =>
        writeJson(dir, `accounts-${++files}.json`, { base_url: account.emulator.url, page_size: 25, accounts: tenants.map((t) => ({ name: t.entry, api_key: t.key })), ...extra });
      const byId = (a: unknown, b: unknown): number => {
        const x = String((a as { id: unknown }).id);
        const y = String((b as { id: unknown }).id);
        return x < y ? -1 : x > y ? 1 : 0;
      };
      /** Each account's rows in the dump's shape (without the account column), each list by id: the store read once. */
      const shares = async (db: string): Promise<(entry: string) => Record<string, unknown[]>> => {
        const rows = await store.accounts(db);
        return (entry) =>
          Object.fromEntries(
          LISTS.map((list) => [
            list,
            (rows[list] ?? [])
              .filter((r) => r.account === entry)
              .map(({ account: _account, ...rest }) => rest)
              .sort(byId),
            ]),
          );
      };
      const share = async (db: string, entry: string): Promise<Record<string, unknown[]>> => (await shares(db))(entry);
      /** Every account of `tenants` equals its dump. */
      const exact = async (db: string, tenants: readonly Tenant[]): Promise<void> => {
        const of = await shares(db);
        for (const t of tenants) expect(of(t.entry), t.entry).toStrictEqual(truth(t));
      };
      const truth = (t: Tenant): Record<string, unknown[]> => {
        const lists = dumpLists(account.emulator.control.dump(t.id));
        return Object.fromEntries(LISTS.map((list) => [list, [...(lists[list] ?? [])].sort(byId)]));
      };
      const errorLines = (stderr: string): string[] => stderr.split('\n').filter((l) => /\bERROR\b/.test(l) && l.includes('Replication incomplete'));

      it(
        'keys every table by (account, id); each account exact after full and incremental runs with changes and deletions; a key revoked; an entry bound; the other kind of config refused',
        // Six runs of up to three accounts: 48-57 s into DuckDB in CI on a 2-core machine, more than half the 90-s guard.
        { ...IN_TURN, timeout: 240_000 },
        async () => {
          const main: Tenant = { entry: 'main', id: account.accountId, key: account.key };
          const north = tenant('north', 'North', 30);
          let south = tenant('south', 'South', 30);
          const db = await store.fresh(dir, 'accounts');
          const summary = join(dir, `summary-${store.name}.json`);
          const first = await runCli(SOURCE_BIN, ['replicate', '--config', configOf([main, north, south]), '--db', db, '--summary', summary], { timeoutMs: 120_000 });
          expect(first.code, first.stderr).toBe(0);
          expect(first.stdout).toBe('');
          expect(first.stderr).toContain('Replicating 3 account(s)');
          await exact(db, [main, north, south]);
          for (const list of LISTS) expect(await store.primaryKey(db, list), list).toEqual(['account', 'id']);
          expect(Object.keys((await store.accountStates(db)).get('contacts')?.accounts ?? {}).sort()).toEqual(['main', 'north', 'south']);
          const report = JSON.parse(readFileSync(summary, 'utf8')) as { accounts: { name: string; status: string; records: number }[] };
          expect(report.accounts.map((a) => [a.name, a.status])).toEqual([
            ['main', 'succeeded'],
            ['north', 'succeeded'],
            ['south', 'succeeded'],
          ]);
          expect(report.accounts.every((a) => a.records > 0)).toBe(true);

          // Changes and deletions in two accounts: each exact, the third's rows untouched by their deletions.
          changeRound(asAccount(main));
          changeRound(asAccount(north));
          const southBefore = (await shares(db))('south');
          const second = await replicate(configOf([main, north, south]), db);
          expect(second.code, second.stderr).toBe(0);
          expect(second.stderr).toContain('continuing from its saved state');
          expect(second.stderr).toMatch(/deletions applied: \d+ rows removed/);
          await exact(db, [main, north, south]);
          expect(truth(south)).toStrictEqual(southBefore);

          // South's key revoked: the others read and saved, 78, one error naming south; south's rows as they were.
          changeRound(asAccount(north));
          changeRound(asAccount(south));
          const southKept = await share(db, 'south');
          account.emulator.control.revokeKey(south.keyId as string);
          const revokedSummary = join(dir, `summary-revoked-${store.name}.json`);
          const revoked = await runCli(SOURCE_BIN, ['replicate', '--config', configOf([main, north, south]), '--db', db, '--summary', revokedSummary], { timeoutMs: 120_000 });
          expect(revoked.code, revoked.stderr).toBe(78);
          const errors = errorLines(revoked.stderr);
          expect(errors, revoked.stderr).toHaveLength(1);
          expect(errors[0]).toMatch(/1 of 3 accounts failed.*account "south"/);
          const held = await shares(db);
          for (const t of [main, north]) expect(held(t.entry), t.entry).toStrictEqual(truth(t));
          expect(held('south')).toStrictEqual(southKept);
          expect(truth(south)).not.toStrictEqual(southKept);
          const failed = JSON.parse(readFileSync(revokedSummary, 'utf8')) as { accounts: { name: string; status: string; failure_type: string | null }[] };
          expect(failed.accounts.find((a) => a.name === 'south')).toMatchObject({ status: 'failed', failure_type: 'config_error' });
          expect(failed.accounts.find((a) => a.name === 'north')).toMatchObject({ status: 'succeeded', failure_type: null });
          // A new key of the same account: it goes on from its own state, exact again.
          const renewed = account.emulator.control.createKey(south.id);
          south = { ...south, key: renewed.key, keyId: renewed.id };
          const again = await replicate(configOf([main, north, south]), db);
          expect(again.code, again.stderr).toBe(0);
          await exact(db, [main, north, south]);

          // The entry "north" given South's key: that entry fails alone (78, both accounts named), nothing of it written.
          const northRows = await share(db, 'north');
          changeRound(asAccount(main));
          const swapped = await replicate(configOf([{ ...north, key: south.key }, main]), db);
          expect(swapped.code, swapped.stderr).toBe(78);
          expect(swapped.stderr).toMatch(/account "north": .*"North".*"South"/);
          const after = await shares(db);
          expect(after('north')).toStrictEqual(northRows);
          expect(after('main')).toStrictEqual(truth(main));

          // A config of one api_key given this store: refused (78), nothing changed.
          const before = await store.accounts(db);
          const one = await replicate(account.config(dir), db);
          expect(one.code, one.stderr).toBe(78);
          expect(one.stderr).toMatch(/built from a config with "accounts"/);
          expect(await store.accounts(db)).toStrictEqual(before);
        },
      );

      it('killed mid-run with SIGKILL, then run again: every account exact', IN_TURN, async () => {
        const east = tenant('east', 'East', 300);
        const west = tenant('west', 'West', 300);
        const db = await store.fresh(dir, 'accounts-killed');
        const cfg = configOf([east, west], { page_size: 10, max_concurrent_requests: 1 });
        // A slower service and a progress line per page: kills by bytes of stderr land inside the reads, after commits
        // (PostgreSQL and DuckDB commit a group of checkpoints every 250 ms at least).
        account.emulator.control.setLatency(15);
        const env = { SOURCE_DATA_READ_PROGRESS_MS: '0' };
        const outcomes: string[] = [];
        let killed = 0;
        let resumed = 0;
        try {
          // Kills later and later (each run goes on from the last commit) until two landed, one of them after a commit inside a read.
          for (let bytes = 5000; bytes <= 30000 && (killed < 2 || resumed < 1); bytes += 5000) {
            const run = await replicate(cfg, db, { killAfterStderrBytes: bytes, env });
            outcomes.push(`${bytes} -> ${run.killed ? 'killed' : `exit ${run.code}`}`);
            if (!run.killed) expect(run.code, run.stderr).toBe(0);
            if (run.killed) killed++;
            // A kill inside a read leaves that account's resume cursor, committed with the rows before it.
            const states = [...(await store.accountStates(db)).values()];
            if (run.killed && states.some((st) => Object.values(st.accounts ?? {}).some((one) => one.resume !== undefined))) resumed++;
          }
        } finally {
          account.emulator.control.setLatency(0);
        }
        expect(killed, outcomes.join('; ')).toBeGreaterThanOrEqual(2);
        expect(resumed, outcomes.join('; ')).toBeGreaterThanOrEqual(1);
        changeRound(asAccount(east));
        const last = await replicate(cfg, db);
        expect(last.code, last.stderr).toBe(0);
        await exact(db, [east, west]);
      });

      it("an entry renamed: a WARN; then docs/many-accounts.md's removal for this store, as written, leaves the rows under the new name alone", IN_TURN, async () => {
        // The page's statements name the former entry "acme-br".
        const former = tenant('acme-br', 'Acme Brazil', 20);
        const other = tenant('globex', 'Globex', 10);
        const db = await store.fresh(dir, 'accounts-renamed');
        const first = await replicate(configOf([former, other]), db);
        expect(first.code, first.stderr).toBe(0);
        const renamed: Tenant = { ...former, entry: 'acme-brazil' };
        const cfg = configOf([renamed, other]);
        const run = await replicate(cfg, db);
        expect(run.code, run.stderr).toBe(0);
        const said = run.stderr.split('\n').filter((l) => /\bWARN\b/.test(l) && l.includes('no longer in the config'));
        expect(said, run.stderr).toHaveLength(1);
        expect(said[0]).toMatch(/Account "acme-brazil": it reads an account of the same name, "Acme Brazil" at .*, as entry "acme-br", which is no longer in the config/);
        const both = await shares(db);
        expect(both('acme-br')).toStrictEqual(truth(former));
        expect(both('acme-brazil')).toStrictEqual(truth(former));

        // The marks a full read of the former entry interrupted would have left (PostgreSQL and DuckDB keep their table;
        // the SQLite file drops it once no read is under way, and the page's SQLite statements do not name it).
        const marks = store.name === 'sqlite' ? undefined : `${store.name === 'postgres' ? 'data_read' : 'main'}._replica_full_read`;
        if (marks !== undefined) await store.exec(db, `INSERT INTO ${marks} (stream, id) VALUES ('pipeline_stages/acme-br', 'stage-1')`);
        await store.exec(db, renameRemoval);
        if (marks !== undefined) expect(await store.rows(db, `SELECT stream FROM ${marks}`)).toStrictEqual([]);
        changeRound(asAccount(renamed));
        const after = await replicate(cfg, db);
        expect(after.code, after.stderr).toBe(0);
        expect(after.stderr).not.toMatch(/no longer in the config/);
        const held = await shares(db);
        expect(Object.values(held('acme-br')).flat()).toStrictEqual([]);
        expect(held('acme-brazil')).toStrictEqual(truth(renamed));
        expect(held('globex')).toStrictEqual(truth(other));
        for (const [stream, state] of await store.accountStates(db)) expect(Object.keys(state.accounts ?? {}).sort(), stream).toEqual(['acme-brazil', 'globex']);
        const bindings = await store.rows(db, BINDINGS[store.name]);
        expect(bindings.map((r) => String(r.entry)).sort()).toEqual(['acme-brazil', 'globex']);
      });

      // Last in this emulator's suite: it moves the emulator's clock past the deletion log's retention.
      it('a deletion stamped while the clock is back, before the change the store holds: removed from its account by the full read that follows', IN_TURN, async () => {
        const control = account.emulator.control;
        const back = tenant('back', 'Back', 20);
        const other = tenant('other', 'Other', 20);
        const db = await store.fresh(dir, 'accounts-clock-back');
        const cfg = configOf([back, other]);
        const gone = (control.dump(back.id).contacts[0] as { id: string }).id;
        control.mutate(back.id, { op: 'update_contacts', ids: [gone] });
        expect((await replicate(cfg, db)).code).toBe(0);
        control.rewindClock(2 * 3_600_000);
        control.mutate(back.id, { op: 'delete_contacts', ids: [gone] });
        control.advanceClock(10 * 60_000);
        const run = await replicate(cfg, db);
        expect(run.code, run.stderr).toBe(0);
        expect(run.stderr).toMatch(/WARN .*Account "back": contacts: the full read after the watermark went back removed [1-9]\d* row\(s\) the service no longer has\./);
        expect((await share(db, 'back')).contacts?.some((c) => (c as { id: string }).id === gone)).toBe(false);
        control.advanceClock(2 * 3_600_000);
        expect((await replicate(cfg, db)).code).toBe(0);
        await exact(db, [back, other]);
      });

      it('heals a long pause per account: the healed account exact, the rows of an account that did not read untouched', IN_TURN, async () => {
        const control = account.emulator.control;
        const up = tenant('up', 'Up', 40);
        const down = tenant('down', 'Down', 40);
        const db = await store.fresh(dir, 'accounts-heal');
        const cfg = configOf([up, down]);
        const first = await replicate(cfg, db);
        expect(first.code, first.stderr).toBe(0);
        control.advanceClock(10 * DAY_MS);
        const gone = control.dump(up.id).contacts.slice(0, 3).map((c) => (c as { id: string }).id);
        control.mutate(up.id, { op: 'delete_contacts', ids: gone });
        control.advanceClock(95 * DAY_MS);
        // Down's key refused this time: its rows must stay as they were while Up's heal sweeps Up's.
        const downRows = await share(db, 'down');
        control.revokeKey(down.keyId as string);
        const run = await replicate(cfg, db);
        expect(run.code, run.stderr).toBe(78);
        expect(run.stderr).toMatch(/WARN .*Account "up": deletions: .*The replica read contacts and conversations in full and removed \d+ row\(s\)/);
        expect(run.stderr).not.toMatch(/Account "down": .*in full/);
        const held = await shares(db);
        // The deletion log keeps what the service has forgotten since: the other lists equal the service's.
        for (const list of ['contacts', 'conversations', 'stage_events', 'pipeline_stages']) expect(held('up')[list], list).toStrictEqual(truth(up)[list]);
        for (const id of gone) expect((held('up').contacts as { id: string }[]).some((c) => c.id === id)).toBe(false);
        expect(held('down')).toStrictEqual(downRows);
        expect(downRows.contacts?.length).toBeGreaterThan(0);
      });
    });
  });
}
