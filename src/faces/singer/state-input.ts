/**
 * The `--state` file: the value of the last STATE message,
 * `{"bookmarks": {"<stream>": {...}}, "currently_syncing": ...}`. A whole STATE
 * message (`{"type": "STATE", "value": {...}}`) is accepted too, as some
 * runners store that. Each known stream's bookmark is validated; bookmarks of
 * streams this tap does not have are dropped with a warning.
 */
import { ConfigError } from '../../errors.js';
import { parseStreamState, type StreamState } from '../../engine/state.js';
import { findStream } from '../../streams.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export function parseSingerState(input: unknown, warn: (message: string) => void): Map<string, StreamState> {
  let value = input;
  if (isObject(value) && 'value' in value && !('bookmarks' in value)) value = value.value;
  if (!isObject(value)) {
    throw new ConfigError('Invalid state: expected a JSON object {"bookmarks": {"<stream>": {"sync_watermark": ...}}}, as the tap writes it.', { field: 'state' });
  }
  const bookmarks = value.bookmarks ?? {};
  if (!isObject(bookmarks)) throw new ConfigError('Invalid state: "bookmarks" must be an object keyed by stream name.', { field: 'state.bookmarks' });
  const states = new Map<string, StreamState>();
  for (const [name, raw] of Object.entries(bookmarks)) {
    if (!findStream(name)) {
      warn(`The state holds a bookmark for stream "${name}", which this tap does not have; it is dropped.`);
      continue;
    }
    states.set(name, parseStreamState(name, raw));
  }
  return states;
}
