/** The Airbyte commands: spec, check, discover, read. Each returns the process exit code. */
import { configJsonSchema, parseConfig, type Config } from '../../config.js';
import { checkConnection, clientFromConfig } from '../../engine/connect.js';
import { runSync } from '../../engine/sync.js';
import { toConnectorError } from '../../errors.js';
import { readJsonFile } from '../../cli/files.js';
import type { LineWriter, StderrLogger } from '../../output.js';
import { AIRBYTE_DELETED_AT } from '../../schemas/json-schema.js';
import { STREAMS, type StreamDefinition } from '../../streams.js';
import { airbyteStream, discoverCatalog, parseConfiguredCatalog } from './catalog.js';
import * as msg from './protocol.js';
import { AirbyteSink } from './sink.js';
import { parseAirbyteState } from './state-input.js';

export const DOCUMENTATION_URL = 'https://github.com/source-data-read/source-data-read/blob/main/docs/data-read.md';

export interface CommandContext {
  readonly out: LineWriter;
  readonly logger: StderrLogger;
}

/** Read and validate the config file; the key becomes a secret before anything can print it. */
function loadConfig(path: string, ctx: CommandContext): { config: Config; unknownKeys: readonly string[] } {
  const raw = readJsonFile(path, 'config');
  if (typeof raw === 'object' && raw !== null && 'api_key' in raw && typeof raw.api_key === 'string') {
    ctx.logger.addSecret(raw.api_key);
    ctx.logger.addSecret(raw.api_key.trim());
  }
  return parseConfig(raw);
}

export async function spec(ctx: CommandContext): Promise<number> {
  await ctx.out.write(msg.spec(configJsonSchema(), DOCUMENTATION_URL));
  return 0;
}

export async function check(ctx: CommandContext, configPath: string): Promise<number> {
  let config: Config;
  try {
    config = loadConfig(configPath, ctx).config;
  } catch (err) {
    await ctx.out.write(ctx.logger.redact(msg.connectionStatus('FAILED', toConnectorError(err).message)));
    return 0;
  }
  const result = await checkConnection(config);
  await ctx.out.write(ctx.logger.redact(msg.connectionStatus(result.ok ? 'SUCCEEDED' : 'FAILED', result.message)));
  return 0;
}

export async function discover(ctx: CommandContext, configPath: string): Promise<number> {
  const sink = new AirbyteSink(ctx.out, (t) => ctx.logger.redact(t));
  try {
    const { config } = loadConfig(configPath, ctx);
    await ctx.out.write(msg.catalog(discoverCatalog(config.deletions_as_tombstones)));
    return 0;
  } catch (err) {
    await sink.error(toConnectorError(err));
    return 1;
  }
}

function propertiesOf(stream: StreamDefinition): string[] {
  return Object.keys(airbyteStream(stream, false).json_schema.properties as object);
}

export async function read(ctx: CommandContext, configPath: string, catalogPath: string, statePath: string | undefined): Promise<number> {
  const sink = new AirbyteSink(ctx.out, (t) => ctx.logger.redact(t));
  let prepared;
  try {
    const { config, unknownKeys } = loadConfig(configPath, ctx);
    const streams = parseConfiguredCatalog(readJsonFile(catalogPath, 'catalog'));
    const warnings: string[] = [];
    const states = statePath === undefined ? new Map() : parseAirbyteState(readJsonFile(statePath, 'state'), (w) => warnings.push(w));
    if (unknownKeys.length > 0) warnings.push(`Unknown config keys ignored: ${unknownKeys.join(', ')}.`);
    for (const w of warnings) await sink.log('WARN', w);
    prepared = { config, streams, states };
  } catch (err) {
    const error = toConnectorError(err);
    await sink.error(error);
    return 1;
  }
  const { config, streams, states } = prepared;
  const byPath = new Map(STREAMS.map((s) => [s.path, s]));
  const client = clientFromConfig(config, {
    onWait: (notice) => {
      const stream = byPath.get(notice.path);
      if (stream && notice.reason === 'rate_limited') void sink.streamRunning(stream, notice.until);
    },
    onLog: (level, message) => void sink.log(level, message),
  });
  try {
    const result = await runSync({
      config,
      client,
      sink,
      streams,
      states,
      tombstones: { column: AIRBYTE_DELETED_AT, properties: propertiesOf },
    });
    const counts = [...sink.totals].map(([name, n]) => `${name} ${n}`).join(', ');
    const stats = client.stats;
    await sink.log(
      result.failures.length === 0 ? 'INFO' : 'WARN',
      `Sync ${result.failures.length === 0 ? 'finished' : `ended with ${result.failures.length} failed stream(s)`}: ` +
        `records: ${counts}; requests: ${stats.requests}, retries: ${stats.retries}, rate-limit waits: ${stats.rateLimitWaits}.`,
    );
    return result.failures.length === 0 ? 0 : 1;
  } catch (err) {
    await sink.error(toConnectorError(err));
    return 1;
  } finally {
    await client.close();
  }
}
