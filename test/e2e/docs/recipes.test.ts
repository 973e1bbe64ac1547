/**
 * Recipes and literal files of the README and docs/, run as written against
 * the real emulator:
 * - the README's quick start (every face, from a folder laid out like a clone);
 * - docs/airbyte.md: a configured catalog made from discover's JSON lines;
 * - docs/state.md: the emulator's data changed through its control API
 *   between a full and an incremental read;
 * - every literal config.json of the README and docs/configuration.md is
 *   a config the connector accepts, without a warning.
 */
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/config.js';
import { STREAMS } from '../../../src/streams.js';
import { setup, type Setup } from '../../emulator/helpers.js';
import { parseLines, protocolCheck, ROOT, tempDir, writeJson } from '../../helpers/cli.js';
import { docRecipe, runShell } from '../../helpers/readme.js';
import { LIMITS_OUT_OF_REACH } from '../../helpers/emulator-runs.js';

/** A folder laid out like a clone for what the recipes use (bin/, scripts/, catalog/, the emulator's packages/). */
function checkout(prefix: string): string {
  const dir = tempDir(prefix);
  for (const name of ['bin', 'scripts', 'catalog', 'packages']) symlinkSync(join(ROOT, name), join(dir, name));
  return dir;
}

/** PATH with the Node running these tests first (the recipes' first line keeps it first). */
const withNode = (): NodeJS.ProcessEnv => ({ ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` });

/** RECORD lines of a stream in a file of Airbyte messages. */
function airbyteRecords(file: string, stream: string): number {
  return parseLines(readFileSync(file, 'utf8')).filter((m) => m.type === 'RECORD' && (m.record as { stream?: unknown }).stream === stream).length;
}

/** Wait until the emulator a recipe started in the background is gone (it removes its ready file on stop). */
async function emulatorGone(folder: string): Promise<void> {
  while (existsSync(join(folder, 'emulator.json'))) await new Promise((r) => setTimeout(r, 50));
}

type ShellRun = Awaited<ReturnType<typeof runShell>>;

/** The recipe `name` of `page`, run before the suite in a fresh checkout (named from `prefix`); after it, its emulator gone. */
function recipeInCheckout(prefix: string, page: string, name: string): { readonly dir: string; readonly run: ShellRun } {
  let ran: { dir: string; run: ShellRun } | undefined;
  beforeAll(async () => {
    const dir = checkout(prefix);
    ran = { dir, run: await runShell(docRecipe(page, name), { cwd: dir, env: withNode() }) };
  }, 120_000);
  afterAll(async () => {
    if (ran !== undefined) await emulatorGone(join(ran.dir, 'example'));
  });
  const done = (): { dir: string; run: ShellRun } => {
    if (ran === undefined) throw new Error(`the recipe ${name} of ${page} has not run`);
    return ran;
  };
  return {
    get dir() {
      return done().dir;
    },
    get run() {
      return done().run;
    },
  };
}

describe('README: the quick start, pasted', () => {
  const recipe = recipeInCheckout('sdr-quick-start-', 'README.md', 'quick-start');

  it('runs to the end: check SUCCEEDED, then every face', () => {
    expect(recipe.run.code, recipe.run.stderr).toBe(0);
    const statuses = parseLines(recipe.run.stdout).filter((m) => m.type === 'CONNECTION_STATUS');
    expect(statuses).toEqual([expect.objectContaining({ connectionStatus: expect.objectContaining({ status: 'SUCCEEDED' }) })]);
  });

  it('the Airbyte read and the Singer sync pass their protocol checkers, with records of every stream', () => {
    const example = join(recipe.dir, 'example');
    expect(protocolCheck('airbyte', readFileSync(join(example, 'airbyte.jsonl'), 'utf8')).errors).toEqual([]);
    expect(protocolCheck('singer', readFileSync(join(example, 'singer.jsonl'), 'utf8')).errors).toEqual([]);
    for (const stream of STREAMS) expect(airbyteRecords(join(example, 'airbyte.jsonl'), stream.name), stream.name).toBeGreaterThan(0);
  });

  it('the replica holds the contacts the Airbyte read delivered', () => {
    const example = join(recipe.dir, 'example');
    const db = new DatabaseSync(join(example, 'replica.db'), { readOnly: true });
    try {
      const { n } = db.prepare('SELECT count(*) AS n FROM contacts').get() as { n: number };
      expect(n).toBe(airbyteRecords(join(example, 'airbyte.jsonl'), 'contacts'));
      expect(n).toBeGreaterThan(150);
    } finally {
      db.close();
    }
  });
});

describe('docs/airbyte.md: a configured catalog from discover', () => {
  let s: Setup;
  let dir: string;
  let run: ShellRun;

  beforeAll(async () => {
    s = await setup({ contacts: 120, limits: LIMITS_OUT_OF_REACH });
    dir = checkout('sdr-configured-');
    writeJson(dir, 'config.json', { api_key: s.key, base_url: s.emu.url });
    run = await runShell(docRecipe('docs/airbyte.md', 'airbyte-configured-catalog'), { cwd: dir, env: withNode() });
  }, 120_000);
  afterAll(async () => {
    await s?.emu.close();
  });

  it('discover prints JSON lines, not one JSON document: the reason for the recipe', () => {
    const lines = readFileSync(join(dir, 'discovered.jsonl'), 'utf8').trim().split('\n');
    expect(lines.length).toBeGreaterThan(1);
    expect(() => JSON.parse(readFileSync(join(dir, 'discovered.jsonl'), 'utf8')) as unknown).toThrow();
  });

  it('makes a configured catalog of every stream, incremental where it can be, that read accepts', () => {
    expect(run.code, run.stderr).toBe(0);
    const configured = JSON.parse(readFileSync(join(dir, 'configured_catalog.json'), 'utf8')) as { streams: { stream: { name: string }; sync_mode: string; cursor_field?: string[] }[] };
    expect(configured.streams.map((c) => c.stream.name)).toEqual(STREAMS.map((st) => st.name));
    for (const stream of STREAMS) {
      const entry = configured.streams.find((c) => c.stream.name === stream.name);
      expect(entry?.sync_mode).toBe(stream.syncModes.includes('incremental') ? 'incremental' : 'full_refresh');
      expect(entry?.cursor_field).toEqual(stream.cursorField !== null && stream.syncModes.includes('incremental') ? [stream.cursorField] : undefined);
    }
    const out = readFileSync(join(dir, 'out.jsonl'), 'utf8');
    expect(protocolCheck('airbyte', out).errors).toEqual([]);
    expect(airbyteRecords(join(dir, 'out.jsonl'), 'contacts')).toBeGreaterThan(100);
    expect(parseLines(out).filter((m) => m.type === 'TRACE' && (m.trace as { type: string }).type === 'ERROR')).toEqual([]);
  });
});

describe("docs/state.md: the emulator's data changed between two reads", () => {
  const recipe = recipeInCheckout('sdr-changes-', 'docs/state.md', 'emulator-changes');

  it('runs to the end; each control call answers with what it did', () => {
    expect(recipe.run.code, recipe.run.stderr).toBe(0);
    const answers = parseLines(recipe.run.stdout.split('\n').filter((l) => l.startsWith('{')).join('\n'));
    expect(answers[0]).toEqual({ now: expect.any(String) });
    expect(answers.slice(1).map((a) => a.op)).toEqual(['update_contacts', 'move_contacts', 'create_contacts', 'delete_contacts']);
    expect((answers[1]?.ids as string[]).length).toBe(20);
    expect((answers[4]?.deletionIds as string[]).length).toBeGreaterThanOrEqual(3);
  });

  it('the second read brings only what changed: the changed and new contacts and the deletions', () => {
    const example = join(recipe.dir, 'example');
    for (const file of ['full.jsonl', 'next.jsonl']) expect(protocolCheck('airbyte', readFileSync(join(example, file), 'utf8')).errors).toEqual([]);
    const full = airbyteRecords(join(example, 'full.jsonl'), 'contacts');
    const next = airbyteRecords(join(example, 'next.jsonl'), 'contacts');
    expect(full).toBeGreaterThan(250);
    // 20 edited and 10 moved (some may be the same), 5 created; at most the look-back's few more.
    expect(next).toBeGreaterThanOrEqual(25);
    expect(next).toBeLessThan(60);
    expect(airbyteRecords(join(example, 'next.jsonl'), 'deletions')).toBeGreaterThanOrEqual(3);
  });
});

describe('literal config.json files', () => {
  /** The ```json blocks of a page that are configs (they have an api_key). */
  const configs = (page: string): unknown[] =>
    [...readFileSync(join(ROOT, page), 'utf8').matchAll(/^```json\n([\s\S]*?)^```$/gm)]
      .map((m) => JSON.parse(m[1] as string) as Record<string, unknown>)
      .filter((c) => 'api_key' in c);

  it.each(['README.md', 'docs/configuration.md'])('%s: every config is accepted, without a warning', (page) => {
    const found = configs(page);
    expect(found.length).toBeGreaterThan(0);
    for (const config of found) expect(parseConfig(config).warnings).toEqual([]);
  });
});
