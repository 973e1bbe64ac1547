/** The Airbyte commands: spec, check, discover, read. Each returns the process exit code. */
import { readFileSync } from 'node:fs';
import type { Config, ParsedConfig } from '../../config.js';
import { toConnectorError } from '../../errors.js';
import { readJsonFile } from '../../files.js';
import type { Interrupt } from '../../interrupt.js';
import type { LineWriter, StderrLogger } from '../../output.js';
import type { StreamDefinition } from '../../streams.js';
import { expectCatalogKind } from '../catalog-kind.js';
import { terminalProgress, watchedOnTerminal, type TerminalProgress } from '../progress.js';
import * as msg from './protocol.js';
import { AirbyteSink } from './sink.js';

// The modules built on zod (config, streams, catalog, state) are imported by
// the commands that need them: `spec` starts without zod, `spec` and
// `discover` without the HTTP client.

export const DOCUMENTATION_URL = 'https://github.com/source-data-read/source-data-read/blob/main/docs/airbyte.md';

export interface CommandContext {
  readonly out: LineWriter;
  readonly logger: StderrLogger;
  /** Stopping on SIGTERM/SIGINT; `read` says its last words through it. */
  readonly interrupt?: Interrupt;
}

/** Read and validate the config file; the key becomes a secret before anything can print it. */
async function loadConfig(path: string, ctx: CommandContext): Promise<ParsedConfig> {
  const { parseUserConfig } = await import('../../config.js');
  return parseUserConfig(readJsonFile(path, 'config'), ctx.logger);
}

/** The SPEC as generated from the config schema (`npm run generate`); a test keeps it equal to the schema. */
const SPEC_SNAPSHOT = new URL('../../../catalog/spec.json', import.meta.url);

export async function spec(ctx: CommandContext): Promise<number> {
  let line: string;
  try {
    // The checked-in snapshot: printing it needs no zod (about half of spec's start-up).
    line = msg.specMessage(JSON.parse(readFileSync(SPEC_SNAPSHOT, 'utf8')) as Record<string, unknown>);
  } catch {
    const { configJsonSchema } = await import('../../config.js');
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

/** The config's warnings (unknown keys), as LOG WARN lines before the command's answer: every command says them. */
async function warnAbout(sink: AirbyteSink, parsed: ParsedConfig): Promise<void> {
  for (const w of parsed.warnings) await sink.log('WARN', w);
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
  const { checkConnection } = await import('../../engine/connect.js');
  const result = await checkConnection(config);
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
    const [{ discoverCatalog }, { loadStreamSchemas }] = await Promise.all([import('./catalog.js'), import('../../engine/connect.js')]);
    // The client's own words (a retry and why) go out as they happen; a failed write surfaces at the next awaited one.
    const loaded = await loadStreamSchemas(config, { onLog: (level, message) => void sink.log(level, message).catch(() => undefined) });
    for (const note of loaded.notes) await sink.log(note.level, note.message);
    await ctx.out.write(msg.catalog(discoverCatalog(config.deletions_as_tombstones, loaded.schemas)));
    return 0;
  } catch (err) {
    await sink.error(toConnectorError(err));
    return 1;
  }
}

export async function read(ctx: CommandContext, configPath: string, catalogPath: string, statePath: string | undefined): Promise<number> {
  const sink = airbyteSink(ctx);
  const [{ airbyteStream, parseConfiguredCatalog }, { parseAirbyteState }, { readAirbyteStateFile }] = await Promise.all([
    import('./catalog.js'),
    import('./state-input.js'),
    import('./state-file.js'),
  ]);
  const propertiesOf = (stream: StreamDefinition): string[] => Object.keys(airbyteStream(stream, false).json_schema.properties as object);
  let prepared;
  try {
    const { config, warnings: configWarnings } = await loadConfig(configPath, ctx);
    const catalogInput = readJsonFile(catalogPath, 'catalog');
    expectCatalogKind(catalogInput, 'airbyte-configured', { flag: 'catalog', path: catalogPath });
    const warnings: string[] = [];
    const streams = parseConfiguredCatalog(catalogInput, (w) => warnings.push(w));
    const selected = new Set(streams.map((s) => s.stream.name));
    const incremental = new Set(streams.filter((s) => s.mode === 'incremental').map((s) => s.stream.name));
    const stateFile = statePath === undefined ? undefined : readAirbyteStateFile(statePath);
    const states = stateFile === undefined ? new Map() : parseAirbyteState(stateFile.value, (w) => warnings.push(w), { selected, incremental, lines: stateFile.lines });
    for (const w of [...warnings, ...configWarnings]) await sink.log('WARN', w);
    prepared = { config, streams, states };
  } catch (err) {
    const error = toConnectorError(err);
    await sink.error(error);
    return 1;
  }
  const { config, streams, states } = prepared;
  let progress: TerminalProgress | undefined;
  ctx.interrupt?.setLastWords((signal) => {
    progress?.stop(); // the last words are printed under a cleared status line
    const words = sink.interrupted(signal);
    return { stdout: words.lines, message: words.message };
  });
  const { SyncSession } = await import('../../engine/session.js');
  const session = await SyncSession.open(config, (level, message) => sink.log(level, message));
  // A person at a terminal sees the streams, the requests and any rate-limit wait move on stderr.
  progress = terminalProgress(sink, { logger: ctx.logger, requests: () => session.stats });
  progress.start();
  try {
    const result = await session.run({ streams, states, tombstones: { column: msg.AIRBYTE_DELETED_AT, properties: propertiesOf } }, progress.sink);
    progress.stop();
    const failed = result.failures.length;
    await sink.log(failed === 0 ? 'INFO' : 'WARN', `Sync ${failed === 0 ? 'finished' : `ended with ${failed} failed stream(s)`}: ${session.summary()}.`);
    return failed === 0 ? 0 : 1;
  } catch (err) {
    progress.stop();
    await sink.error(toConnectorError(err));
    return 1;
  } finally {
    progress.stop();
    await session.close();
  }
}
