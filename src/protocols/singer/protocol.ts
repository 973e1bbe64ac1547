/**
 * Singer messages, serialized one per line. Type names are upper case, as the
 * Singer specification writes them and every target accepts.
 */
import type { StreamState } from '../../engine/state.js';
import type { JsonSchema } from '../../schemas/json-schema.js';

export type { JsonSchema };

/** The Singer convention for a deleted row: targets that honour it delete the row a RECORD with it set names. */
export const SINGER_DELETED_AT = '_sdc_deleted_at';

/** The value of a STATE message (and of the `--state` file). */
export interface SingerState {
  bookmarks: Record<string, StreamState>;
  currently_syncing: string | null;
}

const line = (message: unknown): string => `${JSON.stringify(message)}\n`;

export const schema = (stream: string, jsonSchema: JsonSchema, keyProperties: readonly string[], bookmarkProperties: readonly string[]): string =>
  line({ type: 'SCHEMA', stream, schema: jsonSchema, key_properties: keyProperties, bookmark_properties: bookmarkProperties });

export const state = (value: SingerState): string => line({ type: 'STATE', value });

/**
 * ACTIVATE_VERSION: the target makes `version` of the stream's table the
 * current one and drops the rows of older versions (rows the source no
 * longer has, in a full-table sync).
 */
export const activateVersion = (stream: string, version: number): string => line({ type: 'ACTIVATE_VERSION', stream, version });

/**
 * A RECORD line is recordHead(stream) + JSON.stringify(record) + recordTail(timeExtracted, version):
 * the fixed parts are made once (a stream's head, a page's tail), so a record costs one JSON.stringify.
 * `timeExtracted` is an ISO string shared by a page. `version`: the table version each RECORD
 * carries (a full-table sync with ACTIVATE_VERSION).
 */
export const recordHead = (stream: string): string => `{"type":"RECORD","stream":${JSON.stringify(stream)},"record":`;

export const recordTail = (timeExtracted: string, version?: number): string =>
  `${version === undefined ? '' : `,"version":${version}`},"time_extracted":"${timeExtracted}"}\n`;
