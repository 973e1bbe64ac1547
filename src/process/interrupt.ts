/**
 * Stopping on SIGTERM or SIGINT (`docker stop`, Airbyte cancelling a sync,
 * Ctrl-C). A container's PID 1 gets no default action for SIGTERM: without a
 * handler, Node ignores `docker stop` and is SIGKILLed ten seconds later.
 *
 * The first signal ends the command at once: what was written stays written,
 * later protocol writes are dropped (the engine stalls where it is), the
 * command's last words (Airbyte: INCOMPLETE statuses and an ERROR trace;
 * Singer: the final STATE) go out after whatever is already queued, stdout and
 * stderr are flushed (at most `graceMs`), and the process exits with
 * 128 + the signal number (143 for SIGTERM, 130 for SIGINT). Every STATE
 * written before the signal covers only records written before it, so the
 * next run resumes from there. A second signal exits without waiting.
 */
import { constants } from 'node:os';
import type { Writable } from 'node:stream';
import type { LineWriter } from './output.js';

export type StopSignal = 'SIGTERM' | 'SIGINT';
export const STOP_SIGNALS: readonly StopSignal[] = ['SIGTERM', 'SIGINT'];

/** Where signals come from: the process, or an EventEmitter in tests. */
export interface SignalSource {
  on(event: StopSignal, listener: (signal: StopSignal) => void): unknown;
  off(event: StopSignal, listener: (signal: StopSignal) => void): unknown;
}

/** What the running command says when it is stopped. */
export interface LastWords {
  /** Whole protocol lines, written after everything already queued on stdout. */
  readonly stdout?: string | undefined;
  /** One message for people (stderr); a generic one when absent. */
  readonly message?: string | undefined;
}

export interface InterruptOptions {
  readonly out: LineWriter;
  /** Logs one message on stderr (the face's logger, at its error level). */
  readonly log: (message: string) => void;
  /** Longest wait for stdout and stderr to take the last lines. */
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

const DEFAULT_GRACE_MS = 3000;

/**
 * SIGTERM and SIGINT handed to `handle` from install() to uninstall(), each
 * listener added at most once (the signal source is `process` unless a test
 * gives its own).
 */
export abstract class SignalListener {
  private listening = false;
  protected abstract get signals(): SignalSource;
  protected abstract readonly handle: (signal: StopSignal) => void;

  install(): this {
    if (!this.listening) for (const signal of STOP_SIGNALS) this.signals.on(signal, this.handle);
    this.listening = true;
    return this;
  }

  uninstall(): void {
    if (this.listening) for (const signal of STOP_SIGNALS) this.signals.off(signal, this.handle);
    this.listening = false;
  }
}

export class Interrupt extends SignalListener {
  private readonly options: InterruptOptions;
  private lastWords: ((signal: StopSignal) => LastWords) | undefined;
  private stopping = false;

  constructor(options: InterruptOptions) {
    super();
    this.options = options;
  }

  protected get signals(): SignalSource {
    return this.options.signals ?? process;
  }

  /** Set what the running command says when stopped (replaces any earlier one). */
  setLastWords(lastWords: (signal: StopSignal) => LastWords): void {
    this.lastWords = lastWords;
  }

  /** True once a signal has been received. */
  get interrupted(): boolean {
    return this.stopping;
  }

  protected readonly handle = (signal: StopSignal): void => {
    const exit = this.options.exit ?? ((code: number) => process.exit(code));
    const code = exitCodeFor(signal);
    if (this.stopping) {
      exit(code);
      return;
    }
    this.stopping = true;
    try {
      this.options.onSignal?.(signal);
    } catch {
      // the same: stopping must not depend on it
    }
    let words: LastWords = {};
    try {
      words = this.lastWords?.(signal) ?? {};
    } catch {
      // The last words are a courtesy: stopping must not depend on them.
    }
    this.options.log(words.message ?? `Interrupted by ${signal}: stopped before the command finished.`);
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      exit(code);
    };
    const timer = setTimeout(finish, this.options.graceMs ?? DEFAULT_GRACE_MS);
    const stderr = this.options.stderr ?? process.stderr;
    const stderrFlushed = new Promise<void>((resolve) => {
      if (stderr.writableEnded || stderr.destroyed) resolve();
      else stderr.write('', () => resolve());
    });
    void Promise.all([this.options.out.seal(words.stdout), stderrFlushed]).then(finish, finish);
  };
}
