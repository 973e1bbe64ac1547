/**
 * The Airbyte commands: spec, check, discover, read. Each returns the process
 * exit code (exit-status.ts: 78 config_error, 75 transient_error, 70
 * system_error); check exits 0 with CONNECTION_STATUS FAILED, as Airbyte asks.
 */
import { readFileSync } from 'node:fs';
import type { Config, ParsedConfig } from '../../config/config.js';
import { toConnectorError } from '../../errors.js';
import type { RunObserver } from '../../engine/run-observer.js';
import { EXIT_OK, exitStatusFor, exitStatusForAll } from '../../runtime/exit-status.js';
import { readJsonFile, type FileWait } from '../../config/files.js';
import { onStop } from '../../runtime/interrupt.js';
import type { LineWriter, StderrLogger } from '../../runtime/output.js';
import type { StreamDefinition } from '../../streams.js';
import type { LogLevel } from '../../engine/sync-sink.js';
import type { SyncSession } from '../../engine/session.js';
import type { AccountsRun } from '../../engine/accounts.js';
import { expectCatalogKind } from '../catalog-kind.js';
import { Progress, watchedOnTerminal } from '../../progress/progress.js';
import * as msg from './protocol.js';
import { AirbyteSink } from './sink.js';
import { packageFile } from '../../runtime/package-file.js';

/** What an Airbyte user does about a gap in the deletion log (the WARN's last sentence). */
const AIRBYTE_GAP_ADVICE =
  'In Airbyte, refresh the contacts and conversations streams, removing their records (a refresh that clears them in the destination), ' +
  'so that the rows deleted meanwhile are dropped; the other streams keep their state.';

// The modules built on zod (config, streams, catalog, state) are imported by
// the commands that need them: `spec` starts without zod, `spec` and
// `discover` without the HTTP client.

export const DOCUMENTATION_URL = 'https://github.com/source-data-read/source-data-read/blob/main/docs/airbyte.md';

interface CommandContext {
  readonly out: LineWriter;
  readonly logger: StderrLogger;
  /** Aborted by SIGTERM/SIGINT (process/interrupt.ts): requests end, and `read` says its last words. */
  readonly signal?: AbortSignal | undefined;
  /** `read`: the run's report, fed with what the read did (for --summary). */
  readonly report?: RunObserver | undefined;
}

/** How the command's files are waited for when they are pipes: until its stop, said on stderr. */
function waitOf(ctx: CommandContext): FileWait {
  return { signal: ctx.signal, log: (message) => ctx.logger.log('ERROR', message) };
}

/** Read and validate the config file; the key becomes a secret before anything can print it. */
async function loadConfig(path: string, ctx: CommandContext): Promise<ParsedConfig> {
  const { parseUserConfig } = await import('../../config/config.js');
  return parseUserConfig(await readJsonFile(path, 'config', waitOf(ctx)), ctx.logger);
}

/** The SPEC as generated from the config schema (`npm run generate`); a test keeps it equal to the schema. */
const SPEC_SNAPSHOT = packageFile('catalog/spec.json');

export async function spec(ctx: CommandContext): Promise<number> {
  let line: string;
  try {
    // The checked-in snapshot: printing it needs no zod (about half of spec's start-up).
    line = msg.specMessage(JSON.parse(readFileSync(SPEC_SNAPSHOT, 'utf8')) as Record<string, unknown>);
  } catch {
    const { configJsonSchema } = await import('../../config/config.js');
    line = msg.specMessage(msg.specPayload(configJsonSchema(), DOCUMENTATION_URL));
  }
  await ctx.out.write(line);
  return 0;
}

/**
 * The face's sink for a command: protocol lines on stdout; when a person
 * watches stderr on a terminal (stdout going elsewhere), what the LOG messages
 * and ERROR traces say is told there too.
 */
function airbyteSink(ctx: CommandContext): AirbyteSink {
  const echo = watchedOnTerminal() ? (level: string, message: string): void => ctx.logger.log(level, message) : undefined;
  return new AirbyteSink(ctx.out, (t) => ctx.logger.redact(t), echo);
}

/** The config's warnings (unknown keys, a hash_key that looks easy to guess), as LOG WARN lines before the command's answer: every command says them. */
async function warnAbout(sink: AirbyteSink, parsed: ParsedConfig): Promise<void> {
  for (const w of parsed.warnings) await sink.log('WARN', w);
}

/** A failure that ends the command: its ERROR trace, and the exit status of its type; the run's report told unless `report` is false. */
async function failed(ctx: CommandContext, sink: AirbyteSink, err: unknown, report = true): Promise<number> {
  const error = toConnectorError(err);
  if (report) ctx.report?.fail(error);
  await sink.error(error);
  return exitStatusFor(error.failureType);
}

export async function check(ctx: CommandContext, configPath: string): Promise<number> {
  const sink = airbyteSink(ctx);
  let config: Config;
  try {
    const parsed = await loadConfig(configPath, ctx);
    await warnAbout(sink, parsed);
    config = parsed.config;
  } catch (err) {
    await ctx.out.write(ctx.logger.redact(msg.connectionStatus('FAILED', toConnectorError(err).message)));
    return 0;
  }
  // The HTTP client (undici) is loaded only by the commands that talk to the API: spec starts faster.
  const { checkAccounts, checkConnection } = await import('../../engine/connect.js');
  // What the client logs (the proxy it goes through, ALL_PROXY not read, retries) as LOG lines before the answer,
  // each line once: with accounts every key has a client of its own on the same route.
  const told = new Set<string>();
  const onLog = (level: LogLevel, message: string): void => {
    if (told.has(`${level} ${message}`)) return;
    told.add(`${level} ${message}`);
    void sink.log(level, message).catch(() => undefined);
  };
  const hooks = { signal: ctx.signal, onLog };
  // With accounts: every key checked, each failing one named.
  const result = config.accounts === undefined ? await checkConnection(config, hooks) : await checkAccounts(config, hooks);
  if (result.drift) await sink.log(result.drift.level, result.drift.message);
  await ctx.out.write(ctx.logger.redact(msg.connectionStatus(result.ok ? 'SUCCEEDED' : 'FAILED', result.message)));
  return 0;
}

/**
 * The catalog: the built-in schemas merged with the service's description
 * (one request; the built-in ones with a WARN when it cannot be used, and
 * without any request when use_service_schema is false). Only a rejected key
 * fails it.
 */
export async function discover(ctx: CommandContext, configPath: string): Promise<number> {
  const sink = airbyteSink(ctx);
  try {
    const parsed = await loadConfig(configPath, ctx);
    await warnAbout(sink, parsed);
    const { config } = parsed;
    const [{ discoverCatalog }, { loadAccountsSchemas, loadStreamSchemas }] = await Promise.all([import('./catalog.js'), import('../../engine/connect.js')]);
    // The client's own words (a retry and why) go out as they happen; a failed write surfaces at the next awaited one.
    const hooks = { onLog: (level: LogLevel, message: string) => void sink.log(level, message).catch(() => undefined), signal: ctx.signal };
    // With accounts: the description is read once, with the first account whose key works.
    const loaded = config.accounts === undefined ? await loadStreamSchemas(config, hooks) : await loadAccountsSchemas(config, hooks);
    for (const note of loaded.notes) await sink.log(note.level, note.message);
    const { treatedSchemasFor } = await import('../../personal-data/treatments.js');
    const warnings: string[] = [];
    const schemas = treatedSchemasFor(config, loaded.schemas, loaded.source === 'service', (w) => warnings.push(w));
    for (const w of warnings) await sink.log('WARN', w);
    await ctx.out.write(msg.catalog(discoverCatalog(config.deletions_as_tombstones, schemas, config.accounts !== undefined)));
    return 0;
  } catch (err) {
    return failed(ctx, sink, err);
  }
}

export async function read(ctx: CommandContext, configPath: string, catalogPath: string, statePath: string | undefined): Promise<number> {
  const sink = airbyteSink(ctx);
  const [{ airbyteStream, parseConfiguredCatalog, undeclaredTombstoneColumns }, { parseAirbyteState, readAirbyteStateFile }] = await Promise.all([import('./catalog.js'), import('./state-input.js')]);
  const propertiesOf = (stream: StreamDefinition): string[] => Object.keys(airbyteStream(stream, false).json_schema.properties as object);
  let prepared;
  try {
    const { config, warnings: configWarnings } = await loadConfig(configPath, ctx);
    const catalogInput = await readJsonFile(catalogPath, 'catalog', waitOf(ctx));
    expectCatalogKind(catalogInput, 'airbyte-configured', { flag: 'catalog', path: catalogPath });
    const warnings: string[] = [];
    const { treatedSchemasFor, treatmentPlan } = await import('../../personal-data/treatments.js');
    const plan = treatmentPlan(config);
    const dropped = (stream: StreamDefinition): ReadonlySet<string> =>
      new Set((plan.get(stream.name)?.fields ?? []).filter((f) => f.treatment === 'drop').map((f) => f.field));
    const streams = parseConfiguredCatalog(catalogInput, (w) => warnings.push(w), dropped, config.accounts !== undefined);
    warnings.push(...undeclaredTombstoneColumns(streams, config.deletions_as_tombstones));
    // Fields the catalog declares may be ones only the service describes: a treatment naming one of those is fine.
    const { builtInSchema } = await import('../../schemas/json-schema.js');
    const declared = new Map(streams.map(({ stream, schema }) => [stream.name, { properties: { ...(builtInSchema(stream).properties as object), ...((schema?.properties as object | undefined) ?? {}) } }]));
    treatedSchemasFor(config, declared, false, (w) => warnings.push(w));
    const selected = new Set(streams.map((s) => s.stream.name));
    const incremental = new Set(streams.filter((s) => s.mode === 'incremental').map((s) => s.stream.name));
    const stateFile = statePath === undefined ? undefined : await readAirbyteStateFile(statePath, waitOf(ctx));
    const states = stateFile === undefined ? new Map() : parseAirbyteState(stateFile.value, (w) => warnings.push(w), { selected, incremental, lines: stateFile.lines });
    for (const w of [...warnings, ...configWarnings]) await sink.log('WARN', w);
    prepared = { config, streams, states };
  } catch (err) {
    return failed(ctx, sink, err);
  }
  const { config, streams, states } = prepared;
  ctx.report?.setRedact((text) => ctx.logger.redact(text));
  // rememberShape: a stream whose field selection or treatments changed since its state is read in full (engine/sync.ts).
  const request = { streams, states, tombstones: { column: msg.AIRBYTE_DELETED_AT, properties: propertiesOf }, deletionGapAdvice: AIRBYTE_GAP_ADVICE, rememberShape: true };
  const many = config.accounts !== undefined;
  // With accounts, a stream's state holds every account's: no one watermark it starts from.
  ctx.report?.plan(streams.map(({ stream, mode }) => ({ name: stream.name, state: !many && mode === 'incremental' ? states.get(stream.name) : undefined })));
  let progress: Progress | undefined;
  let accounts: AccountsRun | undefined;
  onStop(ctx.signal, (signal) => {
    progress?.stop(); // the last words are printed under a cleared status line
    // With accounts, the checkpoints the STATE cadence held back go out first: every record written is covered; the
    // accounts that failed before the signal are named, as the run's end would have.
    const words = sink.interrupted(signal, accounts?.unsentStates(), accounts?.failedSoFar());
    void ctx.out.seal(words.lines);
    ctx.logger.log('ERROR', words.message);
  });
  let runner: SyncSession | AccountsRun;
  if (many) {
    // engine/accounts.ts: the records of every account (each with its `account`), one STATE per stream holding every
    // account's state; an account that fails stops alone, and one ERROR trace at the end names each failed account and why.
    const { AccountsRun } = await import('../../engine/accounts.js');
    runner = accounts = new AccountsRun(config, ctx.report, ctx.signal);
  } else {
    const { SyncSession } = await import('../../engine/session.js');
    const session = await SyncSession.open(config, (level, message) => sink.log(level, message), ctx.report, ctx.signal);
    runner = session;
    try {
      // Whose account the key reads (/v1/me), and the state refused when it is another account's: before any record.
      for (const note of await session.accountFor(states, streams)) await sink.log(note.level, note.message);
      // The key refused or the service unreachable: the run's failure, known before the streams' first lines.
      if (session.failure !== undefined) sink.failing(session.failure);
    } catch (err) {
      try {
        return await failed(ctx, sink, err);
      } finally {
        await session.close();
      }
    }
  }
  // A person at a terminal sees the streams, the requests and any rate-limit wait move on stderr.
  progress = new Progress({ logger: ctx.logger, requests: () => runner.stats });
  progress.start();
  try {
    const result = await runner.run(request, sink, progress.observer());
    progress.stop();
    if ('accounts' in result) {
      const failures = result.accounts.filter((a) => a.status === 'failed').length;
      const untried = result.accounts.filter((a) => a.status === 'not_tried').length;
      const ended = `ended with ${failures} failed account(s)${untried === 0 ? '' : ` and ${untried} not tried`}`;
      await sink.log(failures + untried === 0 ? 'INFO' : 'WARN', `Sync ${failures + untried === 0 ? 'finished' : ended}: ${runner.summary()}.`);
      return result.error === undefined ? EXIT_OK : exitStatusFor(result.error.failureType);
    }
    const failures = result.failures.length;
    await sink.log(failures === 0 ? 'INFO' : 'WARN', `Sync ${failures === 0 ? 'finished' : `ended with ${failures} failed stream(s)`}: ${runner.summary()}.`);
    return failures === 0 ? EXIT_OK : exitStatusForAll(result.failures.map((f) => f.error.failureType));
  } catch (err) {
    progress.stop();
    return await failed(ctx, sink, err, many); // session.run tells the report of its own failure
  } finally {
    progress.stop();
    await runner.close();
  }
}
