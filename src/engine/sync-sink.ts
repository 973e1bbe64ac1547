/**
 * What the engine tells a face's emitter, after the record pipeline
 * (pipeline.ts) selected, treated, checked and counted each page. A face
 * (Airbyte, Singer, the replica) implements SyncSink to serialize or write
 * what it is told; it knows nothing of HTTP. Every method may return a
 * promise: the engine awaits it, which is how backpressure from a slow
 * stdout or a database reaches the reader.
 */
import type { ConnectorError } from '../errors.js';
import type { StreamDefinition } from '../streams.js';
import type { StreamState } from './state.js';

export type LogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';

export type Data = Record<string, unknown>;

export interface SyncSink {
  streamStarted(stream: StreamDefinition): void | Promise<void>;
  /** The stream is reading; `quotaReset` (epoch ms) when it is waiting on a rate limit. */
  streamRunning(stream: StreamDefinition, quotaReset?: number): void | Promise<void>;
  /**
   * The sync_watermark of the stream's read (the service's now when it
   * began, on its clock), told before its first record.
   */
  readWatermark?(stream: StreamDefinition, watermark: string): void | Promise<void>;
  /** One page of records as received, extracted at `extractedAt` (epoch ms); `tombstones`: how many of them are tombstones (for the run's report). */
  records(stream: StreamDefinition, records: readonly Data[], extractedAt: number, tombstones?: number): void | Promise<void>;
  /**
   * The stream's read starts again from its beginning (the last complete
   * watermark): the saved resume cursor could not be followed. Told before
   * any record of the new read; what was written of the read it continued
   * is not continued (the replica starts the marks of a full read over).
   */
  readRestarted?(stream: StreamDefinition): void | Promise<void>;
  /**
   * The stream is read again in full, from start_date, in this sync: the
   * read before completed with a watermark earlier than the saved one (its
   * clock went back; reader.ts). Told before any record of the new read,
   * which returns every record the service has (the replica removes the rows
   * it does not return, as a heal's read does); the records of the read
   * before that no checkpoint covered yet come with its first checkpoint.
   */
  rereadInFull?(stream: StreamDefinition): void | Promise<void>;
  /** A checkpoint covering every record of the stream given before it. */
  state(stream: StreamDefinition, state: StreamState): void | Promise<void>;
  /**
   * The stream ended well; `skipped`: the service does not offer it (a 404 on an optional stream), nothing was read
   * (with accounts: the service of one account at least does not offer it; the others may have read it).
   */
  streamComplete(stream: StreamDefinition, skipped?: boolean): void | Promise<void>;
  /** The stream ends unfinished because of its own failure (a path, a cursor, an answer): say it with the stream. */
  streamIncomplete(stream: StreamDefinition, error: ConnectorError): void | Promise<void>;
  /** The stream ends unfinished because the whole run failed: `runFailed` says why, once. Its last checkpoint stands. */
  streamStopped(stream: StreamDefinition): void | Promise<void>;
  /**
   * A failure of the whole run (the key refused, the service unreachable, its
   * quota used up), once, after every stream it stopped (`stopped`, in the
   * order they ended) was told with streamStopped.
   */
  runFailed(error: ConnectorError, stopped: readonly StreamDefinition[]): void | Promise<void>;
  log(level: LogLevel, message: string): void | Promise<void>;
  /** Whether the output this sink writes has gone away (its reader closed it): nothing more of the run can reach anyone. */
  outputClosed?(): boolean;
}
