/**
 * The tap's `--state` file: the value of the last STATE message of a run,
 * `{"bookmarks": {"<stream>": {...}}, "currently_syncing": ...}`. Accepted
 * as well:
 * - that STATE message whole (`{"type": "STATE", "value": {...}}`), as some
 *   runners store it;
 * - Meltano's wrapper, `{"singer_state": {...}}`, as `meltano state get`
 *   prints it: the state it wraps;
 * - `{}` (or a value with no `bookmarks` and nothing but
 *   `currently_syncing`): no state, every stream from its start (the Singer
 *   convention).
 * Each known stream's bookmark is validated; bookmarks of streams this tap
 * does not have are dropped with a warning. Anything else is refused with
 * what the file holds and what to pass instead (never a silent full
 * re-read): a whole run's output or several STATE lines (which line to keep,
 * and a command that keeps it), Airbyte state (what the tap keeps instead),
 * another object (its keys).
 */
import { isObject } from '../../exact-json.js';
import { resolve } from 'node:path';
import { ConfigError } from '../../errors.js';
import { parseStreamState, type StreamState } from '../../engine/state.js';
import { findStream } from '../../streams.js';
import { MELTANO_STATE_KEY, countTypes, describeJson, invalidState as invalid, isSingerState, messageKind, readStateFile, shellWord } from '../state-kind.js';
import type { FileWait } from '../../config/files.js';

/** What the tap's --state takes, said at the end of every refusal. */
const EXPECTED_SINGER_STATE =
  'Expected the value of the last STATE message of a tap run, {"bookmarks": {"<stream>": {"sync_watermark": ...}}, "currently_syncing": ...} ' +
  '(or that STATE line whole), Meltano\'s {"singer_state": {...}} as `meltano state get` prints it, or {} for no state.';

/** Keys a state value without bookmarks may hold and still mean "no state". */
const EMPTY_STATE_KEYS: ReadonlySet<string> = new Set(['currently_syncing']);

/** The refusal of Airbyte state: what it is, and what the tap keeps instead. */
function airbyteState(given: string): ConfigError {
  return invalid(
    `the file holds ${given}: Airbyte state, which source-data-read read takes, not the tap. ` +
      'The tap keeps its own state, the value of its last STATE message: {"bookmarks": {"<stream>": {"sync_watermark": ...}}, "currently_syncing": null}. ' +
      'Each stream_state of Airbyte is that stream\'s bookmark as it is: {"bookmarks": {"<stream_descriptor name>": <its stream_state>, ...}}. ' +
      'Pass such a value, or the last STATE of an earlier tap run.',
  );
}

/** A file name for the kept line that is not the file it comes from. */
function keptName(from: string): string {
  return resolve(from) === resolve('state.json') ? 'last-state.json' : 'state.json';
}

/**
 * A file of JSON lines is never a state: refuse it, saying what it holds and
 * which line the user wanted (the last STATE: its bookmarks hold every
 * stream's), with a command that keeps that line.
 */
function refuseLines(path: string, items: readonly unknown[], lineNumbers: readonly number[] | undefined): never {
  const n = items.length;
  const airbyte = items.filter((item) => messageKind(item)?.protocol === 'airbyte');
  if (airbyte.length > 0) {
    const onlyStates = airbyte.length === n && airbyte.every((item) => messageKind(item)?.type === 'STATE');
    throw airbyteState(onlyStates ? `${n} Airbyte STATE lines (as read writes them)` : `the output of source-data-read read (${n} lines: ${countTypes(items)})`);
  }
  const states = items.flatMap((item, i) => (isSingerState(item) ? [i] : []));
  const last = states.at(-1);
  if (last === undefined) {
    throw invalid(
      `the file "${path}" holds ${n} JSON lines (${countTypes(items)}) and no STATE message: nothing to resume from. ` +
        'Pass the last STATE of an earlier tap run, or no --state to sync every stream from its start.',
    );
  }
  const line = lineNumbers?.[last] ?? last + 1;
  const onlyStates = states.length === n;
  const given = onlyStates ? `${n} states, one a line` : `the output of a whole tap run (${n} lines: ${countTypes(items)})`;
  const target = keptName(path);
  throw invalid(
    `the file "${path}" holds ${given}, not one state. The tap resumes from the last STATE, whose bookmarks hold every stream's: line ${line}. ` +
      `Keep only that line and pass the new file: \`sed -n ${line}p ${shellWord(path)} > ${target}\`, then --state ${target}.` +
      (onlyStates ? '' : ` From a run's output, \`grep '^{"type":"STATE"' OUTPUT | tail -n 1 > ${target}\` does the same.`),
  );
}

/** The state value inside Meltano's wrapper or a STATE message; refuses Airbyte state and other messages. */
function unwrap(input: unknown): unknown {
  let value = input;
  if (isObject(value) && MELTANO_STATE_KEY in value && !('bookmarks' in value)) {
    value = value[MELTANO_STATE_KEY];
    if (!isObject(value)) throw invalid(`"${MELTANO_STATE_KEY}" (Meltano's wrapper) must hold the tap's state, an object, not ${describeJson(value)}. ${EXPECTED_SINGER_STATE}`);
  }
  if (Array.isArray(value) && value.some((item) => messageKind(item)?.protocol === 'airbyte')) {
    throw airbyteState('a JSON array of Airbyte per-stream states (as Airbyte passes them to a source)');
  }
  const kind = messageKind(value);
  if (kind?.protocol === 'airbyte') throw airbyteState(kind.type === 'STATE' ? 'an Airbyte STATE message' : `an Airbyte ${kind.type} message`);
  if (kind !== undefined && kind.type !== 'STATE') throw invalid(`the file holds a ${kind.protocol === 'singer' ? 'Singer ' : ''}${kind.type} message, not a state. ${EXPECTED_SINGER_STATE}`);
  // A whole STATE message (type STATE, or just {"value": ...} as some runners keep it).
  if (isObject(value) && 'value' in value && !('bookmarks' in value)) value = value.value;
  return value;
}

/** The bookmarks of a parsed --state document, by stream. */
export function parseSingerState(input: unknown, warn: (message: string) => void): Map<string, StreamState> {
  const value = unwrap(input);
  if (!isObject(value)) throw invalid(`the file holds ${describeJson(value)}, not the tap's state. ${EXPECTED_SINGER_STATE}`);
  if (!('bookmarks' in value) && !Object.keys(value).every((key) => EMPTY_STATE_KEYS.has(key))) {
    throw invalid(`the file holds ${describeJson(value)}, without "bookmarks": not the tap's state. ${EXPECTED_SINGER_STATE}`);
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

/** The bookmarks of the --state file at `path`: one JSON document (see above); JSON lines are refused. */
export async function readSingerState(path: string, warn: (message: string) => void, wait: FileWait = {}): Promise<Map<string, StreamState>> {
  const file = await readStateFile(path, { expected: EXPECTED_SINGER_STATE, writer: 'tap run' }, wait);
  if (file.lines) refuseLines(path, file.value as unknown[], file.lineNumbers);
  return parseSingerState(file.value, warn);
}
