/**
 * What `read` accepts as `--state`, and each stream's validated state:
 * - the JSON array of per-stream AirbyteStateMessage that Airbyte passes
 *   (items may also be whole STATE messages, {"type": "STATE", "state": ...});
 * - a single STATE message (e.g. the last STATE line of a read's output);
 * - JSON lines of STATE messages (the STATE lines of a read's output).
 * When a stream appears more than once, the last one wins. Anything else is a
 * config error that shows these shapes: never a silent full re-read. The file
 * is read as both faces read it (../state-kind.ts).
 */
import { isObject } from '../../exact-json.js';
import type { ConfigError } from '../../errors.js';
import { parseStreamState, type StreamState } from '../../engine/state.js';
import { findStream } from '../../streams.js';
import { describeJson, invalidState, isSingerState, messageKind, readStateFile, type StateFile } from '../state-kind.js';
import type { FileWait } from '../../config/files.js';

/** The recipe that turns a read's output into the next read's state. */
const STATE_RECIPE = `grep '^{"type":"STATE"' out.jsonl > state.json`;

const EXPECTED_STATE =
  'Expected the state Airbyte passes, a JSON array of per-stream states ' +
  '[{"type": "STREAM", "stream": {"stream_descriptor": {"name": "<stream>"}, "stream_state": {"sync_watermark": "..."}}}, ...]; ' +
  'a single STATE message {"type": "STATE", "state": {"type": "STREAM", ...}}; ' +
  `or the STATE lines of a read's output, one a line (${STATE_RECIPE}; the last of each stream wins).`;

/** The --state file of read: one JSON document, or JSON lines. */
export function readAirbyteStateFile(path: string, wait: FileWait = {}): Promise<StateFile> {
  return readStateFile(path, { expected: EXPECTED_STATE, writer: 'read' }, wait);
}

interface StateOptions {
  /** The streams of the configured catalog: a state for another stream is ignored with a warning (Airbyte passes the states of deselected streams). */
  readonly selected?: ReadonlySet<string>;
  /** The streams read incrementally: a single STATE message that leaves some of them out is warned about. */
  readonly incremental?: ReadonlySet<string>;
  /** The input is the list of a JSON-lines file's lines. */
  readonly lines?: boolean;
}

/** The refusal of the Singer tap's state (or output): what it is, and how its bookmarks become Airbyte's. */
function singerState(given: string): ConfigError {
  return invalidState(
    `${given}, not Airbyte state. ${EXPECTED_STATE} ` +
      'A bookmark of the tap is its stream\'s stream_state as it is: {"type": "STREAM", "stream": {"stream_descriptor": {"name": "<stream>"}, "stream_state": <its bookmark>}}.',
  );
}

/** The stream name and raw stream_state of one item (a STATE message or a per-stream state). */
function streamEntry(entry: unknown, where: string): [string, unknown] {
  const kind = messageKind(entry);
  if (kind?.protocol === 'singer' || (kind === undefined && isSingerState(entry))) {
    const what = kind === undefined ? 'the Singer tap\'s state (tap-data-read)' : kind.type === 'STATE' ? 'a STATE of the Singer tap (tap-data-read)' : `a ${kind.type} message of the Singer tap (tap-data-read): the file is its output`;
    throw singerState(`${where} is ${what}`);
  }
  if (isObject(entry) && typeof entry.type === 'string' && !['STATE', 'STREAM', 'GLOBAL', 'LEGACY'].includes(entry.type)) {
    throw invalidState(`${where} is a ${entry.type} message, not a STATE. Keep only the STATE lines of a read's output: ${STATE_RECIPE}.`);
  }
  const message = isObject(entry) && entry.type === 'STATE' && isObject(entry.state) ? entry.state : entry;
  if (!isObject(message) || message.type !== 'STREAM' || !isObject(message.stream)) {
    throw invalidState(`${where} is not a per-stream state ({"type": "STREAM", "stream": {"stream_descriptor": {"name": ...}, "stream_state": {...}}}). ${EXPECTED_STATE}`);
  }
  const descriptor = message.stream.stream_descriptor;
  if (!isObject(descriptor) || typeof descriptor.name !== 'string') {
    throw invalidState(`${where} has no stream_descriptor.name.`);
  }
  return [descriptor.name, message.stream.stream_state];
}

/** The items of the input, each with its place for messages; throws on a shape that is none of the accepted ones. */
function itemsOf(input: unknown, lines: boolean): { items: unknown[]; where: (i: number) => string; single: boolean } {
  if (Array.isArray(input)) return { items: input, where: (i) => (lines ? `line ${i + 1}` : `item ${i}`), single: false };
  if (isObject(input) && (input.type === 'STATE' || input.type === 'STREAM' || input.type === 'GLOBAL' || input.type === 'LEGACY')) {
    return { items: [input], where: () => 'the STATE message', single: true };
  }
  if (isSingerState(input)) throw singerState(`the file holds the Singer tap's state (${describeJson(input)})`);
  throw invalidState(`the file holds ${describeJson(input)}, not STATE messages. ${EXPECTED_STATE}`);
}

export function parseAirbyteState(input: unknown, warn: (message: string) => void, options: StateOptions = {}): Map<string, StreamState> {
  const { items, where, single } = itemsOf(input, options.lines === true);
  const raw = new Map<string, unknown>();
  for (const [index, item] of items.entries()) {
    const [name, state] = streamEntry(item, where(index));
    raw.delete(name); // the last one wins, in the order of the file
    raw.set(name, state);
  }
  const states = new Map<string, StreamState>();
  for (const [name, state] of raw) {
    if (!findStream(name)) {
      warn(`The state holds stream "${name}", which this source does not have; it is ignored.`);
      continue;
    }
    if (options.selected !== undefined && !options.selected.has(name)) {
      warn(`The state holds stream "${name}", which the catalog does not select; it is ignored (select the stream to resume it).`);
      continue;
    }
    states.set(name, parseStreamState(name, state));
  }
  // A state of nothing the connector reads (only tombstones_through, say) is no state: its stream is read from start_date too.
  const none = (name: string): boolean => Object.keys(states.get(name) ?? {}).length === 0;
  const missing = [...(options.incremental ?? [])].filter(none);
  if (single && missing.length > 0) {
    const [only] = raw.keys();
    warn(
      `The state file holds one STATE message, of stream "${only ?? ''}"${only !== undefined && states.has(only) && none(only) ? ', which holds no watermark' : ''}; ${missing.join(', ')} ${missing.length === 1 ? 'has' : 'have'} no state and ${missing.length === 1 ? 'is' : 'are'} read from start_date. ` +
        `A read writes one STATE per stream: keep them all (${STATE_RECIPE}), not only the last.`,
    );
  }
  return states;
}
