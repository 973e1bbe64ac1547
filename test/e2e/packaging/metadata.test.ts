/**
 * metadata.yaml (Airbyte's connector metadata, V0 format), the icon, the docs
 * page it points to, LICENSE and the package.json fields npm publishes. The
 * SPEC snapshot itself is compared with the live `spec` in
 * test/e2e/airbyte/without-service.test.ts; here metadata and the snapshot must agree.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DOCUMENTATION_URL } from '../../../src/protocols/airbyte/commands.js';
import { STREAMS } from '../../../src/streams.js';
import { ROOT } from '../../helpers/cli.js';
import { parseYaml, type YamlValue } from './yaml.js';

type YamlMap = { [key: string]: YamlValue };

interface PackageJson {
  readonly name: string;
  readonly version: string;
  readonly license: string;
  readonly files: readonly string[];
  readonly homepage: string;
  readonly repository: { readonly type: string; readonly url: string };
  readonly keywords: readonly string[];
  readonly bin: Record<string, string>;
}

interface SpecSnapshot {
  readonly documentationUrl: string;
  readonly connectionSpecification: { readonly properties: Record<string, unknown> };
}

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const pkg = JSON.parse(read('package.json')) as PackageJson;
const metadataText = read('metadata.yaml');
const isMap = (v: YamlValue | undefined): v is YamlMap => typeof v === 'object' && v !== null && !Array.isArray(v);
const doc = parseYaml(metadataText);
const data: YamlMap = isMap(doc) && isMap(doc.data) ? doc.data : {};
const strings = (v: YamlValue | undefined): string[] => (Array.isArray(v) ? v.map(String) : []);

// ConnectorMetadataDefinitionV0: `data` has additionalProperties false.
const REQUIRED = ['name', 'definitionId', 'connectorType', 'dockerRepository', 'dockerImageTag', 'license', 'documentationUrl', 'githubIssueLabel', 'connectorSubtype', 'releaseStage'];
const OPTIONAL = [
  'supportLevel', 'tags', 'allowedHosts', 'registryOverrides', 'registries', 'releases', 'releaseDate', 'protocolVersion',
  'maxSecondsBetweenMessages', 'suggestedStreams', 'resourceRequirements', 'connectorBuildOptions', 'connectorTestSuitesOptions',
  'ab_internal', 'remoteRegistries', 'externalDocumentationUrls', 'supportsRefreshes', 'supportsFileTransfer', 'connectorIPCOptions',
  'icon', 'erdUrl', 'sourceType', 'supportsDbt', 'supportsNormalization', 'normalizationConfig', 'language',
];

describe('metadata.yaml', () => {
  it('is metadataSpecVersion "1.0" with a data mapping of known keys and every required one', () => {
    expect(isMap(doc) && doc.metadataSpecVersion).toBe('1.0');
    expect(Object.keys(isMap(doc) ? doc : {}).sort()).toEqual(['data', 'metadataSpecVersion']);
    for (const key of REQUIRED) expect(data[key], key).toBeTruthy();
    for (const key of Object.keys(data)) expect([...REQUIRED, ...OPTIONAL], `unknown key ${key}`).toContain(key);
  });

  it('describes an API source with a fixed definitionId and valid enums', () => {
    expect(data.definitionId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(data.definitionId).toBe('db04349b-bd95-4518-8d31-60df8cdeaf07'); // never regenerate: Airbyte keys the connector on it
    expect(data.connectorType).toBe('source');
    expect(data.connectorSubtype).toBe('api');
    expect(['alpha', 'beta', 'generally_available', 'custom']).toContain(data.releaseStage);
    expect(['community', 'certified', 'archived']).toContain(data.supportLevel);
    expect(strings(data.tags)).toContain('language:typescript');
    expect(data.githubIssueLabel).toBe(pkg.name);
  });

  it('agrees with package.json on image tag and license, and with the SPEC on the docs URL', () => {
    expect(data.dockerImageTag).toBe(pkg.version);
    expect(data.license).toBe(pkg.license);
    expect(data.dockerRepository).toMatch(new RegExp(`^[a-z0-9._-]+/${pkg.name}$`));
    expect(data.documentationUrl).toBe(DOCUMENTATION_URL);
    const spec = JSON.parse(read('catalog/spec.json')) as SpecSnapshot;
    expect(spec.documentationUrl).toBe(data.documentationUrl);
  });

  it('allows only the host of the configured base_url', () => {
    const hosts = strings(isMap(data.allowedHosts) ? data.allowedHosts.hosts : undefined);
    expect(hosts).toEqual(['${base_url}']);
    const spec = JSON.parse(read('catalog/spec.json')) as SpecSnapshot;
    for (const host of hosts) {
      for (const [, field] of host.matchAll(/\$\{([^}]+)\}/g)) expect(Object.keys(spec.connectionSpecification.properties)).toContain(field);
    }
  });

  it('suggests streams that exist', () => {
    const suggested = strings(isMap(data.suggestedStreams) ? data.suggestedStreams.streams : undefined);
    expect(suggested.length).toBeGreaterThan(0);
    for (const name of suggested) expect(STREAMS.map((s) => s.name)).toContain(name);
  });

  it('points to a small SVG icon of its own', () => {
    expect(data.icon).toBe('icon.svg');
    const svg = read('icon.svg');
    expect(statSync(join(ROOT, 'icon.svg')).size).toBeLessThan(4096);
    expect(svg).toMatch(/^<svg\b[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*viewBox="0 0 \d+ \d+"/);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).not.toMatch(/<(script|image|foreignObject)\b|href=/); // self-contained and inert
  });
});

describe('docs/airbyte.md (the documentationUrl page)', () => {
  const page = read('docs/airbyte.md');

  it('is the file the documentation URL names', () => {
    expect(DOCUMENTATION_URL.endsWith('/blob/main/docs/airbyte.md')).toBe(true);
  });

  it.each(['## Prerequisites', '## Setup guide', '## Supported sync modes', '## Streams', '## Data types', '## Configuration', '## Rate limiting', '## Deletions', '## Errors', '## Limitations', '## Supported versions', '## Troubleshooting', '## Changelog'])(
    'has the section %s',
    (heading) => {
      expect(page).toMatch(new RegExp(`^${heading.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'm'));
    },
  );

  it('lists every stream with its sync modes, and every config key', () => {
    for (const stream of STREAMS) {
      const row = page.split('\n').find((l) => l.startsWith(`| \`${stream.name}\` |`));
      expect(row, stream.name).toBeDefined();
      for (const mode of stream.syncModes) expect(row).toContain(mode === 'incremental' ? 'Incremental' : 'Full refresh');
    }
    const spec = JSON.parse(read('catalog/spec.json')) as SpecSnapshot;
    for (const key of Object.keys(spec.connectionSpecification.properties)) expect(page).toContain(`| \`${key}\` |`);
  });

  it('has a changelog row for the current version', () => {
    expect(page).toMatch(new RegExp(`^\\| ${pkg.version.replace(/\./g, '\\.')} \\| \\d{4}-\\d{2}-\\d{2} \\|`, 'm'));
  });
});

describe('package.json for npm', () => {
  it('publishes only what runs', () => {
    // The executables' bundle and the schemas entry (exports), not the rest of tsc's output.
    expect(pkg.files).toEqual(expect.arrayContaining(['bin/', 'dist/cli/', 'dist/schemas/resources.js', 'dist/schemas/resources.d.ts', 'LICENSE', 'README.md', 'metadata.yaml']));
    expect(pkg.files.filter((f) => f.startsWith('dist/'))).toHaveLength(3);
    // The generated schemas and catalogs by name (manifest.test.ts checks the list against what scripts/ generates).
    expect(pkg.files.filter((f) => /^(schemas|catalog)\/[^/]+\.json$/.test(f)).length).toBeGreaterThan(0);
    for (const entry of pkg.files.filter((f) => !f.startsWith('!'))) expect(entry).not.toMatch(/^(src|test|bench|scripts|docs)\b/);
  });

  it('builds only the product into dist/: every file there is compiled from src/, dist/cli/ the executables bundled from it', () => {
    const build = JSON.parse(read('tsconfig.build.json')) as { include: string[]; compilerOptions: { rootDir: string; outDir: string } };
    expect(build).toMatchObject({ include: ['src'], compilerOptions: { rootDir: 'src', outDir: 'dist' } });
    const built = readdirSync(join(ROOT, 'dist'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));
    expect(built.length, 'dist/ is empty: npm test builds it first').toBeGreaterThan(20);
    const bundled = built.filter((f) => f.startsWith('cli/'));
    for (const file of built.filter((f) => !bundled.includes(f))) expect(existsSync(join(ROOT, 'src', file.replace(/\.js$/, '.ts'))), `dist/${file} has no source in src/`).toBe(true);
    // rolldown.config.ts: its three entries, and the chunks they share (name-hash.js), each the bundle of modules of src/.
    expect(bundled.filter((f) => !/^cli\/[a-z-]+-[\w-]{8}\.js$/.test(f)).sort()).toEqual(['cli/source.js', 'cli/tap.js', 'cli/wal-thread.js']);
  });

  it('names its repository, homepage and keywords', () => {
    const repo = DOCUMENTATION_URL.replace(/\/blob\/.*$/, '');
    expect(pkg.repository.type).toBe('git');
    expect(pkg.repository.url).toBe(`git+${repo}.git`);
    expect(pkg.homepage.startsWith(repo)).toBe(true);
    expect(pkg.keywords).toEqual(expect.arrayContaining(['airbyte', 'singer']));
  });

  it('ships an MIT LICENSE for its contributors', () => {
    const license = read('LICENSE');
    expect(license).toMatch(/^MIT License/);
    expect(license).toContain('source-data-read contributors');
    expect(pkg.license).toBe('MIT');
  });
});
