/**
 * `replicate`'s stop handler around the face's own: installed by the command
 * line before the run's report is started and the replica face is loaded,
 * and removed only once the run's end (--summary, Pipes `closed`) is
 * written, so that a SIGTERM/SIGINT never meets the default action (no
 * summary, no `closed`). While the face's own handlers are installed (it
 * says so through `handOver`) this one leaves the signal to them; otherwise
 * it stops the run itself: the report marked interrupted, the summary
 * written, exit 143/130. A signal that comes before the report exists waits
 * for it (`ready`), so the summary says the run was interrupted.
 */
import { SignalListener, exitCodeFor, type SignalSource, type StopSignal } from '../process/interrupt.js';

export interface StopBridgeOptions {
  /** Stop the run for `signal` with exit status `code` (mark the report, write the summary, exit). */
  readonly stop: (signal: StopSignal, code: number) => void;
  readonly signals?: SignalSource;
}

export class StopBridge extends SignalListener {
  private readonly options: StopBridgeOptions;
  private ready = false;
  private faceHandles = false;
  private pending: StopSignal | undefined;

  constructor(options: StopBridgeOptions) {
    super();
    this.options = options;
  }

  protected get signals(): SignalSource {
    return this.options.signals ?? process;
  }

  /** The run's report exists: a signal received before it stops the run now. */
  reportReady(): void {
    this.ready = true;
    const signal = this.pending;
    this.pending = undefined;
    if (signal !== undefined && !this.faceHandles) this.stopFor(signal);
  }

  /** True: the face's own stop handlers are installed (they stop the run); false: they are removed. */
  handOver(faceHandles: boolean): void {
    this.faceHandles = faceHandles;
  }

  private stopFor(signal: StopSignal): void {
    this.options.stop(signal, exitCodeFor(signal));
  }

  protected readonly handle = (signal: StopSignal): void => {
    if (this.faceHandles) return; // the face's handler, installed after this one, stops the run
    if (!this.ready) {
      this.pending ??= signal;
      return;
    }
    this.stopFor(signal);
  };
}
