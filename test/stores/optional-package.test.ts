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
    expect(err.message).toContain('and it cannot be loaded on this machine (libduckdb.so: cannot open shared object file)');
    // Installed already: installing it again would change nothing.
    expect(err.message).not.toContain('Install it');
    expect(err.message).toContain('Replicate into a SQLite file (--db replica.db), which needs no package, or use the Docker image');
  });

  it('installed without the native binary it loads (a platform package npm left out): says which, not "not installed"', () => {
    const binding = Object.assign(new Error("Cannot find module '@duckdb/node-bindings-linux-x64/duckdb.node'\nRequire stack:\n- /x/duckdb.js"), {
      code: 'MODULE_NOT_FOUND',
    });
    const err = refusal(missingPackageError(binding, '@duckdb/node-api', 'DuckDB'));
    expect(err.message).toContain(
      "Writing to DuckDB needs the npm package @duckdb/node-api, which is installed but cannot load @duckdb/node-bindings-linux-x64 (Cannot find module '@duckdb/node-bindings-linux-x64/duckdb.node').",
    );
    expect(err.message).not.toContain('not installed');
    expect(err.message).toContain('Install the connector again on this machine');
    expect(err.message).toContain('or use the Docker image');
    // pg's own dependencies likewise.
    const pgTypes = Object.assign(new Error("Cannot find package 'pg-types' imported from /x/node_modules/pg/esm/index.mjs"), { code: 'ERR_MODULE_NOT_FOUND' });
    expect(refusal(missingPackageError(pgTypes, 'pg', 'PostgreSQL')).message).toContain('the npm package pg, which is installed but cannot load pg-types (');
  });

  it('a driver that refuses to load on this machine (a platform with no binary) is a config_error that quotes it', () => {
    const refused = new Error("Error loading duckdb native binding: unsupported arch 'ppc64' for platform 'linux'");
    const err = refusal(missingPackageError(refused, '@duckdb/node-api', 'DuckDB'));
    expect(err.message).toContain(
      "Writing to DuckDB needs the npm package @duckdb/node-api, and it cannot be loaded on this machine (Error loading duckdb native binding: unsupported arch 'ppc64' for platform 'linux').",
    );
    expect(err.message).not.toContain('Install it');
    expect(err.message).toContain('Replicate into a SQLite file (--db replica.db), which needs no package, or use the Docker image');
  });

  it('any other failure is passed on as it is', () => {
    const other = Object.assign(new Error('boom'), { code: 'EACCES' });
    expect(missingPackageError(other, 'pg', 'PostgreSQL')).toBe(other);
  });
});
