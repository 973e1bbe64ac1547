/**
 * `source-data-read replicate --config F --db FILE`: the engine writing
 * straight into a local SQLite database, one typed column per field of the
 * stream schemas (merged with the service's description unless
 * use_service_schema is false; columns are added, never dropped). Every stream is replicated
 * (incremental where the stream allows it), its state kept in the database
 * itself, so a run continues where the last one stopped, even a killed one.
 * Checkpoints are committed in groups (writer.ts), the WAL copied into the
 * file by a WAL thread. stdout stays empty; progress, warnings and
 * the final summary go to stderr. Exit 0 when every stream completed, 1
 * otherwise (the cause is named).
 */
import { statSync } from 'node:fs';
import { parseUserConfig, type Config } from '../../config.js';
import { SyncSession } from '../../engine/session.js';
import type { SelectedStream } from '../../engine/sync.js';
import { toConnectorError } from '../../errors.js';
import { readJsonFile } from '../../files.js';
import type { StderrLogger } from '../../output.js';
import { STREAMS } from '../../streams.js';
import { Progress } from './progress.js';
import { ReplicaSink, type StreamTally } from './sink.js';
import { ReplicaStore } from './store.js';
import { assertWritable } from './writable.js';
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

/** Parse the config and refuse a --db that cannot be written, before any request and without creating anything. */
function prepare(logger: StderrLogger, configPath: string, dbPath: string): Config {
  const loaded = parseUserConfig(readJsonFile(configPath, 'config'), logger);
  for (const w of loaded.warnings) logger.log('WARN', w);
  assertWritable(dbPath);
  return loaded.config;
}

/**
 * The account is checked (the run's own client: its full retry and rate-limit
 * patience, as a cron job that meets a busy quota needs) before the database
 * is created or opened: a refused key or a service that cannot be reached
 * leaves no file behind. Then the store, with its writer lock.
 */
async function openRun(logger: StderrLogger, config: Config, dbPath: string): Promise<{ session: SyncSession; store: ReplicaStore; account: string } | undefined> {
  const session = await SyncSession.open(config, (level, message) => logger.log(level, message));
  // The tables' columns: the built-in schemas merged with the service's description (one request), unless
  // pinned. Asked for while the account is checked; used only once the account is known to be good.
  const describing = session.streamSchemas();
  describing.catch(() => undefined); // awaited below, or dropped with the session
  try {
    const account = await session.verifyAccount();
    if (!account.ok) {
      logger.log('ERROR', `Cannot replicate: ${account.message}`);
      await session.close();
      return undefined;
    }
    const schemas = await describing;
    for (const note of schemas.notes) logger.log(note.level, note.message);
    const store = new ReplicaStore(dbPath, STREAMS, { lock: true, schemas: schemas.schemas, retype: schemas.source === 'service' });
    return { session, store, account: account.message };
  } catch (err) {
    logger.log('ERROR', `Cannot replicate: ${toConnectorError(err).message}`);
    await session.close();
    return undefined;
  }
}

export async function replicate(ctx: ReplicateContext, configPath: string, dbPath: string): Promise<number> {
  const { logger } = ctx;
  const started = Date.now();
  let config: Config;
  try {
    config = prepare(logger, configPath, dbPath);
  } catch (err) {
    logger.log('ERROR', `Cannot replicate: ${toConnectorError(err).message}`);
    return 1;
  }
  const opened = await openRun(logger, config, dbPath);
  if (opened === undefined) return 1;
  const { session, store } = opened;

  const writer = new ReplicaWriter(store);
  const sink = new ReplicaSink(writer, { log: (level, message) => progress.log(level, message), changed: () => progress.changed() });
  const progress = new Progress(logger, { tallies: sink.tallies, requests: () => session.stats });
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
    progress.log('INFO', `${opened.account} Replicating into ${dbPath}${states.size > 0 ? ' (continuing from its saved state)' : ''}.`);
    progress.start();
    let result = await session.run({ streams: REPLICA_STREAMS, states }, sink);
    // A read interrupted last time was finished up to the watermark it started with; one more
    // (short, incremental) pass brings everything to now, so that a run that succeeds leaves the replica current.
    const resumed = [...states].filter(([, state]) => state.resume !== undefined).map(([name]) => name);
    if (result.failures.length === 0 && resumed.length > 0) {
      progress.log('INFO', `Finished the read(s) interrupted last time (${resumed.join(', ')}); now reading what changed since.`);
      writer.flush();
      result = await session.run({ streams: REPLICA_STREAMS, states: store.loadStates() }, sink);
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
    const keep = `Everything committed so far is kept; run replicate again to continue. ${totals}`;
    if (result.runFailure) {
      // One cause for every stream it stopped: said once.
      const names = result.failures.filter((f) => f.error === result.runFailure).map((f) => f.stream.name);
      const others = result.failures.filter((f) => f.error !== result.runFailure).map((f) => `${f.stream.name} (${f.error.message})`);
      logger.log(
        'ERROR',
        `Replication stopped: ${result.runFailure.message} Streams not finished: ${names.join(', ')}.` +
          `${others.length > 0 ? ` Failed before that: ${others.join('; ')}.` : ''} ${keep}`,
      );
      return 1;
    }
    const failed = result.failures.map((f) => `${f.stream.name} (${f.error.message})`).join('; ');
    logger.log('ERROR', `Replication incomplete: ${result.failures.length} stream(s) failed: ${failed}. ${keep}`);
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
    await session.close();
  }
}
