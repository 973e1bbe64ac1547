/**
 * Stopping on SIGTERM or SIGINT (`docker stop`, Airbyte cancelling a sync,
 * Ctrl-C). A container's PID 1 gets no default action for SIGTERM: without a
 * handler, Node ignores `docker stop` and is SIGKILLed ten seconds later.
 *
 * One handler for the whole command, installed before anything else, and one
 * AbortController: the first signal aborts it, and whatever must react
 * listens to its AbortSignal, handed down from the command line (the client's
 * requests and waits, the replica's writer, the status line, the command's
 * last words: `onStop`). Then what was written stays written, later protocol
 * writes are dropped (the engine stalls where it is), the command's last
 * words (Airbyte: INCOMPLETE statuses and an ERROR trace; Singer: the final
 * STATE) go out after whatever is already queued, stdout and stderr are
 * flushed, and the process exits with 128 + the signal number (143 for
 * SIGTERM, 130 for SIGINT). A reader of stdout that is slow or busy (a
 * destination loading a batch) is waited for, so that the output ends with
 * whole lines and the last words; one that has gone away ends the wait at
 * once (EPIPE), and nothing is waited for longer than `graceMs`. Every STATE
 * written before the signal covers only records written before it, so the
 * next run resumes from there. A second signal exits without waiting.
 */
import { constants } from 'node:os';
import type { Writable } from 'node:stream';
import type { LineWriter } from './output.js';

export type StopSignal = 'SIGTERM' | 'SIGINT';
const STOP_SIGNALS: readonly StopSignal[] = ['SIGTERM', 'SIGINT'];

/** Where signals come from: the process, or an EventEmitter in tests. */
interface SignalSource {
  on(event: StopSignal, listener: (signal: StopSignal) => void): unknown;
  off(event: StopSignal, listener: (signal: StopSignal) => void): unknown;
}

interface InterruptOptions {
  readonly out: LineWriter;
  /** Logs one message on stderr (the executable's logger, at its error level). */
  readonly log: (message: string) => void;
  /** Longest wait for stdout and stderr to take the last lines (25 s: within Kubernetes' 30-s termination grace). */
  readonly graceMs?: number;
  readonly signals?: SignalSource;
  readonly stderr?: Writable;
  readonly exit?: (code: number) => void;
  /** Told first, when the first signal arrives (the run's report records it). */
  readonly onSignal?: (signal: StopSignal) => void;
}

/** The exit status of a process ended by `signal` the way shells report it. */
export function exitCodeFor(signal: StopSignal): number {
  return 128 + constants.signals[signal];
}

/** The reason of the command's AbortSignal once a stop signal aborted it. */
class Stop extends Error {
  readonly signal: StopSignal;
  /** Whether the command said its own last words (else a generic message is said). */
  told = false;
  constructor(signal: StopSignal) {
    super(`Interrupted by ${signal}.`);
    this.signal = signal;
    this.name = 'AbortError';
  }
}

/**
 * The command's last words when it is stopped: `say` runs once, at the stop
 * (not when the stop came before: the generic message was said), and says them itself (stdout through
 * LineWriter.seal, its message on stderr), instead of the generic message.
 * A `say` that throws is passed over: stopping must not depend on it.
 * Returns what removes it (a command that moves on to other last words).
 */
export function onStop(signal: AbortSignal | undefined, say: (stopSignal: StopSignal) => void): () => void {
  if (signal === undefined) return () => undefined;
  const run = (): void => {
    const reason: unknown = signal.reason;
    if (!(reason instanceof Stop)) return;
    try {
      say(reason.signal);
      reason.told = true;
    } catch {
      // the generic message is said instead
    }
  };
  signal.addEventListener('abort', run, { once: true });
  return () => signal.removeEventListener('abort', run);
}

const DEFAULT_GRACE_MS = 25_000;

export class Interrupt {
  private readonly options: InterruptOptions;
  private readonly controller = new AbortController();
  private listening = false;

  constructor(options: InterruptOptions) {
    this.options = options;
  }

  /** Aborted by the first stop signal: hand it to everything that must stop. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Listen for SIGTERM and SIGINT (once, however often called) until uninstall(). */
  install(): this {
    const source = this.options.signals ?? process;
    if (!this.listening) for (const signal of STOP_SIGNALS) source.on(signal, this.handle);
    this.listening = true;
    return this;
  }

  uninstall(): void {
    const source = this.options.signals ?? process;
    if (this.listening) for (const signal of STOP_SIGNALS) source.off(signal, this.handle);
    this.listening = false;
  }

  private readonly handle = (signal: StopSignal): void => {
    const exit = this.options.exit ?? ((code: number) => process.exit(code));
    const code = exitCodeFor(signal);
    if (this.signal.aborted) {
      exit(code);
      return;
    }
    try {
      this.options.onSignal?.(signal);
    } catch {
      // the same: stopping must not depend on it
    }
    const stop = new Stop(signal);
    this.controller.abort(stop);
    if (!stop.told) this.options.log(`Interrupted by ${signal}: stopped before the command finished.`);
    exitOnceFlushed(this.options.out, this.options.stderr ?? process.stderr, () => exit(code), this.options.graceMs ?? DEFAULT_GRACE_MS);
  };
}

/**
 * The way out of a process that stops before its command ends (a signal, a
 * fault nothing caught): stdout sealed (what is queued goes out whole,
 * nothing after it) and stderr flushed, then `exit`; after `graceMs` at the
 * most, whatever the readers do.
 */
export function exitOnceFlushed(out: LineWriter, stderr: Writable, exit: () => void, graceMs: number): void {
  let done = false;
  const finish = (): void => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    exit();
  };
  const timer = setTimeout(finish, graceMs);
  const stderrFlushed = new Promise<void>((resolve) => {
    if (stderr.writableEnded || stderr.destroyed) resolve();
    else stderr.write('', () => resolve());
  });
  void Promise.all([out.seal(), stderrFlushed]).then(finish, finish);
}
