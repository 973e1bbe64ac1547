/**
 * What a user handed over as `--state`, for both faces: the file read as one
 * JSON document or as JSON lines (a run's output, or its STATE lines, one
 * message a line), and what each value in it is: a STATE of the Airbyte or
 * of the Singer protocol, a Singer state value, Meltano's wrapper around one,
 * or another message of a run's output. Each face takes its own shapes and,
 * given the other face's state or a whole run's output, says what it got and
 * what to pass instead, rather than failing on the first character or field
 * that does not fit (as catalog-kind.ts does for catalogs).
 */
import { isObject } from '../exact-json.js';
import { jsonSyntaxError, readTextFile, refuseDuplicateKey, type FileWait } from '../config/files.js';
import { ConfigError } from '../errors.js';

export interface StateFile {
  /** The parsed document, or the parsed lines in file order. */
  readonly value: unknown;
  /** True when the file held JSON lines rather than one document. */
  readonly lines: boolean;
  /** With JSON lines: the line number (from 1) of each value (blank lines hold none). */
  readonly lineNumbers?: readonly number[];
}

interface StateFileWords {
  /** What the face accepts, appended to every refusal. */
  readonly expected: string;
  /** What writes a state file of this face, e.g. "read" or "tap run". */
  readonly writer: string;
}

/**
 * The `--state` file: one JSON document, or (when it is not one) JSON lines,
 * each line one JSON value. Which values a face takes is its own business.
 */
export async function readStateFile(path: string, words: StateFileWords, wait: FileWait = {}): Promise<StateFile> {
  const text = await readTextFile(path, 'state', wait);
  if (text.trim() === '') {
    throw new ConfigError(`The state file "${path}" is empty (did the ${words.writer} it came from write no STATE line?). ${words.expected}`, { field: 'state' });
  }
  let documentError: string;
  try {
    const value = JSON.parse(text) as unknown;
    refuseDuplicateKey(text, 'state', path);
    return { value, lines: false };
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    documentError = jsonSyntaxError(err);
  }
  const lines = text.split('\n').map((l) => l.trim());
  if (lines.filter((l) => l !== '').length < 2) {
    throw new ConfigError(`The state file "${path}" is not valid JSON: ${documentError}. ${words.expected}`, { field: 'state' });
  }
  const values: unknown[] = [];
  const lineNumbers: number[] = [];
  for (const [index, line] of lines.entries()) {
    if (line === '') continue;
    try {
      values.push(JSON.parse(line) as unknown);
      lineNumbers.push(index + 1);
    } catch (err) {
      // A first line that is not JSON: a broken document (e.g. pretty-printed) rather than JSON lines.
      const reason = values.length === 0 ? documentError : `line ${index + 1} is not valid JSON (${jsonSyntaxError(err)})`;
      throw new ConfigError(`The state file "${path}" is neither one JSON document nor JSON lines: ${reason}. ${words.expected}`, { field: 'state' });
    }
    refuseDuplicateKey(line, 'state', path, index + 1);
  }
  return { value: values, lines: true, lineNumbers };
}

/** A refused state: "Invalid state: " and why. */
export function invalidState(message: string): ConfigError {
  return new ConfigError(`Invalid state: ${message}`, { field: 'state' });
}

/** A JSON value in a few words, for a refusal: "an array", "an object with the keys "a", "b"". */
export function describeJson(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return input.length === 0 ? 'an empty array' : 'an array';
  if (!isObject(input)) return `a ${typeof input}`;
  const keys = Object.keys(input);
  return keys.length === 0 ? 'an empty object' : `an object with the keys ${keys.slice(0, 5).map((k) => `"${k}"`).join(', ')}${keys.length > 5 ? ', ...' : ''}`;
}

type Protocol = 'airbyte' | 'singer';

/** A protocol message: its protocol (undefined when its type alone does not tell) and its type. */
interface MessageKind {
  readonly protocol: Protocol | undefined;
  readonly type: string;
}

/** The key that holds the payload of each Airbyte message type. */
const AIRBYTE_PAYLOAD: Readonly<Record<string, string>> = {
  RECORD: 'record',
  STATE: 'state',
  LOG: 'log',
  SPEC: 'spec',
  CONNECTION_STATUS: 'connectionStatus',
  CATALOG: 'catalog',
  TRACE: 'trace',
  CONTROL: 'control',
};

/** Singer message types that name their stream at the top level. */
const SINGER_STREAM_MESSAGES: ReadonlySet<string> = new Set(['SCHEMA', 'RECORD', 'ACTIVATE_VERSION', 'BATCH']);

/** The types of Airbyte's per-stream state (an AirbyteStateMessage without its STATE envelope, as Airbyte passes it). */
const AIRBYTE_STATE_TYPES: ReadonlySet<string> = new Set(['STREAM', 'GLOBAL', 'LEGACY']);

/**
 * What one value of a state file is as a protocol message; undefined for a
 * value without a `type`. A Singer STATE carries `value`, an Airbyte one
 * `state`; Airbyte's per-stream state (type STREAM, GLOBAL or LEGACY) counts
 * as an Airbyte STATE.
 */
export function messageKind(item: unknown): MessageKind | undefined {
  if (!isObject(item) || typeof item.type !== 'string') return undefined;
  const type = item.type;
  if (AIRBYTE_STATE_TYPES.has(type)) return { protocol: 'airbyte', type: 'STATE' };
  if (type === 'STATE') return { protocol: 'value' in item ? 'singer' : 'state' in item || 'data' in item ? 'airbyte' : undefined, type };
  // A Singer RECORD has a `record` too, but names its stream at the top level (Airbyte's, inside the record).
  if (SINGER_STREAM_MESSAGES.has(type) && typeof item.stream === 'string') return { protocol: 'singer', type };
  const payload = AIRBYTE_PAYLOAD[type];
  if (payload !== undefined && payload in item) return { protocol: 'airbyte', type };
  return { protocol: undefined, type };
}

/** The key of Meltano's wrapper around a Singer state (`meltano state get` prints `{"singer_state": {...}}`). */
export const MELTANO_STATE_KEY = 'singer_state';

/** A Singer state value (`{"bookmarks": {...}, ...}`), bare, in a STATE message or in Meltano's wrapper. */
export function isSingerState(item: unknown): boolean {
  if (!isObject(item)) return false;
  if (isObject(item.bookmarks)) return true;
  if (messageKind(item)?.protocol === 'singer') return item.type === 'STATE';
  return MELTANO_STATE_KEY in item;
}

/** "2 SCHEMA, 400 RECORD, 9 STATE": the message types of a run's output, in order of first appearance. */
export function countTypes(items: readonly unknown[]): string {
  const counts = new Map<string, number>();
  for (const item of items) {
    const type = messageKind(item)?.type ?? 'other';
    counts.set(type, (counts.get(type) ?? 0) + 1);
  }
  return [...counts].map(([type, n]) => `${n} ${type}`).join(', ');
}

/** A file path as a shell word (quoted when it holds anything a shell would take apart). */
export function shellWord(path: string): string {
  return /^[A-Za-z0-9_./=:@%+,-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`;
}
