/** Reading a replica back as records: each row converted with the layout it was written with. */
import type { DatabaseSync } from 'node:sqlite';
import type { Data } from '../engine/sync-sink.js';
import { parseStreamState, type StreamState } from '../engine/state.js';
import { ConfigError } from '../errors.js';
import { openForRead, savedStates, storedLayouts } from './database.js';
import { quoteIdent, keyColumns } from './layout.js';
import { rowToRecord } from './rows.js';

/** The records of one stream, ordered by primary key, exactly as the service sent them. */
function readRecords(db: DatabaseSync, stream: string): Data[] {
  const layout = storedLayouts(db).get(stream);
  if (!layout) throw new ConfigError(`The replica has no table for stream "${stream}".`, { field: 'db' });
  const select = db.prepare(`SELECT * FROM ${quoteIdent(layout.table)} ORDER BY ${keyColumns(layout).map(quoteIdent).join(', ')}`);
  select.setReadBigInts(true); // integers beyond 2^53 come back exact
  return select.all().map((row) => rowToRecord(layout, row));
}

/** Every replicated stream's records, by stream name. */
export function replicaRecords(dbPath: string): Map<string, Data[]> {
  const db = openForRead(dbPath);
  try {
    const out = new Map<string, Data[]>();
    for (const stream of storedLayouts(db).keys()) out.set(stream, readRecords(db, stream));
    return out;
  } finally {
    db.close();
  }
}

/** The state saved with the last commit of each stream (none in a file a run stopped before it made its tables). */
export function replicaStates(dbPath: string): Map<string, StreamState> {
  const db = openForRead(dbPath);
  try {
    const out = new Map<string, StreamState>();
    for (const [stream, state] of savedStates(db)) out.set(stream, parseStreamState(stream, JSON.parse(state) as unknown));
    return out;
  } finally {
    db.close();
  }
}
