/**
 * The Pipes context Dagster injects: a JSON file named by the `path` of
 * DAGSTER_PIPES_CONTEXT (PipesTempFileContextInjector), or the object itself
 * under `data` (PipesEnvContextInjector). The connector uses its asset keys.
 */
import { readFileSync } from 'node:fs';
import { CONTEXT_ENV, PipesSetupError, type PipesParams } from './params.js';
import { messageOf } from '../errors.js';
import { isPipe, readTextFile, type FileWait } from '../config/files.js';

export interface PipesContextData {
  /** The step's asset keys, escaped strings ("raw/contacts"); null when the step targets no asset. */
  readonly asset_keys: readonly string[] | null;
  readonly run_id?: string;
  readonly extras?: Record<string, unknown>;
}

function asContext(value: unknown, where: string): PipesContextData {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new PipesSetupError(`The Pipes context ${where} is not a JSON object.`);
  const keys = (value as { asset_keys?: unknown }).asset_keys;
  if (keys !== undefined && keys !== null && !(Array.isArray(keys) && keys.every((k) => typeof k === 'string'))) {
    throw new PipesSetupError(`The Pipes context ${where} has asset_keys that are not a list of strings.`);
  }
  return { ...(value as object), asset_keys: (keys as string[] | null | undefined) ?? null };
}

/** The context; `wait` ends the wait for a writer of a context file that is a named pipe (a stop signal). */
export async function loadContext(params: PipesParams, wait: FileWait = {}): Promise<PipesContextData> {
  if ('path' in params) {
    const path = params.path;
    if (typeof path !== 'string' || path === '') throw new PipesSetupError(`${CONTEXT_ENV} has a "path" that is not a file path: ${JSON.stringify(path)}.`);
    // A named pipe is read without blocking the event loop, so that SIGTERM still stops a run no process writes it for.
    if (isPipe(path)) return parsedContext(await readTextFile(path, 'Pipes context', wait), path);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw new PipesSetupError(
        `Cannot read the Pipes context file ${path} named by ${CONTEXT_ENV} (${String(code ?? err)}): ` +
          'the orchestrator writes it before it starts the command; run the command from Dagster, or unset the DAGSTER_PIPES_* variables.',
      );
    }
    return parsedContext(text, path);
  }
  if ('data' in params) return asContext(params.data, `in ${CONTEXT_ENV} ("data")`);
  throw new PipesSetupError(`${CONTEXT_ENV} has neither "path" nor "data" (keys: ${Object.keys(params).join(', ') || 'none'}).`);
}

function parsedContext(text: string, path: string): PipesContextData {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new PipesSetupError(`The Pipes context file ${path} is not JSON: ${messageOf(err)}.`);
  }
  return asContext(value, `in ${path}`);
}
