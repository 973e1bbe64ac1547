/**
 * What a store keeps of a checkpoint while its group gathers and is
 * written: its rows encoded, never the records themselves (group-writer.ts).
 * Records kept until the commit are traced by every garbage collection
 * meanwhile and promoted to the old generation, which then fills and is
 * collected again and again: the run's CPU, not its result, shows it.
 * In a process of its own (the built code), where `gc()` is exposed and
 * nothing else holds the records.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../helpers/cli.js';
import { requireBuild } from '../helpers/emulator-runs.js';

describe('a checkpoint taken by a store', () => {
  it('is not held by the store once taken: its records can be collected before its group commits', () => {
    requireBuild();
    const dist = (path: string): string => JSON.stringify(pathToFileURL(join(ROOT, 'dist', path)).href);
    const file = JSON.stringify(join(tempDir('sdr-retention-'), 'r.duckdb'));
    const script = `
      const { DuckdbStore } = await import(${dist('stores/duckdb/store.js')});
      const { parseStoreTarget } = await import(${dist('stores/target.js')});
      const store = await DuckdbStore.open(parseStoreTarget('duckdb:' + ${file}, undefined, {}));
      const refs = [];
      let told = 0;
      const take = () => {
        const records = [1, 2, 3].map((n) => ({ id: 'c' + n, updated_at: '2026-01-01T00:0' + n + ':00.000Z', email: 'c' + n + '@example.com' }));
        for (const r of records) refs.push(new WeakRef(r));
        return store.write({ stream: 'contacts', records, state: JSON.stringify({ sync_watermark: '2026-01-01T00:03:00.000Z' }) }, () => told++);
      };
      await take();
      // Twice, a turn apart: a WeakRef's target is kept until the job that made it ends.
      globalThis.gc();
      await new Promise((resolve) => setImmediate(resolve));
      globalThis.gc();
      const alive = refs.filter((r) => r.deref() !== undefined).length;
      const toldBefore = told;
      await store.flush();
      await store.close();
      console.log(JSON.stringify({ alive, toldBefore, toldAfter: told }));
    `;
    const child = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(child.stderr).toBe('');
    // Taken and not committed yet (the group gathers 250 ms), its records already collectable; then committed and told.
    expect(JSON.parse(child.stdout)).toEqual({ alive: 0, toldBefore: 0, toldAfter: 1 });
  });
});
