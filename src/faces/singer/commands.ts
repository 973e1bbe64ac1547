/** The tap's modes: --about, --discover and sync. Each returns the process exit code. */
import { readJsonFile } from '../../cli/files.js';
import { parseUserConfig, type ParsedConfig } from '../../config.js';
import { clientFromConfig } from '../../engine/connect.js';
import type { StreamState } from '../../engine/state.js';
import { runSync } from '../../engine/sync.js';
import { toConnectorError } from '../../errors.js';
import { tuneHeapForStreaming } from '../../heap.js';
import type { Interrupt } from '../../cli/interrupt.js';
import type { LineWriter, StderrLogger } from '../../output.js';
import { findStreamByPath, type StreamDefinition } from '../../streams.js';
import { expectCatalogKind } from '../catalog-kind.js';
import { about as aboutInfo, aboutMarkdown } from './about.js';
import { discoverCatalog } from './catalog.js';
import { mergeConfigSources } from './config-input.js';
import { propertiesOf } from './schema.js';
import { planAll, planFromCatalog, type StreamPlan } from './selection.js';
import { SINGER_DELETED_AT } from './protocol.js';
import { SingerSink } from './sink.js';
import { parseSingerState } from './state-input.js';

export interface TapContext {
  readonly out: LineWriter;
  readonly logger: StderrLogger;
  readonly env: NodeJS.ProcessEnv;
  /** Stopping on SIGTERM/SIGINT; a sync says its last words (the final STATE) through it. */
  readonly interrupt?: Interrupt;
}

export interface SyncInputs {
  /** `--config` sources, in order: file paths or ENV. */
  readonly configs: readonly string[];
  /** `--catalog` or `--properties` file; none syncs every stream. */
  readonly catalog?: { readonly path: string; readonly flag: 'catalog' | 'properties' } | undefined;
  readonly state?: string | undefined;
}

/** Merge and validate the config; the key becomes a secret before anything can print it. */
export function loadConfig(ctx: TapContext, sources: readonly string[]): ParsedConfig {
  return parseUserConfig(mergeConfigSources(sources, ctx.env), ctx.logger);
}

function critical(ctx: TapContext, err: unknown): number {
  const error = toConnectorError(err);
  ctx.logger.log('CRITICAL', error.message);
  if (error.internal) ctx.logger.log('DEBUG', error.internal);
  return 1;
}

export async function about(ctx: TapContext, format: 'json' | 'markdown'): Promise<number> {
  await ctx.out.write(format === 'json' ? `${JSON.stringify(aboutInfo())}\n` : aboutMarkdown());
  return 0;
}

export async function discover(ctx: TapContext, sources: readonly string[]): Promise<number> {
  try {
    const { config, unknownKeys } = loadConfig(ctx, sources);
    if (unknownKeys.length > 0) ctx.logger.log('WARNING', `Unknown config keys ignored: ${unknownKeys.join(', ')}.`);
    await ctx.out.write(`${JSON.stringify(discoverCatalog(config.deletions_as_tombstones))}\n`);
    return 0;
  } catch (err) {
    return critical(ctx, err);
  }
}

interface Prepared {
  readonly parsed: ParsedConfig;
  readonly plans: StreamPlan[];
  readonly states: Map<string, StreamState>;
}

/** The plans of a --catalog (or --properties) file, refusing an Airbyte catalog with a word on the one needed. */
function planFromCatalogFile(file: NonNullable<SyncInputs['catalog']>, tombstones: boolean, warn: (message: string) => void): StreamPlan[] {
  const input = readJsonFile(file.path, file.flag);
  expectCatalogKind(input, 'singer', file);
  return planFromCatalog(input, tombstones, warn);
}

function prepare(ctx: TapContext, inputs: SyncInputs): Prepared {
  const warn = (message: string): void => ctx.logger.log('WARNING', message);
  const parsed = loadConfig(ctx, inputs.configs);
  const tombstones = parsed.config.deletions_as_tombstones;
  const plans = inputs.catalog ? planFromCatalogFile(inputs.catalog, tombstones, warn) : planAll(tombstones);
  const states = inputs.state === undefined ? new Map<string, StreamState>() : parseSingerState(readJsonFile(inputs.state, 'state'), warn);
  if (parsed.unknownKeys.length > 0) warn(`Unknown config keys ignored: ${parsed.unknownKeys.join(', ')}.`);
  return { parsed, plans, states };
}

export async function sync(ctx: TapContext, inputs: SyncInputs): Promise<number> {
  let prepared: Prepared;
  try {
    prepared = prepare(ctx, inputs);
  } catch (err) {
    return critical(ctx, err);
  }
  const { config } = prepared.parsed;
  const { plans, states } = prepared;
  const sink = new SingerSink(ctx.out, ctx.logger, plans, states);
  if (plans.length === 0) {
    ctx.logger.log('WARNING', 'The catalog selects no stream: nothing to sync. Select streams (Meltano: `select` rules) and run again.');
    await sink.finish();
    return 0;
  }

  ctx.interrupt?.setLastWords((signal) => ({
    stdout: sink.interruptedState(),
    message: `Interrupted by ${signal}: the sync stopped before it finished; the last STATE written is safe to resume from.`,
  }));
  tuneHeapForStreaming();
  const planned = new Map(plans.map((p) => [p.stream.name, p]));
  const client = clientFromConfig(config, {
    onWait: (notice) => {
      if (notice.reason !== 'rate_limited' || notice.waitMs < 10_000) return;
      const stream = findStreamByPath(notice.path)?.name ?? notice.path;
      ctx.logger.log('INFO', `${stream}: rate limited; waiting ${Math.ceil(notice.waitMs / 1000)} s (until ${new Date(notice.until).toISOString()}).`);
    },
    onLog: (level, message) => sink.log(level, message),
  });
  // A tombstone declares every property the target was told about (all null), then the deleted-at column.
  const tombstoneProperties = (stream: StreamDefinition): string[] =>
    Object.keys(propertiesOf(planned.get(stream.name)?.schema ?? {})).filter((p) => p !== SINGER_DELETED_AT);
  try {
    const result = await runSync({
      config,
      client,
      sink,
      streams: plans,
      states,
      ...(config.deletions_as_tombstones ? { tombstones: { column: SINGER_DELETED_AT, properties: tombstoneProperties } } : {}),
    });
    await sink.finish();
    const counts = [...sink.totals].map(([name, n]) => `${name} ${n}`).join(', ');
    const stats = client.stats;
    const failed = result.failures.length;
    ctx.logger.log(
      failed === 0 ? 'INFO' : 'CRITICAL',
      `Sync ${failed === 0 ? 'finished' : `failed for ${failed} stream(s): ${result.failures.map((f) => f.stream.name).join(', ')}; the last STATE is safe to resume from`}: ` +
        `records: ${counts}; requests: ${stats.requests}, retries: ${stats.retries}, rate-limit waits: ${stats.rateLimitWaits}.`,
    );
    return failed === 0 ? 0 : 1;
  } catch (err) {
    const code = critical(ctx, err);
    await sink.finish().catch(() => undefined);
    return code;
  } finally {
    await client.close();
  }
}
