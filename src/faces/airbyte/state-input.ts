/**
 * The `--state` file of `read`: a JSON array of AirbyteStateMessage of type
 * STREAM (the legacy per-stream object is accepted too). Returns each stream's
 * validated state.
 */
import { ConfigError } from '../../errors.js';
import { parseStreamState, type StreamState } from '../../engine/state.js';
import { findStream } from '../../streams.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function streamEntry(entry: unknown, index: number): [string, unknown] {
  const message = isObject(entry) && entry.type === 'STATE' && isObject(entry.state) ? entry.state : entry;
  if (!isObject(message) || message.type !== 'STREAM' || !isObject(message.stream)) {
    throw new ConfigError(
      `Invalid state: item ${index} is not a per-stream state ({"type": "STREAM", "stream": {"stream_descriptor": {"name": ...}, "stream_state": {...}}}).`,
    );
  }
  const descriptor = message.stream.stream_descriptor;
  if (!isObject(descriptor) || typeof descriptor.name !== 'string') {
    throw new ConfigError(`Invalid state: item ${index} has no stream_descriptor.name.`);
  }
  return [descriptor.name, message.stream.stream_state];
}

/**
 * @param selected the streams of the configured catalog: a state for another
 *   stream (Airbyte passes the states of deselected streams) is ignored with a warning
 */
export function parseAirbyteState(input: unknown, warn: (message: string) => void, selected?: ReadonlySet<string>): Map<string, StreamState> {
  let entries: [string, unknown][];
  if (Array.isArray(input)) entries = input.map(streamEntry);
  else if (isObject(input)) entries = Object.entries(input); // legacy: {"<stream>": {...}}
  else throw new ConfigError('Invalid state: expected a JSON array of per-stream STATE messages.');
  const states = new Map<string, StreamState>();
  for (const [name, raw] of entries) {
    if (!findStream(name)) {
      warn(`The state holds stream "${name}", which this source does not have; it is ignored.`);
      continue;
    }
    if (selected !== undefined && !selected.has(name)) {
      warn(`The state holds stream "${name}", which the catalog does not select; it is ignored (select the stream to resume it).`);
      continue;
    }
    states.set(name, parseStreamState(name, raw));
  }
  return states;
}
