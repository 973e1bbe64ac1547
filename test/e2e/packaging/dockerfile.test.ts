/**
 * The Dockerfile, checked without a Docker engine: Airbyte's image rules
 * (exec-form ENTRYPOINT with absolute paths and the Node flags of the
 * executables (bin/), their malloc arenas in ENV, AIRBYTE_ENTRYPOINT equal to it,
 * non-root `airbyte` user with a writable /airbyte, io.airbyte.* labels that
 * match metadata.yaml), the build pattern, and .dockerignore.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/cli.js';
import { collect, execForm, last, parseDockerfile, type Stage } from './dockerfile.js';
import { parseYaml, type YamlValue } from './yaml.js';

interface PackageJson {
  readonly name: string;
  readonly version: string;
  readonly bin: Record<string, string>;
}

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const pkg = JSON.parse(read('package.json')) as PackageJson;
const stages = parseDockerfile(read('Dockerfile'));
const final = stages.at(-1) as Stage;
const build = stages.find((s) => s.name === 'build');
const env = collect(final, 'ENV');
const labels = collect(final, 'LABEL');
const entrypoint = execForm(last(final, 'ENTRYPOINT')?.args ?? '');
/**
 * The second line of an executable, which sh runs from PATH (Node reads it as a string and a comment): the malloc arenas
 * it sets unless set, the Node flags of a sync (the one `exec node` with flags; the short commands' has none).
 */
const LAUNCH = /^":" \/\/; export MALLOC_ARENA_MAX="\$\{MALLOC_ARENA_MAX:-(\d+)\}"; .*\bexec node((?: --[a-z-]+=\d+)+) "\$0" "\$@"/;
function launchLine(bin: string): RegExpExecArray | null {
  const lines = read(bin).split('\n');
  expect(lines[0], `${bin}'s first line`).toBe('#!/bin/sh');
  const exec = LAUNCH.exec(lines[1] ?? '');
  expect(exec, `${bin}'s second line`).not.toBeNull();
  return exec;
}
/** The Node flags an executable starts a sync's Node with when sh runs it from PATH. */
const launcherFlags = (bin: string): string[] => (launchLine(bin)?.[2] ?? '').trim().split(' ');
/** The MALLOC_ARENA_MAX an executable gives Node when none is set. */
const launcherArenas = (bin: string): string | undefined => launchLine(bin)?.[1];
const runs = (stage: Stage): string => stage.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args).join('\n');

function metadataData(): Record<string, YamlValue> {
  const doc = parseYaml(read('metadata.yaml'));
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error('metadata.yaml is not a mapping');
  const data = doc.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new Error('metadata.yaml has no data mapping');
  return data;
}

/** The target path inside the image of `COPY --from=build SRC DEST`, and the directory it came from. */
function copiesFromBuild(): { src: string; dest: string }[] {
  return final.instructions
    .filter((i) => i.keyword === 'COPY' && i.args.startsWith('--from=build'))
    .map((i) => {
      const [, src, dest] = i.args.split(/\s+/);
      return { src: src ?? '', dest: dest ?? '' };
    });
}

describe('Dockerfile', () => {
  it('has no `# syntax=` directive: BuildKit would fetch that frontend from Docker Hub first, failing offline and mirror-only builds', () => {
    expect(read('Dockerfile')).not.toMatch(/^#\s*syntax\s*=/im);
  });

  it('is multi-stage on node:24-slim, with a build stage and a runtime stage', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(build?.image).toBe('node:24-slim');
    expect(final.image).toBe('node:24-slim');
    expect(final.name).not.toBe('build');
  });

  it('builds with npm ci and npm run build:connector, then keeps production dependencies only', () => {
    if (build === undefined) throw new Error('no build stage');
    const script = runs(build);
    expect(script).toMatch(/\bnpm ci\b/);
    // The connector only: the emulator package (packages/) is neither in the build context nor built.
    expect(script).toMatch(/\bnpm run build:connector\b/);
    expect(script).not.toMatch(/\bnpm run build(?!:connector\b)|--workspace|\bpackages\//);
    expect(build.instructions.filter((i) => i.keyword === 'COPY').map((i) => i.args).join('\n')).not.toMatch(/\bpackages\b/);
    // The runtime tree gets production dependencies only (typescript, vitest... stay behind).
    expect(script).toMatch(/npm (ci|install|prune)\b[^\n&]*--omit=dev/);
    // Dependency installs in the image run no lifecycle scripts: lifecycle scripts would need typescript.
    for (const line of script.split(/&&|\n/).filter((l) => /\bnpm (ci|install)\b/.test(l))) expect(line).toContain('--ignore-scripts');
    // Only what `npm pack` publishes goes in: the image is the npm package.
    expect(script).toMatch(/\bnpm pack\b/);
  });

  it('copies only files that exist and that .dockerignore lets through', () => {
    if (build === undefined) throw new Error('no build stage');
    const ignored = read('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    for (const copy of build.instructions.filter((i) => i.keyword === 'COPY')) {
      const sources = copy.args.split(/\s+/).slice(0, -1);
      for (const source of sources) {
        expect(existsSync(join(ROOT, source)), `COPY ${source}`).toBe(true);
        expect(ignored, `${source} is copied but .dockerignore drops it`).not.toContain(source);
      }
    }
  });

  it('has an exec-form ENTRYPOINT with absolute paths that runs the Airbyte bin with the Node flags it gives itself from PATH', () => {
    expect(entrypoint).not.toBeNull();
    const args = entrypoint ?? [];
    expect(args.length).toBeGreaterThanOrEqual(2);
    expect(args[0]).toBe('/usr/local/bin/node'); // where the node images keep node
    expect(args.slice(1, -1)).toEqual(launcherFlags('bin/source-data-read'));
    expect(launcherFlags('bin/tap-data-read')).toEqual(launcherFlags('bin/source-data-read'));
    for (const arg of [args[0], args.at(-1)]) expect(arg?.startsWith('/'), `${arg} is not absolute`).toBe(true);
    const script = args.at(-1) ?? '';
    const copy = copiesFromBuild().find((c) => script.startsWith(`${c.dest}/`));
    expect(copy, `${script} is not inside a COPY --from=build destination`).toBeDefined();
    const relative = script.slice((copy?.dest.length ?? 0) + 1);
    expect(relative).toBe(pkg.bin['source-data-read']);
    // The build stage really produces that tree: the unpacked package under the copied folder.
    expect(runs(build as Stage)).toContain(`-C ${copy?.src}`);
  });

  it('sets the malloc arenas the executables set from PATH, in ENV (which `docker run -e` overrides)', () => {
    expect(launcherArenas('bin/source-data-read')).toBeDefined();
    expect(launcherArenas('bin/tap-data-read')).toBe(launcherArenas('bin/source-data-read'));
    expect(env.get('MALLOC_ARENA_MAX')).toBe(launcherArenas('bin/source-data-read'));
  });

  it('sets AIRBYTE_ENTRYPOINT to the ENTRYPOINT joined with spaces', () => {
    expect(env.get('AIRBYTE_ENTRYPOINT')).toBe((entrypoint ?? []).join(' '));
  });

  it('runs as the non-root user airbyte (uid 1000, as Airbyte runs rootless pods) with a writable /airbyte', () => {
    expect(last(final, 'USER')?.args).toMatch(/^airbyte(:airbyte)?$/);
    const script = runs(final);
    expect(script).toMatch(/useradd\b[^\n&]*--uid 1000\b[^\n&]*\bairbyte\b/);
    expect(script).toMatch(/mkdir -p \/airbyte\b/);
    expect(script).toMatch(/chown (-R )?airbyte(:airbyte)? \/airbyte(\s|$)/);
    // USER comes after every RUN, so nothing later runs as root by accident.
    const userIndex = final.instructions.findIndex((i) => i.keyword === 'USER');
    expect(final.instructions.slice(userIndex).some((i) => i.keyword === 'RUN')).toBe(false);
  });

  it('carries io.airbyte.name and io.airbyte.version labels equal to metadata.yaml and package.json', () => {
    const data = metadataData();
    expect(labels.get('io.airbyte.name')).toBe(data.dockerRepository);
    expect(labels.get('io.airbyte.version')).toBe(data.dockerImageTag);
    expect(labels.get('io.airbyte.version')).toBe(pkg.version);
  });

  it('puts both faces on PATH, so `--entrypoint tap-data-read` runs the Singer tap', () => {
    const script = runs(final);
    const codeDir = copiesFromBuild()[0]?.dest ?? '';
    for (const bin of Object.keys(pkg.bin)) {
      expect(script).toContain(`ln -s ${codeDir}/${pkg.bin[bin]} /usr/local/bin/${bin}`);
      expect(existsSync(join(ROOT, pkg.bin[bin] ?? '')), `${bin} is missing`).toBe(true);
    }
  });

  it('documents the build command with the tag of metadata.yaml', () => {
    const data = metadataData();
    const tag = `${String(data.dockerRepository)}:${String(data.dockerImageTag)}`;
    expect(read('Dockerfile')).toContain(`docker build -t ${tag} .`);
    expect(read('docs/docker.md')).toContain(`docker build -t ${tag} .`);
    expect(read('docs/docker.md')).toContain('--entrypoint tap-data-read');
  });
});

describe('.dockerignore', () => {
  const patterns = new Set(read('.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#')));

  it.each(['node_modules', 'dist', '.git', 'test', 'bench', 'packages', '.cache', 'coverage', '*.tgz'])('keeps %s out of the build context', (pattern) => {
    expect(patterns.has(pattern)).toBe(true);
  });
});
