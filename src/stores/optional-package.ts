/**
 * The stores' drivers are loaded by `import()` only when `--db` names their
 * store: a run into SQLite never loads them. `pg` and `pg-copy-streams` are
 * dependencies, installed with the connector; `@duckdb/node-api` is an
 * optional one, so an installation without it (`npm install --omit=optional`,
 * a platform DuckDB has no binary for) still runs. A missing one, or one
 * that cannot load here (a package it needs missing, such as DuckDB's binary
 * for this machine, or its own refusal of the platform), is a config_error
 * (exit 78) that names the package and what to do, which depends on how
 * package.json declares it.
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

/** The package a module-not-found message names: `@scope/name` of "Cannot find module '@scope/name/file.node'"; undefined for a path. */
function packageNamed(message: string): string | undefined {
  const specifier = /^Cannot find (?:package|module) '([^']+)'/.exec(message)?.[1];
  if (specifier === undefined || /^[./]|^[A-Za-z]:|^file:/.test(specifier)) return undefined;
  return specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');
}

/**
 * The error to report when `import()` of `pkg` (for `store`) failed, or the error itself when it is not a failure to
 * load the package (an error with another code, such as EACCES or EMFILE).
 */
export function missingPackageError(err: unknown, pkg: string, store: string): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  // Without a code: thrown by the package's own code as it loaded (DuckDB's on a platform it has no binary for).
  if (code === undefined ? !(err instanceof Error) : !MISSING_CODES.has(code)) return err;
  const detail = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
  const needed = code === 'ERR_DLOPEN_FAILED' ? undefined : packageNamed(detail);
  const { optional, range } = declared(pkg);
  // The range package.json asks for: a later major may not fit the connector's code.
  const spec = range === undefined ? pkg : `${pkg}@${range}`;
  let what: string;
  let todo: string;
  if (code === undefined || code === 'ERR_DLOPEN_FAILED') {
    // Installed, but it does not run here: installing it again changes nothing.
    what = `and it cannot be loaded on this machine (${detail})`;
    todo = 'Replicate into a SQLite file (--db replica.db), which needs no package';
  } else if (needed !== undefined && needed !== pkg) {
    // Cut short, or made elsewhere: npm installs some packages only on the machines they are made for (DuckDB's
    // binary for each platform), which a node_modules copied from another kind of machine lacks.
    what = `which is installed but cannot load ${needed} (${detail})`;
    todo = 'Install the connector again on this machine (an install cut short, or a node_modules copied from another kind of machine, lacks it)';
  } else {
    what = 'and it is not installed';
    todo = optional
      ? `Install it where the connector is installed (npm install ${spec}, with -g beside a global install; ` +
        'it is an optional dependency, left out by --omit=optional)'
      : `It is a dependency of the connector, installed with it: this installation is incomplete. Install the connector again (or npm install ${spec} where it is installed)`;
  }
  return new ConfigError(`Writing to ${store} needs the npm package ${pkg}, ${what}. ${todo}, or use the Docker image, which carries it.`, {
    field: '--db',
    cause: err,
  });
}
