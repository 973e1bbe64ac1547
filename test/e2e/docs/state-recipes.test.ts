/**
 * docs/orchestrators.md, "Carrying state between runs": each recipe run as
 * written, four times in a row against the emulator, the way a scheduler
 * would: a first run, a run whose service cannot be reached (a closed port),
 * a run with a revoked key, and a run that must resume from the first run's
 * state. The failed runs keep their status (75, 78) and leave the state file
 * as it was; the last run is incremental. A run that finds the state file's
 * lock taken exits 75 and leaves the state alone.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, parseLines, tempDir, writeJson } from '../../helpers/cli.js';
import { docRecipe, runShell } from '../../helpers/readme.js';
import { installTargetJsonl } from '../../helpers/target-jsonl.js';
import { setup, type Setup } from '../../emulator/helpers.js';
import { LIMITS_OUT_OF_REACH } from '../../helpers/emulator-runs.js';



let s: Setup;
let revokedKey: string;

beforeAll(async () => {
  s = await setup({ contacts: 300, limits: LIMITS_OUT_OF_REACH });
  const revoked = s.emu.control.createKey(s.accountId);
  s.emu.control.revokeKey(revoked.id);
  revokedKey = revoked.key;
});
afterAll(async () => {
  await s?.emu.close();
});

/** A folder laid out like a checkout (bin/, catalog/), with the stand-in target on PATH. */
function workdir(name: string): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = tempDir(`sdr-state-${name}-`);
  symlinkSync(join(ROOT, 'bin'), join(dir, 'bin'));
  symlinkSync(join(ROOT, 'catalog'), join(dir, 'catalog'));
  const tools = join(dir, 'tools');
  mkdirSync(tools);
  installTargetJsonl(tools, 'each');
  writeJson(dir, 'target.json', { destination_path: 'out' });
  mkdirSync(join(dir, 'out'));
  return { dir, env: { ...process.env, PATH: `${tools}:${dirname(process.execPath)}:${process.env.PATH ?? ''}` } };
}

const configs = {
  good: () => ({ api_key: s.key, base_url: s.emu.url, page_size: 50 }),
  unreachable: () => ({ api_key: s.key, base_url: 'http://127.0.0.1:9', max_retries: 0 }),
  revoked: () => ({ api_key: revokedKey, base_url: s.emu.url, page_size: 50 }),
};

/**
 * What a state file carries: Airbyte's STATE lines as written; of a Singer
 * STATE, its bookmarks (a failed run writes the bookmarks it was given back,
 * with `currently_syncing` set to where it stopped).
 */
function carried(file: string): unknown {
  const text = readFileSync(file, 'utf8');
  if (!text.includes('"bookmarks"')) return text;
  const parsed = JSON.parse(text) as { value?: { bookmarks: unknown }; bookmarks?: unknown };
  return parsed.value?.bookmarks ?? parsed.bookmarks; // a STATE message (the tap's), or its value (the target's)
}

/** Records of `stream` in a file of Airbyte or Singer messages, or (the target's) of records, one a line. */
function records(file: string, stream: string): number {
  if (file.includes('/out/')) return readFileSync(file, 'utf8').trim().split('\n').length;
  const streamOf = (m: Record<string, unknown>): unknown => m.stream ?? (m.record as { stream?: unknown } | undefined)?.stream;
  return parseLines(readFileSync(file, 'utf8')).filter((m) => m.type === 'RECORD' && streamOf(m) === stream).length;
}

/** Hold the recipe's lock (state.lock) as another run would, until the returned function is called. */
async function holdLock(dir: string): Promise<() => Promise<void>> {
  const child = spawn('flock', ['state.lock', 'sh', '-c', 'touch held; while [ ! -e release ]; do sleep 0.05; done'], { cwd: dir, stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  while (!existsSync(join(dir, 'held'))) await new Promise((resolve) => setTimeout(resolve, 10));
  return async () => {
    writeFileSync(join(dir, 'release'), '');
    await exited;
  };
}

const CASES = [
  { recipe: 'airbyte-state-safe', state: 'state.lines', output: 'out.jsonl' },
  { recipe: 'singer-state-safe', state: 'state.json', output: 'run.jsonl' },
  { recipe: 'singer-target-state-safe', state: 'state.json', output: 'out/contacts.jsonl' },
] as const;

describe.each(CASES)('$recipe', ({ recipe, state, output }) => {
  it('keeps the state through a failed run (unreachable: 75, revoked key: 78); the next run resumes; one run at a time', async () => {
    const { dir, env } = workdir(recipe);
    const script = docRecipe('docs/orchestrators.md', recipe);
    const run = async (config: keyof typeof configs) => {
      writeJson(dir, 'config.json', configs[config]());
      return runShell(script, { cwd: dir, env });
    };

    const first = await run('good');
    expect(first.code, first.stderr.slice(-800)).toBe(0);
    const saved = carried(join(dir, state));
    expect(JSON.stringify(saved).length).toBeGreaterThan(100);
    const firstContacts = records(join(dir, output), 'contacts');
    expect(firstContacts).toBeGreaterThan(250);

    const down = await run('unreachable');
    expect(down.code, down.stderr.slice(-800)).toBe(75);
    expect(carried(join(dir, state))).toEqual(saved);

    const refused = await run('revoked');
    expect(refused.code, refused.stderr.slice(-800)).toBe(78);
    expect(carried(join(dir, state))).toEqual(saved);

    const release = await holdLock(dir);
    let locked;
    try {
      locked = await run('good');
    } finally {
      await release();
    }
    expect(locked.code).toBe(75);
    expect(locked.stderr).toContain('another run is using');
    expect(carried(join(dir, state))).toEqual(saved);

    const next = await run('good');
    expect(next.code, next.stderr.slice(-800)).toBe(0);
    // Incremental: only the look-back of each stream is read again (the target's file grows by as much).
    const nextContacts = records(join(dir, output), 'contacts') - (recipe === 'singer-target-state-safe' ? firstContacts : 0);
    expect(nextContacts).toBeLessThan(firstContacts / 4);
    if (recipe === 'airbyte-state-safe') {
      const lines = readFileSync(join(dir, state), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { state: { stream: { stream_descriptor: { name: string } } } });
      expect(lines.map((l) => l.state.stream.stream_descriptor.name).sort()).toEqual(['contacts', 'conversations', 'deletions', 'pipeline_stages', 'stage_events']);
    }
  }, 120_000);
});
