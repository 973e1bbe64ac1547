/**
 * `source-data-read replicate --config F --db FILE`: the engine writing
 * straight into a local SQLite database, one typed column per field of the
 * stream schemas (merged with the service's description unless
 * use_service_schema is false; columns are added, never dropped). Every stream is replicated
 * (incremental where the stream allows it), its state kept in the database
 * itself, so a run continues where the last one stopped, even a killed one.
 * Checkpoints are committed in groups (writer.ts), the WAL copied into the
 * file by a WAL thread. stdout stays empty; progress, warnings and
 * the final summary go to stderr. Exit 0 when every stream completed, else
 * the status of the failure (exit-status.ts: 78 config_error, 75
 * transient_error or the file locked by a live run, 70 system_error), the
 * cause named; 143/130 when stopped by SIGTERM/SIGINT (the run's AbortSignal).
 * The replica belongs to the account of the key that built it: a config
 * whose key reads another account is refused (78) before the file changes.
 * After a pause longer than the service keeps
 * deletions, contacts and conversations are first read in full and the rows
 * the service no longer has removed (heal.ts), with one WARN.
 *
 * `--db` may name another store (stores/target.ts): a `postgresql://` URL (a
 * schema of a PostgreSQL database, `--schema`, default data_read) or a
 * DuckDB file (`duckdb:PATH` or `*.duckdb`). The same sink writes into it
 * with the same promises (stores/store.ts); its module and driver are
 * loaded by import() only then, and the URL's password is a secret of the
 * run's logger (every line shows it as ***).
 */
import { statSync } from 'node:fs';
import { parseUserConfig, type Config } from '../config/config.js';
import { SyncSession, type RequestCounts, type SessionRequest } from '../engine/session.js';
import { treatedSchemasFor, treatmentPlan } from '../personal-data/treatments.js';
import type { SelectedStream, SyncResult } from '../engine/sync.js';
import { ConnectorError, toConnectorError, type FailureType } from '../errors.js';
import { AccountsRun } from '../engine/accounts.js';
import { loadAccountsSchemas } from '../engine/connect.js';
import type { LoadedSchemas } from '../engine/service-schemas.js';
import type { StreamState } from '../engine/state.js';
import type { SyncSink } from '../engine/sync-sink.js';
import type { CountObserver } from '../engine/pipeline.js';
import { bindAccount, type ReplicaAccount } from './account.js';
import type { RunRecorder } from '../report/run-report.js';
import { EXIT_OK, EXIT_TEMPFAIL, exitStatusFor, exitStatusForAll } from '../runtime/exit-status.js';
import { readJsonFile } from '../config/files.js';
import type { StderrLogger } from '../runtime/output.js';
import { STREAMS, deletionTargets, findStream, type StreamDefinition } from '../streams.js';
import { findHeal, healDone, healStarting, planHeal } from './heal.js';
import { lockLostError, type LockSettings } from './lock.js';
import { onStop } from '../runtime/interrupt.js';
import { Progress, plainEveryMsFromEnv } from '../progress/progress.js';
import { ReplicaSink, type StreamTally } from './sink.js';
import { ReplicaStore } from './store.js';
import { runTreatments } from './treatments.js';
import { DUCKDB_FILES, assertWritable, storeFileOf } from './writable.js';
import { ReplicaWriter, SqliteStore } from './writer.js';
import { parseStoreTarget, type StoreTarget } from '../stores/target.js';
import type { SchemaChange, Store, StoreNote } from '../stores/store.js';
import type { GroupStore } from '../stores/group-store.js';
import type { LogLevel } from '../engine/sync-sink.js';
import { entryFacts, replicaFacts } from './store-facts.js';

interface ReplicateContext {
  readonly logger: StderrLogger;
  /** The run's report, fed with what the run wrote (for --summary). */
  readonly report?: RunRecorder | undefined;
  /**
   * Aborted by SIGTERM/SIGINT (process/interrupt.ts, which then exits 143/130):
   * requests end, the writer commits the group it holds, and the run says so.
   */
  readonly signal?: AbortSignal | undefined;
  /** Called with the exit status right before the process exits because another run took the lock over (the summary is written there). */
  readonly beforeExit?: ((code: number) => void) | undefined;
  /**
   * The writer lock's settings where they are not the defaults and this
   * host's name: only tests give them (shorter intervals, another host name),
   * through a test-only entry point; a production run cannot.
   */
  readonly lock?: Partial<LockSettings> | undefined;
}

/** What ended a run before it began syncing, with its exit status. */
interface Refusal {
  readonly code: number;
}

export const REPLICA_STREAMS: readonly SelectedStream[] = STREAMS.map((stream) => ({
  stream,
  mode: stream.syncModes.includes('incremental') ? 'incremental' : 'full_refresh',
}));

/** The final line's end: the requests, the time, where (a file with its size). */
function costs(stats: RequestCounts, started: number, where: string, file: ReplicaStore | undefined): string {
  let bytes = 0;
  for (const path of file === undefined ? [] : [file.path, `${file.path}-wal`]) {
    try {
      bytes += statSync(path).size;
    } catch {
      // no such file
    }
  }
  const size = file === undefined ? '' : bytes >= 1 << 20 ? ` ${(bytes / (1 << 20)).toFixed(1)} MB` : ` ${Math.ceil(bytes / 1024)} KB`;
  return `requests ${stats.requests}, retries ${stats.retries}, rate-limit waits ${stats.rateLimitWaits}; ${((Date.now() - started) / 1000).toFixed(1)} s; ${where}${size}.`;
}

function summary(tallies: ReadonlyMap<string, StreamTally>, read: ReadonlyMap<string, number>, rows: ReadonlyMap<string, number>): string {
  const parts: string[] = [];
  let deleted = 0;
  let skipped = 0;
  for (const [name, t] of tallies) {
    // A table another session kept locked is not counted (stores/postgres/store.ts).
    const count = rows.get(name);
    parts.push(`${name} ${count === undefined ? 'rows not counted (its table locked by another session)' : `${count} rows`} (${read.get(name) ?? 0} read)`);
    deleted += t.deletedRows;
    skipped += t.skippedDeleted;
  }
  const deletions = deleted + skipped > 0 ? `; deletions applied: ${deleted} rows removed, ${skipped} stale versions skipped` : '';
  return `${parts.join(', ')}${deletions}`;
}

/**
 * Parse the config and the target, and refuse a SQLite or DuckDB --db that
 * cannot be written, before any request and without creating anything. A
 * password the target holds is hidden from every line logged from then on.
 */
async function prepare(logger: StderrLogger, configPath: string, db: string, schema: string | undefined, signal: AbortSignal | undefined): Promise<{ config: Config; target: StoreTarget }> {
  const target = parseStoreTarget(db, schema);
  for (const secret of target.secrets) logger.addSecret(secret);
  const loaded = parseUserConfig(await readJsonFile(configPath, 'config', { signal, log: (message) => logger.log('ERROR', message) }), logger);
  for (const w of loaded.warnings) logger.log('WARN', w);
  if (target.kind === 'sqlite') assertWritable(target.path);
  if (target.kind === 'duckdb') assertWritable(target.path, DUCKDB_FILES);
  return { config: loaded.config, target };
}

/**
 * Open the run's store, the tables' columns from `described` (the built-in
 * schemas merged with the service's description, or pinned): the SQLite
 * file, or a PostgreSQL or DuckDB store (its module, and its driver, loaded
 * now). Dropped fields get no column, hashed ones a text column; the store
 * remembers the treatments it is built with, and belongs to `account` (when
 * given: another account's store is refused untouched, one of none bound).
 */
async function openStore(
  target: StoreTarget,
  config: Config,
  { logger, lock = {} }: ReplicateContext,
  described: LoadedSchemas,
  account: ReplicaAccount | undefined,
  accountKey: boolean,
): Promise<Opened> {
  for (const note of described.notes) logger.log(note.level, note.message);
  const retype = described.source === 'service';
  const schemas = treatedSchemasFor(config, described.schemas, retype, (w) => logger.log('WARN', w));
  const treatments = runTreatments(treatmentPlan(config), config.hash_key);
  if (target.kind === 'sqlite') return { file: new ReplicaStore(target.path, STREAMS, { lock, schemas, retype, treatments, accountKey, ...(account === undefined ? {} : { account }) }) };
  const opening = { schemas, facts: replicaFacts(target.display, treatments, account), accountKey, log: (level: LogLevel, message: string) => logger.log(level, message) };
  if (target.kind === 'postgres') {
    const { PostgresStore } = await import('../stores/postgres/store.js');
    return { other: await PostgresStore.open(target, opening) };
  }
  const { DuckdbStore } = await import('../stores/duckdb/store.js');
  // As SQLite does, DuckDB is given the file a symbolic link names: its WAL and temporary folder go beside that file,
  // where a run given the other path finds them (DuckDB would make them beside the path it is given).
  return { other: await DuckdbStore.open({ ...target, path: storeFileOf(target.path, DUCKDB_FILES) }, opening) };
}

/** The store the run opened: the SQLite file (written by the replica's own writer), or another store. */
type Opened = { readonly file: ReplicaStore; readonly other?: undefined } | { readonly file?: undefined; readonly other: GroupStore<unknown> };

/** A run refused before it wrote anything: told to the report and the log; its exit status. */
function cannotReplicate({ logger, report }: ReplicateContext, err: unknown): number {
  const error = toConnectorError(err);
  report?.fail(error);
  logger.log('ERROR', `Cannot replicate: ${error.message}`);
  return exitStatusFor(error.failureType);
}

/**
 * The account is checked (the run's own client: its full retry and rate-limit
 * patience, as a cron job that meets a busy quota needs) before the database
 * is created or opened: a refused key or a service that cannot be reached
 * leaves no file behind. Then the store, with its writer lock.
 */
async function openRun(
  logger: StderrLogger,
  config: Config,
  target: StoreTarget,
  ctx: ReplicateContext,
): Promise<({ session: SyncSession; account: string } & Opened) | Refusal> {
  const { report, signal } = ctx;
  const session = await SyncSession.open(config, (level, message) => logger.log(level, message), report, signal);
  const refuse = async (error: ConnectorError): Promise<Refusal> => {
    const code = cannotReplicate(ctx, error);
    await session.close();
    return { code };
  };
  // The tables' columns: the built-in schemas merged with the service's description (one request), unless
  // pinned. Asked for while the account is checked; used only once the account is known to be good.
  const describing = session.streamSchemas();
  describing.catch(() => undefined); // awaited below, or dropped with the session
  try {
    const account = await session.verifyAccount();
    if (!account.ok) return await refuse(new ConnectorError(account.failureType ?? 'system_error', account.message));
    // The file belongs to one account: another account's replica is refused untouched, one of none is bound to this one.
    const bound = session.account;
    const opened = await openStore(target, config, ctx, await describing, bound === undefined ? undefined : { account: bound, renamedFrom: config.account_renamed_from }, false);
    return { session, ...opened, account: account.message };
  } catch (err) {
    return refuse(toConnectorError(err));
  }
}

/**
 * What the run wrote, told to the report: rows written per stream; the
 * deletion log's rows removed as its tombstones; the changes of each table's
 * columns the store made or left for the next run (every stream, none too).
 */
function reportWritten(report: RunRecorder | undefined, tallies: ReadonlyMap<string, StreamTally>, store?: Store): void {
  if (!report) return;
  for (const [name, t] of tallies) report.written(name, t.upserted, t.deletedRows, t.savedWatermark ?? null);
  if (store === undefined) return;
  const changes = store.schemaChanges?.() ?? [];
  for (const { stream } of REPLICA_STREAMS) {
    report.schemaChanges(
      stream.name,
      changes.filter((c) => c.stream === stream.name).map((c) => ({ column: c.column, change: c.change, from_type: c.from, to_type: c.to })),
    );
  }
}

const CHANGE_WORDS: Readonly<Record<SchemaChange['change'], string>> = { added: 'added', widened: 'widened', retyped: 'retyped', left_for_next_run: 'left for the next run' };
/** Changes named in the final line, at most. */
const CHANGES_NAMED = 6;

/** The schema changes of the run for its final line (`; schema changes: contacts.score added (bigint)`), empty when none. */
function changesLine(store: Store): string {
  const changes = store.schemaChanges?.() ?? [];
  if (changes.length === 0) return '';
  const named = changes.slice(0, CHANGES_NAMED).map((c) => `${c.stream}.${c.column} ${CHANGE_WORDS[c.change]} (${c.from === null ? c.to : `${c.from} -> ${c.to}`})`);
  const more = changes.length > CHANGES_NAMED ? ` and ${changes.length - CHANGES_NAMED} more` : '';
  return `; schema changes: ${named.join(', ')}${more}`;
}

/** The streams the store stopped after taking their checkpoints that no refused write told the engine of, with why. */
function untoldFailures(sink: ReplicaSink): { stream: StreamDefinition; error: ConnectorError }[] {
  return sink.untold().flatMap(([name, error]) => {
    const stream = findStream(name);
    return stream === undefined ? [] : [{ stream, error }];
  });
}

/** A run stopped by an error: said (a config_error as a refusal), the summary told what was written; its exit status. */
function stoppedBy(err: unknown, { logger, report }: ReplicateContext, tallies: ReadonlyMap<string, StreamTally>, store: Store): number {
  const error = toConnectorError(err);
  report?.fail(error);
  reportWritten(report, tallies, store);
  logger.log('ERROR', stoppedLine(error));
  return exitStatusFor(error.failureType);
}

/** The last line of a run an error stopped; the advice to run again once, where the store's own message gives none. */
export function stoppedLine(error: ConnectorError): string {
  if (error.failureType === 'config_error') return `Cannot replicate: ${error.message}`;
  const advised = /run replicate again|run again later, it resumes from the last commit/i.test(error.message);
  return `Replication stopped: ${error.message}${advised ? '' : ' Run replicate again to continue from the last commit.'}`;
}

/**
 * What every run says and plans once its store is open: the store's notes,
 * the states saved in it (returned: the watermarks the run starts from,
 * before any pass; a heal pass reads from none), the tombstones option.
 */
async function begin({ logger, report }: ReplicateContext, config: Config, store: Store): Promise<Map<string, StreamState>> {
  for (const note of store.notes) logger.log(note.level, note.message);
  const states = await store.loadStates();
  report?.plan(REPLICA_STREAMS.map(({ stream, mode }) => ({ name: stream.name, state: mode === 'incremental' ? states.get(stream.name) : undefined })));
  if (config.deletions_as_tombstones) {
    logger.log('INFO', 'deletions_as_tombstones does not apply to the replica: it applies deletions to its tables itself.');
  }
  return states;
}

/**
 * What a run with its store open says on a stop: what it kept. And, for the
 * SQLite file, what it does when another run took the lock over (this one
 * was stalled past the staleness limit), seen by the renewal timer or by a
 * group's commit: the open group is rolled back (it was read before that
 * run's commits), then the run stops (75).
 */
function watchStops(
  ctx: ReplicateContext,
  store: Store,
  file: ReplicaStore | undefined,
  writer: ReplicaWriter | undefined,
  progress: Progress,
  tallies: () => ReadonlyMap<string, StreamTally>,
  failed: () => string | undefined = () => undefined,
): void {
  const { logger, report } = ctx;
  onStop(ctx.signal, (signal) => {
    progress.stop();
    reportWritten(report, tallies(), store);
    file?.close();
    const before = failed();
    logger.log('WARN', `Interrupted (${signal}). The replica keeps everything committed so far; run replicate again to continue.${before === undefined ? '' : ` ${before}`}`);
  });
  if (file === undefined || writer === undefined) return;
  file.onLockLost = () => {
    progress.stop();
    writer.abandon();
    reportWritten(report, tallies());
    const error = lockLostError(file.path);
    report?.fail(error);
    logger.log('ERROR', error.message);
    ctx.beforeExit?.(EXIT_TEMPFAIL);
    process.exit(EXIT_TEMPFAIL);
  };
}

const failureTypes = (failures: readonly { readonly error: { readonly failureType: FailureType } }[]): FailureType[] => failures.map((f) => f.error.failureType);

export async function replicate(ctx: ReplicateContext, configPath: string, db: string, schema?: string): Promise<number> {
  const { logger, report } = ctx;
  const started = Date.now();
  // Every stream is replicated: a run refused before it reads its states still lists them (skipped).
  report?.plan(REPLICA_STREAMS.map(({ stream }) => ({ name: stream.name })));
  // Stopped before the replica is opened (the account check): nothing written yet; the summary says so.
  const stopEarly = onStop(ctx.signal, (signal) => logger.log('WARN', `Interrupted (${signal}) before the replica was opened; nothing was written.`));
  let config: Config;
  let target: StoreTarget;
  try {
    ({ config, target } = await prepare(logger, configPath, db, schema, ctx.signal));
  } catch (err) {
    return cannotReplicate(ctx, err);
  }
  report?.setRedact((text) => logger.redact(text));
  if (config.accounts !== undefined) {
    return replicateAccounts(ctx, config, target, started, stopEarly);
  }
  const opened = await openRun(logger, config, target, ctx);
  if ('code' in opened) return opened.code;
  const { session, file } = opened;
  const where = target.display;

  // A stop: writes are synchronous, so it comes between two checkpoints; the writer commits the group
  // it holds (whole checkpoints) on its own, then the run says what it kept (these words come after it).
  // Another store's group under way is rolled back by its server (PostgreSQL) or file (DuckDB) as the
  // process exits: the next run reads it again.
  const writer = file === undefined ? undefined : new ReplicaWriter(file, { signal: ctx.signal });
  const store: Store = file === undefined ? opened.other : new SqliteStore(file, writer);
  const sink = new ReplicaSink(store, (level, message) => logger.log(level, message));
  const progress = new Progress({ logger, requests: () => session.stats, plainEveryMs: plainEveryMsFromEnv(), stdoutIsTerminal: false });
  stopEarly();
  watchStops(ctx, store, file, writer, progress, () => sink.tallies);
  // A group the store refused after taking its checkpoints stops that stream (the run fails it below, once all is committed).
  if (opened.other !== undefined) opened.other.onStreamFailed = (stream, error) => sink.storeFailed(stream, error);
  const observer = progress.observer();
  try {
    let states = await begin(ctx, config, store);
    logger.log('INFO', `${opened.account} Replicating into ${where}${states.size > 0 ? ' (continuing from its saved state)' : ''}.`);
    progress.start();
    const healed = await healLongPause({ session, states, store, sink, account: undefined, events: sink, observer });
    let result = healed?.result;
    if (result?.failures.length === 0) states = await store.loadStates();
    if (result === undefined || result.failures.length === 0) {
      // The replica heals deletion gaps itself: the engine's advice to users of the other faces is not said.
      // A gap that opens after findHeal looked (the retention passing the saved watermark meanwhile) fails the log, unread.
      // After a heal that continued an earlier run's read, the log must hold the deletions since that read began.
      const gapCheck = { deletionGapFails: healed === undefined || healed.since !== undefined, deletionGapSince: healed?.since };
      await continueStoppedRereads(states, store, sink, undefined);
      result = await readToNow(session, { streams: REPLICA_STREAMS, states, deletionGapAdvice: null, ...gapCheck }, store, () => store.loadStates(), sink, observer);
    }
    const unknown = sink.unknownTypesWarning();
    if (unknown) logger.log('WARN', unknown);
    progress.stop();

    const rows = await store.finish();
    // A stream the store stopped at a commit, that no refused write told the engine of: failed as the read's failures are.
    const lost = untoldFailures(sink);
    for (const { stream, error } of lost) report?.streamEnded(stream.name, 'incomplete', error);
    if (lost.length > 0) result = { ...result, failures: [...result.failures, ...lost] };
    reportWritten(report, sink.tallies, store);
    await store.close();
    const totals = `${summary(sink.tallies, session.records, rows)}${changesLine(store)}; ${costs(session.stats, started, where, file)}`;
    if (result.failures.length === 0) {
      logger.log('INFO', `Replica up to date: ${totals}`);
      return EXIT_OK;
    }
    const code = exitStatusForAll(failureTypes(result.failures));
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
      return code;
    }
    const failed = result.failures.map((f) => `${f.stream.name} (${f.error.message})`).join('; ');
    logger.log('ERROR', `Replication incomplete: ${result.failures.length} stream(s) failed: ${failed}. ${keep}`);
    return code;
  } catch (err) {
    return stoppedBy(err, ctx, sink.tallies, store);
  } finally {
    progress.stop();
    // A stop while the run closes still commits (the writer), writes the summary and exits 143/130 (interrupt.ts).
    await store.close().catch(() => undefined);
    await session.close();
  }
}

/** A long-pause heal's read, and the watermark the deletion log must then hold the deletions since (HealPlan.since). */
type Healed = { readonly result: SyncResult; readonly since: string | undefined };

/**
 * A pause longer than the service keeps deletions, for one account (or the
 * only one): its contacts and conversations read in full first, and the rows
 * they no longer return removed; the deletion log (whose old state is what
 * shows the gap) is read after, by the caller. A heal a stopped run left
 * under way is continued where its checkpoints are (heal.ts, planHeal). The
 * store is flushed and one WARN said when the heal read everything.
 * Undefined when the saved states call for no heal.
 */
async function healLongPause(run: {
  session: SyncSession;
  states: ReadonlyMap<string, StreamState>;
  store: Store;
  sink: ReplicaSink;
  /** The entry whose full reads the store marked; undefined for a replica of one account. */
  account: string | undefined;
  /** Hears the heal's read and its words. */
  events: SyncSink;
  observer: CountObserver | undefined;
}): Promise<Healed | undefined> {
  const { session, states, store, sink } = run;
  const serviceNow = (stream: StreamDefinition, since: string | undefined): Promise<string> => session.serviceNow(stream, since);
  const heal = await findHeal(states, serviceNow);
  if (heal === undefined) return undefined;
  const plan = await planHeal(heal, states, (stream) => store.fullReadMarked(stream, run.account), serviceNow);
  await run.events.log('INFO', healStarting(heal, plan));
  sink.fullRead(heal.streams, new Set(plan.continued.keys()));
  const healing = REPLICA_STREAMS.filter((s) => heal.streams.includes(s.stream));
  const result = await session.run({ streams: healing, states: plan.states, deletionGapAdvice: null }, run.events, run.observer);
  if (result.failures.length === 0) {
    await store.flush();
    await run.events.log('WARN', healDone(heal, new Map(heal.streams.map((s) => [s.name, sink.tallies.get(s.name)?.sweptRows ?? 0]))));
  }
  return { result, since: plan.since };
}

/**
 * The full reads of the streams the deletion log deletes from that a stopped
 * run left under way (a resume cursor, no watermark, marks in the store) and
 * no heal continued: the full read after a watermark gone back (reader.ts).
 * The read goes on from its cursor, marking what it writes, and its end
 * removes the rows it did not mark, as the read would have: a read continued
 * from its cursor reads again from its watermark after its end (reader.ts),
 * which brings the rows changed since it began, moved past its end.
 */
async function continueStoppedRereads(states: ReadonlyMap<string, StreamState>, store: Store, sink: ReplicaSink, account: string | undefined): Promise<void> {
  const stopped: StreamDefinition[] = [];
  for (const stream of deletionTargets()) {
    const state = states.get(stream.name);
    if (state?.resume !== undefined && state.sync_watermark === undefined && (await store.fullReadMarked(stream.name, account))) stopped.push(stream);
  }
  sink.fullRead(stopped, new Set(stopped.map((s) => s.name)), true);
}

/**
 * The read of `request`'s streams from its states. A read interrupted last
 * time is finished up to the watermark it started with; one more (short,
 * incremental) pass, from the states saved since (`reload`), then brings
 * everything to now, so that a run that succeeds leaves the replica
 * current. The last pass's result.
 */
async function readToNow(
  session: SyncSession,
  request: SessionRequest,
  store: Store,
  reload: () => Promise<Map<string, StreamState>>,
  events: SyncSink,
  observer: CountObserver | undefined,
): Promise<SyncResult> {
  const result = await session.run(request, events, observer);
  const resumed = [...request.states].filter(([, state]) => state.resume !== undefined).map(([name]) => name);
  if (result.failures.length > 0 || resumed.length === 0) return result;
  await events.log('INFO', `Finished the read(s) interrupted last time (${resumed.join(', ')}); now reading what changed since.`);
  await store.flush();
  return session.run({ ...request, states: await reload() }, events, observer);
}

/** Each stream's state of one entry, from the states of many accounts a replica holds. */
function entryStates(states: ReadonlyMap<string, StreamState>, entry: string): Map<string, StreamState> {
  const out = new Map<string, StreamState>();
  for (const [stream, state] of states) {
    // Own properties only: an entry named "constructor" or "toString" with no state of its own has none.
    const one = state.accounts !== undefined && Object.hasOwn(state.accounts, entry) ? state.accounts[entry] : undefined;
    if (one !== undefined) out.set(stream, one);
  }
  return out;
}

/** The tallies of every account's sink, added up per stream. */
function addedTallies(sinks: Iterable<ReplicaSink>): Map<string, StreamTally> {
  const out = new Map<string, StreamTally>();
  for (const sink of sinks) {
    for (const [name, t] of sink.tallies) {
      const sum = out.get(name) ?? { upserted: 0, skippedDeleted: 0, deletedRows: 0, sweptRows: 0 };
      out.set(name, {
        upserted: sum.upserted + t.upserted,
        skippedDeleted: sum.skippedDeleted + t.skippedDeleted,
        deletedRows: sum.deletedRows + t.deletedRows,
        sweptRows: sum.sweptRows + t.sweptRows,
      });
    }
  }
  return out;
}

/**
 * `replicate` of a config with `accounts`, into any store: every table
 * keyed by (account, id), each account read by AccountsRun (its own key,
 * pacing, /v1/me) into a sink of its own, so its checkpoints, full tables
 * and full reads are its rows alone; each stream's state (one per account)
 * saved with the rows it covers. Per account, inside its lane: the entry
 * bound to the service account it reads (another account under that entry
 * fails that entry, 78), the long-pause heal, the resumed read. One account
 * failing does not stop the others; the run ends with the most actionable
 * status and one error naming each failed account. The store is the SQLite
 * file, or a PostgreSQL or DuckDB store (the same Store interface); only
 * where each keeps an entry's account differs. `stopEarly` removes the words
 * of a stop before the replica is open (replicate's), once it is.
 */
async function replicateAccounts(ctx: ReplicateContext, config: Config, target: StoreTarget, started: number, stopEarly: () => void): Promise<number> {
  const { logger, report, signal } = ctx;
  const where = target.display;
  let opened: Opened;
  try {
    // The tables' columns: the service's description read once, with the first key it takes (or the pinned schemas).
    const schemas = await loadAccountsSchemas(config, { onLog: (level, message) => logger.log(level, message), signal });
    opened = await openStore(target, config, ctx, schemas, undefined, true);
  } catch (err) {
    return cannotReplicate(ctx, err);
  }
  // The replica is open: a stop from now on says what it kept (below), no longer that nothing was written.
  stopEarly();
  const { file, other } = opened;
  const writer = file === undefined ? undefined : new ReplicaWriter(file, { signal });
  const store: Store = file === undefined ? other : new SqliteStore(file, writer);
  // Each entry stays the service account it was bound to: the SQLite file keeps it in a table of its own, another store in its facts.
  const bindEntry = async (run: ReplicaAccount): Promise<readonly StoreNote[]> => {
    if (file === undefined) return other.recordFacts(entryFacts(where, run));
    const note = bindAccount(file.db, target.display, run);
    return note === undefined ? [] : [{ level: 'INFO', message: note }];
  };
  const log = (level: LogLevel, message: string): void => logger.log(level, message);
  const sinks = new Map<string, ReplicaSink>();
  const sinkOf = (name: string): ReplicaSink => {
    let sink = sinks.get(name);
    if (sink === undefined) sinks.set(name, (sink = new ReplicaSink(store, (level, message) => log(level, `Account "${name}": ${message}`), name)));
    return sink;
  };
  // A group the store refused after taking its checkpoints stops that stream of one account (or of every account): told to its sinks.
  if (other !== undefined) {
    other.onStreamFailed = (stream, error, account) => {
      for (const [name, sink] of sinks) if (account === undefined || account === name) sink.storeFailed(stream, error);
    };
  }
  const run = new AccountsRun(config, report, signal);
  const progress = new Progress({ logger, requests: () => run.stats, plainEveryMs: plainEveryMsFromEnv(), stdoutIsTerminal: false });
  // The accounts that failed before a stop are named in its words, as the run's end would have.
  watchStops(ctx, store, file, writer, progress, () => addedTallies(sinks.values()), () => run.failedSoFar());
  // The face hears the streams as the run sees them (nothing to do: each account's sink writes) and the logs.
  const face: SyncSink = {
    streamStarted: () => undefined,
    streamRunning: () => undefined,
    records: () => undefined,
    state: () => undefined,
    streamComplete: () => undefined,
    streamIncomplete: () => undefined,
    streamStopped: () => undefined,
    runFailed: () => undefined,
    log,
  };
  try {
    const states = await begin(ctx, config, store);
    const entries = config.accounts ?? [];
    logger.log('INFO', `Replicating ${entries.length} account(s) into ${where}${states.size > 0 ? ' (continuing from its saved state)' : ''}.`);
    progress.start();
    const result = await run.run({ streams: REPLICA_STREAMS, states, deletionGapAdvice: null }, face, progress.observer(), {
      sinkFor: (entry) => sinkOf(entry.name),
      read: async (entry, session, request, lane, observer) => {
        const sink = sinkOf(entry.name);
        const account = session.account;
        let current = request.states;
        let healed: Healed | undefined;
        if (account !== undefined) {
          // The entry stays the service account it was bound to: another one under its name fails this entry alone.
          for (const note of await bindEntry({ account, renamedFrom: entry.account_renamed_from, entry: entry.name })) await lane.log(note.level, note.message);
          healed = await healLongPause({ session, states: current, store, sink, account: entry.name, events: lane, observer });
          if (healed !== undefined) {
            if (healed.result.failures.length > 0) return;
            current = entryStates(await store.loadStates(), entry.name);
          }
        }
        // A gap that opens after findHeal looked (the retention passing the saved watermark meanwhile) fails the log, unread.
        // After a heal that continued an earlier run's read, the log must hold the deletions since that read began.
        const gapCheck = { deletionGapFails: account !== undefined && (healed === undefined || healed.since !== undefined), deletionGapSince: healed?.since };
        await continueStoppedRereads(current, store, sink, entry.name);
        await readToNow(session, { ...request, states: current, ...gapCheck }, store, async () => entryStates(await store.loadStates(), entry.name), lane, observer);
        if (other !== undefined) {
          // The account ends once its checkpoints are committed (the groups holding them, not the other accounts'): a stream the
          // store stopped after taking them fails this account, named in the run's error and summary like a failure of the read.
          await store.flush();
          for (const { stream, error } of untoldFailures(sink)) await lane.streamIncomplete(stream, error);
        }
      },
    });
    for (const sink of sinks.values()) {
      const unknown = sink.unknownTypesWarning();
      if (unknown) logger.log('WARN', unknown);
    }
    progress.stop();
    const rows = await store.finish();
    const tallies = addedTallies(sinks.values());
    reportWritten(report, tallies, store);
    await store.close();
    const totals = `${summary(tallies, run.records, rows)}${changesLine(store)}; accounts ${entries.length}; ${costs(run.stats, started, where, file)}`;
    if (result.error === undefined) {
      logger.log('INFO', `Replica up to date: ${totals}`);
      return EXIT_OK;
    }
    logger.log('ERROR', `Replication incomplete: ${result.error.message} Everything committed so far is kept; run replicate again to continue. ${totals}`);
    return exitStatusFor(result.error.failureType);
  } catch (err) {
    return stoppedBy(err, ctx, addedTallies(sinks.values()), store);
  } finally {
    progress.stop();
    await store.close().catch(() => undefined);
    await run.close();
  }
}
