/**
 * What a run into a store says when its driver's package cannot be loaded:
 * the advice follows how package.json declares it (a dependency, or the
 * optional @duckdb/node-api), with the version it asks for.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { missingPackageError } from '../../src/stores/optional-package.js';

const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  dependencies: Record<string, string>;
  optionalDependencies: Record<string, string>;
};

function notFound(pkg: string): Error {
  return Object.assign(new Error(`Cannot find package '${pkg}' imported from /x/dist/stores/connection.js`), { code: 'ERR_MODULE_NOT_FOUND' });
}

function refusal(err: unknown): ConfigError {
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}

describe('missingPackageError', () => {
  it.each([
    ['pg', 'PostgreSQL'],
    ['pg-copy-streams', 'PostgreSQL'],
  ])('%s, a dependency: the installation is incomplete; no word of an optional dependency', (pkg, store) => {
    expect(manifest.dependencies[pkg]).toBeDefined();
    const err = refusal(missingPackageError(notFound(pkg), pkg, store));
    expect(err.message).toContain(`Writing to ${store} needs the npm package ${pkg}, and it is not installed.`);
    expect(err.message).toContain('dependency of the connector');
    expect(err.message).toContain('Install the connector again');
    expect(err.message).toContain(`npm install ${pkg}@${manifest.dependencies[pkg]}`);
    expect(err.message).not.toMatch(/optional/);
    expect(err.field).toBe('--db');
  });

  it('@duckdb/node-api, optional: left out by --omit=optional, installed by hand at the version package.json asks for', () => {
    const pkg = '@duckdb/node-api';
    const range = manifest.optionalDependencies[pkg];
    expect(range).toBeDefined();
    const err = refusal(missingPackageError(notFound(pkg), pkg, 'DuckDB'));
    expect(err.message).toContain('Writing to DuckDB needs the npm package @duckdb/node-api, and it is not installed.');
    expect(err.message).toContain(`npm install ${pkg}@${range}, with -g beside a global install`);
    expect(err.message).toContain('optional dependency, left out by --omit=optional');
    expect(err.message).toContain('or use the Docker image');
  });

  it('a native binary that cannot load is said as such', () => {
    const dlopen = Object.assign(new Error('libduckdb.so: cannot open shared object file\nmore'), { code: 'ERR_DLOPEN_FAILED' });
    const err = refusal(missingPackageError(dlopen, '@duckdb/node-api', 'DuckDB'));
    expect(err.message).toContain('its native binary cannot be loaded on this machine (libduckdb.so: cannot open shared object file)');
  });

  it('any other failure is passed on as it is', () => {
    const other = Object.assign(new Error('boom'), { code: 'EACCES' });
    expect(missingPackageError(other, 'pg', 'PostgreSQL')).toBe(other);
  });
});
