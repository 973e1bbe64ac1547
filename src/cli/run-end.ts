/**
 * The end of a sync command (Airbyte `read`, the tap's sync, `replicate`) as
 * the command line sees it: the command's run report (report/run-report.ts)
 * is started once the command is known, fed by the face and its session,
 * and finished with the exit status, however the command ends (returned,
 * thrown, a usage mistake, a signal), then written to `--summary FILE`. A
 * summary that cannot be written is said on stderr; it never changes the
 * exit status. Launched by Dagster Pipes (DAGSTER_PIPES_CONTEXT and
 * DAGSTER_PIPES_MESSAGES set), the report also feeds the Pipes session
 * (src/pipes/): a materialization per completed stream, `closed` at the end.
 */
import { ConfigError, ConnectorError, faultWords, messageOf, toConnectorError } from '../errors.js';
import { RunRecorder, summaryJson, type RunCommand } from '../report/run-report.js';
import { EXIT_OK, EXIT_SOFTWARE, EXIT_TEMPFAIL, exitStatusForAll } from '../runtime/exit-status.js';
import { Interrupt, exitOnceFlushed, type StopSignal } from '../runtime/interrupt.js';
import { LineWriter, StderrLogger, closedOutputError } from '../runtime/output.js';
import type { PipesReport } from '../pipes/report.js';
import { VERSION } from '../runtime/version.js';
import { FILE_FAILURES } from '../config/files.js';
import { lastValue, readArgs, readArgsLoosely, type ArgsSpec, type ParsedArgs } from './args.js';
import { namesStdout, readOnlySummary, sameFile, writeSummaryFile } from './summary-file.js';
import { UsageError, failureExit } from './usage.js';

/** Why the summary cannot be written, in words, by the system's error code; an unlisted code is given as it is. */
const WRITE_FAILURES: Readonly<Record<string, string>> = {
  ...FILE_FAILURES,
  ENOENT: 'its directory does not exist',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space is left on the device',
  ENXIO: 'it is a pipe no process reads',
};

/** The flags that name a file a command reads or keeps: a --summary may not name one of them. */
const FILE_FLAGS = ['config', 'catalog', 'properties', 'state', 'db'] as const;

/** The files the command line names (flag and path; --db's DuckDB file without its `duckdb:`), for RunEnd.start. */
export function commandFiles(args: ParsedArgs): [string, string][] {
  return FILE_FLAGS.flatMap((flag) => (args.values.get(flag) ?? []).map((value): [string, string] => [flag, flag === 'db' ? value.replace(/^duckdb:/, '') : value]));
}

export class RunEnd {
  private readonly log: (message: string) => void;
  private recorder: RunRecorder | undefined;
  private path: string | undefined;
  private written = false;
  private pipes: PipesReport | undefined;
  private stop: AbortSignal | undefined;

  /** @param log says a summary that cannot be written (stderr, at the executable's error level) */
  constructor(log: (message: string) => void) {
    this.log = log;
  }

  /** The run's stop (SIGTERM, SIGINT): it ends a wait for a writer of the Pipes context, when that is a named pipe. */
  stopsOn(signal: AbortSignal): void {
    this.stop = signal;
  }

  /**
   * The report of the sync command now starting; `summaryPath` is --summary's
   * value, if given. The report exists when this returns, before its first
   * await: a signal from then on is recorded and the summary written.
   */
  async start(command: RunCommand, summaryPath: string | undefined, files: readonly (readonly [string, string])[] = []): Promise<RunRecorder> {
    const recorder = new RunRecorder(command, { version: VERSION });
    this.recorder = recorder;
    // read's and the tap's stdout carries protocol messages: a summary there would corrupt the stream (replicate's is free).
    if (command !== 'replicate' && summaryPath !== undefined && namesStdout(summaryPath)) {
      throw new UsageError(`--summary ${summaryPath} is this command's stdout, which carries its protocol messages: give a file (or /dev/stderr).`);
    }
    // Written over the replica, the state or the config (its API key), the summary would replace them.
    const clash = summaryPath === undefined ? undefined : files.find(([, path]) => sameFile(summaryPath, path));
    if (clash !== undefined) {
      throw new UsageError(`--summary names the file of --${clash[0]} (${clash[1]}), which the summary would replace: give the summary a file of its own.`, { brief: true });
    }
    // A summary file the user made read-only is kept: refused before the run does anything (the summary cannot tell it).
    const readOnly = summaryPath === undefined ? undefined : readOnlySummary(summaryPath);
    if (readOnly !== undefined) throw new ConfigError(readOnly, { field: 'summary' });
    this.path = summaryPath;
    // Dagster Pipes only when asked (the module is not even loaded otherwise); a variable it cannot use is a config_error.
    if (process.env.DAGSTER_PIPES_CONTEXT && process.env.DAGSTER_PIPES_MESSAGES) {
      const { pipesForRun } = await import('../pipes/report.js');
      this.pipes = await pipesForRun(process.env, recorder, command, { signal: this.stop, log: this.log });
    }
    return recorder;
  }

  /**
   * The command line `argv`, read by `spec`. When it is wrong and `syncOf`
   * names the sync command it was meant for (from what can be read of it),
   * that command's report is started, so that its summary tells the usage
   * mistake. The mistake stays what the command ends with (exit 2): a
   * --summary or Dagster Pipes variable this start cannot use is not told
   * instead of it.
   */
  async readArgs(argv: readonly string[], spec: ArgsSpec, syncOf: (loose: ParsedArgs) => RunCommand | undefined): Promise<ParsedArgs> {
    try {
      return readArgs(argv, spec);
    } catch (err) {
      const loose = readArgsLoosely(argv, spec);
      const command = syncOf(loose);
      // The report exists either way, and its summary goes where --summary can take it.
      if (command !== undefined) await this.start(command, lastValue(loose, 'summary'), commandFiles(loose)).catch(() => undefined);
      throw err;
    }
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
      this.log(`Cannot send Dagster Pipes its last messages: ${messageOf(err)}.`);
    }
    if (this.path === undefined) return;
    try {
      writeSummaryFile(this.path, summaryJson(summary));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const reason = (code === undefined ? undefined : WRITE_FAILURES[code]) ?? code ?? messageOf(err);
      this.log(`Cannot write the run summary to "${this.path}": ${reason}. Pass a --summary path in a writable directory.`);
    }
  }
}

/** What a command of either executable runs with: stdout, the logger, its run end, the AbortSignal of its stop. */
export interface CommandIo {
  readonly out: LineWriter;
  readonly logger: StderrLogger;
  readonly end: RunEnd;
  readonly signal: AbortSignal;
}

/** How long a crash waits for stdout and stderr to take what is queued before the process exits. */
const CRASH_GRACE_MS = 5000;

/**
 * The handler of a fault nothing caught: an error thrown in an event handler
 * or a promise rejected without a handler, a bug in the connector or in a
 * library it uses. Node would print a stack and exit 1, a status the contract
 * does not name, with no summary. Instead the fault is told on stderr (one
 * line, then its stack on another, secrets redacted) and in the run's report
 * (the summary), the lines already queued on stdout go out whole and nothing
 * after them (every STATE written covers only records written before it:
 * the next run resumes from the last one), and the process exits 70, a
 * system_error. A second fault while it waits exits at once.
 */
function crashHandler(out: LineWriter, logger: StderrLogger, errorLevel: string, end: RunEnd): (err: unknown) => void {
  let crashed = false;
  return (err) => {
    if (crashed) process.exit(EXIT_SOFTWARE);
    crashed = true;
    const error = new ConnectorError(
      'system_error',
      `The connector stopped on a fault nothing caught (a bug, in the connector or in a library it uses): ${faultWords(err, (text) => logger.redact(text))}. ` +
        'The next run resumes from the last STATE written. Please report it with this message and the stack that follows.',
    );
    logger.log(errorLevel, error.message);
    // The stack's frames on one line (each stderr line is one message); not the message's lines, said above as far as they may be.
    const frames = err instanceof Error && err.stack !== undefined ? err.stack.split('\n').filter((line) => /^\s*at /.test(line)) : [];
    if (frames.length > 0) logger.log(errorLevel, `Stack: ${frames.map((frame) => frame.trim()).join(' | ')}`);
    end.failed(error);
    end.finish(EXIT_SOFTWARE);
    exitOnceFlushed(out, process.stderr, () => process.exit(EXIT_SOFTWARE), CRASH_GRACE_MS);
  };
}

/**
 * Run one command of `executable`, the way both executables do: the stop
 * handler installed before anything else (interrupt.ts: a signal is recorded
 * in the run's report, which is finished with the signal's exit status before
 * the process exits); a failure told on stderr at `errorLevel` with its exit
 * status, a usage mistake with the usage text `help` (usage.ts); then stdout
 * flushed, the handler removed and the report finished with the exit status,
 * which is returned: the command's, or 75 when a command that succeeded could
 * not hand its last lines to a reader that went away. A command that failed
 * on its own and lost its reader of stdout ends with its failure's status,
 * the failure also told on stderr (its ERROR trace may never have been read).
 */
export async function runCommand(executable: string, errorLevel: string, help: string, command: (io: CommandIo) => Promise<number>): Promise<number> {
  const out = new LineWriter(process.stdout);
  const logger = new StderrLogger(executable);
  const log = (message: string): void => logger.log(errorLevel, message);
  const end = new RunEnd(log);
  const interrupt = new Interrupt({
    out,
    log,
    onSignal: (signal) => end.interrupted(signal),
    exit: (code) => {
      end.finish(code);
      process.exit(code);
    },
  }).install();
  end.stopsOn(interrupt.signal);
  const crash = crashHandler(out, logger, errorLevel, end);
  process.on('uncaughtException', crash);
  let code = EXIT_OK;
  let thrown: { readonly error: unknown } | undefined;
  try {
    code = await command({ out, logger, end, signal: interrupt.signal });
  } catch (error) {
    thrown = { error };
  }
  await out.flush();
  const closed = out.closed();
  // The run's own failures (ERROR traces) with the reader of stdout gone, maybe before it took them: the cause is told here.
  const lost = out.lostFailures();
  if (lost.length > 0) {
    log('stdout was closed before the command ended (its reader went away): the failure it was to carry is told here.');
    for (const { error, text } of lost) {
      end.failed(error);
      log(text);
    }
  }
  if (thrown !== undefined && !(lost.length > 0 && closedOutputError(thrown.error) !== undefined)) {
    // The reader of stdout went away (a closed pipe) during a run that was not failing: exit 75, run again later.
    const error = closedOutputError(thrown.error) ?? thrown.error;
    end.failed(error);
    code = failureExit(error, log, help);
  } else if (lost.length > 0) {
    // The failure's own status, not 75 for the closed pipe: a config_error stays 78, as running again will not help.
    if (thrown !== undefined || code === EXIT_OK) code = exitStatusForAll(lost.map((f) => f.error.failureType));
  } else if (code === EXIT_OK && closed !== undefined) {
    end.failed(closed);
    log(closed.message);
    code = EXIT_TEMPFAIL;
  }
  interrupt.uninstall();
  process.off('uncaughtException', crash);
  end.finish(code);
  return code;
}
