/**
 * The stores' drivers are optional packages, loaded by `import()` only when
 * `--db` names their store: a run into SQLite never loads them, and an
 * installation without them (`npm install --omit=optional`, a platform
 * DuckDB has no binary for) still runs. A missing one is a config_error
 * (exit 78) that names the package and how to install it.
 */
import { ConfigError } from '../errors.js';

const MISSING_CODES = new Set(['ERR_MODULE_NOT_FOUND', 'MODULE_NOT_FOUND', 'ERR_DLOPEN_FAILED']);

/** The error to report when `import()` of `pkg` (for `store`) failed, or the error itself when it is not a missing package. */
export function missingPackageError(err: unknown, pkg: string, store: string): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === undefined || !MISSING_CODES.has(code)) return err;
  const detail = err instanceof Error ? err.message.split('\n')[0] : String(err);
  const what = code === 'ERR_DLOPEN_FAILED' ? `its native binary cannot be loaded on this machine (${detail})` : 'it is not installed';
  return new ConfigError(
    `Writing to ${store} needs the npm package ${pkg}, and ${what}. ` +
      `Install it beside the connector (npm install ${pkg}; it is an optional dependency, left out by --omit=optional), ` +
      'or use the Docker image, which carries it.',
    { field: '--db', cause: err },
  );
}
