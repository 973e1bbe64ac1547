/**
 * The layout keeps the architecture: a test over the import graph of src/
 * and of the emulator package's packages/emulator/src/, no import circle, the
 * rule that only the streams table names a stream, and the Layout section of
 * CONTRIBUTING.md naming every folder. The rules are those of its Layout
 * table.
 *
 * The graph is the TypeScript compiler's: it parses every file of the project
 * (tsconfig.json) and resolves each module specifier as `tsc` does (nodenext,
 * the `paths` of the workspace entries). An edge is any static import or
 * re-export, an import of types, an `import()`, an `import x = require()` or a
 * `require()` call, `typeof import()` and `import('…').T`, whatever the quotes
 * (single, double or a template without substitutions); comments and strings
 * are not code, so they count for nothing. A specifier that is computed or that
 * resolves to nothing fails the test.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { SyntaxKind, type Node, type SourceFile } from 'typescript/unstable/ast';
import { API, type Project } from 'typescript/unstable/sync';
import { describe, expect, it } from 'vitest';
import { STREAMS } from '../src/streams.js';
import { ROOT, tempDir } from './helpers/cli.js';
import { projectFolders } from './helpers/folders.js';

/** Where a file of src/ (or of the emulator package, `emulator`) belongs. */
type Area = 'core' | 'schemas' | 'client' | 'engine' | 'report' | 'progress' | 'pipes' | 'protocols' | 'protocols/airbyte' | 'protocols/singer' | 'replica' | 'stores' | 'stores/postgres' | 'stores/duckdb' | 'cli' | 'emulator';

/** What each area may import (besides itself, node: built-ins and npm packages). */
const ALLOWED: Readonly<Record<Area, readonly Area[]>> = {
  core: ['schemas'],
  schemas: ['core'],
  client: ['core', 'schemas'],
  engine: ['client', 'core', 'schemas'],
  /** The run's report: what the engine tells (its RunObserver, its types of states) in, the summary out, for the command line and Pipes. */
  report: ['engine', 'core', 'schemas'],
  /** The status line for people: plain data in, nothing imported. */
  progress: [],
  /** Dagster Pipes: the run's report in, messages out; never the client nor the engine. */
  pipes: ['report', 'core'],
  /** src/protocols/*.ts: what the faces share (telling catalogs and state files apart). */
  protocols: ['engine', 'progress', 'core', 'schemas'],
  'protocols/airbyte': ['protocols', 'engine', 'progress', 'core', 'schemas'],
  'protocols/singer': ['protocols', 'engine', 'progress', 'core', 'schemas'],
  /** The replica's command opens its store: the SQLite file, or (by import()) a PostgreSQL or DuckDB store. */
  replica: ['stores', 'stores/postgres', 'stores/duckdb', 'engine', 'report', 'progress', 'core', 'schemas'],
  /** src/stores/*.ts: what the stores share (the Store interface, the target, typed columns and drift, rows); the engine's types of states and records. */
  stores: ['engine', 'core', 'schemas'],
  'stores/postgres': ['stores', 'engine', 'core', 'schemas'],
  'stores/duckdb': ['stores', 'engine', 'core', 'schemas'],
  cli: ['protocols', 'protocols/airbyte', 'protocols/singer', 'replica', 'engine', 'report', 'pipes', 'core', 'schemas'],
  emulator: ['schemas'],
};

/** npm packages only some areas may load: HTTP is the client's alone. */
const PACKAGES: Readonly<Record<string, readonly Area[]>> = {
  undici: ['client'],
  // The stores' drivers: each loaded by its store alone (with import(), so that a run into SQLite never loads them).
  pg: ['stores/postgres'],
  'pg-copy-streams': ['stores/postgres'],
  '@duckdb/node-api': ['stores/duckdb'],
};

/** The workspace packages' names as imported (tsconfig.json's `paths`): the connector's one public entry, the emulator. */
const ENTRIES: readonly string[] = ['source-data-read/schemas', 'data-read-emulator'];

/** The folders of the shared core, besides src/*.ts (the streams table, errors): one area with one import rule. */
const CORE_FOLDERS: readonly string[] = ['config', 'network', 'runtime', 'personal-data'];

/** A project's two trees of sources: its src/ and the emulator package's sources (one area, `emulator`). */
interface Trees {
  readonly root: string;
  readonly src: string;
  readonly emulator: string;
}

const trees = (root: string): Trees => ({ root, src: join(root, 'src'), emulator: join(root, 'packages', 'emulator', 'src') });
const THIS: Trees = trees(ROOT);
const SRC = THIS.src;

const inside = (dir: string, file: string): boolean => !relative(dir, file).startsWith('..');

function areaOf(file: string, at: Trees = THIS): Area {
  if (inside(at.emulator, file)) return 'emulator';
  const rel = relative(at.src, file).split('\\').join('/');
  if (!rel.includes('/')) return 'core';
  const [top, sub] = rel.split('/');
  if (CORE_FOLDERS.includes(top as string)) return 'core';
  if (top === 'protocols') return sub?.endsWith('.ts') ? 'protocols' : (`protocols/${sub}` as Area);
  if (top === 'stores') return sub?.endsWith('.ts') ? 'stores' : (`stores/${sub}` as Area);
  return top as Area;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .sort()
    .map((f) => join(dir, f));
}

/** How a file loads a module: at its start, as types only (erased), or when it runs (`import()`). */
type Kind = 'static' | 'type' | 'lazy';

interface Edge {
  readonly from: string;
  readonly to: string;
  readonly fromArea: Area;
  readonly toArea: Area | undefined;
  readonly pkg: string | undefined;
  readonly kind: Kind;
}

/** The import graph of a project's two trees, what could not be resolved, and the classes each file declares. */
interface Graph {
  readonly edges: readonly Edge[];
  /** Specifiers that are computed (`import(name)`) or that resolve to no file, in words: each one fails the test. */
  readonly unresolved: readonly string[];
  /** Class names, each with the files declaring it (relative to the root). */
  readonly classes: ReadonlyMap<string, readonly string[]>;
  /** Node's built-in modules each file loads (`node:` written out), and how. */
  readonly builtins: readonly { readonly from: string; readonly spec: string; readonly kind: Kind }[];
}

/** A module reference in a file: the specifier's node (a string literal, or whatever expression stands there) and how it loads. */
interface Reference {
  readonly node: Node;
  readonly kind: Kind;
}

const isStringLike = (node: Node): node is Node & { readonly text: string } =>
  node.kind === SyntaxKind.StringLiteral || node.kind === SyntaxKind.NoSubstitutionTemplateLiteral;

/** Every module reference of a parsed file, and the names of the classes it declares, from its syntax tree. */
function references(file: SourceFile): { readonly refs: Reference[]; readonly classes: string[] } {
  const refs: Reference[] = [];
  const classes: string[] = [];
  const typeOnlyList = (elements: readonly { readonly isTypeOnly: boolean }[] | undefined): boolean =>
    elements !== undefined && elements.length > 0 && elements.every((e) => e.isTypeOnly);
  const visit = (node: Node): void => {
    switch (node.kind) {
      case SyntaxKind.ImportDeclaration: {
        const { importClause: clause, moduleSpecifier } = node as Node & import('typescript/unstable/ast').ImportDeclaration;
        const named = clause?.namedBindings?.kind === SyntaxKind.NamedImports ? (clause.namedBindings as import('typescript/unstable/ast').NamedImports).elements : undefined;
        const typeOnly = clause !== undefined && (clause.phaseModifier === SyntaxKind.TypeKeyword || (clause.name === undefined && typeOnlyList(named)));
        refs.push({ node: moduleSpecifier, kind: typeOnly ? 'type' : 'static' });
        return;
      }
      case SyntaxKind.ExportDeclaration: {
        const { moduleSpecifier, isTypeOnly, exportClause } = node as Node & import('typescript/unstable/ast').ExportDeclaration;
        if (moduleSpecifier === undefined) return;
        const named = exportClause?.kind === SyntaxKind.NamedExports ? (exportClause as import('typescript/unstable/ast').NamedExports).elements : undefined;
        refs.push({ node: moduleSpecifier, kind: isTypeOnly || typeOnlyList(named) ? 'type' : 'static' });
        return;
      }
      case SyntaxKind.ImportEqualsDeclaration: {
        const { moduleReference, isTypeOnly } = node as Node & import('typescript/unstable/ast').ImportEqualsDeclaration;
        if (moduleReference.kind === SyntaxKind.ExternalModuleReference) {
          refs.push({ node: (moduleReference as import('typescript/unstable/ast').ExternalModuleReference).expression, kind: isTypeOnly ? 'type' : 'static' });
        }
        return;
      }
      case SyntaxKind.ImportType: {
        // `typeof import('…')` and `import('…').Name`: types only.
        const { argument } = node as Node & import('typescript/unstable/ast').ImportTypeNode;
        refs.push({ node: argument.kind === SyntaxKind.LiteralType ? (argument as import('typescript/unstable/ast').LiteralTypeNode).literal : argument, kind: 'type' });
        break;
      }
      case SyntaxKind.CallExpression: {
        const call = node as Node & import('typescript/unstable/ast').CallExpression;
        const callee = call.expression;
        const isRequire = callee.kind === SyntaxKind.Identifier && (callee as import('typescript/unstable/ast').Identifier).text === 'require';
        // `import(…)` loads when it runs; a `require(…)` (createRequire's) loads as surely as a static import.
        if (callee.kind === SyntaxKind.ImportKeyword || isRequire) {
          const first = call.arguments[0];
          if (first !== undefined) refs.push({ node: first, kind: isRequire ? 'static' : 'lazy' });
        }
        break;
      }
      case SyntaxKind.ClassDeclaration: {
        const name = (node as Node & import('typescript/unstable/ast').ClassDeclaration).name;
        if (name !== undefined) classes.push(name.text);
        break;
      }
    }
    node.forEachChild(visit);
  };
  file.forEachChild(visit);
  return { refs, classes };
}

/** The package a bare specifier names (`@scope/name` or `name`). */
const packageOf = (spec: string): string => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : (spec.split('/')[0] as string));

/**
 * The file a specifier leads to where the compiler does not say: a `require()` in a TypeScript module, which `tsc`
 * leaves unresolved. A relative path resolves as `tsc` maps an emitted name to its source (`.js` to `.ts`), a bare
 * one as Node resolves it from the file.
 */
function fallback(fromFile: string, spec: string): string | undefined {
  try {
    if (!spec.startsWith('.')) return createRequire(fromFile).resolve(spec);
    const target = resolve(dirname(fromFile), spec).replace(/\.([cm]?)js$/, '.$1ts');
    readFileSync(target);
    return target;
  } catch {
    return undefined;
  }
}

/** The import graph of a project's trees, read by the compiler from the project's tsconfig.json. */
function readGraph(project: Project, at: Trees): Graph {
  const edges: Edge[] = [];
  const unresolved: string[] = [];
  const classes = new Map<string, string[]>();
  const builtins: Graph['builtins'][number][] = [];
  const files = [...sourceFiles(at.src).map((f) => [at.src, f]), ...sourceFiles(at.emulator).map((f) => [at.emulator, f])] as [string, string][];
  for (const [tree, file] of files) {
    const from = relative(at.root, file);
    const parsed = project.program.getSourceFile(file);
    if (parsed === undefined) {
      unresolved.push(`${from}: not in the project of tsconfig.json`);
      continue;
    }
    const { refs, classes: declared } = references(parsed);
    for (const name of declared) classes.set(name, [...(classes.get(name) ?? []), from]);
    const literal = refs.filter((r) => isStringLike(r.node));
    for (const r of refs) if (!isStringLike(r.node)) unresolved.push(`${from}: a computed module path (${parsed.text.slice(r.node.pos, r.node.end).trim()})`);
    const symbols = literal.length === 0 ? [] : project.checker.getSymbolAtLocation(literal.map((r) => r.node));
    literal.forEach((r, i) => {
      const spec = (r.node as Node & { readonly text: string }).text;
      if (spec.startsWith('node:') || isBuiltin(spec)) {
        builtins.push({ from, spec: spec.startsWith('node:') ? spec : `node:${spec}`, kind: r.kind });
        return;
      }
      const declaration = symbols[i]?.declarations[0];
      const target = declaration?.kind === SyntaxKind.SourceFile ? declaration.path : fallback(file, spec);
      const fromArea = areaOf(file, at);
      if (target === undefined) {
        unresolved.push(`${from}: '${spec}' resolves to no file`);
      } else if (spec.startsWith('.')) {
        // A relative path stays inside its own package's sources.
        edges.push({ from, to: relative(at.root, target), fromArea, toArea: inside(tree, target) ? areaOf(target, at) : undefined, pkg: undefined, kind: r.kind });
      } else if (ENTRIES.includes(spec)) {
        edges.push({ from, to: spec, fromArea, toArea: inside(at.src, target) || inside(at.emulator, target) ? areaOf(target, at) : undefined, pkg: undefined, kind: r.kind });
      } else {
        edges.push({ from, to: spec, fromArea, toArea: undefined, pkg: packageOf(spec), kind: r.kind });
      }
    });
  }
  return { edges, unresolved, classes, builtins };
}

/** The graphs of several projects (each root with its tsconfig.json), read by one compiler process. */
function readGraphs(roots: readonly string[]): Graph[] {
  const api = new API({ cwd: ROOT });
  try {
    const snapshot = api.updateSnapshot({ openProjects: roots.map((root) => join(root, 'tsconfig.json')) });
    return roots.map((root) => {
      const project = snapshot.getProject(join(root, 'tsconfig.json'));
      if (project === undefined) throw new Error(`no TypeScript project at ${root}`);
      return readGraph(project, trees(root));
    });
  } finally {
    api.close();
  }
}

/** The edges that cross a boundary the Layout table does not allow, in words. */
function forbidden(graph: readonly Edge[]): string[] {
  return graph
    .filter((e) => e.toArea !== undefined && e.toArea !== e.fromArea && !ALLOWED[e.fromArea].includes(e.toArea))
    .map((e) => `${e.from} (${e.fromArea}) imports ${e.to} (${e.toArea})`);
}

/** The edges that leave the two trees for anything but an npm package or a declared entry, in words. */
function exits(graph: readonly Edge[]): string[] {
  return graph.filter((e) => e.pkg === undefined && e.toArea === undefined).map((e) => `${e.from} imports ${e.to}`);
}

/** The npm packages loaded where the Layout table does not allow them (undici outside the client), in words. */
function misplaced(graph: readonly Edge[]): string[] {
  return graph.filter((e) => e.pkg !== undefined && PACKAGES[e.pkg] !== undefined && !PACKAGES[e.pkg]?.includes(e.fromArea)).map((e) => `${e.from} imports ${e.to}`);
}

/** One import circle among the files of src/ (any kind of import), as the files around it, or undefined when there is none. */
function findCycle(graph: readonly Edge[]): string[] | undefined {
  const next = new Map<string, string[]>();
  for (const e of graph) if (e.pkg === undefined && !ENTRIES.includes(e.to)) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
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

/**
 * A small project laid out as this one, whose files break the rules in the ways a pattern over the text would
 * miss: double quotes, a template, `require()`, a re-export, an import of types, a computed path, a missing file.
 */
function brokenProject(): string {
  const root = tempDir('sdr-architecture-');
  const write = (file: string, text: string): void => {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  };
  write(
    'tsconfig.json',
    JSON.stringify({
      compilerOptions: {
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        types: [],
        paths: { 'data-read-emulator': ['./packages/emulator/src/index.ts'] },
      },
      include: ['src', 'packages/emulator/src'],
    }),
  );
  write('package.json', '{ "type": "module" }\n');
  // This project's packages (undici), as a clone installs them.
  symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
  write('src/client/client.ts', 'export const client = 1;\n');
  write('src/engine/session.ts', 'export type Session = { readonly id: string };\nexport const session = 1;\n');
  write(
    'src/protocols/airbyte/commands.ts',
    [
      'declare const require: (id: string) => unknown;',
      '// import { client } from \'../../client/client.js\'; (a comment: no edge)',
      'const text = "import { client } from \'../../client/client.js\'"; // a string: no edge',
      'import { client } from "../../client/client.js";',
      'export { session } from "../../engine/session.js";',
      'export type { Session } from \'../../engine/session.js\';',
      'const lazy = () => import(`../../client/client.js`);',
      'const pool = require("undici");',
      'const required = require(\'../../client/client.js\');',
      'const name = "client";',
      'const computed = () => import(`../../client/${name}.js`);',
      'import "./missing.js";',
      'export { client, text, lazy, pool, required, computed };',
      '',
    ].join('\n'),
  );
  write('src/engine/sync.ts', "import { emulator } from 'data-read-emulator';\nexport const sync = emulator;\n");
  write('packages/emulator/src/index.ts', 'import { client } from "../../../src/client/client.js";\nexport const emulator = client;\n');
  return root;
}

const [GRAPH, BROKEN] = readGraphs([ROOT, brokenProject()]) as [Graph, Graph];

describe('the import graph of src/ and of the emulator package', () => {
  const all = GRAPH.edges;

  it('reads the graph (a parser that finds nothing would pass anything), and resolves every specifier', () => {
    expect(all.length).toBeGreaterThan(150);
    expect(all.some((e) => e.from === 'packages/emulator/src/openapi.ts' && e.to === 'source-data-read/schemas' && e.toArea === 'schemas')).toBe(true);
    expect(all.some((e) => e.from === 'src/cli/source.ts' && e.to === 'src/protocols/airbyte/commands.ts' && e.kind === 'lazy')).toBe(true);
    expect(all.some((e) => e.from === 'src/engine/session.ts' && e.to === 'src/engine/connect.ts' && e.kind === 'type')).toBe(true);
    expect(all.some((e) => e.from === 'src/client/route.ts' && e.pkg === 'undici' && e.kind === 'static')).toBe(true);
    expect(GRAPH.unresolved).toEqual([]);
  });

  it('sees every way of loading a module: double quotes, templates, require(), re-exports, types; not comments or strings', () => {
    const from = 'src/protocols/airbyte/commands.ts';
    const seen = BROKEN.edges.filter((e) => e.from === from).map((e) => `${e.kind} ${e.to}`);
    expect(seen).toEqual([
      'static src/client/client.ts',
      'static src/engine/session.ts',
      'type src/engine/session.ts',
      'lazy src/client/client.ts',
      'static undici',
      'static src/client/client.ts',
    ]);
    expect(BROKEN.unresolved).toEqual([
      `${from}: a computed module path (\`../../client/\${name}.js\`)`,
      `${from}: './missing.js' resolves to no file`,
    ]);
  });

  it('imports only across allowed boundaries (CONTRIBUTING.md, Layout)', () => {
    expect(forbidden(all)).toEqual([]);
  });

  it('catches a forbidden edge fed to the checker (the rule is not vacuous)', () => {
    const faceToClient = fed('src/protocols/airbyte/commands.ts', 'src/client/client.ts');
    const clientToEngine = fed('src/client/client.ts', 'src/engine/session.ts');
    const toEmulator: Edge = { ...fed('src/engine/session.ts', 'src/engine/sync.ts'), to: 'data-read-emulator', toArea: 'emulator' };
    const emulatorToClient = fed('packages/emulator/src/server.ts', 'src/client/client.ts');
    expect(forbidden([...all, faceToClient, clientToEngine, toEmulator, emulatorToClient])).toEqual([
      'src/protocols/airbyte/commands.ts (protocols/airbyte) imports src/client/client.ts (client)',
      'src/client/client.ts (client) imports src/engine/session.ts (engine)',
      'src/engine/session.ts (engine) imports data-read-emulator (emulator)',
      'packages/emulator/src/server.ts (emulator) imports src/client/client.ts (client)',
    ]);
    for (const area of Object.keys(ALLOWED) as Area[]) if (area !== 'emulator') expect(ALLOWED[area], area).not.toContain('emulator');
    expect(ALLOWED.emulator).toEqual(['schemas']);
  });

  it('catches the forbidden edges of files that break the rules (double quotes, a template, require(), the emulator)', () => {
    expect(forbidden(BROKEN.edges)).toEqual([
      'src/engine/sync.ts (engine) imports data-read-emulator (emulator)',
      'src/protocols/airbyte/commands.ts (protocols/airbyte) imports src/client/client.ts (client)',
      'src/protocols/airbyte/commands.ts (protocols/airbyte) imports src/client/client.ts (client)',
      'src/protocols/airbyte/commands.ts (protocols/airbyte) imports src/client/client.ts (client)',
    ]);
    expect(misplaced(BROKEN.edges)).toEqual(['src/protocols/airbyte/commands.ts imports undici']);
    expect(exits(BROKEN.edges)).toEqual(['packages/emulator/src/index.ts imports src/client/client.ts']);
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
    expect(exits(all)).toEqual([]);
    // The emulator reaches the connector through its public entry alone: no deep import of source-data-read, no relative path out.
    expect(all.filter((e) => e.pkg === 'source-data-read').map((e) => `${e.from} imports ${e.to}`)).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, { default?: string }> };
    expect(manifest.exports['./schemas']?.default).toBe('./dist/schemas/resources.js');
    const tsconfig = readFileSync(join(ROOT, 'tsconfig.json'), 'utf8');
    for (const entry of ENTRIES) expect(tsconfig, entry).toContain(`"${entry}":`);
    expect(misplaced(all)).toEqual([]);
  });

  it("loads the stores' drivers only with import() (a run into SQLite, or an install without them, never loads them)", () => {
    const drivers = ['pg', 'pg-copy-streams', '@duckdb/node-api'];
    const loads = all.filter((e) => e.pkg !== undefined && drivers.includes(e.pkg));
    expect(loads.filter((e) => e.kind === 'lazy').map((e) => e.pkg).sort()).toEqual(expect.arrayContaining(drivers));
    expect(loads.filter((e) => e.kind === 'static').map((e) => `${e.from} imports ${e.to}`)).toEqual([]);
  });

  it("the executables' entries reach zod only through import(): `spec`, `--help` and `--about` start without the schemas", () => {
    // What a start costs is what its static imports load; zod and the record schemas are most of it.
    const reached = (entry: string): Set<string> => {
      const seen = new Set([entry]);
      for (const file of seen) for (const e of all) if (e.from === file && e.kind === 'static' && e.pkg === undefined) seen.add(e.to);
      return seen;
    };
    for (const entry of ['src/cli/source.ts', 'src/cli/tap.ts']) {
      const files = reached(entry);
      expect(files.size, entry).toBeGreaterThan(3);
      const heavy = all.filter((e) => files.has(e.from) && e.kind === 'static' && (e.pkg === 'zod' || e.to.startsWith('src/schemas/')));
      expect(heavy.map((e) => `${entry} reaches ${e.from}, which imports ${e.pkg ?? e.to}`), entry).toEqual([]);
    }
  });

  it('src/ takes node:http and node:https as types only: an ES import of either reads all its exports, and their lazy WebSocket loads Node\'s own undici at every start', () => {
    const builtins = GRAPH.builtins.filter((b) => b.from.startsWith('src/'));
    // The recorder sees built-ins and tells a value import from a type-only one (node:fs is read, node:http's types are used).
    expect(builtins.map((b) => b.kind)).toEqual(expect.arrayContaining(['static', 'type']));
    expect(builtins.filter((b) => /^node:https?$/.test(b.spec) && b.kind !== 'type').map((b) => `${b.from} imports ${b.spec}`)).toEqual([]);
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
  const shared = (byName: ReadonlyMap<string, readonly string[]>): string[] =>
    [...byName].filter(([, files]) => files.length > 1).map(([name, files]) => `${name}: ${files.join(', ')}`);

  it('no two classes share a name (one ApiError, one UsageError: the emulator names its own ProblemError and OptionError)', () => {
    const byName = GRAPH.classes;
    expect(byName.get('ApiError')).toEqual(['src/client/api-error.ts']);
    expect(byName.get('ProblemError')).toEqual(['packages/emulator/src/problem.ts']);
    expect(shared(byName)).toEqual([]);
    // Not vacuous: the emulator's error under the client's name is caught.
    const again = new Map(byName).set('ApiError', ['src/client/api-error.ts', 'packages/emulator/src/problem.ts']);
    expect(shared(again)).toEqual(['ApiError: src/client/api-error.ts, packages/emulator/src/problem.ts']);
  });

  it('no class lives in a file named types.ts', () => {
    const inTypes = [...GRAPH.classes].filter(([, files]) => files.some((f) => f.endsWith('/types.ts')));
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
