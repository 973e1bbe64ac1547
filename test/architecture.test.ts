/**
 * The layout keeps the architecture: a test over the import graph of src/
 * and of the emulator package's packages/emulator/src/ (static imports,
 * re-exports, imports of types and lazy `import()`, comments left out), no
 * import circle, the rule that only the streams table names a stream, and the
 * Layout section of CONTRIBUTING.md naming every folder. The rules are those
 * of its Layout table.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STREAMS } from '../src/streams.js';
import { ROOT, tempDir } from './helpers/cli.js';
import { projectFolders } from './helpers/folders.js';

/** Where a file of src/ (or of the emulator package, `emulator`) belongs. */
type Area = 'core' | 'schemas' | 'client' | 'engine' | 'progress' | 'pipes' | 'faces' | 'faces/airbyte' | 'faces/singer' | 'faces/replica' | 'cli' | 'emulator';

/** What each area may import (besides itself, node: built-ins and npm packages). */
const ALLOWED: Readonly<Record<Area, readonly Area[]>> = {
  core: ['schemas'],
  schemas: ['core'],
  client: ['core', 'schemas'],
  engine: ['client', 'core', 'schemas'],
  /** The status line for people: plain data in, nothing imported. */
  progress: [],
  /** Dagster Pipes: the run's report (engine types) in, messages out; never the client. */
  pipes: ['engine', 'core'],
  /** src/faces/*.ts: what the faces share (telling catalogs apart, a sync's progress at a terminal). */
  faces: ['engine', 'progress', 'core', 'schemas'],
  'faces/airbyte': ['faces', 'engine', 'progress', 'core', 'schemas'],
  'faces/singer': ['faces', 'engine', 'progress', 'core', 'schemas'],
  'faces/replica': ['faces', 'engine', 'progress', 'core', 'schemas'],
  cli: ['faces', 'faces/airbyte', 'faces/singer', 'faces/replica', 'engine', 'pipes', 'core', 'schemas'],
  emulator: ['schemas'],
};

/** npm packages only some areas may load: HTTP is the client's alone. */
const PACKAGES: Readonly<Record<string, readonly Area[]>> = { undici: ['client'] };

const SRC = join(ROOT, 'src');
/** The emulator package's sources: one area, `emulator`. */
const EMULATOR = join(ROOT, 'packages', 'emulator', 'src');
/** The workspace packages' names as imported, and the area each entry leads to: the connector's one public entry, the emulator. */
const ENTRIES: Readonly<Record<string, Area>> = { 'source-data-read/schemas': 'schemas', 'data-read-emulator': 'emulator' };

/** The folders of the shared core, besides src/*.ts (the streams table, errors): one area with one import rule. */
const CORE_FOLDERS: readonly string[] = ['config', 'network', 'json', 'process', 'personal-data'];

function areaOf(file: string): Area {
  if (!relative(EMULATOR, file).startsWith('..')) return 'emulator';
  const rel = relative(SRC, file).split('\\').join('/');
  if (!rel.includes('/')) return 'core';
  const [top, sub] = rel.split('/');
  if (CORE_FOLDERS.includes(top as string)) return 'core';
  if (top === 'faces') return sub?.endsWith('.ts') ? 'faces' : (`faces/${sub}` as Area);
  return top as Area;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
}

/** How a file loads a module: at its start, as types only (erased), or when it runs (`import()`). */
type Kind = 'static' | 'type' | 'lazy';

/** A file's text without its comments (string literals kept), so that a commented-out import counts for nothing. */
function code(text: string): string {
  return text.replace(/'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`|\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, (m) => (m.startsWith('/') ? ' '.repeat(m.length) : m));
}

/** Every module a file loads: `import … from`, `export … from`, `import '…'`, `require('…')`, `import('…')` and `typeof import('…')`, each with how. */
function specifiers(text: string): { readonly spec: string; readonly kind: Kind }[] {
  const out: { spec: string; kind: Kind }[] = [];
  const source = code(text);
  for (const m of source.matchAll(/^\s*(import|export)\s([^;]*?)from\s+'([^']+)'/gm)) {
    const clause = (m[2] as string).trim();
    const names = /^\{([^}]*)\}$/.exec(clause)?.[1]?.split(',').map((n) => n.trim()).filter((n) => n !== '');
    const typeOnly = clause.startsWith('type ') || (names !== undefined && names.length > 0 && names.every((n) => n.startsWith('type ')));
    out.push({ spec: m[3] as string, kind: typeOnly ? 'type' : 'static' });
  }
  for (const m of source.matchAll(/^\s*import\s+'([^']+)'/gm)) out.push({ spec: m[1] as string, kind: 'static' });
  // createRequire's require (network/ca-certificates.ts loads node:crypto so, on first use).
  for (const m of source.matchAll(/\brequire\(\s*'([^']+)'\s*\)/g)) out.push({ spec: m[1] as string, kind: 'static' });
  for (const m of source.matchAll(/(\btypeof\s+)?\bimport\(\s*'([^']+)'\s*\)/g)) out.push({ spec: m[2] as string, kind: m[1] === undefined ? 'lazy' : 'type' });
  return out;
}

interface Edge {
  readonly from: string;
  readonly to: string;
  readonly fromArea: Area;
  readonly toArea: Area | undefined;
  readonly pkg: string | undefined;
  readonly kind: Kind;
}

function edges(): Edge[] {
  const out: Edge[] = [];
  for (const [root, file] of [...sourceFiles(SRC).map((f) => [SRC, f]), ...sourceFiles(EMULATOR).map((f) => [EMULATOR, f])] as [string, string][]) {
    const fromArea = areaOf(file);
    for (const { spec, kind } of specifiers(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.')) {
        // A relative import stays inside its own package's sources.
        const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
        const inside = !relative(root, target).startsWith('..');
        out.push({ from: relative(ROOT, file), to: relative(ROOT, target), fromArea, toArea: inside ? areaOf(target) : undefined, pkg: undefined, kind });
      } else if (ENTRIES[spec] !== undefined) {
        out.push({ from: relative(ROOT, file), to: spec, fromArea, toArea: ENTRIES[spec], pkg: undefined, kind });
      } else if (!spec.startsWith('node:')) {
        const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string);
        out.push({ from: relative(ROOT, file), to: spec, fromArea, toArea: undefined, pkg, kind });
      }
    }
  }
  return out;
}

/** The edges that cross a boundary the Layout table does not allow, in words. */
function forbidden(graph: readonly Edge[]): string[] {
  return graph
    .filter((e) => e.toArea !== undefined && e.toArea !== e.fromArea && !ALLOWED[e.fromArea].includes(e.toArea))
    .map((e) => `${e.from} (${e.fromArea}) imports ${e.to} (${e.toArea})`);
}

/** One import circle among the files of src/ (any kind of import), as the files around it, or undefined when there is none. */
function findCycle(graph: readonly Edge[]): string[] | undefined {
  const next = new Map<string, string[]>();
  for (const e of graph) if (e.pkg === undefined && ENTRIES[e.to] === undefined) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const walk = (file: string): string[] | undefined => {
    if (onPath.has(file)) return [...path.slice(path.indexOf(file)), file];
    if (done.has(file)) return undefined;
    path.push(file);
    onPath.add(file);
    for (const to of next.get(file) ?? []) {
      const cycle = walk(to);
      if (cycle !== undefined) return cycle;
    }
    path.pop();
    onPath.delete(file);
    done.add(file);
    return undefined;
  };
  for (const file of [...next.keys()].sort()) {
    const cycle = walk(file);
    if (cycle !== undefined) return cycle;
  }
  return undefined;
}

/** An edge for the checkers to catch: a file of `fromArea` loading `to` at its start. */
function fed(from: string, to: string): Edge {
  const area = (file: string): Area => areaOf(join(ROOT, file));
  return { from, to, fromArea: area(from), toArea: area(to), pkg: undefined, kind: 'static' };
}

describe('the import graph of src/ and of the emulator package', () => {
  const all = edges();

  it('reads the graph (a parser that finds nothing would pass anything)', () => {
    expect(all.length).toBeGreaterThan(150);
    expect(all.some((e) => e.from === 'packages/emulator/src/openapi.ts' && e.to === 'source-data-read/schemas' && e.toArea === 'schemas')).toBe(true);
    expect(all.some((e) => e.from === 'src/cli/source.ts' && e.to === 'src/faces/airbyte/commands.ts' && e.kind === 'lazy')).toBe(true);
    expect(all.some((e) => e.from === 'src/engine/session.ts' && e.to === 'src/engine/connect.ts' && e.kind === 'type')).toBe(true);
    expect(all.some((e) => e.from === 'src/client/route.ts' && e.pkg === 'undici' && e.kind === 'static')).toBe(true);
    expect(specifiers("const { Pool } = require('undici');")).toEqual([{ spec: 'undici', kind: 'static' }]);
  });

  it('imports only across allowed boundaries (CONTRIBUTING.md, Layout)', () => {
    expect(forbidden(all)).toEqual([]);
  });

  it('catches a forbidden edge fed to the checker (the rule is not vacuous)', () => {
    const faceToClient = fed('src/faces/airbyte/commands.ts', 'src/client/client.ts');
    const clientToEngine = fed('src/client/client.ts', 'src/engine/session.ts');
    const toEmulator: Edge = { ...fed('src/engine/session.ts', 'src/engine/sync.ts'), to: 'data-read-emulator', toArea: 'emulator' };
    const emulatorToClient = fed('packages/emulator/src/server.ts', 'src/client/client.ts');
    expect(forbidden([...all, faceToClient, clientToEngine, toEmulator, emulatorToClient])).toEqual([
      'src/faces/airbyte/commands.ts (faces/airbyte) imports src/client/client.ts (client)',
      'src/client/client.ts (client) imports src/engine/session.ts (engine)',
      'src/engine/session.ts (engine) imports data-read-emulator (emulator)',
      'packages/emulator/src/server.ts (emulator) imports src/client/client.ts (client)',
    ]);
    for (const area of Object.keys(ALLOWED) as Area[]) if (area !== 'emulator') expect(ALLOWED[area], area).not.toContain('emulator');
    expect(ALLOWED.emulator).toEqual(['schemas']);
  });

  it('has no import circle in src/ (types and import() included)', () => {
    expect(findCycle(all)).toBeUndefined();
  });

  it('finds a circle fed to it (the check is not vacuous)', () => {
    expect(findCycle([...all, fed('src/client/proxy-error.ts', 'src/client/route.ts')])).toEqual([
      'src/client/proxy-error.ts',
      'src/client/route.ts',
      'src/client/proxy-error.ts',
    ]);
    expect(findCycle([...all, { ...fed('src/engine/service-schemas.ts', 'src/engine/connect.ts'), kind: 'lazy' }])).toContain('src/engine/connect.ts');
  });

  it('leaves src/ (and packages/emulator/src/) only for npm packages and the declared entries, and HTTP (undici) to the client', () => {
    expect(all.filter((e) => e.pkg === undefined && e.toArea === undefined).map((e) => `${e.from} imports ${e.to}`)).toEqual([]);
    // The emulator reaches the connector through its public entry alone: no deep import of source-data-read, no relative path out.
    expect(all.filter((e) => e.pkg === 'source-data-read').map((e) => `${e.from} imports ${e.to}`)).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, { default?: string }> };
    expect(manifest.exports['./schemas']?.default).toBe('./dist/schemas/resources.js');
    const misplaced = all.filter((e) => e.pkg !== undefined && PACKAGES[e.pkg] !== undefined && !PACKAGES[e.pkg]?.includes(e.fromArea));
    expect(misplaced.map((e) => `${e.from} imports ${e.to}`)).toEqual([]);
  });

  it("bin/ starts the connector alone (dist/cli/); the emulator's command is its package's bin", () => {
    const bin = (name: string): string => readFileSync(join(ROOT, 'bin', name), 'utf8');
    expect(bin('launch.cjs')).toMatch(/import\('\.\.\/dist\/' \+ entry\)/);
    expect(bin('source-data-read')).toMatch(/'cli\/source\.js'/);
    expect(bin('tap-data-read')).toMatch(/'cli\/tap\.js'/);
    const entries = readdirSync(join(ROOT, 'bin')).flatMap((name) => [...bin(name).matchAll(/'((?:cli|emulator)\/[a-z]+\.js)'/g)].map((m) => m[1]));
    expect([...new Set(entries)].sort()).toEqual(['cli/source.js', 'cli/tap.js']);
    expect(readdirSync(join(ROOT, 'bin')).join(' ')).not.toMatch(/emulator/);
    expect(readFileSync(join(ROOT, 'packages', 'emulator', 'bin', 'data-read-emulator'), 'utf8')).toMatch(/import\('\.\.\/dist\/cli\.js'\)/);
  });
});

describe('names in src/ say which is which', () => {
  /** The classes src/ declares, by name, with the files declaring each. */
  function classNames(files: readonly string[]): Map<string, string[]> {
    const byName = new Map<string, string[]>();
    for (const file of files) {
      for (const m of code(readFileSync(file, 'utf8')).matchAll(/^\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+([A-Za-z_$][\w$]*)/gm)) {
        byName.set(m[1] as string, [...(byName.get(m[1] as string) ?? []), relative(ROOT, file)]);
      }
    }
    return byName;
  }
  const shared = (byName: Map<string, string[]>): string[] => [...byName].filter(([, files]) => files.length > 1).map(([name, files]) => `${name}: ${files.join(', ')}`);

  it('no two classes share a name (one ApiError, one UsageError: the emulator names its own ProblemError and OptionError)', () => {
    const byName = classNames([...sourceFiles(SRC), ...sourceFiles(EMULATOR)]);
    expect(byName.get('ApiError')).toEqual(['src/client/api-error.ts']);
    expect(byName.get('ProblemError')).toEqual(['packages/emulator/src/problem.ts']);
    expect(shared(byName)).toEqual([]);
    // Not vacuous: the emulator's error under the client's name is caught.
    const again = new Map(byName).set('ApiError', ['src/client/api-error.ts', 'packages/emulator/src/problem.ts']);
    expect(shared(again)).toEqual(['ApiError: src/client/api-error.ts, packages/emulator/src/problem.ts']);
  });

  it('no class lives in a file named types.ts', () => {
    const inTypes = [...classNames(sourceFiles(SRC))].filter(([, files]) => files.some((f) => f.endsWith('/types.ts')));
    expect(inTypes).toEqual([]);
  });
});

describe('the streams table is the whole truth about streams', () => {
  it('no product module outside src/streams.ts names a stream or its path in a string literal', () => {
    const names = STREAMS.flatMap((s) => [s.name, s.path]);
    const found: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const rel = relative(ROOT, file);
      // The table itself and the API's resource schemas (the emulator, outside src/, serves the API's paths, not streams).
      if (rel === 'src/streams.ts' || rel === 'src/schemas/resources.ts') continue;
      const text = readFileSync(file, 'utf8');
      for (const name of names) {
        for (const quote of ["'", '"', '`']) if (text.includes(`${quote}${name}${quote}`)) found.push(`${rel}: ${quote}${name}${quote}`);
      }
    }
    expect(found).toEqual([]);
  });
});

describe("CONTRIBUTING.md's Layout section", () => {
  const readme = readFileSync(join(ROOT, 'CONTRIBUTING.md'), 'utf8');
  const start = readme.indexOf('\n## Layout\n');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));

  it('names every top-level folder, every folder of src/ and every folder of the emulator package (those of the project: git-ignored ones are the user\'s)', () => {
    expect(start).toBeGreaterThan(0);
    const folders = projectFolders(ROOT);
    const wanted = folders.filter((folder) => !folder.slice(0, -1).includes('/') || folder.startsWith('src/') || folder.startsWith('packages/'));
    expect(wanted).toContain('src/cli/');
    expect(wanted).toContain('packages/emulator/src/locales/');
    const missing = wanted.filter((folder) => !section.includes(`\`${folder}\``));
    expect(missing).toEqual([]);
  });

  it("the project's folders leave out what git ignores (the Quick start's example/), and take in what it would add", () => {
    const root = tempDir('sdr-folders-');
    const write = (file: string): void => {
      mkdirSync(dirname(join(root, file)), { recursive: true });
      writeFileSync(join(root, file), 'x\n');
    };
    for (const file of ['.gitignore', 'src/cli/a.ts', 'docs/b.md', 'README.md']) write(file);
    writeFileSync(join(root, '.gitignore'), '/example/\nnode_modules/\n*.tgz\n');
    for (const file of ['example/config.json', 'node_modules/x/index.js', 'new/c.ts']) write(file);
    const git = (...args: string[]) => spawnSync('git', ['-C', root, ...args], { encoding: 'utf8' });
    // Outside a git checkout: .gitignore's plain names.
    expect(projectFolders(root)).toEqual(['docs/', 'new/', 'src/', 'src/cli/']);
    expect(git('init', '-q').status).toBe(0);
    expect(git('add', '.gitignore', 'src', 'docs', 'README.md').status).toBe(0);
    // In a checkout: tracked (src/, docs/) and untracked but not ignored (new/); never example/ or node_modules/.
    expect(projectFolders(root)).toEqual(['docs/', 'new/', 'src/', 'src/cli/']);
  });

  it('states the import rule of every area of src/', () => {
    for (const area of Object.keys(ALLOWED)) expect(section, area).toContain(area === 'core' ? '`src/*.ts`' : area === 'emulator' ? '`packages/emulator/src/`' : `\`src/${area}/\``);
  });
});
