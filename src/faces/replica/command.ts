/**
 * `source-data-read replicate --config F --db FILE`: the engine writing
 * straight into a local SQLite database, one typed column per field of the
 * stream schemas (merged with the service's description unless
 * use_service_schema is false; columns are added, never dropped). Every stream is replicated
 * (incremental where the stream allows it), its state kept in the database
 * itself, so a run continues where the last one stopped, even a killed one.
 * Checkpoints are committed in groups (writer.ts), the WAL copied into the
 * file by a checkpointer thread. stdout stays empty; progress, warnings and
 * the final summary go to stderr. Exit 0 when every stream completed, 1
 * otherwise (the cause is named).
 */
import { statSync } from 'node:fs';
import { parseUserConfig, type Config } from '../../config.js';
import { loadStreamSchemas } from '../../engine/service-schemas.js';
import { tuneHeapForStreaming } from '../../heap.js';
import { SyncSession } from '../../engine/session.js';
import type { SelectedStream } from '../../engine/sync.js';
import { toConnectorError } from '../../errors.js';
import { readJsonFile } from '../../files.js';
import type { StderrLogger } from '../../output.js';
import { STREAMS } from '../../streams.js';
import { Progress } from './progress.js';
import { ReplicaSink, type StreamTally } from './sink.js';
import { ReplicaStore } from './store.js';
import { ReplicaWriter } from './writer.js';

export interface ReplicateContext {
  readonly logger: StderrLogger;
}

export const REPLICA_STREAMS: readonly SelectedStream[] = STREAMS.map((stream) => ({
  stream,
  mode: stream.syncModes.includes('incremental') ? 'incremental' : 'full_refresh',
}));

function fileSize(path: string): string {
  let bytes = 0;
  for (const file of [path, `${path}-wal`]) {
    try {
      bytes += statSync(file).size;
    } catch {
      // no such file
    }
  }
  return bytes >= 1 << 20 ? `${(bytes / (1 << 20)).toFixed(1)} MB` : `${Math.ceil(bytes / 1024)} KB`;
}

function summary(tallies: ReadonlyMap<string, StreamTally>, rows: ReadonlyMap<string, number>): string {
  const parts: string[] = [];
  let deleted = 0;
  let skipped = 0;
  for (const [name, t] of tallies) {
    parts.push(`${name} ${rows.get(name) ?? 0} rows (${t.received} read)`);
    deleted += t.deletedRows;
    skipped += t.skippedDeleted;
  }
  const deletions = deleted + skipped > 0 ? `; deletions applied: ${deleted} rows removed, ${skipped} stale versions skipped` : '';
  return `${parts.join(', ')}${deletions}`;
}

export async function replicate(ctx: ReplicateContext, configPath: string, dbPath: string): Promise<number> {
  const { logger } = ctx;
  const started = Date.now();
  let config: Config;
  let store: ReplicaStore;
  try {
    const loaded = parseUserConfig(readJsonFile(configPath, 'config'), logger);
    config = loaded.config;
    for (const w of loaded.warnings) logger.log('WARN', w);
    // The tables' columns: the built-in schemas merged with the service's description (one request), unless pinned.
    // The heap is tuned for the long read first: the HTTP client must not be loaded before (see heap.ts, session.ts).
    tuneHeapForStreaming();
    const schemas = await loadStreamSchemas(config, { onLog: (level, message) => logger.log(level, message) });
    for (const note of schemas.notes) logger.log(note.level, note.message);
    store = new ReplicaStore(dbPath, STREAMS, { lock: true, schemas: schemas.schemas, retype: schemas.source === 'service' });
  } catch (err) {
    logger.log('ERROR', `Cannot replicate: ${toConnectorError(err).message}`);
    return 1;
  }

  let session: SyncSession | undefined;
  const writer = new ReplicaWriter(store);
  const sink = new ReplicaSink(writer, { log: (level, message) => progress.log(level, message), changed: () => progress.changed() });
  const progress = new Progress(logger, { tallies: sink.tallies, requests: () => session?.stats });
  // Ctrl-C or a stop request: writes are synchronous, so the handler runs between two checkpoints;
  // the group held is committed (whole checkpoints), then the run stops.
  const onSignal = (signal: NodeJS.Signals): void => {
    progress.stop();
    writer.stopNow();
    store.close();
    logger.log('WARN', `Interrupted (${signal}). The replica keeps everything committed so far; run replicate again to continue.`);
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    for (const m of store.migrations) progress.log('INFO', `${m.stream}: table migrated in place (${m.change}); no record changed.`);
    const states = store.loadStates();
    if (config.deletions_as_tombstones) {
      progress.log('INFO', 'deletions_as_tombstones does not apply to the replica: it applies deletions to its tables itself.');
    }
    session = await SyncSession.open(config, sink);
    // The run's own client: its full retry and rate-limit patience (a replicate run may be a cron job that meets a busy quota).
    const account = await session.verifyAccount();
    if (!account.ok) {
      progress.log('ERROR', `Cannot replicate: ${account.message}`);
      return 1;
    }
    progress.log('INFO', `${account.message} Replicating into ${dbPath}${states.size > 0 ? ' (continuing from its saved state)' : ''}.`);
    progress.start();
    let result = await session.run({ streams: REPLICA_STREAMS, states });
    // A read interrupted last time was finished up to the watermark it started with; one more
    // (short, incremental) pass brings everything to now, so that a run that succeeds leaves the replica current.
    const resumed = [...states].filter(([, state]) => state.resume !== undefined).map(([name]) => name);
    if (result.failures.length === 0 && resumed.length > 0) {
      progress.log('INFO', `Finished the read(s) interrupted last time (${resumed.join(', ')}); now reading what changed since.`);
      writer.flush();
      result = await session.run({ streams: REPLICA_STREAMS, states: store.loadStates() });
    }
    const unknown = sink.unknownTypesWarning();
    if (unknown) progress.log('WARN', unknown);
    progress.stop();

    store.unlock();
    await writer.close();
    const rows = store.rowCounts();
    store.close();
    const stats = session.stats;
    const totals =
      `${summary(sink.tallies, rows)}; requests ${stats.requests}, retries ${stats.retries}, ` +
      `rate-limit waits ${stats.rateLimitWaits}; ${((Date.now() - started) / 1000).toFixed(1)} s; ${dbPath} ${fileSize(dbPath)}.`;
    if (result.failures.length === 0) {
      logger.log('INFO', `Replica up to date: ${totals}`);
      return 0;
    }
    const failed = result.failures.map((f) => `${f.stream.name} (${f.error.message})`).join('; ');
    logger.log(
      'ERROR',
      `Replication incomplete: ${result.failures.length} stream(s) failed: ${failed}. ` +
        `Everything committed so far is kept; run replicate again to continue. ${totals}`,
    );
    return 1;
  } catch (err) {
    const error = toConnectorError(err);
    progress.log(
      'ERROR',
      error.failureType === 'config_error'
        ? `Cannot replicate: ${error.message}`
        : `Replication stopped: ${error.message} Run replicate again to continue from the last commit.`,
    );
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    progress.stop();
    await writer.close().catch(() => undefined);
    store.close();
    await session?.close();
  }
}
