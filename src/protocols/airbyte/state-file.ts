/**
 * Reading the `--state` file of `read`: one JSON document (the array Airbyte
 * passes, or a single STATE message), or JSON lines (the STATE lines of an
 * earlier read's output, one message a line), read as both faces read it
 * (../state-kind.ts). Which messages it may hold is state-input.ts's business.
 */
import { readStateFile, type StateFile } from '../state-kind.js';
import { EXPECTED_STATE } from './state-input.js';

export type { StateFile };

export function readAirbyteStateFile(path: string): StateFile {
  return readStateFile(path, { expected: EXPECTED_STATE, writer: 'read' });
}
