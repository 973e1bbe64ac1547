/**
 * A Dagster Pipes session of one command (protocol 0.1): `opened` first; one
 * `report_asset_materialization` per completed stream (its records and its
 * sync_watermark as metadata); `closed` last, with the exception when the
 * command failed. Every message is {"__dagster_pipes_version": "0.1",
 * "method", "params"}. Opened only when the orchestrator set both
 * DAGSTER_PIPES_CONTEXT and DAGSTER_PIPES_MESSAGES; without them nothing
 * changes.
 */
import { assetKeyFor } from './asset-key.js';
import { openChannel, type ChannelTargets, type MessageChannel } from './channel.js';
import { loadContext, type PipesContextData } from './context.js';
import { CONTEXT_ENV, MESSAGES_ENV, decodeParam } from './params.js';
import type { FileWait } from '../config/files.js';

const PIPES_PROTOCOL_VERSION = '0.1';
const PIPES_VERSION_FIELD = '__dagster_pipes_version';

type PipesMethod = 'opened' | 'closed' | 'log' | 'report_asset_materialization';

/** A metadata value with its type said, as Dagster's reader resolves it. */
type PipesMetadataValue =
  | { readonly type: 'int'; readonly raw_value: number }
  | { readonly type: 'text'; readonly raw_value: string }
  | { readonly type: 'null'; readonly raw_value: null };

/** What a stream that completed tells the orchestrator. */
interface StreamMaterialization {
  readonly stream: string;
  readonly records: number;
  /** The stream's sync_watermark after the run; null for a stream without one (full refresh). */
  readonly syncWatermark: string | null;
}

/** The failure a `closed` message carries (Dagster's PipesException). */
interface PipesFailure {
  readonly message: string;
  /** The kind of failure (the connector's failure type, or the signal). */
  readonly name: string;
}

function pipesMessage(method: PipesMethod, params: Record<string, unknown> | null): Record<string, unknown> {
  return { [PIPES_VERSION_FIELD]: PIPES_PROTOCOL_VERSION, method, params };
}

export class PipesSession {
  readonly context: PipesContextData;
  private readonly channel: MessageChannel;
  private readonly reported = new Set<string>();
  private closedAlready = false;

  constructor(context: PipesContextData, channel: MessageChannel) {
    this.context = context;
    this.channel = channel;
    this.channel.write(pipesMessage('opened', { extras: {} }));
  }

  /**
   * The session the environment asks for, `opened` already written; undefined
   * when the two variables are not both set. Rejects with PipesSetupError (its
   * message says what to do) when they are set but unusable.
   */
  static async fromEnv(env: NodeJS.ProcessEnv, targets: ChannelTargets, wait: FileWait = {}): Promise<PipesSession | undefined> {
    const contextRaw = env[CONTEXT_ENV];
    const messagesRaw = env[MESSAGES_ENV];
    if (!contextRaw || !messagesRaw) return undefined;
    const context = await loadContext(decodeParam(CONTEXT_ENV, contextRaw), wait);
    const channel = openChannel(decodeParam(MESSAGES_ENV, messagesRaw), targets);
    return new PipesSession(context, channel);
  }

  /** One materialization per asset key: a stream reported twice (or after close) is not reported again. */
  materialized(done: StreamMaterialization): void {
    const assetKey = assetKeyFor(done.stream, this.context.asset_keys);
    if (this.closedAlready || this.reported.has(assetKey)) return;
    this.reported.add(assetKey);
    const watermark: PipesMetadataValue = done.syncWatermark === null ? { type: 'null', raw_value: null } : { type: 'text', raw_value: done.syncWatermark };
    this.channel.write(
      pipesMessage('report_asset_materialization', {
        asset_key: assetKey,
        data_version: null,
        metadata: { records: { type: 'int', raw_value: done.records }, sync_watermark: watermark },
      }),
    );
  }

  /** The last message: `closed`, with the exception when the command failed. Said once. */
  close(failure?: PipesFailure): void {
    if (this.closedAlready) return;
    this.closedAlready = true;
    const params = failure === undefined ? {} : { exception: { name: failure.name, message: failure.message, stack: [], cause: null, context: null } };
    this.channel.write(pipesMessage('closed', params));
    this.channel.close();
  }

  /**
   * Close at process exit if the command did not (a signal, a fatal error):
   * `closed` with an exception naming the exit status. Returns the remover.
   */
  closeAtExit(proc: Pick<NodeJS.Process, 'on' | 'off'> = process): () => void {
    const onExit = (code: number): void => {
      if (!this.closedAlready) {
        this.close({
          name: code === 143 ? 'SIGTERM' : code === 130 ? 'SIGINT' : 'Exit',
          message: `The command ended with exit status ${code} before it finished; what it checkpointed is safe to resume from.`,
        });
      }
    };
    proc.on('exit', onExit);
    return () => {
      proc.off('exit', onExit);
    };
  }
}
