/**
 * One place per fact: the zod schema of the config (src/config/config.ts) and the
 * streams table (src/streams.ts) are the sources; the docs' tables,
 * meltano.yml's settings, the SPEC and --about follow them. The drift of a
 * checked-in page is test/artifacts.test.ts's business; this file checks what
 * the generated parts say, and how the markers are read.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { configTable, fieldDictionary, fillGenerated, generatedPages, streamsTable } from '../../scripts/doc-tables.js';
import { ConfigSchema, configJsonSchema, parseConfig } from '../../src/config/config.js';
import { about } from '../../src/protocols/singer/about.js';
import { STREAMS } from '../../src/streams.js';
import { ROOT } from '../helpers/cli.js';

type Json = Record<string, unknown>;
const KEYS = Object.keys(ConfigSchema.shape);
const SPEC = configJsonSchema().properties as Record<string, Json>;
/** A list whose entries hold a secret (accounts: their api_key) is a secret setting for Meltano and --about. */
const holdsSecret = (prop: Json | undefined): boolean => {
  const items = prop?.items as Json | undefined;
  return Object.values((items?.properties as Record<string, Json> | undefined) ?? {}).some((p) => p.airbyte_secret === true);
};
const SECRETS = KEYS.filter((key) => SPEC[key]?.airbyte_secret === true || holdsSecret(SPEC[key]));

interface MeltanoSetting {
  readonly name: string;
  readonly kind: string;
  readonly sensitive?: boolean;
  readonly value?: unknown;
  readonly description?: string;
}

function meltanoSettings(): MeltanoSetting[] {
  const project = parse(readFileSync(join(ROOT, 'meltano.yml'), 'utf8')) as { plugins: { extractors: { name: string; settings: MeltanoSetting[] }[] } };
  const tap = project.plugins.extractors.find((e) => e.name === 'tap-data-read');
  expect(tap).toBeDefined();
  return tap?.settings ?? [];
}

describe("meltano.yml's settings follow the config schema", () => {
  it('the same keys, in the same order', () => {
    expect(meltanoSettings().map((s) => s.name)).toEqual(KEYS);
  });

  it('the same kinds, defaults and secrets', () => {
    const kinds: Record<string, string[]> = { string: ['string', 'date_iso8601', 'password'], integer: ['integer'], number: ['integer', 'number'], boolean: ['boolean'], array: ['array'], object: ['object'] };
    for (const setting of meltanoSettings()) {
      const prop = SPEC[setting.name] as Json;
      const type = Array.isArray(prop.enum) ? 'options' : String(prop.type);
      if (type === 'options') expect(setting.kind, setting.name).toBe('options');
      else expect(kinds[type], `${setting.name}: ${setting.kind} for ${type}`).toContain(setting.kind);
      expect(setting.value, setting.name).toEqual(prop.default);
      expect(setting.sensitive === true, setting.name).toBe(SECRETS.includes(setting.name));
      expect(setting.description, setting.name).toBeTruthy();
    }
    expect(SECRETS).toEqual(expect.arrayContaining(['api_key', 'proxy_url', 'accounts']));
  });
});

describe("meltano.yml's settings_group_validation", () => {
  /** The smallest configs the connector takes: one key, or many accounts. */
  const minimal: Record<string, Json> = {
    api_key: { base_url: 'https://api.example.com', api_key: 'acme_live_s3cr3tACME' },
    accounts: { base_url: 'https://api.example.com', accounts: [{ name: 'acme', api_key: 'acme_live_s3cr3tACME' }] },
  };

  it('has a group for each way the config can be complete (a key, or accounts), each a config the connector takes', () => {
    const project = parse(readFileSync(join(ROOT, 'meltano.yml'), 'utf8')) as { plugins: { extractors: { name: string; settings_group_validation: string[][] }[] } };
    const groups = project.plugins.extractors.find((e) => e.name === 'tap-data-read')?.settings_group_validation ?? [];
    for (const [way, config] of Object.entries(minimal)) {
      expect(() => parseConfig(config), way).not.toThrow();
      expect(groups, way).toContainEqual(Object.keys(config).sort());
    }
    for (const group of groups) for (const key of group) expect(KEYS, key).toContain(key);
  });
});

describe('--about follows the config schema', () => {
  it('every key, secrets marked, the same defaults and bounds', () => {
    const props = about().settings.properties as Record<string, Json>;
    expect(Object.keys(props)).toEqual(KEYS);
    for (const key of KEYS) {
      expect(props[key]?.secret === true, key).toBe(SECRETS.includes(key));
      for (const field of ['type', 'default', 'minimum', 'maximum', 'enum'] as const) expect(props[key]?.[field], `${key}.${field}`).toEqual(SPEC[key]?.[field]);
    }
  });
});

describe('the generated tables', () => {
  it('the config table: one row per key, with its bounds, default and secrecy', () => {
    const rows = configTable().split('\n').slice(2);
    expect(rows.map((r) => /^\| `(\w+)` \|/.exec(r)?.[1])).toEqual(KEYS);
    const row = (key: string): string => rows.find((r) => r.startsWith(`| \`${key}\` |`)) ?? '';
    // max_wait_seconds: what the schema enforces (1 to 86400), the disagreement the hand-written tables had.
    expect(row('max_wait_seconds')).toMatch(/^\| `max_wait_seconds` \| integer 1–86400 \| `900` \|/);
    // api_key or accounts: neither is required alone.
    expect(row('api_key')).toMatch(/^\| `api_key` \| string, secret \| – \|/);
    expect(row('proxy_url')).toContain('secret');
    expect(row('page_size')).toContain('integer 1–200');
  });

  it('the streams table: one row per stream with its path, key, cursor and modes', () => {
    const rows = streamsTable().split('\n').slice(2);
    expect(rows).toHaveLength(STREAMS.length);
    for (const [i, s] of STREAMS.entries()) {
      expect(rows[i]).toContain(`| \`${s.name}\` | \`${s.path}\` | \`${s.primaryKey}\` |`);
      expect(rows[i]).toContain(s.syncModes.includes('incremental') ? 'Full refresh, Incremental' : '| Full refresh |');
    }
  });

  it('the field dictionary: a section per stream, primary key and cursor marked', () => {
    const text = fieldDictionary();
    for (const s of STREAMS) {
      expect(text).toContain(`### ${s.name}\n`);
      expect(text).toContain(`| \`${s.primaryKey}\` (primary key) |`);
      if (s.cursorField !== null) expect(text).toContain(`| \`${s.cursorField}\` (cursor) |`);
    }
  });

  it('docs/configuration.md, docs/streams.md, docs/airbyte.md and meltano.yml hold generated parts', () => {
    expect([...generatedPages(ROOT).keys()]).toEqual(expect.arrayContaining(['meltano.yml', 'docs/configuration.md', 'docs/streams.md', 'docs/airbyte.md', 'docs/singer.md']));
  });
});

describe('markers', () => {
  it('rewrite what lies between them, and nothing else', () => {
    const page = 'before\n<!-- generated: streams -->\nstale\n<!-- end generated: streams -->\nafter\n';
    const filled = fillGenerated(page, 'x.md');
    expect(filled).toBe(`before\n<!-- generated: streams -->\n${streamsTable()}\n<!-- end generated: streams -->\nafter\n`);
    expect(fillGenerated(filled, 'x.md')).toBe(filled);
  });

  it('in YAML, as comments, keeping the indentation of the end marker', () => {
    const filled = fillGenerated('a:\n  # generated: meltano-settings (note)\n  # end generated: meltano-settings\nb: 1\n', 'x.yml');
    expect(filled.startsWith('a:\n  # generated: meltano-settings (note)\n      settings:\n')).toBe(true);
    expect(filled.endsWith('\n  # end generated: meltano-settings\nb: 1\n')).toBe(true);
  });

  it('an unknown part or a missing end marker is an error naming the page', () => {
    expect(() => fillGenerated('<!-- generated: nothing -->\n<!-- end generated: nothing -->\n', 'docs/x.md')).toThrow(/docs\/x\.md: unknown generated part "nothing"/);
    expect(() => fillGenerated('<!-- generated: config -->\n', 'docs/x.md')).toThrow(/docs\/x\.md: .* has no closing "<!-- end generated: config -->"/);
  });
});

describe('the dependencies the docs name', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; optionalDependencies: Record<string, string> };
  const pages = ['README.md', 'CONTRIBUTING.md', 'docs/docker.md'];

  it("are package.json's production dependencies, and no other (the image ships no data package)", () => {
    const deps = Object.keys(pkg.dependencies).sort();
    expect(deps).toEqual(['pg', 'pg-copy-streams', 'undici', 'zod']);
    expect(Object.keys(pkg.optionalDependencies)).toEqual(['@duckdb/node-api']);
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8').replace(/\s+/g, ' ');
    const contributing = readFileSync(join(ROOT, 'CONTRIBUTING.md'), 'utf8');
    expect(readme).toContain('its dependencies are `undici`, `zod`, `pg` and `pg-copy-streams`, and `@duckdb/node-api` as an optional one');
    for (const dep of [...deps, '@duckdb/node-api']) expect(contributing).toContain(`\`${dep}\``);
    for (const page of pages) expect(readFileSync(join(ROOT, page), 'utf8'), page).not.toMatch(/faker/i);
  });
});
