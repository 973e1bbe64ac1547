/**
 * Recipes of the docs, run as written:
 * - the Singer worked example (setup, file runs, target, stop) from a folder
 *   laid out like a checkout, with the machine's old Node first on PATH when
 *   it has one (scripts/with-node then finds Node 24 "already fetched": the
 *   Node running these tests); `target-jsonl` is a stand-in that does what
 *   target-jsonl does (PyPI is out of reach here);
 * - the Airbyte recipe that turns one read's output into the next read's
 *   state, against the emulator: the second read is incremental;
 * - every recipe of the README and of docs/ is run by some test.
 * The other recipes of docs/ and the README run in test/e2e/docs/recipes.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, parseLines, protocolCheck, runCli, SOURCE_BIN, tempDir, writeJson } from '../../helpers/cli.js';
import { docRecipe, runShell } from '../../helpers/readme.js';
import { installTargetJsonl } from '../../helpers/target-jsonl.js';
import { setup, type Setup } from '../../emulator/helpers.js';
import { LIMITS_OUT_OF_REACH } from '../../helpers/emulator-runs.js';

const OLD_NODE = '/usr/bin/node';
const oldNodeMajor = ((): number | undefined => {
  if (!existsSync(OLD_NODE)) return undefined;
  const run = spawnSync(OLD_NODE, ['-p', 'process.versions.node'], { encoding: 'utf8' });
  const major = Number(run.stdout.split('.')[0]);
  return run.status === 0 && major < 22 ? major : undefined;
})();


/** RECORD lines of a stream in a file of Singer ({"stream"}) or Airbyte ({"record": {"stream"}}) messages. */
function records(file: string, stream: string): number {
  const streamOf = (m: Record<string, unknown>): unknown => m.stream ?? (m.record as { stream?: unknown } | undefined)?.stream;
  return parseLines(readFileSync(file, 'utf8')).filter((m) => m.type === 'RECORD' && streamOf(m) === stream).length;
}

describe('docs/singer.md: the Singer worked example, pasted', () => {
  let checkout: string;
  let result: Awaited<ReturnType<typeof runShell>>;

  beforeAll(async () => {
    checkout = tempDir('sdr-readme-singer-');
    for (const name of ['bin', 'scripts', 'packages']) symlinkSync(join(ROOT, name), join(checkout, name));
    const tools = join(checkout, '.tools');
    mkdirSync(tools);
    installTargetJsonl(tools, 'last');
    let path = `${tools}:${process.env.PATH ?? ''}`;
    if (oldNodeMajor !== undefined) {
      // Node 20 first on PATH, as on this machine; Node 24 as scripts/with-node leaves it after its one fetch.
      const fetched = join(checkout, '.cache', 'node24', 'node_modules', `node-${process.platform}-${process.arch}`);
      mkdirSync(fetched, { recursive: true });
      symlinkSync(dirname(process.execPath), join(fetched, 'bin'));
      path = `${tools}:${dirname(OLD_NODE)}:${process.env.PATH ?? ''}`;
    } else {
      console.warn('Recipe test: no Node older than 22 at /usr/bin/node; the recipe runs with the current PATH only.');
    }
    const script = ['singer-setup', 'singer-files', 'singer-target', 'singer-stop'].map((name) => docRecipe('docs/singer.md', name)).join('\n');
    result = await runShell(script, { cwd: checkout, env: { ...process.env, PATH: path } });
  }, 120_000);

  afterAll(async () => {
    // The emulator removes its ready file when it stops: wait for that (bounded by the hook timeout).
    while (checkout !== undefined && existsSync(join(checkout, 'example', 'emulator.json'))) await new Promise((r) => setTimeout(r, 50));
  });

  it('runs to the end, with the old Node first on PATH where the machine has one', () => {
    expect(result.code, result.stderr).toBe(0);
    if (oldNodeMajor !== undefined) expect(spawnSync('bash', ['-c', 'command -v node'], { env: { ...process.env, PATH: `${dirname(OLD_NODE)}:${process.env.PATH ?? ''}` }, encoding: 'utf8' }).stdout.trim()).toBe(OLD_NODE);
  });

  it('keeps its files in example/, not in the checkout root', () => {
    expect(readdirSync(checkout).sort()).toEqual(['.cache', '.tools', 'bin', 'example', 'packages', 'scripts'].filter((f) => f !== '.cache' || oldNodeMajor !== undefined));
    const example = join(checkout, 'example');
    for (const file of ['config.json', 'catalog.json', 'run-1.jsonl', 'run-2.jsonl', 'state.json', 'target.json', 'states.jsonl']) expect(existsSync(join(example, file)), file).toBe(true);
  });

  it('the first run is the full history, the second only what changed; state.json is the last STATE', () => {
    const example = join(checkout, 'example');
    const first = readFileSync(join(example, 'run-1.jsonl'), 'utf8');
    expect(protocolCheck('singer', first).errors).toEqual([]);
    expect(records(join(example, 'run-1.jsonl'), 'contacts')).toBeGreaterThan(400);
    expect(records(join(example, 'run-2.jsonl'), 'contacts')).toBeLessThan(50);
    expect(protocolCheck('singer', readFileSync(join(example, 'run-2.jsonl'), 'utf8')).errors).toEqual([]);
  });

  it('the target run wrote the streams and its last STATE value became state.json', () => {
    const example = join(checkout, 'example');
    expect(readdirSync(join(example, 'out')).sort()).toEqual(expect.arrayContaining(['contacts.jsonl', 'stage_events.jsonl']));
    const states = readFileSync(join(example, 'states.jsonl'), 'utf8').trim().split('\n');
    const state = JSON.parse(readFileSync(join(example, 'state.json'), 'utf8')) as { bookmarks: Record<string, { sync_watermark: string }> };
    expect(JSON.parse(states.at(-1) as string)).toEqual(state);
    expect(Object.keys(state.bookmarks).sort()).toEqual(['contacts', 'conversations', 'deletions', 'pipeline_stages', 'stage_events']);
  });

  it('.gitignore covers every file a recipe writes that holds a key', () => {
    const ignored = spawnSync('git', ['check-ignore', '--no-index', 'example/config.json', 'example/emulator.json', 'config.json', 'emulator.json', 'secrets/config.json', 'sub/config.json'], { cwd: ROOT, encoding: 'utf8' });
    expect(ignored.stdout.trim().split('\n')).toEqual(['example/config.json', 'example/emulator.json', 'config.json', 'emulator.json', 'secrets/config.json', 'sub/config.json']);
  });
});

describe('docs/state.md: one read\'s output as the next read\'s state (Airbyte)', () => {
  let s: Setup;
  let dir: string;

  beforeAll(async () => {
    s = await setup({ contacts: 400, limits: LIMITS_OUT_OF_REACH });
    dir = tempDir('sdr-readme-airbyte-');
    symlinkSync(join(ROOT, 'bin'), join(dir, 'bin'));
    symlinkSync(join(ROOT, 'catalog'), join(dir, 'catalog'));
    writeJson(dir, 'config.json', { api_key: s.key, base_url: s.emu.url, page_size: 50 });
  });

  afterAll(async () => {
    await s?.emu.close();
  });

  it('the recipe as written: the second read resumes from the first read\'s STATE lines', async () => {
    const run = await runShell(docRecipe('docs/state.md', 'airbyte-state'), { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const out = readFileSync(join(dir, 'out.jsonl'), 'utf8');
    const next = readFileSync(join(dir, 'next.jsonl'), 'utf8');
    for (const text of [out, next]) expect(protocolCheck('airbyte', text).errors).toEqual([]);
    const stateLines = readFileSync(join(dir, 'state.json'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string });
    expect(stateLines.length).toBeGreaterThan(5);
    expect(stateLines.every((m) => m.type === 'STATE')).toBe(true);
    expect(records(join(dir, 'out.jsonl'), 'contacts')).toBeGreaterThan(300);
    expect(records(join(dir, 'next.jsonl'), 'contacts')).toBeLessThan(40);
    const logs = parseLines(next).filter((m) => m.type === 'LOG').map((m) => (m.log as { message: string }).message);
    expect(logs.filter((m) => /state holds stream|no state/.test(m))).toEqual([]);
  });

  it('the last STATE line alone (grep | tail -1): that stream resumes, the others are named in a warning', async () => {
    const full = await runCli(SOURCE_BIN, ['read', '--config', join(dir, 'config.json'), '--catalog', join(ROOT, 'catalog', 'configured_catalog.json')]);
    const last = full.stdout.split('\n').filter((l) => l.startsWith('{"type":"STATE"')).at(-1) as string;
    const stream = (JSON.parse(last) as { state: { stream: { stream_descriptor: { name: string } } } }).state.stream.stream_descriptor.name;
    const state = writeJson(dir, 'last-state.json', `${last}\n`);
    const next = await runCli(SOURCE_BIN, ['read', '--config', join(dir, 'config.json'), '--catalog', join(ROOT, 'catalog', 'configured_catalog.json'), '--state', state]);
    expect(next.code, next.stderr).toBe(0);
    const warnings = parseLines(next.stdout).filter((m) => m.type === 'LOG' && (m.log as { level: string }).level === 'WARN').map((m) => (m.log as { message: string }).message);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(new RegExp(`^The state file holds one STATE message, of stream "${stream}"; .* read from start_date\\. A read writes one STATE per stream: keep them all \\(grep '\\^\\{"type":"STATE"' out\\.jsonl > state\\.json\\), not only the last\\.$`));
    // Which stream ends last is not fixed: an incremental one resumes (a few look-back records), pipeline_stages is read whole again.
    const again = records(writeJson(dir, 'next-1.jsonl', next.stdout), stream);
    const before = records(writeJson(dir, 'full-1.jsonl', full.stdout), stream);
    if (stream === 'pipeline_stages') expect(again).toBe(before);
    else expect(again).toBeLessThan(before / 4 + 1);
  });
});

/** The pages that may hold recipes: the README and every page of docs/. */
function pages(): string[] {
  return ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
}

describe('every recipe of the README and docs/ is run by a test', () => {
  const testFiles = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? testFiles(join(dir, e.name)) : e.name.endsWith('.test.ts') ? [join(dir, e.name)] : []));
  const tests = testFiles(join(ROOT, 'test')).map((f) => readFileSync(f, 'utf8'));

  it.each(pages())('%s: each `<!-- recipe: NAME -->` marker is named, next to docRecipe of its page, in a test file', (page) => {
    const names = [...readFileSync(join(ROOT, page), 'utf8').matchAll(/<!-- recipe: ([\w-]+) -->/g)].map((m) => m[1] as string);
    // A runner reads recipes with docRecipe (or readmeRecipe, for the README) and names this page as a string.
    const reads = (text: string): boolean => text.includes('docRecipe(') || (page === 'README.md' && text.includes('readmeRecipe('));
    const runners = tests.filter((text) => reads(text) && (text.includes(`'${page}'`) || (page === 'README.md' && text.includes('readmeRecipe('))));
    for (const name of names) expect(runners.some((text) => text.includes(`'${name}'`)), `${page}: ${name}`).toBe(true);
  });

  it('the recipes are where the tests look for them (at least one per page that has any)', () => {
    const all = pages().flatMap((page) => [...readFileSync(join(ROOT, page), 'utf8').matchAll(/<!-- recipe: ([\w-]+) -->/g)].map((m) => `${page}: ${m[1] as string}`));
    expect(all).toEqual(expect.arrayContaining([
      'README.md: quick-start', 'docs/state.md: airbyte-state', 'docs/state.md: emulator-changes', 'docs/airbyte.md: airbyte-configured-catalog',
      'docs/networking.md: private-ca-proxy', 'docs/singer.md: singer-setup', 'docs/singer.md: singer-stop',
    ]));
  });
});
