/**
 * One version: package.json's is the one package-lock.json, the newest
 * release of CHANGELOG.md, every image tag and tarball name the docs give and
 * the summary they show carry (`--version`: test/e2e/cli/usage.test.ts;
 * metadata.yaml, the Dockerfile's label and the Airbyte changelog row:
 * metadata.test.ts and dockerfile.test.ts). Changes not released yet sit
 * under `## [Unreleased]`, which names no version of its own.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/cli.js';

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');
const pkg = JSON.parse(read('package.json')) as { name: string; version: string };
const VERSION = pkg.version;

describe('one version', () => {
  it('package-lock.json is package.json', () => {
    const lock = JSON.parse(read('package-lock.json')) as { version: string; packages: Record<string, { version?: string }> };
    expect(lock.version).toBe(VERSION);
    expect(lock.packages['']?.version).toBe(VERSION);
  });

  it("CHANGELOG.md: an Unreleased section naming no version, then package.json's version as the newest release, with its link", () => {
    const changelog = read('CHANGELOG.md');
    const headings = [...changelog.matchAll(/^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$/gm)].map((m) => ({ name: m[1], date: m[2], at: m.index }));
    expect(headings[0]?.name).toBe('Unreleased');
    expect(headings[1]).toMatchObject({ name: VERSION, date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) });
    const unreleased = changelog.slice(headings[0]?.at, headings[1]?.at);
    expect(unreleased).not.toMatch(/released as|\d+\.\d+\.\d+/);
    expect(changelog).toMatch(new RegExp(`^\\[Unreleased\\]: \\S+/compare/v${VERSION.replace(/\./g, '\\.')}\\.\\.\\.HEAD$`, 'm'));
    expect(changelog).toMatch(new RegExp(`^\\[${VERSION.replace(/\./g, '\\.')}\\]: \\S+$`, 'm'));
  });

  it("CHANGELOG.md: the released versions' sections are as they were released", () => {
    // test/fixtures/changelog-released.txt holds them as tagged: CHANGELOG.md of v0.2.0 (commit ddd061c) from
    // `## [0.2.0]` to the link lines. A change made after a release goes under Unreleased, never into a released
    // section; a release adds its own section to the fixture.
    const changelog = read('CHANGELOG.md');
    const released = changelog.slice(changelog.search(/^## \[\d/m), changelog.search(/^\[Unreleased\]: /m));
    expect(released).toBe(read('test/fixtures/changelog-released.txt'));
  });

  it('every image tag, tarball and summary the docs show is this version', () => {
    const files = ['README.md', 'Dockerfile', 'meltano.yml', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const found: string[] = [];
    for (const file of files) {
      const text = read(file);
      for (const m of text.matchAll(/source-data-read\/source-data-read:(\d+\.\d+\.\d+)|source-data-read-(\d+\.\d+\.\d+)\.tgz|"connector_version": "([^"]+)"|io\.airbyte\.version="([^"]+)"/g)) {
        found.push(`${file}: ${m[1] ?? m[2] ?? m[3] ?? m[4]}`);
      }
    }
    expect(found.length).toBeGreaterThan(10);
    expect(found.filter((f) => !f.endsWith(`: ${VERSION}`))).toEqual([]);
    // The README's packing recipe names the tarball npm pack writes.
    expect(read('README.md')).toContain(`${pkg.name}-${VERSION}.tgz`);
  });
});
