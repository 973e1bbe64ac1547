/**
 * The end of a sync command (Airbyte `read`, the tap's sync, `replicate`) as
 * the command line sees it: the command's run report (engine/run-report.ts)
 * is started once the command is known, fed by the face and its session,
 * and finished with the exit status, however the command ends (returned,
 * thrown, a usage mistake, a signal), then written to `--summary FILE`. A
 * summary that cannot be written is said on stderr; it never changes the
 * exit status. Launched by Dagster Pipes (DAGSTER_PIPES_CONTEXT and
 * DAGSTER_PIPES_MESSAGES set), the report also feeds the Pipes session
 * (src/pipes/): a materialization per completed stream, `closed` at the end.
 */
import { ConfigError, toConnectorError } from '../errors.js';
import { RunRecorder, summaryJson, type RunCommand } from '../engine/run-report.js';
import { EXIT_TEMPFAIL } from '../process/exit-status.js';
import { Interrupt, type StopSignal } from '../process/interrupt.js';
import type { LineWriter } from '../process/output.js';
import type { PipesReport } from '../pipes/index.js';
import { VERSION } from '../process/version.js';
import { namesStdout, writeSummaryFile } from './summary-file.js';
import { UsageError } from './usage.js';

export class RunEnd {
  private readonly log: (message: string) => void;
  private recorder: RunRecorder | undefined;
  private path: string | undefined;
  private written = false;
  private pipes: PipesReport | undefined;

  /** @param log says a summary that cannot be written (stderr, at the executable's error level) */
  constructor(log: (message: string) => void) {
    this.log = log;
  }

  /**
   * The report of the sync command now starting; `summaryPath` is --summary's
   * value, if given. The report exists when this returns, before its first
   * await: a signal from then on is recorded and the summary written.
   */
  async start(command: RunCommand, summaryPath: string | undefined): Promise<RunRecorder> {
    const recorder = new RunRecorder(command, { version: VERSION });
    this.recorder = recorder;
    // read's and the tap's stdout carries protocol messages: a summary there would corrupt the stream (replicate's is free).
    if (command !== 'replicate' && summaryPath !== undefined && namesStdout(summaryPath)) {
      throw new UsageError(`--summary ${summaryPath} is this command's stdout, which carries its protocol messages: give a file (or /dev/stderr).`);
    }
    this.path = summaryPath;
    // Dagster Pipes only when asked (the module is not even loaded otherwise); a variable it cannot use is a config_error.
    if (process.env.DAGSTER_PIPES_CONTEXT && process.env.DAGSTER_PIPES_MESSAGES) {
      const { pipesForRun } = await import('../pipes/index.js');
      this.pipes = pipesForRun(process.env, recorder, command);
    }
    return recorder;
  }

  /** The command failed with what it threw (a usage mistake is told as one). */
  failed(err: unknown): void {
    this.recorder?.fail(err instanceof UsageError ? new ConfigError(err.message) : toConnectorError(err));
  }

  /** The command is stopping on a signal. */
  interrupted(signal: StopSignal): void {
    this.recorder?.interrupted(signal);
  }

  /** Finish the report with the exit status and write the summary file (once; synchronous, also on a signal's way out). */
  finish(code: number): void {
    if (this.written || this.recorder === undefined) return;
    this.written = true;
    const summary = this.recorder.finish(code);
    try {
      this.pipes?.finish(summary);
    } catch (err) {
      this.log(`Cannot send Dagster Pipes its last messages: ${err instanceof Error ? err.message : String(err)}.`);
    }
    if (this.path === undefined) return;
    try {
      writeSummaryFile(this.path, summaryJson(summary));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      this.log(`Cannot write the run summary to "${this.path}": ${code ?? (err instanceof Error ? err.message : String(err))}. Pass a --summary path in a writable directory.`);
    }
  }
}

/**
 * A command's run end and its signal handling, wired together (what both
 * executables start with): a signal is recorded in the report, which is
 * finished with the signal's exit status before the process exits. The
 * Interrupt is not installed yet. `log` is the executable's error log.
 */
export function runEndAndInterrupt(out: LineWriter, log: (message: string) => void): { readonly end: RunEnd; readonly interrupt: Interrupt } {
  const end = new RunEnd(log);
  const interrupt = new Interrupt({
    out,
    log,
    onSignal: (signal) => end.interrupted(signal),
    exit: (code) => {
      end.finish(code);
      process.exit(code);
    },
  });
  return { end, interrupt };
}

/**
 * After a command, however it ended: stdout flushed, the signal handlers
 * removed, the report finished with the exit status, which is returned:
 * `code`, or 75 when a command that succeeded could not hand its last lines
 * to a reader that went away (`log` says so).
 */
export async function closeRun(out: LineWriter, interrupt: Interrupt, end: RunEnd, code: number, log: (message: string) => void): Promise<number> {
  await out.flush();
  const closed = code === 0 ? out.closed() : undefined;
  if (closed !== undefined) {
    end.failed(closed);
    log(closed.message);
    code = EXIT_TEMPFAIL;
  }
  interrupt.uninstall();
  end.finish(code);
  return code;
}
