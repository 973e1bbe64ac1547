/**
 * The stores' drivers are loaded by `import()` only when `--db` names their
 * store: a run into SQLite never loads them. `pg` and `pg-copy-streams` are
 * dependencies, installed with the connector; `@duckdb/node-api` is an
 * optional one, so an installation without it (`npm install --omit=optional`,
 * a platform DuckDB has no binary for) still runs. A missing one is a
 * config_error (exit 78) that names the package and what to do, which
 * depends on how package.json declares it.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../errors.js';
import { packageFile } from '../runtime/package-file.js';

const MISSING_CODES = new Set(['ERR_MODULE_NOT_FOUND', 'MODULE_NOT_FOUND', 'ERR_DLOPEN_FAILED']);

interface Declared {
  readonly optional: boolean;
  /** The version range package.json asks for (what an install by hand should ask for too). */
  readonly range: string | undefined;
}

/** How the connector's package.json declares `pkg`. */
function declared(pkg: string): Declared {
  const manifest = JSON.parse(readFileSync(packageFile('package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
    optionalDependencies?: Record<string, string>;
  };
  const optional = manifest.optionalDependencies?.[pkg];
  return optional !== undefined ? { optional: true, range: optional } : { optional: false, range: manifest.dependencies?.[pkg] };
}

/** The error to report when `import()` of `pkg` (for `store`) failed, or the error itself when it is not a missing package. */
export function missingPackageError(err: unknown, pkg: string, store: string): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === undefined || !MISSING_CODES.has(code)) return err;
  const detail = err instanceof Error ? err.message.split('\n')[0] : String(err);
  const what = code === 'ERR_DLOPEN_FAILED' ? `its native binary cannot be loaded on this machine (${detail})` : 'it is not installed';
  const { optional, range } = declared(pkg);
  // The range package.json asks for: a later major may not fit the connector's code.
  const spec = range === undefined ? pkg : `${pkg}@${range}`;
  const todo = optional
    ? `Install it where the connector is installed (npm install ${spec}, with -g beside a global install; ` +
      'it is an optional dependency, left out by --omit=optional)'
    : `It is a dependency of the connector, installed with it: this installation is incomplete. Install the connector again (or npm install ${spec} where it is installed)`;
  return new ConfigError(`Writing to ${store} needs the npm package ${pkg}, and ${what}. ${todo}, or use the Docker image, which carries it.`, {
    field: '--db',
    cause: err,
  });
}
