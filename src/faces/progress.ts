/**
 * A face's sink watched for the status line (src/progress): every event
 * passes to the face's sink unchanged, and what the line shows (records per
 * stream, a rate-limit wait and its end, a stream's end) is told to the
 * progress observer on the way. Nothing is added when nothing is shown.
 */
import type { ConnectorError } from '../errors.js';
import { ForwardingSink, type Data, type SyncSink } from '../engine/events.js';
import type { Progress, ProgressObserver } from '../progress/progress.js';
import type { StreamDefinition } from '../streams.js';

class ObservedSink extends ForwardingSink {
  private readonly observer: ProgressObserver;

  constructor(inner: SyncSink, observer: ProgressObserver) {
    super(inner);
    this.observer = observer;
  }

  override streamStarted(stream: StreamDefinition): void | Promise<void> {
    this.observer.started(stream.name);
    return this.inner.streamStarted(stream);
  }

  override streamRunning(stream: StreamDefinition, quotaReset?: number): void | Promise<void> {
    this.observer.waiting(stream.name, quotaReset);
    return this.inner.streamRunning(stream, quotaReset);
  }

  override records(stream: StreamDefinition, records: readonly Data[], extractedAt: number): void | Promise<void> {
    this.observer.counted(stream.name, records.length);
    return this.inner.records(stream, records, extractedAt);
  }

  override streamComplete(stream: StreamDefinition, skipped?: boolean): void | Promise<void> {
    this.observer.ended(stream.name, 'complete');
    return this.inner.streamComplete(stream, skipped);
  }

  override streamIncomplete(stream: StreamDefinition, error: ConnectorError): void | Promise<void> {
    this.observer.ended(stream.name, 'failed');
    return this.inner.streamIncomplete(stream, error);
  }

  override streamStopped(stream: StreamDefinition): void | Promise<void> {
    this.observer.ended(stream.name, 'failed');
    return this.inner.streamStopped(stream);
  }
}

/** `sink`, its events told to `progress` as they pass; `sink` itself when progress shows nothing. */
export function observedSink(sink: SyncSink, progress: Progress): SyncSink {
  return progress.active ? new ObservedSink(sink, progress) : sink;
}
