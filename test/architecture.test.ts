/**
 * The layout keeps the architecture: a test over the import graph of src/
 * (static imports, re-exports and lazy `import()`), the rule that only the
 * streams table names a stream, and the Layout section of CONTRIBUTING.md naming every
 * folder. The rules are those of its Layout table.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STREAMS } from '../src/streams.js';
import { ROOT } from './helpers/cli.js';

/** Where a file of src/ belongs. */
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

function areaOf(file: string): Area {
  const rel = relative(SRC, file).split('\\').join('/');
  if (!rel.includes('/')) return 'core';
  const [top, sub] = rel.split('/');
  if (top === 'faces') return sub?.endsWith('.ts') ? 'faces' : (`faces/${sub}` as Area);
  return top as Area;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
}

/** Every module specifier a file loads: `import … from`, `export … from`, `import '…'` and `import('…')`. */
function specifiers(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/gm)) out.push(m[1] as string);
  for (const m of text.matchAll(/^\s*import\s+'([^']+)'/gm)) out.push(m[1] as string);
  for (const m of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) out.push(m[1] as string);
  return out;
}

interface Edge {
  readonly from: string;
  readonly to: string;
  readonly fromArea: Area;
  readonly toArea: Area | undefined;
  readonly pkg: string | undefined;
}

function edges(): Edge[] {
  const out: Edge[] = [];
  for (const file of sourceFiles(SRC)) {
    const fromArea = areaOf(file);
    for (const spec of specifiers(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.')) {
        const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
        const inside = !relative(SRC, target).startsWith('..');
        out.push({ from: relative(ROOT, file), to: relative(ROOT, target), fromArea, toArea: inside ? areaOf(target) : undefined, pkg: undefined });
      } else if (!spec.startsWith('node:')) {
        const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string);
        out.push({ from: relative(ROOT, file), to: spec, fromArea, toArea: undefined, pkg });
      }
    }
  }
  return out;
}

describe('the import graph of src/', () => {
  const all = edges();

  it('reads the graph (a parser that finds nothing would pass anything)', () => {
    expect(all.length).toBeGreaterThan(150);
    expect(all.some((e) => e.from === 'src/cli/source.ts' && e.to === 'src/faces/airbyte/commands.ts')).toBe(true); // a lazy import()
  });

  it('imports only across allowed boundaries (CONTRIBUTING.md, Layout)', () => {
    const broken = all
      .filter((e) => e.toArea !== undefined && e.toArea !== e.fromArea && !ALLOWED[e.fromArea].includes(e.toArea))
      .map((e) => `${e.from} (${e.fromArea}) imports ${e.to} (${e.toArea})`);
    expect(broken).toEqual([]);
  });

  it('leaves src/ only for npm packages, and HTTP (undici) to the client', () => {
    expect(all.filter((e) => e.pkg === undefined && e.toArea === undefined).map((e) => `${e.from} imports ${e.to}`)).toEqual([]);
    const misplaced = all.filter((e) => e.pkg !== undefined && PACKAGES[e.pkg] !== undefined && !PACKAGES[e.pkg]?.includes(e.fromArea));
    expect(misplaced.map((e) => `${e.from} imports ${e.to}`)).toEqual([]);
  });

  it('catches a forbidden edge (the rule is not vacuous)', () => {
    expect(ALLOWED['faces/airbyte']).not.toContain('client');
    expect(ALLOWED['faces/singer']).not.toContain('cli');
    expect(ALLOWED.engine).not.toContain('faces/replica');
    expect(ALLOWED.client).not.toContain('engine');
    expect(ALLOWED.pipes).not.toContain('client');
    for (const area of Object.keys(ALLOWED) as Area[]) if (area !== 'emulator') expect(ALLOWED[area], area).not.toContain('emulator');
    expect(ALLOWED.emulator).toEqual(['schemas']);
  });

  it('the sync runner loads the client only after tuning the heap (a static import would load undici first: +10 MB peak RSS in the bench)', () => {
    const session = readFileSync(join(SRC, 'engine', 'session.ts'), 'utf8');
    expect(session.match(/^import (?!type )[^;]*from '\.\/(connect|sync|service-schemas)\.js'/gm) ?? []).toEqual([]);
    expect(session).toMatch(/tuneHeapForStreaming\(\);\n\s*const \[connect, sync\] = await Promise\.all\(\[import\('\.\/connect\.js'\), import\('\.\/sync\.js'\)\]\);/);
  });

  it('only bin/ starts the emulator: bin/source-data-read hands dist/emulator/cli.js its command, everything else goes to dist/cli/', () => {
    const bin = (name: string): string => readFileSync(join(ROOT, 'bin', name), 'utf8');
    expect(bin('launch.cjs')).toMatch(/import\('\.\.\/dist\/' \+ entry\)/);
    expect(bin('source-data-read')).toMatch(/emulator \? 'emulator\/cli\.js' : 'cli\/source\.js'/);
    expect(bin('tap-data-read')).toMatch(/'cli\/tap\.js'/);
    const entries = readdirSync(join(ROOT, 'bin')).flatMap((name) => [...bin(name).matchAll(/'((?:cli|emulator)\/[a-z]+\.js)'/g)].map((m) => m[1]));
    expect([...new Set(entries)].sort()).toEqual(['cli/source.js', 'cli/tap.js', 'emulator/cli.js']);
  });
});

describe('the streams table is the whole truth about streams', () => {
  it('no product module outside src/streams.ts names a stream or its path in a string literal', () => {
    const names = STREAMS.flatMap((s) => [s.name, s.path]);
    const found: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const rel = relative(ROOT, file);
      // The table itself, the API's resource schemas, and the emulator (it serves the API's paths, not streams).
      if (rel === 'src/streams.ts' || rel === 'src/schemas/resources.ts' || rel.startsWith('src/emulator/')) continue;
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

  it('names every top-level folder and every folder of src/', () => {
    expect(start).toBeGreaterThan(0);
    const topLevel = readdirSync(ROOT, { withFileTypes: true })
      .filter((d) => d.isDirectory() && !['node_modules', 'dist', '.build', '.git', '.cache', '.tmp', 'demo-output', 'coverage'].includes(d.name))
      .map((d) => `${d.name}/`);
    const srcFolders = readdirSync(SRC, { recursive: true, withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => `${relative(ROOT, join(d.parentPath, d.name)).split('\\').join('/')}/`);
    const missing = [...topLevel, ...srcFolders].filter((folder) => !section.includes(`\`${folder}\``));
    expect(missing).toEqual([]);
  });

  it('states the import rule of every area of src/', () => {
    for (const area of Object.keys(ALLOWED)) expect(section, area).toContain(area === 'core' ? '`src/*.ts`' : `\`src/${area}/\``);
  });
});
