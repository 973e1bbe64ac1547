/**
 * Dagster Pipes for the sync commands (Airbyte `read`, the tap's sync,
 * `replicate`): the session the environment asks for, closed at exit if the
 * command could not close it itself, and the failure a `closed` carries.
 */
import type { ConnectorError } from '../errors.js';
import { PipesSession, type PipesFailure } from './session.js';

export { PipesSession, type PipesFailure } from './session.js';
export { PipesSink } from './sink.js';
export { PipesSetupError } from './params.js';

/**
 * The session when DAGSTER_PIPES_CONTEXT and DAGSTER_PIPES_MESSAGES are both
 * set (`opened` written), else undefined. `stdoutFree`: the command writes
 * nothing else on stdout. Throws PipesSetupError (a ConfigError) when they are
 * set but cannot be used.
 */
export function pipesFromEnv(env: NodeJS.ProcessEnv, options: { stdoutFree: boolean }): PipesSession | undefined {
  const session = PipesSession.fromEnv(env, { stderr: process.stderr, stdout: process.stdout, stdoutFree: options.stdoutFree });
  session?.closeAtExit();
  return session;
}

/** A connector error as the exception of `closed`. */
export function pipesFailure(error: ConnectorError, redact: (text: string) => string): PipesFailure {
  return { name: error.failureType, message: redact(error.message) };
}
