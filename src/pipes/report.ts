/**
 * Dagster Pipes fed by the run's report (report/run-report.ts): a stream that
 * ends complete is reported as a materialization with its records and its
 * sync_watermark after the run, and so is one that, with accounts, an account
 * failed while others read it to the end (their records emitted or written,
 * their states saved); when the command ends, `closed`, with the
 * exception when the run did not succeed. `replicate` may read a stream twice
 * in one run (finishing a read interrupted last time, then what changed
 * since): its streams are reported from the final summary instead, once.
 */
import type { RunCommand, RunRecorder, RunSummary, StreamEnd, StreamSummary } from '../report/run-report.js';
import { PipesSession } from './session.js';
import { keepLogLinesWhole } from '../runtime/output.js';
import type { FileWait } from '../config/files.js';

/**
 * Pipes for a sync command (Airbyte `read`, the tap's sync, `replicate`)
 * whose report is `recorder`, when DAGSTER_PIPES_CONTEXT and
 * DAGSTER_PIPES_MESSAGES are both set (`opened` written, and the session
 * closed at exit if the command could not close it itself); undefined
 * otherwise. Rejects with PipesSetupError (a ConfigError) when they are set but
 * cannot be used.
 */
export async function pipesForRun(env: NodeJS.ProcessEnv, recorder: RunRecorder, command: RunCommand, wait: FileWait = {}): Promise<PipesReport | undefined> {
  // replicate writes nothing on stdout; read and the tap's sync write their protocol there.
  // Messages on stderr: the log lines beside them stay one line each, whatever the service's words hold.
  const session = await PipesSession.fromEnv(env, { stderr: process.stderr, stdout: process.stdout, stdoutFree: command === 'replicate', sharingStderr: keepLogLinesWhole }, wait);
  session?.closeAtExit();
  return session === undefined ? undefined : new PipesReport(session, recorder, command);
}

export class PipesReport {
  private readonly pipes: PipesSession;
  private readonly atEnd: boolean;
  /** How each stream last ended (replicate reports at the end, from the summary). */
  private readonly ends = new Map<string, StreamEnd>();

  /** Listen to `recorder`'s streams as they end (for `command` replicate: at the end only). */
  constructor(pipes: PipesSession, recorder: RunRecorder, command: RunCommand) {
    this.pipes = pipes;
    this.atEnd = command === 'replicate';
    recorder.onStreamEnd((stream, end) => {
      this.ends.set(stream.name, end);
      if (!this.atEnd) this.materialized(stream);
    });
  }

  private materialized(stream: StreamSummary): void {
    if (stream.status !== 'complete' && this.ends.get(stream.name) !== 'partial') return;
    this.pipes.materialized({ stream: stream.name, records: stream.records, syncWatermark: stream.sync_watermark_after });
  }

  /** The command ended with this summary: the streams not told yet, then `closed`. */
  finish(summary: RunSummary): void {
    if (this.atEnd) for (const stream of summary.streams) this.materialized(stream);
    if (summary.status === 'succeeded') {
      this.pipes.close();
      return;
    }
    const name = summary.status === 'interrupted' ? 'Interrupted' : (summary.failure_type ?? 'Error');
    const message = summary.message ?? `The ${summary.command} ended with exit status ${summary.exit_code}; its log (stderr) says why.`;
    this.pipes.close({ name, message: `${message} (exit status ${summary.exit_code})` });
  }
}
