/**
 * A DuckDB store holds personal data, as the SQLite replica does: a new
 * file is made 0600 (its owner's alone), and what DuckDB writes beside it
 * while a run writes follows it: the WAL (the rows not yet copied into the
 * file) with the file's mode, the temporary folder (rows past DuckDB's
 * buffers) 0700, removed when the store closes. DuckDB itself would make
 * them all under the process's umask (0644 and 0755 under the usual 022),
 * and so the WAL it makes again after a checkpoint within the run (past its
 * checkpoint_threshold, in a large first sync). A file that exists keeps the
 * mode its owner gave it. A process that exits without closing the store (a
 * stop signal's way out) removes the temporary folder all the same; one
 * killed outright leaves it, and the next run that holds the file removes it.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DuckdbStore } from '../../../src/stores/duckdb/store.js';
import { parseStoreTarget, type DuckdbTarget } from '../../../src/stores/target.js';
import { ROOT, tempDir } from '../../helpers/cli.js';
import { requireBuild } from '../../helpers/emulator-runs.js';

let dir: string;
beforeAll(() => {
  dir = tempDir('sdr-duckdb-mode-');
});
const usual = process.umask(0o022);
process.umask(usual);
afterEach(() => void process.umask(usual));

const mode = (file: string): string => (statSync(file).mode & 0o777).toString(8);

function target(name: string): DuckdbTarget {
  const t = parseStoreTarget(`duckdb:${join(dir, `${name}.duckdb`)}`, undefined, {});
  if (t.kind !== 'duckdb') throw new Error('not duckdb');
  return t;
}

describe('DuckDB store file modes', () => {
  it('a new store file is 600 under the usual umask (022), its WAL too, its temporary folder 700 and gone at close', async () => {
    process.umask(0o022);
    const t = target('new');
    const store = await DuckdbStore.open(t);
    // Opening wrote the bookkeeping tables: DuckDB has its WAL beside the file by now.
    expect([t.path, `${t.path}.wal`].map(mode)).toEqual(['600', '600']);
    expect(mode(`${t.path}.tmp`)).toBe('700');
    await store.close();
    expect(mode(t.path)).toBe('600');
    expect(existsSync(`${t.path}.tmp`)).toBe(false);
  });

  it('an existing store file keeps its mode, and its WAL follows it', async () => {
    process.umask(0o022);
    const t = target('shared');
    await (await DuckdbStore.open(t)).close();
    chmodSync(t.path, 0o640);
    const store = await DuckdbStore.open(t);
    await store.setMetadata('test:note', 'a write, so that DuckDB has its WAL'); // opening an existing store may write nothing
    expect([t.path, `${t.path}.wal`].map(mode)).toEqual(['640', '640']);
    await store.close();
    expect(mode(t.path)).toBe('640');
  });

  it('a store opened and closed without a write (a run refused once it read the file) leaves no WAL beside it', async () => {
    const t = target('untouched');
    await (await DuckdbStore.open(t)).close();
    expect(existsSync(`${t.path}.wal`)).toBe(false);
    const before = readFileSync(t.path);
    // What a run refused for another account's or other treatments' store does: open, read, close.
    await (await DuckdbStore.open(t)).close();
    expect(existsSync(`${t.path}.wal`)).toBe(false);
    expect(readFileSync(t.path).equals(before)).toBe(true);
  });

  it('a process that exits without closing the store (a stop signal) leaves no temporary folder', () => {
    requireBuild();
    const t = target('stopped');
    // The way out of a SIGTERM (runtime/interrupt.ts): process.exit once the last lines are out, the store left open.
    const script = `
      const { DuckdbStore } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'stores', 'duckdb', 'store.js')).href)});
      const { parseStoreTarget } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'stores', 'target.js')).href)});
      const store = await DuckdbStore.open(parseStoreTarget(${JSON.stringify(`duckdb:${t.path}`)}, undefined, {}));
      await store.setMetadata('test:note', 'a write');
      process.exit(143);
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 143, stderr: '' });
    expect(existsSync(t.path)).toBe(true);
    expect(existsSync(`${t.path}.tmp`)).toBe(false);
  });

  it('a temporary folder a killed run left (SIGKILL: no exit listener runs) is emptied and removed by the next run', async () => {
    requireBuild();
    const t = target('killed');
    const script = `
      const { DuckdbStore } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'stores', 'duckdb', 'store.js')).href)});
      const { parseStoreTarget } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'stores', 'target.js')).href)});
      const store = await DuckdbStore.open(parseStoreTarget(${JSON.stringify(`duckdb:${t.path}`)}, undefined, {}));
      await store.setMetadata('test:note', 'a write');
      process.kill(process.pid, 'SIGKILL');
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect({ signal: run.signal, stderr: run.stderr }).toEqual({ signal: 'SIGKILL', stderr: '' });
    expect(mode(`${t.path}.tmp`)).toBe('700');
    // What DuckDB had spilled there (rows past its buffers), under its own names: DuckDB removes only its own run's.
    const spilled = join(`${t.path}.tmp`, 'duckdb_temp_storage_S32K-0.tmp');
    writeFileSync(spilled, 'rows of the killed run');
    const store = await DuckdbStore.open(t);
    const spilledOnceOpen = existsSync(spilled);
    await store.close();
    expect({ spilledOnceOpen, folderAfterClose: existsSync(`${t.path}.tmp`) }).toEqual({ spilledOnceOpen: false, folderAfterClose: false });
  });

  it('a file of staged rows is 600 under the usual umask (022) while DuckDB loads it', async () => {
    process.umask(0o022);
    const t = target('staged-mode');
    const store = await DuckdbStore.open(t);
    // The store's connection, seen at each statement: the mode of the file a COPY loads, while it exists.
    const connection = store.session;
    const run = connection.run.bind(connection);
    const loaded: string[] = [];
    connection.run = (async (sql: string, values?: unknown) => {
      const file = /^COPY \S+ FROM '([^']+)'/.exec(sql)?.[1];
      if (file !== undefined) loaded.push(mode(file));
      return run(sql, values as never);
    }) as typeof connection.run;
    try {
      await store.commit({ stream: 'contacts', records: [{ id: 'c1', updated_at: '2026-01-01T00:00:00.000Z', email: 'ana@example.com' }], state: '{}' });
    } finally {
      await store.close();
    }
    expect(loaded).toEqual(['600']);
  });

  it("a gathering group's rows are in its file of staged rows (600) as each checkpoint is taken, not held until the group is written", async () => {
    process.umask(0o022);
    const t = target('staged-gathering');
    // Groups that wait a minute: the group gathers until the flush.
    const store = await DuckdbStore.open(t, { groups: { groupMs: 60_000 } });
    try {
      await store.write({ stream: 'contacts', records: [{ id: 'c1', updated_at: '2026-01-01T00:00:00.000Z', email: 'ana@example.com' }], state: '{"n":1}' });
      await store.write({ stream: 'contacts', records: [{ id: 'c2', updated_at: '2026-01-01T00:00:00.000Z', email: 'bo@example.com' }], state: '{"n":2}' });
      const files = readdirSync(`${t.path}.tmp`);
      expect(files).toHaveLength(1);
      const file = join(`${t.path}.tmp`, files[0] as string);
      expect(mode(file)).toBe('600');
      expect(readFileSync(file, 'utf8')).toMatch(/^c1,.*ana@example\.com.*\nc2,.*bo@example\.com.*\n$/s);
      await store.flush();
      expect(readdirSync(`${t.path}.tmp`)).toEqual([]);
      expect(await store.readRecords('contacts')).toHaveLength(2);
    } finally {
      await store.close();
    }
  });

  it("the files of staged rows (personal data) are gone once their group is committed; a killed run's are removed by the next run", async () => {
    const t = target('staged');
    const store = await DuckdbStore.open(t);
    try {
      await store.commit({ stream: 'contacts', records: [{ id: 'c1', updated_at: '2026-01-01T00:00:00.000Z', name: 'Ana' }], state: '{}' });
      expect(readdirSync(`${t.path}.tmp`)).toEqual([]);
    } finally {
      await store.close();
    }
    mkdirSync(`${t.path}.tmp`, { mode: 0o700 });
    writeFileSync(join(`${t.path}.tmp`, 'replica_stage_4242_1.csv'), 'rows of a killed run', { mode: 0o600 });
    const next = await DuckdbStore.open(t);
    const leftOnceOpen = readdirSync(`${t.path}.tmp`);
    await next.close();
    expect({ leftOnceOpen, folderAfterClose: existsSync(`${t.path}.tmp`) }).toEqual({ leftOnceOpen: [], folderAfterClose: false });
  });

  it("a temporary folder holding files that are not DuckDB's is left, only DuckDB's spill files removed", async () => {
    const t = target('kept');
    await (await DuckdbStore.open(t)).close();
    mkdirSync(`${t.path}.tmp`, { mode: 0o700 });
    writeFileSync(join(`${t.path}.tmp`, 'duckdb_temp_block-4611686018427388000.block'), 'rows');
    writeFileSync(join(`${t.path}.tmp`, 'notes.txt'), 'not DuckDB\'s');
    await (await DuckdbStore.open(t)).close();
    expect(readdirSync(`${t.path}.tmp`)).toEqual(['notes.txt']);
  });

  it("a temporary folder the user made is left: a link to another disk (DuckDB's spill files in it removed), an empty folder", async () => {
    const linked = target('linked');
    const elsewhere = join(dir, 'bigger-disk');
    mkdirSync(elsewhere, { mode: 0o700 });
    writeFileSync(join(elsewhere, 'duckdb_temp_storage_S32K-0.tmp'), 'rows of a killed run');
    symlinkSync(elsewhere, `${linked.path}.tmp`);
    await (await DuckdbStore.open(linked)).close();
    expect(lstatSync(`${linked.path}.tmp`).isSymbolicLink()).toBe(true);
    expect(readdirSync(elsewhere)).toEqual([]);

    const made = target('made');
    mkdirSync(`${made.path}.tmp`, { mode: 0o700 });
    await (await DuckdbStore.open(made)).close();
    expect(existsSync(`${made.path}.tmp`)).toBe(true);
  });

  it.each([
    ['a new file', undefined, '600'],
    ['an existing 640 file', 0o640, '640'],
  ] as const)('the WAL DuckDB makes again after a checkpoint within the run follows %s', async (name, chmod, expected) => {
    process.umask(0o022);
    const t = target(name.replace(/\W+/g, '-'));
    if (chmod !== undefined) {
      await (await DuckdbStore.open(t)).close();
      chmodSync(t.path, chmod);
    }
    const store = await DuckdbStore.open(t);
    await store.setMetadata('test:note', 'a row before the checkpoint');
    // What DuckDB does by itself once the WAL passes checkpoint_threshold: the rows go into the file, the WAL is deleted.
    await store.session.run('CHECKPOINT');
    expect(existsSync(`${t.path}.wal`)).toBe(false);
    await store.setMetadata('test:note', 'a row after it: DuckDB makes its WAL again');
    expect([t.path, `${t.path}.wal`].map(mode)).toEqual([expected, expected]);
    await store.close();
  });
});
