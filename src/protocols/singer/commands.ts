/** The tap's modes: --about, --discover and sync. Each returns the process exit code (exit-status.ts). */
import { readJsonFile, type FileWait } from '../../config/files.js';
import { parseUserConfig, type Config, type ParsedConfig } from '../../config/config.js';
import { treatSchema, treatedSchemasFor, treatmentPlan } from '../../personal-data/treatments.js';
import type { LoadedSchemas } from '../../engine/service-schemas.js';
import { admitsNull, builtInSchema, type StreamSchemas } from '../../schemas/json-schema.js';
import { SyncSession, type SessionRequest } from '../../engine/session.js';
import type { StreamState } from '../../engine/state.js';
import { ConfigError, toConnectorError } from '../../errors.js';
import type { RunObserver } from '../../engine/run-observer.js';
import { EXIT_OK, exitStatusFor, exitStatusForAll } from '../../runtime/exit-status.js';
import { onStop } from '../../runtime/interrupt.js';
import { closedOutputError, type LineWriter, type StderrLogger } from '../../runtime/output.js';
import type { StreamDefinition } from '../../streams.js';
import { expectCatalogKind } from '../catalog-kind.js';
import { Progress } from '../../progress/progress.js';
import { about as aboutInfo, aboutMarkdown } from './about.js';
import { discoverCatalog } from './catalog.js';
import { ENV_SOURCE, envVariablesNote, readConfigSources, unknownEnvVariablesWarning } from './config-input.js';
import { propertiesOf } from './schema.js';
import { planAll, planFromCatalog, type StreamPlan } from './selection.js';
import { SINGER_DELETED_AT } from './protocol.js';
import { SingerSink } from './sink.js';
import { readSingerState } from './state-input.js';

/** What a Singer user does about a gap in the deletion log (the WARN's last sentence). */
const SINGER_GAP_ADVICE =
  'Run one sync with replication-method FULL_TABLE for contacts and conversations (catalog metadata; Meltano: ' +
  '`metadata: {contacts: {replication-method: FULL_TABLE}, conversations: {replication-method: FULL_TABLE}}`): ' +
  'the tap then sends ACTIVATE_VERSION and a target that honours it drops the rows deleted meanwhile, ' +
  // Rows of INCREMENTAL syncs carry no version: the Meltano SDK's default activation drops only lower versions.
  'if it also drops the rows loaded without a version (by INCREMENTAL syncs), as MeltanoLabs target-postgres does; ' +
  "with another target (the Meltano SDK's default keeps them), empty its contacts and conversations tables before that sync. " +
  'Then set them back to INCREMENTAL.';

interface TapContext {
  readonly out: LineWriter;
  readonly logger: StderrLogger;
  readonly env: NodeJS.ProcessEnv;
  /** Aborted by SIGTERM/SIGINT (process/interrupt.ts): requests end, and a sync says its last words (the final STATE). */
  readonly signal?: AbortSignal | undefined;
  /** A sync: the run's report, fed with what the sync did (for --summary). */
  readonly report?: RunObserver | undefined;
}

interface SyncInputs {
  /** `--config` sources, in order: file paths or ENV. */
  readonly configs: readonly string[];
  /** `--catalog` or `--properties` file; none syncs every stream. */
  readonly catalog?: { readonly path: string; readonly flag: 'catalog' | 'properties' } | undefined;
  readonly state?: string | undefined;
}

/** How the tap's files are waited for when they are pipes: until its stop, said on stderr. */
function waitOf(ctx: TapContext): FileWait {
  return { signal: ctx.signal, log: (message) => ctx.logger.log('CRITICAL', message) };
}

/** Merge and validate the config; the key becomes a secret before anything can print it. */
async function loadConfig(ctx: TapContext, sources: readonly string[]): Promise<ParsedConfig> {
  const { config, fromEnv } = await readConfigSources(sources, ctx.env, waitOf(ctx));
  // A TAP_DATA_READ_ variable that names no setting is said like a config file's unknown key: warned about, and named
  // in the refusal of a config that lacks what it was meant to give.
  const unknown = sources.includes(ENV_SOURCE) ? unknownEnvVariablesWarning(ctx.env) : undefined;
  try {
    const parsed = parseUserConfig(config, ctx.logger, ctx.env);
    return unknown === undefined ? parsed : { ...parsed, warnings: [unknown, ...parsed.warnings] };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // The refusal names settings; one read from a variable is named by its variable too.
    const notes = [envVariablesNote(err.fields, fromEnv), unknown].filter((note) => note !== undefined);
    if (notes.length === 0) throw err;
    throw new ConfigError([err.message, ...notes].join(' '), { field: err.fields });
  }
}

function critical(ctx: TapContext, err: unknown): number {
  // The reader of stdout (the target) went away: run again later, from the last STATE it committed.
  const error = closedOutputError(err) ?? toConnectorError(err);
  ctx.report?.fail(error);
  ctx.logger.log('CRITICAL', error.message);
  if (error.internal) ctx.logger.log('DEBUG', error.internal);
  return exitStatusFor(error.failureType);
}

export async function about(ctx: TapContext, format: 'json' | 'markdown'): Promise<number> {
  await ctx.out.write(format === 'json' ? `${JSON.stringify(aboutInfo())}\n` : aboutMarkdown());
  return 0;
}

/** Singer's name of a log level. */
const singerLevel = (level: string): string => (level === 'WARN' ? 'WARNING' : level);

const logTo =
  (ctx: TapContext) =>
  (level: string, message: string): void =>
    ctx.logger.log(singerLevel(level), message);

/**
 * Notes on the stream schemas (merged with the service's description, or why
 * built in) go to stderr; the schemas come back as the config's personal-data
 * treatments make them.
 */
function tellSchemaNotes(ctx: TapContext, loaded: LoadedSchemas, config: Config): StreamSchemas {
  for (const note of loaded.notes) logTo(ctx)(note.level, note.message);
  return treatedSchemasFor(config, loaded.schemas, loaded.source === 'service', (w) => logTo(ctx)('WARN', w));
}

export async function discover(ctx: TapContext, sources: readonly string[]): Promise<number> {
  try {
    const { config, warnings } = await loadConfig(ctx, sources);
    for (const w of warnings) ctx.logger.log('WARNING', w);
    // Loaded here: --about and a sync need no client to declare schemas.
    const { loadAccountsSchemas, loadStreamSchemas } = await import('../../engine/connect.js');
    const hooks = { onLog: logTo(ctx), signal: ctx.signal };
    // With accounts: the description is read once, with the first account whose key works.
    const loaded = config.accounts === undefined ? await loadStreamSchemas(config, hooks) : await loadAccountsSchemas(config, hooks);
    const schemas = tellSchemaNotes(ctx, loaded, config);
    await ctx.out.write(`${JSON.stringify(discoverCatalog(config.deletions_as_tombstones, schemas, config.accounts !== undefined))}\n`);
    return 0;
  } catch (err) {
    return critical(ctx, err);
  }
}

interface Prepared {
  readonly parsed: ParsedConfig;
  /** The plans of the --catalog file; undefined without one (every stream). */
  readonly fromCatalog: StreamPlan[] | undefined;
  readonly states: Map<string, StreamState>;
}

/**
 * The catalog's plans with the SCHEMA each sends as the treatments make it
 * (a catalog discovered before a treatment was set still declares the raw field).
 */
function treatedPlans(config: Config, plans: readonly StreamPlan[], warn: (message: string) => void): StreamPlan[] {
  // A field the catalog deselected is still one the stream has: known fields are the built-in ones and the catalog's.
  const known = new Map(plans.map((p) => [p.stream.name, { properties: { ...propertiesOf(builtInSchema(p.stream)), ...propertiesOf(p.schema) } }]));
  treatedSchemasFor(config, known, false, warn);
  const plan = treatmentPlan(config);
  return plans.map((p) => ({ ...p, schema: treatSchema(p.schema, plan.get(p.stream.name)) }));
}

/** The plans of a --catalog (or --properties) file, refusing an Airbyte catalog with a word on the one needed. */
async function planFromCatalogFile(file: NonNullable<SyncInputs['catalog']>, tombstones: boolean, warn: (message: string) => void, manyAccounts: boolean, wait: FileWait): Promise<StreamPlan[]> {
  const input = await readJsonFile(file.path, file.flag, wait);
  expectCatalogKind(input, 'singer', file);
  return planFromCatalog(input, tombstones, warn, manyAccounts);
}

/** Config, the catalog's plans and state, read from their files. */
async function prepare(ctx: TapContext, inputs: SyncInputs): Promise<Prepared> {
  const warn = (message: string): void => ctx.logger.log('WARNING', message);
  const parsed = await loadConfig(ctx, inputs.configs);
  const fromCatalog = inputs.catalog
    ? await planFromCatalogFile(inputs.catalog, parsed.config.deletions_as_tombstones, warn, parsed.config.accounts !== undefined, waitOf(ctx))
    : undefined;
  const states = inputs.state === undefined ? new Map<string, StreamState>() : await readSingerState(inputs.state, warn, waitOf(ctx));
  for (const w of parsed.warnings) warn(w);
  return { parsed, fromCatalog, states };
}

export async function sync(ctx: TapContext, inputs: SyncInputs): Promise<number> {
  let prepared: Prepared;
  try {
    prepared = await prepare(ctx, inputs);
  } catch (err) {
    return critical(ctx, err);
  }
  const { config } = prepared.parsed;
  const { fromCatalog, states } = prepared;
  ctx.report?.setRedact((text) => ctx.logger.redact(text));
  if (fromCatalog?.length === 0) {
    ctx.logger.log('WARNING', 'The catalog selects no stream: nothing to sync. Select streams (Meltano: `select` rules) and run again.');
    await new SingerSink(ctx.out, ctx.logger, [], states).finish();
    return 0;
  }
  // With accounts (engine/accounts.ts): the same streams and SCHEMA for every account, each RECORD with its `account`, one
  // bookmark per stream holding every account's; an account that fails stops alone, and one CRITICAL line at the end
  // names each failed account and why.
  const names = config.accounts?.map((a) => a.name);
  const session = names === undefined ? await SyncSession.open(config, logTo(ctx), ctx.report, ctx.signal) : undefined;
  let plans: StreamPlan[];
  try {
    // With a catalog, its schemas are the ones sent (as discovered); without one, every stream with the schemas discover
    // would declare, read with the sync's own client (a service that cannot be reached is one series of retries, not two),
    // or with accounts, by the first account that answers.
    const schemas = async (): Promise<LoadedSchemas> =>
      session?.streamSchemas() ?? (await import('../../engine/connect.js')).loadAccountsSchemas(config, { onLog: logTo(ctx), signal: ctx.signal });
    plans = fromCatalog
      ? treatedPlans(config, fromCatalog, (w) => logTo(ctx)('WARN', w))
      : planAll(config.deletions_as_tombstones, tellSchemaNotes(ctx, await schemas(), config), names !== undefined);
    // Whose account the key reads (/v1/me), and the state refused when it is another account's: before any message on stdout.
    for (const note of (await session?.accountFor(states, plans)) ?? []) logTo(ctx)(note.level, note.message);
    // The key refused or the service unreachable: the run's failure, known before its first line. Should the target go
    // away before the sync says it, it is still told on stderr with its exit status (cli/run-end.ts), not as a closed pipe.
    if (session?.failure !== undefined) ctx.out.tellsFailure(session.failure, ctx.logger.redact(session.failure.message));
  } catch (err) {
    await session?.close();
    return critical(ctx, err);
  }
  const sink = new SingerSink(ctx.out, ctx.logger, plans, states, undefined, names);
  const runner = session ?? new (await import('../../engine/accounts.js')).AccountsRun(config, ctx.report, ctx.signal);
  // A person at a terminal sees the streams, the requests and any rate-limit wait move, under the log lines.
  const progress = new Progress({ logger: ctx.logger, requests: () => runner.stats });
  onStop(ctx.signal, (signal) => {
    progress.stop(); // the last words are printed under a cleared status line
    // With accounts, the checkpoints the STATE cadence held back (engine/accounts.ts) first.
    if (!(runner instanceof SyncSession)) for (const [stream, state] of runner.unsentStates()) sink.bookmark(stream, state);
    void ctx.out.seal(sink.interruptedState());
    // With accounts, those that failed before the signal are named, as the run's end would have.
    const failed = runner instanceof SyncSession ? undefined : runner.failedSoFar();
    ctx.logger.log('CRITICAL', `Interrupted by ${signal}: the sync stopped before it finished; the last STATE written is safe to resume from.${failed === undefined ? '' : ` ${failed}`}`);
  });
  const planned = new Map(plans.map((p) => [p.stream.name, p]));
  // A tombstone declares every property the target was told about that may be null (all null), then the deleted-at column.
  const tombstoneProperties = (stream: StreamDefinition): string[] =>
    Object.entries(propertiesOf(planned.get(stream.name)?.schema ?? {}))
      .filter(([name, property]) => name !== SINGER_DELETED_AT && admitsNull(property))
      .map(([name]) => name);
  const request: SessionRequest = {
    streams: plans,
    states,
    deletionGapAdvice: SINGER_GAP_ADVICE,
    // A stream whose deselected fields or treatments changed since its bookmark is read in full (engine/sync.ts).
    rememberShape: true,
    ...(config.deletions_as_tombstones ? { tombstones: { column: SINGER_DELETED_AT, properties: tombstoneProperties } } : {}),
  };
  progress.start();
  try {
    const result = await runner.run(request, sink, progress.observer());
    progress.stop();
    await sink.finish();
    if ('accounts' in result) {
      const failed = result.accounts.filter((a) => a.status === 'failed').map((a) => a.name);
      const untried = result.accounts.filter((a) => a.status === 'not_tried').length;
      // Only what is true of this run: with every account failed or not tried, none is complete.
      const others = [
        ...(untried === 0 ? [] : [`${untried} not tried (the service found unavailable)`]),
        ...(result.accounts.some((a) => a.status === 'succeeded') ? ['the others are complete'] : []),
      ];
      const ok = failed.length + untried === 0;
      const how = `failed for ${failed.length} account(s): ${failed.join(', ')}; ${[...others, 'the last STATE is safe to resume from'].join(', ')}`;
      ctx.logger.log(ok ? 'INFO' : 'CRITICAL', `Sync ${ok ? 'finished' : how}: ${runner.summary()}.`);
      return result.error === undefined ? EXIT_OK : exitStatusFor(result.error.failureType);
    }
    const failed = result.failures.length;
    const how = `failed for ${failed} stream(s): ${result.failures.map((f) => f.stream.name).join(', ')}; the last STATE is safe to resume from`;
    ctx.logger.log(failed === 0 ? 'INFO' : 'CRITICAL', `Sync ${failed === 0 ? 'finished' : how}: ${runner.summary()}.`);
    return failed === 0 ? EXIT_OK : exitStatusForAll(result.failures.map((f) => f.error.failureType));
  } catch (err) {
    progress.stop();
    // The target went away after the run met a failure of its own: the run's end tells that failure and ends with its
    // status (cli/run-end.ts), not 75 for the closed pipe.
    if (closedOutputError(err) !== undefined && ctx.out.lostFailures().length > 0) throw err;
    const code = critical(ctx, err);
    await sink.finish().catch(() => undefined);
    return code;
  } finally {
    progress.stop();
    await runner.close();
  }
}
