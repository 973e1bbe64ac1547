/**
 * Airbyte protocol messages (v0.18.0), serialized one per line. Only the
 * message shapes this source emits are modelled.
 */
import type { ConnectorError } from '../../errors.js';
import type { LogLevel } from '../../engine/sync-sink.js';
import type { StreamState } from '../../engine/state.js';

/** The column Airbyte destinations in append+dedup mode read to delete a row (a tombstone sets it). */
export const AIRBYTE_DELETED_AT = '_ab_cdc_deleted_at';

export interface AirbyteStream {
  name: string;
  json_schema: Record<string, unknown>;
  supported_sync_modes: string[];
  source_defined_cursor?: boolean;
  default_cursor_field?: string[];
  source_defined_primary_key: string[][];
  is_resumable: boolean;
  description?: string;
}

type StreamStatus = 'STARTED' | 'RUNNING' | 'COMPLETE' | 'INCOMPLETE';

const line = (message: unknown): string => `${JSON.stringify(message)}\n`;

/** The payload of the SPEC message (also checked in as catalog/spec.json). */
export const specPayload = (connectionSpecification: Record<string, unknown>, documentationUrl: string): Record<string, unknown> => ({
  documentationUrl,
  protocol_version: '0.2.0',
  supportsIncremental: true,
  connectionSpecification,
});

/** A SPEC message around a whole, ready spec object (e.g. the checked-in catalog/spec.json). */
export const specMessage = (spec: Record<string, unknown>): string => line({ type: 'SPEC', spec });

export const connectionStatus = (status: 'SUCCEEDED' | 'FAILED', message: string): string =>
  line({ type: 'CONNECTION_STATUS', connectionStatus: { status, message } });

export const catalog = (streams: readonly AirbyteStream[]): string => line({ type: 'CATALOG', catalog: { streams } });

export const log = (level: LogLevel, message: string): string => line({ type: 'LOG', log: { level, message } });

export const streamStatus = (stream: string, status: StreamStatus, quotaReset?: number): string =>
  line({
    type: 'TRACE',
    trace: {
      type: 'STREAM_STATUS',
      emitted_at: Date.now(),
      stream_status: {
        stream_descriptor: { name: stream },
        status,
        ...(quotaReset === undefined ? {} : { reasons: [{ type: 'RATE_LIMITED', rate_limited: { quota_reset: quotaReset } }] }),
      },
    },
  });

export const state = (stream: string, streamState: StreamState, recordCount: number): string =>
  line({
    type: 'STATE',
    state: {
      type: 'STREAM',
      stream: { stream_descriptor: { name: stream }, stream_state: streamState },
      sourceStats: { recordCount },
    },
  });

export const errorTrace = (error: ConnectorError, stream?: string): string =>
  line({
    type: 'TRACE',
    trace: {
      type: 'ERROR',
      emitted_at: Date.now(),
      error: {
        message: error.message,
        ...(error.internal ? { internal_message: error.internal } : {}),
        ...(error.failureType === 'system_error' && error.stack ? { stack_trace: error.stack } : {}),
        failure_type: error.failureType,
        ...(stream ? { stream_descriptor: { name: stream } } : {}),
      },
    },
  });

/**
 * A RECORD line is recordHead(stream) + JSON.stringify(data) + recordTail(emittedAt):
 * the fixed parts are made once (a stream's head, a page's tail), so a record costs one JSON.stringify of its data.
 */
export const recordHead = (stream: string): string => `{"type":"RECORD","record":{"stream":${JSON.stringify(stream)},"data":`;

export const recordTail = (emittedAt: number): string => `,"emitted_at":${emittedAt}}}\n`;
