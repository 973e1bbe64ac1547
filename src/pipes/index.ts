/**
 * Dagster Pipes for the sync commands (Airbyte `read`, the tap's sync,
 * `replicate`): the session the environment asks for, fed by the run's
 * report, closed at exit if the command could not close it itself.
 */
import type { RunCommand, RunRecorder } from '../report/run-report.js';
import { PipesReport } from './report.js';
import { PipesSession } from './session.js';

export { PipesReport } from './report.js';

/**
 * The session when DAGSTER_PIPES_CONTEXT and DAGSTER_PIPES_MESSAGES are both
 * set (`opened` written), else undefined. `stdoutFree`: the command writes
 * nothing else on stdout. Throws PipesSetupError (a ConfigError) when they are
 * set but cannot be used.
 */
function pipesFromEnv(env: NodeJS.ProcessEnv, options: { stdoutFree: boolean }): PipesSession | undefined {
  const session = PipesSession.fromEnv(env, { stderr: process.stderr, stdout: process.stdout, stdoutFree: options.stdoutFree });
  session?.closeAtExit();
  return session;
}

/** Pipes for a sync command whose report is `recorder`, when the environment asks for it (`opened` written); undefined otherwise. */
export function pipesForRun(env: NodeJS.ProcessEnv, recorder: RunRecorder, command: RunCommand): PipesReport | undefined {
  // replicate writes nothing on stdout; read and the tap's sync write their protocol there.
  const session = pipesFromEnv(env, { stdoutFree: command === 'replicate' });
  return session === undefined ? undefined : new PipesReport(session, recorder, command);
}
