/**
 * One sync: the selected streams read side by side (the client keeps the whole
 * run under max_concurrent_requests), each from its own state, every page
 * through the record pipeline (pipeline.ts) to the face's emitter. A stream that fails ends INCOMPLETE with
 * its last checkpoint intact; the others go on. A failure of the whole run
 * (a run-wide error: the key refused, the service unreachable) stops every
 * stream instead (the client fails their requests at once, streams not begun
 * are not read) and is reported once, not once per stream.
 */
import type { Config } from '../config/config.js';
import type { DataReadApi } from '../client/types.js';
import { andList, ConfigError, ConnectorError, toConnectorError } from '../errors.js';
import { deletionTargets, findDeletionLog, isDeletionLog, type DeletionLogStream, type StreamDefinition, type SyncMode } from '../streams.js';
import { defaultGapAdvice, describeGap, gapOnServiceClock, gapWithoutLogState, logWatermark, type DeletionGap } from './deletion-gap.js';
import type { Data, SyncSink } from './sync-sink.js';
import { readStream } from './reader.js';
import type { EmittedShape, ReadPosition, StreamState } from './state.js';
import { futureStartDate } from '../config/config.js';
import { parseInstant } from '../time.js';
import { TombstoneEmitter } from './tombstones.js';
import { RecordPipeline, type PipelineStream } from './pipeline.js';
import { builtInSchema } from '../schemas/json-schema.js';
import { treatmentPlan, untreatable, type TreatmentConfig } from '../personal-data/treatments.js';

/** A stream the face selected (its field selection and declared schema: pipeline.ts), read in `mode`. */
export interface SelectedStream extends PipelineStream {
  readonly mode: SyncMode;
}

export interface SyncRequest {
  readonly config: Config;
  readonly client: DataReadApi;
  /** The face's emitter. */
  readonly sink: SyncSink;
  /** The pipeline in front of it, when the session made one (its account, report, counts, progress); default: a bare one. */
  readonly pipeline?: RecordPipeline | undefined;
  readonly streams: readonly SelectedStream[];
  /** Saved state per stream name (ignored for full_refresh streams). */
  readonly states: ReadonlyMap<string, StreamState>;
  /**
   * The last sentence of the WARN about a gap in the deletion log (what to do,
   * in the face's words); default: a full refresh of the streams it deletes
   * from. null: the face heals gaps itself and says so; the engine says nothing.
   */
  readonly deletionGapAdvice?: string | null;
  /**
   * The face looked for a gap in the deletion log before this sync, on the
   * service's clock, and found none (replicate: heal.ts). Should the log's own
   * read find one all the same (the retention passed the saved watermark in
   * between), the deletions in it are gone and nothing in this sync would
   * remove their rows: the log stream fails before anything of it is written,
   * its state unchanged, so that the face's next run finds the gap and heals it.
   */
  readonly deletionGapFails?: boolean;
  /**
   * With deletionGapFails: the gap is measured from this instant instead of
   * the log's saved watermark (replicate, after a heal that continued a read
   * an earlier run began then: the log must still hold the deletions since).
   */
  readonly deletionGapSince?: string | undefined;
  /**
   * Each stream's states say what its records carry (pipeline.ts, emittedShape); a stream read
   * incrementally whose saved state says otherwise is read in full (Airbyte and Singer: the
   * destination's rows kept before get the new fields and treatments too).
   */
  readonly rememberShape?: boolean;
  /** When deletions_as_tombstones is on: the face's deleted-at column and each stream's declared properties. */
  readonly tombstones?: { readonly column: string; readonly properties: (stream: StreamDefinition) => readonly string[] };
  /**
   * A failure of the whole run met before the sync began (the account's
   * /v1/me: the key refused, the service unreachable): nothing is read, and
   * every stream stops on it as on a run-wide failure met while reading.
   */
  readonly failed?: ConnectorError | undefined;
}

interface StreamFailure {
  readonly stream: StreamDefinition;
  readonly error: ConnectorError;
}

export interface SyncResult {
  /** Every stream that did not complete (those stopped by a run-wide failure carry that error). */
  readonly failures: readonly StreamFailure[];
  /** The run-wide failure that stopped the run, if one did. */
  readonly runFailure?: ConnectorError;
  /** Final state of each stream that completed. */
  readonly states: ReadonlyMap<string, StreamState>;
}

/**
 * The deletion log's WARN about a gap (deletion-gap.ts), with the face's
 * advice; nothing when the face heals gaps itself (deletionGapAdvice null).
 */
function gapWarning(request: SyncRequest, log: DeletionLogStream, gap: DeletionGap | undefined): string | undefined {
  const advice = request.deletionGapAdvice === undefined ? defaultGapAdvice() : request.deletionGapAdvice;
  if (gap === undefined || advice === null) return undefined;
  return `${describeGap(log, gap)} ${advice}`;
}

/** The service's now: the watermark of a new one-record read of `stream` (from `since`, when given). */
export async function serviceNow(client: DataReadApi, stream: StreamDefinition, since: string | undefined): Promise<string> {
  return (await client.list(stream.path, since === undefined ? { limit: 1 } : { updated_since: since, limit: 1 })).sync_watermark;
}

/** Streams the log deletes from that are read incrementally from a saved state. */
function targetsWithState(request: SyncRequest): string[] {
  const targets = new Set(deletionTargets().map((s) => s.name));
  return request.streams
    .filter(({ stream, mode }) => mode === 'incremental' && targets.has(stream.name) && Object.keys(request.states.get(stream.name) ?? {}).length > 0)
    .map(({ stream }) => stream.name);
}

/** The stream's one WARN about values that do not fit their declared type, if any. */
async function reportMisfits(pipeline: RecordPipeline, stream: StreamDefinition): Promise<void> {
  const warning = pipeline.misfits(stream);
  if (warning) await pipeline.log('WARN', warning);
}

/**
 * start_date as sent (`updated_since`): the instant in the service's own form
 * (UTC, ms, Z), whatever form the user typed (a date, an offset, ±HHMM).
 * Throws ConfigError when it lies more than a day ahead and a selected stream
 * would use it (a stream with a time filter, read in full or without a saved
 * watermark); with state for every such stream it is not used, and not checked.
 */
function startDateToSend(request: SyncRequest): string | undefined {
  const { start_date: startDate } = request.config;
  if (startDate === undefined) return undefined;
  const future = futureStartDate(startDate);
  if (future) {
    const using = request.streams
      .filter(({ stream, mode }) => stream.cursorField !== null && (mode === 'full_refresh' || request.states.get(stream.name)?.sync_watermark === undefined))
      .map(({ stream }) => stream.name);
    if (using.length > 0) throw new ConfigError(`${future} (It would be used by: ${using.join(', ')}.)`, { field: 'start_date' });
  }
  return new Date(parseInstant(startDate)).toISOString();
}

/**
 * What a stream's records carry when not every field as received: the
 * fields selected or left out (never the ones always kept) and the
 * treatments, each sorted; undefined when every field goes on as received.
 */
function emittedShape({ stream, fields, excluded }: PipelineStream, config: TreatmentConfig): EmittedShape | undefined {
  const always = untreatable(stream);
  const sorted = (names: Iterable<string>): string[] => [...names].filter((name) => !always.has(name)).sort();
  const shape: EmittedShape = {};
  if (fields !== undefined) shape.only = sorted(fields);
  const without = sorted(excluded ?? []);
  if (without.length > 0) shape.without = without;
  const treated = treatmentPlan(config, [stream]).get(stream.name)?.fields ?? [];
  if (treated.length > 0) shape.treated = Object.fromEntries(treated.map((f) => [f.field, f.treatment] as const).sort(([a], [b]) => (a < b ? -1 : 1)));
  return Object.keys(shape).length > 0 ? shape : undefined;
}

/** What changed between two shapes of `stream`'s records, in words; undefined when nothing did. */
function shapeChange(stream: StreamDefinition, saved: EmittedShape | undefined, now: EmittedShape | undefined): string | undefined {
  const changes: string[] = [];
  // A field goes on when an `only` list names it, or else when no `without` list does.
  const goesOn = (shape: EmittedShape | undefined, field: string): boolean => (shape?.only !== undefined ? shape.only.includes(field) : !(shape?.without ?? []).includes(field));
  const builtIn = Object.keys((builtInSchema(stream).properties as object | undefined) ?? {});
  const always = untreatable(stream); // kept whatever the selection, and never listed
  const named = [...new Set([...builtIn, ...[saved, now].flatMap((shape) => [...(shape?.only ?? []), ...(shape?.without ?? [])])])].filter((field) => !always.has(field)).sort();
  const selected = named.filter((field) => goesOn(now, field) && !goesOn(saved, field));
  const leftOut = named.filter((field) => !goesOn(now, field) && goesOn(saved, field));
  if (selected.length > 0) changes.push(`${andList(selected)} selected again`);
  if (leftOut.length > 0) changes.push(`${andList(leftOut)} left out`);
  // Fields no schema names (the service's own) go on unless an `only` list holds them back.
  if (changes.length === 0 && (saved?.only === undefined) !== (now?.only === undefined)) {
    changes.push(now?.only === undefined ? 'the fields the catalog did not declare passed on again' : 'the fields the catalog does not declare left out');
  }
  const treated = (shape: EmittedShape | undefined): string =>
    Object.entries(shape?.treated ?? {})
      .map(([field, treatment]) => `${field} ${treatment}`)
      .join(', ') || 'none';
  if (treated(saved) !== treated(now)) changes.push(`fields treated otherwise (${treated(saved)} before, ${treated(now)} now)`);
  return changes.length > 0 ? changes.join('; ') : undefined;
}

/**
 * The states the sync reads from: with rememberShape, each stream's states
 * say from now on what its records carry, and that of a stream read
 * incrementally whose records were read with another selection of fields or
 * other treatments is dropped, and the stream read in full, with a WARN. An
 * incremental read would bring the new shape only to the records changed
 * since: the rows kept before would lack a field selected again, keep the
 * values of one left out, or keep values as they were before a treatment
 * (raw e-mails under a new hash).
 */
async function statesToRead(request: SyncRequest, pipeline: RecordPipeline): Promise<ReadonlyMap<string, StreamState>> {
  if (request.rememberShape !== true) return request.states;
  const states = new Map(request.states);
  for (const selected of request.streams) {
    const { stream, mode } = selected;
    const shape = emittedShape(selected, request.config);
    // Every state of the stream says so from this sync on (its saved `emitted` goes when the records carry every field).
    pipeline.carry(stream, { emitted: shape });
    const saved = states.get(stream.name);
    // A state without its account was written before states said either (release 0.2.0): its shape is not known, and taken as this run's.
    if (mode !== 'incremental' || saved?.account === undefined || (saved.sync_watermark === undefined && saved.resume === undefined)) continue;
    const change = shapeChange(stream, saved.emitted, shape);
    if (change === undefined) continue;
    states.set(stream.name, {});
    await pipeline.log(
      'WARN',
      `${stream.name}: the records read up to the saved state carried another shape than this run's: ${change}. ` +
        `The stream is read in full in this sync (${request.config.start_date === undefined ? 'its whole history' : `from start_date ${request.config.start_date}`}), ` +
        'so that the rows read before get the new shape too; records may repeat.',
    );
  }
  return states;
}

/**
 * With tombstones, the deletion log read incrementally: a stream its
 * deletions go to that is not selected gets no tombstone, and the log's
 * state moves past them all the same. Its states keep, for each such stream,
 * the log's watermark from which that stream missed them (tombstones_missed),
 * and a run that selects the stream again reads the log from there (the
 * request returned), with a WARN: its rows deleted meanwhile get their
 * tombstones. The gap check holds the log to that watermark too: a pause
 * longer than the log's retention is a gap, said as such. A log state
 * without tombstones_missed, of this release (it names its account), was
 * read without tombstones: the log is read again in full, with a WARN.
 */
async function missedTombstones(request: SyncRequest, log: DeletionLogStream, pipeline: RecordPipeline, given: SyncRequest): Promise<SyncRequest> {
  const entry = request.streams.find((s) => s.stream === log);
  const saved = request.states.get(log.name);
  // As saved, even when the log is read in full now (another shape: statesToRead): a stream not selected still missed them.
  const before = given.states.get(log.name)?.tombstones_missed;
  if (entry?.mode !== 'incremental' || saved === undefined) {
    // Read in full, with tombstones: nothing missed before it.
    pipeline.carry(log, { tombstones_missed: {} });
    return request;
  }
  const selected = new Map(request.streams.map((s) => [s.stream.name, s.mode]));
  const missed: Record<string, string> = {};
  const since = logWatermark(saved);
  let from: string | undefined;
  const back: string[] = [];
  for (const target of deletionTargets()) {
    const was = before?.[target.name];
    const mode = selected.get(target.name);
    if (mode === undefined) {
      const at = was ?? since;
      if (at !== undefined) missed[target.name] = at;
    } else if (mode === 'incremental' && was !== undefined && since !== undefined && (saved.resume !== undefined || parseInstant(was) < parseInstant(since))) {
      // (A log without a watermark is read in full: the deletions it keeps all come again.)
      back.push(target.name);
      if (from === undefined || parseInstant(was) < parseInstant(from)) from = was;
    }
  }
  // Said in every state of the log read with tombstones, even empty: a state without it was read without them.
  pipeline.carry(log, { tombstones_missed: missed });
  const original = given.states.get(log.name);
  if (original?.account !== undefined && since !== undefined && original.tombstones_missed === undefined) {
    // Read by this release (it names its account) without deletions_as_tombstones: the deletions it logged got none.
    await pipeline.log(
      'WARN',
      `${log.name} was read without deletions_as_tombstones up to ${since}: the objects deleted until then got no tombstone. ` +
        `${log.name} is read again in full, so that those the service still keeps (${log.deletionLog.retentionDays} days) get one; deletion records may repeat. ` +
        `Objects deleted before that get none: ${request.deletionGapAdvice ?? defaultGapAdvice()}`,
    );
    const states = new Map(request.states);
    states.set(log.name, { account: original.account });
    return { ...request, states };
  }
  if (from === undefined) return request;
  await pipeline.log(
    'WARN',
    `${andList(back)} ${back.length === 1 ? 'was' : 'were'} not selected while ${log.name} was read with deletions_as_tombstones since ${from}: ` +
      `the objects deleted meanwhile got no tombstone. ${log.name} is read again from ${from}, so that their rows get one; deletion records may repeat.`,
  );
  const states = new Map(request.states);
  const { resume: _continued, ...rest } = saved;
  states.set(log.name, { ...rest, sync_watermark: from });
  return { ...request, states };
}

export async function runSync(given: SyncRequest): Promise<SyncResult> {
  const { config, client } = given;
  // Every record takes the one pipeline (select, treat, check, count) before the face's emitter sees it.
  const pipeline = given.pipeline ?? new RecordPipeline(given.sink, { config, streams: given.streams });
  let request: SyncRequest = { ...given, states: await statesToRead(given, pipeline) };
  const startDate = startDateToSend(request);
  const failures: StreamFailure[] = [];
  const finalStates = new Map<string, StreamState>();

  const log = request.streams.map((s) => s.stream).find(isDeletionLog);
  let tombstones: TombstoneEmitter | undefined;
  const asked = request.tombstones;
  if (config.deletions_as_tombstones && asked) {
    if (log) {
      request = await missedTombstones(request, log, pipeline, given);
      const { states } = request;
      // Tombstones only go to incremental streams (an overwritten table would keep rows of nulls), and each
      // batch is followed by a checkpoint of its target carrying that stream's saved state (and how far the
      // tombstones reach: tombstones.ts), so destinations that commit per stream commit the tombstones before
      // the log's state moves past them.
      const incremental = new Set(request.streams.filter((s) => s.mode === 'incremental').map((s) => s.stream.name));
      tombstones = new TombstoneEmitter(log, incremental, asked.column, asked.properties, (stream) => states.get(stream.name) ?? {});
    } else {
      await pipeline.log('WARN', `deletions_as_tombstones is on but the ${findDeletionLog()?.name ?? 'deletion log'} stream is not selected: no tombstones are emitted.`);
    }
  }

  // Every stream is STARTED up front: tombstones may reach their target
  // streams while the deletion log is read.
  for (const { stream } of request.streams) await pipeline.streamStarted(stream);

  let runFailure: ConnectorError | undefined = request.failed;
  const stopped: StreamDefinition[] = [];
  const stop = async (stream: StreamDefinition, error: ConnectorError): Promise<void> => {
    runFailure ??= error;
    failures.push({ stream, error: runFailure });
    stopped.push(stream);
    await pipeline.streamStopped(stream);
  };

  const runOne = async ({ stream, mode }: SelectedStream): Promise<void> => {
    if (runFailure) return stop(stream, runFailure);
    const state = mode === 'incremental' ? (request.states.get(stream.name) ?? {}) : {};
    try {
      const log = isDeletionLog(stream) && mode === 'incremental' ? stream : undefined;
      let gapChecked = false;
      if (log) {
        // As given: a log with a saved watermark read in full by this sync (another shape, tombstones turned on) has state.
        const warning = gapWarning(request, log, gapWithoutLogState(log, given.states.get(stream.name) ?? state, targetsWithState(request)));
        if (warning) await pipeline.log('WARN', warning);
      }
      const made = isDeletionLog(stream) ? tombstones : undefined;
      const outcome = await readStream(stream, {
        client,
        sink: pipeline,
        pageSize: config.page_size,
        startDate,
        state,
        // A full read of a stream with a cursor (a full refresh, or a first read: no watermark saved) reads again what
        // moved past its end while it paged (reader.ts). Later reads need not: what moves past their end had a row
        // already, and the next sync brings its change as any other.
        catchUp: mode === 'full_refresh' || state.sync_watermark === undefined,
        ...(made ? { onPage: (records: readonly Data[], through: ReadPosition) => made.emit(pipeline, records, Date.now(), through) } : {}),
        // The gap is measured on the service's clock: its now against the saved watermark the log reads from.
        ...(log
          ? {
              onWatermark: async (watermark: string, resumed: boolean) => {
                // Once per stream, even when a rejected resume cursor restarts the read.
                if (gapChecked) return;
                gapChecked = true;
                const since = request.deletionGapSince ?? logWatermark(state);
                // A resumed read reports the watermark of the read it continues, maybe months old: ask for the service's now.
                const now = resumed && since !== undefined ? await serviceNow(client, log, since) : watermark;
                const gap = gapOnServiceClock(log, since, now);
                if (gap && request.deletionGapFails === true) {
                  throw new ConnectorError(
                    'transient_error',
                    // Said after the stream's name, as the stream's failure: the gap in words of its own, not describeGap's.
                    `${request.deletionGapSince === undefined ? 'the saved watermark' : 'the watermark of the full read an earlier run began and this one finished,'} ${since} became older than the service's ${gap.retentionDays}-day retention of deletions during this run ` +
                      `(its now: ${now}), after the run had looked for such a gap: deletions just after ${since} are gone. ` +
                      `Nothing of ${log.name} was written and its state is unchanged. ` +
                      `Run again: the next run reads ${andList(deletionTargets().map((s) => s.name))} in full to remove the rows deleted meanwhile.`,
                  );
                }
                const warning = gapWarning(request, log, gap);
                if (warning) await pipeline.log('WARN', warning);
              },
            }
          : {}),
      });
      await reportMisfits(pipeline, stream);
      if (outcome.kind === 'complete') finalStates.set(stream.name, outcome.state);
      else await pipeline.streamRunning(stream);
      await pipeline.streamComplete(stream, outcome.kind === 'skipped');
    } catch (err) {
      const error = toConnectorError(err);
      await reportMisfits(pipeline, stream).catch(() => undefined);
      if (error.runWide) return stop(stream, error);
      failures.push({ stream, error });
      await pipeline.streamIncomplete(stream, error);
    }
  };

  // Tombstones land in the deleted objects' streams: read the log before those end.
  const first = tombstones ? request.streams.filter((s) => s.stream.deletionLog?.readFirstForTombstones === true) : [];
  const rest = request.streams.filter((s) => !first.includes(s));
  for (const s of first) await runOne(s);
  await Promise.all(rest.map(runOne));

  const warning = tombstones?.unknownTypesWarning();
  if (warning) await pipeline.log('WARN', warning);
  if (runFailure) {
    await pipeline.runFailed(runFailure, stopped);
    return { failures, states: finalStates, runFailure };
  }
  return { failures, states: finalStates };
}
