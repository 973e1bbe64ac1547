/**
 * Where Pipes messages go, as DAGSTER_PIPES_MESSAGES says: `path` (one JSON
 * line appended to a file per message, the file Dagster tails), `stdio` (one
 * line on stderr, written whole, among the log lines: Dagster's reader takes
 * every line that parses as a JSON object with `__dagster_pipes_version` and
 * forwards the others as logs) or `buffered_stdio` (the same lines, all at
 * close). stdout is a channel only for a command whose stdout is otherwise
 * empty (replicate): the Airbyte and Singer faces' stdout carries their
 * protocol only.
 */
import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { MESSAGES_ENV, PipesSetupError, type PipesParams } from './params.js';

export interface MessageChannel {
  /** Write one message (a JSON-serializable object) now; synchronous, so that a message said before exit is never lost. */
  write(message: object): void;
  /** Flush what a buffered channel holds. */
  close(): void;
}

/** Something lines can be written to synchronously (process.stderr, a test's collector). */
interface LineTarget {
  write(text: string): unknown;
}

export interface ChannelTargets {
  readonly stderr: LineTarget;
  readonly stdout: LineTarget;
  /** The command writes nothing else on stdout (then `stdio: "stdout"` is allowed). */
  readonly stdoutFree: boolean;
  /** Called when the messages go to stderr, among the log lines. */
  readonly sharingStderr?: () => void;
}

/**
 * Appends to the file Dagster tails. The first message (`opened`) that cannot
 * be written fails the command (PipesSetupError naming the file); a later one
 * is said once on stderr, and the command goes on (the data is not at stake).
 */
class FileChannel implements MessageChannel {
  private readonly path: string;
  private readonly stderr: LineTarget;
  private written = false;
  private broken = false;

  constructor(path: string, stderr: LineTarget) {
    this.path = path;
    this.stderr = stderr;
  }

  write(message: object): void {
    if (this.broken) return;
    try {
      appendLine(this.path, `${JSON.stringify(message)}\n`);
      this.written = true;
    } catch (err) {
      const code = String((err as { code?: unknown }).code ?? (err instanceof Error ? err.message : err));
      const what = `Cannot write the Dagster Pipes messages file ${this.path} named by ${MESSAGES_ENV} (${code})`;
      if (!this.written) throw new PipesSetupError(`${what}: the orchestrator creates it before it starts the command; run the command from Dagster, or unset the DAGSTER_PIPES_* variables.`);
      this.broken = true;
      this.stderr.write(`${new Date().toISOString()} WARN dagster-pipes: ${what}; the messages after this one are lost.\n`);
    }
  }

  close(): void {}
}

/**
 * Appends one line to the file: not waiting on a named pipe no process reads
 * (ENXIO), which would hold the command past any signal.
 */
function appendLine(path: string, line: string): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK, 0o666);
  try {
    const bytes = Buffer.from(line, 'utf8');
    for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done);
  } finally {
    closeSync(fd);
  }
}

class StreamChannel implements MessageChannel {
  private readonly target: LineTarget;
  private readonly buffered: string[] | undefined;

  constructor(target: LineTarget, buffered: boolean) {
    this.target = target;
    this.buffered = buffered ? [] : undefined;
  }

  write(message: object): void {
    const line = `${JSON.stringify(message)}\n`;
    if (this.buffered) this.buffered.push(line);
    else this.target.write(line);
  }

  close(): void {
    if (this.buffered && this.buffered.length > 0) this.target.write(this.buffered.splice(0).join(''));
  }
}

function streamTarget(key: string, value: unknown, targets: ChannelTargets): LineTarget {
  if (value === 'stderr') {
    targets.sharingStderr?.();
    return targets.stderr;
  }
  if (value === 'stdout') {
    if (targets.stdoutFree) return targets.stdout;
    throw new PipesSetupError(
      `${MESSAGES_ENV} asks for Pipes messages on stdout (${key}: "stdout"), but this command's stdout carries its protocol messages only. ` +
        `Give the message reader stderr (Dagster: PipesDefaultMessageWriter params {"${key}": "stderr"}) or a file (the default of PipesSubprocessClient).`,
    );
  }
  throw new PipesSetupError(`${MESSAGES_ENV} has ${key}: ${JSON.stringify(value)}; expected "stderr" or "stdout".`);
}

/** The channel the messages parameters name; throws PipesSetupError when they name none this connector writes. */
export function openChannel(params: PipesParams, targets: ChannelTargets): MessageChannel {
  if ('path' in params) {
    if (typeof params.path !== 'string' || params.path === '') throw new PipesSetupError(`${MESSAGES_ENV} has a "path" that is not a file path: ${JSON.stringify(params.path)}.`);
    return new FileChannel(params.path, targets.stderr);
  }
  if ('stdio' in params) return new StreamChannel(streamTarget('stdio', params.stdio, targets), false);
  if ('buffered_stdio' in params) return new StreamChannel(streamTarget('buffered_stdio', params.buffered_stdio, targets), true);
  throw new PipesSetupError(
    `${MESSAGES_ENV} names no channel this connector writes (keys: ${Object.keys(params).join(', ') || 'none'}): ` +
      'it writes to a file ("path") or to stderr ("stdio"), as PipesSubprocessClient, PipesDockerClient and PipesK8sClient ask by default.',
  );
}
