/** A SyncSink that records every event, for assertions on what a face would receive. */
import type { ConnectorError } from '../../src/errors.js';
import type { Data, LogLevel, SyncSink } from '../../src/engine/sync-sink.js';
import type { StreamState } from '../../src/engine/state.js';
import type { StreamDefinition } from '../../src/streams.js';

export type SinkEvent =
  | { kind: 'started'; stream: string }
  | { kind: 'running'; stream: string; quotaReset?: number }
  | { kind: 'records'; stream: string; records: Data[] }
  | { kind: 'state'; stream: string; state: StreamState }
  | { kind: 'complete'; stream: string; skipped?: true }
  | { kind: 'incomplete'; stream: string; error: ConnectorError }
  | { kind: 'stopped'; stream: string }
  | { kind: 'run-failed'; error: ConnectorError; stopped: string[] }
  | { kind: 'log'; level: LogLevel; message: string };

export class RecordingSink implements SyncSink {
  readonly events: SinkEvent[] = [];
  streamStarted(s: StreamDefinition): void {
    this.events.push({ kind: 'started', stream: s.name });
  }
  streamRunning(s: StreamDefinition, quotaReset?: number): void {
    this.events.push({ kind: 'running', stream: s.name, ...(quotaReset === undefined ? {} : { quotaReset }) });
  }
  records(s: StreamDefinition, records: readonly Data[]): void {
    this.events.push({ kind: 'records', stream: s.name, records: [...records] });
  }
  state(s: StreamDefinition, state: StreamState): void {
    this.events.push({ kind: 'state', stream: s.name, state: structuredClone(state) });
  }
  streamComplete(s: StreamDefinition, skipped?: boolean): void {
    this.events.push({ kind: 'complete', stream: s.name, ...(skipped === true ? { skipped } : {}) });
  }
  streamIncomplete(s: StreamDefinition, error: ConnectorError): void {
    this.events.push({ kind: 'incomplete', stream: s.name, error });
  }
  streamStopped(s: StreamDefinition): void {
    this.events.push({ kind: 'stopped', stream: s.name });
  }
  runFailed(error: ConnectorError, stopped: readonly StreamDefinition[]): void {
    this.events.push({ kind: 'run-failed', error, stopped: stopped.map((s) => s.name) });
  }
  log(level: LogLevel, message: string): void {
    this.events.push({ kind: 'log', level, message });
  }
  recordsOf(stream: string): Data[] {
    return this.events.flatMap((e) => (e.kind === 'records' && e.stream === stream ? e.records : []));
  }
  statesOf(stream: string): StreamState[] {
    return this.events.flatMap((e) => (e.kind === 'state' && e.stream === stream ? [e.state] : []));
  }
  logs(level?: LogLevel): string[] {
    return this.events.flatMap((e) => (e.kind === 'log' && (level === undefined || e.level === level) ? [e.message] : []));
  }
}
