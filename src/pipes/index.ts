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
 * Pipes for a sync command whose report is `recorder`, when
 * DAGSTER_PIPES_CONTEXT and DAGSTER_PIPES_MESSAGES are both set (`opened`
 * written); undefined otherwise. Throws PipesSetupError (a ConfigError) when
 * they are set but cannot be used.
 */
export function pipesForRun(env: NodeJS.ProcessEnv, recorder: RunRecorder, command: RunCommand): PipesReport | undefined {
  // replicate writes nothing on stdout; read and the tap's sync write their protocol there.
  const session = PipesSession.fromEnv(env, { stderr: process.stderr, stdout: process.stdout, stdoutFree: command === 'replicate' });
  session?.closeAtExit();
  return session === undefined ? undefined : new PipesReport(session, recorder, command);
}
