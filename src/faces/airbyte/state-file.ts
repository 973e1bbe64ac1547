/**
 * Reading the `--state` file of `read`: one JSON document (the array Airbyte
 * passes, or a single STATE message), or JSON lines (the STATE lines of an
 * earlier read's output, one message a line). Which messages it may hold is
 * state-input.ts's business; this module only tells the two forms apart.
 */
import { jsonSyntaxError, readTextFile } from '../../config/files.js';
import { ConfigError } from '../../errors.js';
import { EXPECTED_STATE } from './state-input.js';

export interface StateFile {
  /** The parsed document, or the parsed lines in file order. */
  readonly value: unknown;
  /** True when the file held JSON lines rather than one document. */
  readonly lines: boolean;
}

export function readAirbyteStateFile(path: string): StateFile {
  const text = readTextFile(path, 'state');
  if (text.trim() === '') {
    throw new ConfigError(`The state file "${path}" is empty (did the read it came from write no STATE line?). ${EXPECTED_STATE}`, { field: 'state' });
  }
  let documentError: string;
  try {
    return { value: JSON.parse(text) as unknown, lines: false };
  } catch (err) {
    documentError = jsonSyntaxError(err);
  }
  const lines = text.split('\n').map((l) => l.trim());
  if (lines.filter((l) => l !== '').length < 2) {
    throw new ConfigError(`The state file "${path}" is not valid JSON: ${documentError}. ${EXPECTED_STATE}`, { field: 'state' });
  }
  const values: unknown[] = [];
  for (const [index, line] of lines.entries()) {
    if (line === '') continue;
    try {
      values.push(JSON.parse(line) as unknown);
    } catch (err) {
      // A first line that is not JSON: a broken document (e.g. pretty-printed) rather than JSON lines.
      const reason = values.length === 0 ? documentError : `line ${index + 1} is not valid JSON (${jsonSyntaxError(err)})`;
      throw new ConfigError(`The state file "${path}" is neither one JSON document nor JSON lines: ${reason}. ${EXPECTED_STATE}`, { field: 'state' });
    }
  }
  return { value: values, lines: true };
}
