/**
 * What the PostgreSQL and DuckDB stores say and read back alike: the
 * changes opening made to the tables (schema drift), one line each, and the
 * states saved in the store, checked as a state file's are.
 */
import { ConfigError } from '../errors.js';
import { parseStreamState, type StreamState } from '../engine/state.js';
import type { StoreNote } from './store.js';

/** One INFO per table change made (`contacts.score: bigint -> numeric`), one WARN per change left for the next run. */
export function changeNotes(display: string, changes: readonly string[], postponed: readonly string[]): StoreNote[] {
  return [
    ...changes.map((change) => ({ level: 'INFO' as const, message: `Schema drift in ${display}: ${change}.` })),
    ...postponed.map((change) => ({
      level: 'WARN' as const,
      message: `Schema drift in ${display}: ${change} is left for the next run (a reader held the table); until then the values that do not fit are kept in _extra.`,
    })),
  ];
}

/** The states a store holds (JSON text by stream), as the engine reads them; a broken one is a config_error that names the store. */
export function parseSavedStates(display: string, saved: ReadonlyMap<string, string>): Map<string, StreamState> {
  const out = new Map<string, StreamState>();
  for (const [stream, text] of saved) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ConfigError(`The state of stream "${stream}" in ${display} is not JSON. Nothing was changed; replicate into another schema or file to start over.`, {
        field: '--db',
      });
    }
    out.set(stream, parseStreamState(stream, parsed));
  }
  return out;
}
