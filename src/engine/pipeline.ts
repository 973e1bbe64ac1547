/**
 * The record pipeline: the one way every record goes from the stream reader
 * to a face, the same for every face. Each page of a stream is
 *
 *   move    a field the service sends under a name the face fills itself
 *           (with accounts: `account`) to its own name, before anything
 *           else, so that selection and treatments see it there;
 *   select  the face's field selection (Airbyte: the configured catalog's
 *           properties; Singer: the catalog's deselected fields), never the
 *           fields no treatment may touch (the key, the cursor, the
 *           tombstone columns, what deletions are applied by);
 *   treat   personal data (personal-data/treatments.ts), in place;
 *   check   its values against the declared schema (conformance.ts), before
 *           the page is handed on: misfits make one WARN per stream;
 *   count   the session's records per stream, the progress line (an
 *           observer), the run's report (once the emitter took the page);
 *
 * and then handed to the face's emitter (Airbyte or Singer lines on stdout,
 * the replica's store), which only serializes or writes. Tombstones made
 * from the deletion log take the same way, without the check. Stream events
 * are counted and reported here, and every state the emitter is given names
 * the run's account.
 */
import { ConnectorError } from '../errors.js';
import { recordTreater, treatmentPlan, untreatable, withheldFields, type RecordTreater, type TreatmentConfig } from '../personal-data/treatments.js';
import { ACCOUNT_FIELD, SERVICE_ACCOUNT_FIELD, type JsonSchema } from '../schemas/json-schema.js';
import type { StreamDefinition } from '../streams.js';
import type { RunAccount } from './account.js';
import { TypeAudit } from './conformance.js';
import type { Data, LogLevel, SyncSink } from './sync-sink.js';
import type { RunObserver } from './run-observer.js';
import type { StreamState } from './state.js';

/** Who watches the counts go by, by stream name (the progress line): told, never waited for. */
export interface CountObserver {
  /** The stream's read begins (again, for a second pass). */
  started(stream: string): void;
  /** `records` more went through: a stream that waited reads again. */
  counted(stream: string, records: number): void;
  /** The stream waits for the rate limit until `until` (epoch ms); undefined: it reads again. */
  waiting(stream: string, until: number | undefined): void;
  /** The stream was read to its end, or failed (or was stopped). */
  ended(stream: string, outcome: 'complete' | 'failed'): void;
}

/** A stream as the face selected it. */
export interface PipelineStream {
  readonly stream: StreamDefinition;
  /** The record schema the destination was told: what the check holds values to. Default: the built-in one. */
  readonly schema?: JsonSchema | undefined;
  /** Only these fields go on (Airbyte); undefined: every field. */
  readonly fields?: ReadonlySet<string> | undefined;
  /** These fields do not go on (Singer's deselected fields). */
  readonly excluded?: ReadonlySet<string> | undefined;
}

interface PipelineOptions {
  readonly config: TreatmentConfig;
  readonly streams: readonly PipelineStream[];
  /** The account every state given to the emitter names (account.ts). */
  readonly account?: RunAccount | undefined;
  /** The command's run report. */
  readonly report?: RunObserver | undefined;
  /** Records per stream, kept over every sync of a session. */
  readonly counts?: Map<string, number> | undefined;
  readonly observer?: CountObserver | undefined;
  /** With accounts: a field `account` the service sends itself (the face fills `account`) is moved to `service_account`, one WARN per stream. */
  readonly moveServiceAccount?: boolean | undefined;
}

/** Removes from a page what the face did not select; undefined when it selects every field. */
type FieldSelector = (records: readonly Data[]) => void;

export function fieldSelector(stream: StreamDefinition, fields?: ReadonlySet<string>, excluded?: ReadonlySet<string>): FieldSelector | undefined {
  const always = untreatable(stream);
  const dropped = [...(excluded ?? [])].filter((name) => !always.has(name));
  if (fields === undefined && dropped.length === 0) return undefined;
  const kept = fields === undefined ? undefined : new Set([...fields, ...always.keys()]);
  return (records) => {
    for (const record of records) {
      for (const name of dropped) delete record[name];
      if (kept !== undefined) for (const name of Object.keys(record)) if (!kept.has(name)) delete record[name];
    }
  };
}

/** What the pipeline does to one stream's pages. */
interface Lane {
  readonly select: FieldSelector | undefined;
  readonly treat: RecordTreater | undefined;
  readonly audit: TypeAudit;
}

/** Run `then` once the emitter's write is done (at once when it was synchronous). */
function afterWrite(written: void | Promise<void>, then: () => void): void | Promise<void> {
  if (written instanceof Promise) return written.then(then);
  then();
}

export class RecordPipeline implements SyncSink {
  readonly #emitter: SyncSink;
  readonly #options: PipelineOptions;
  readonly #lanes = new Map<string, Lane>();
  readonly #counts: Map<string, number>;
  /** Streams whose WARN about a moved field was said. */
  readonly #toldMoved = new Set<string>();
  /** What every state of a stream carries besides (sync.ts: `emitted`, the deletion log's tombstones_missed), by stream name. */
  readonly #carried = new Map<string, Partial<StreamState>>();

  constructor(emitter: SyncSink, options: PipelineOptions) {
    this.#emitter = emitter;
    this.#options = options;
    this.#counts = options.counts ?? new Map();
    for (const selected of options.streams) this.#lanes.set(selected.stream.name, this.#laneOf(selected));
  }

  #laneOf({ stream, schema, fields, excluded }: PipelineStream): Lane {
    const { config } = this.#options;
    return {
      select: fieldSelector(stream, fields, excluded),
      treat: recordTreater(treatmentPlan(config, [stream]).get(stream.name), config.hash_key),
      audit: new TypeAudit(stream, schema, withheldFields(stream, config)),
    };
  }

  #lane(stream: StreamDefinition): Lane {
    let lane = this.#lanes.get(stream.name);
    if (!lane) this.#lanes.set(stream.name, (lane = this.#laneOf({ stream })));
    return lane;
  }

  streamStarted(stream: StreamDefinition): void | Promise<void> {
    if (!this.#counts.has(stream.name)) this.#counts.set(stream.name, 0);
    this.#options.observer?.started(stream.name);
    return this.#emitter.streamStarted(stream);
  }

  streamRunning(stream: StreamDefinition, quotaReset?: number): void | Promise<void> {
    this.#options.observer?.waiting(stream.name, quotaReset);
    return this.#emitter.streamRunning(stream, quotaReset);
  }

  readWatermark(stream: StreamDefinition, watermark: string): void | Promise<void> {
    return this.#emitter.readWatermark?.(stream, watermark);
  }

  readRestarted(stream: StreamDefinition): void | Promise<void> {
    return this.#emitter.readRestarted?.(stream);
  }

  rereadInFull(stream: StreamDefinition): void | Promise<void> {
    return this.#emitter.rereadInFull?.(stream);
  }

  /** A page as read: moved, selected, treated, checked, counted, emitted. */
  records(stream: StreamDefinition, records: readonly Data[], extractedAt: number): void | Promise<void> {
    const note = this.#move(stream, records);
    if (note === undefined) return this.#pass(stream, records, extractedAt);
    const logged = this.#emitter.log('WARN', note);
    return logged instanceof Promise ? logged.then(() => this.#pass(stream, records, extractedAt)) : this.#pass(stream, records, extractedAt);
  }

  /**
   * Move the service's own field `account` of each record to
   * `service_account`; the WARN to say, the first time in the stream. A
   * record holding both has nowhere to keep the first: its stream fails,
   * naming both.
   */
  #move(stream: StreamDefinition, records: readonly Data[]): string | undefined {
    if (this.#options.moveServiceAccount !== true) return undefined;
    let found = false;
    for (const record of records) {
      if (!Object.hasOwn(record, ACCOUNT_FIELD)) continue;
      if (Object.hasOwn(record, SERVICE_ACCOUNT_FIELD)) {
        throw new ConnectorError(
          'system_error',
          `${stream.name}: record ${JSON.stringify(record.id)} holds both "${ACCOUNT_FIELD}" and "${SERVICE_ACCOUNT_FIELD}" of its own; with "accounts" in the config ` +
            `"${ACCOUNT_FIELD}" names the entry, and the service's value has nowhere to go. Read this account with "api_key" instead of "accounts", and report the fields to the connector's maintainers.`,
        );
      }
      record[SERVICE_ACCOUNT_FIELD] = record[ACCOUNT_FIELD];
      delete record[ACCOUNT_FIELD];
      found = true;
    }
    if (!found || this.#toldMoved.has(stream.name)) return undefined;
    this.#toldMoved.add(stream.name);
    return `${stream.name}: the service sent a field "${ACCOUNT_FIELD}" of its own; with "accounts" in the config that field names the entry, so the service's value is kept as "${SERVICE_ACCOUNT_FIELD}".`;
  }

  #pass(stream: StreamDefinition, records: readonly Data[], extractedAt: number): void | Promise<void> {
    const lane = this.#lane(stream);
    lane.select?.(records);
    lane.treat?.(records);
    lane.audit.check(records);
    return this.#count(stream, records, 0, extractedAt);
  }

  /** Tombstones made from the deletion log for `stream`: selected, treated, counted, emitted. */
  tombstones(stream: StreamDefinition, records: readonly Data[], extractedAt: number): void | Promise<void> {
    const lane = this.#lane(stream);
    lane.select?.(records);
    lane.treat?.(records);
    return this.#count(stream, records, records.length, extractedAt);
  }

  #count(stream: StreamDefinition, records: readonly Data[], tombstones: number, extractedAt: number): void | Promise<void> {
    this.#counts.set(stream.name, (this.#counts.get(stream.name) ?? 0) + records.length);
    this.#options.observer?.counted(stream.name, records.length);
    const written = this.#emitter.records(stream, records, extractedAt, tombstones);
    const report = this.#options.report;
    // Reported once the emitter took them: a write dropped after a stop signal never counts.
    return report ? afterWrite(written, () => report.records(stream.name, records.length, tombstones)) : written;
  }

  /** The stream's one WARN about values that did not fit their declared type, if any. */
  misfits(stream: StreamDefinition): string | undefined {
    return this.#lanes.get(stream.name)?.audit.warning();
  }

  /** Every state of `stream` given to the emitter from now on carries `fields` too (a key given as undefined: none). */
  carry(stream: StreamDefinition, fields: Partial<StreamState>): void {
    this.#carried.set(stream.name, { ...this.#carried.get(stream.name), ...fields });
  }

  state(stream: StreamDefinition, state: StreamState): void | Promise<void> {
    const { account, report } = this.#options;
    const carried = this.#carried.get(stream.name);
    let stamped = account === undefined ? state : { ...state, account: { ...account } };
    if (carried !== undefined) {
      stamped = { ...stamped, ...carried };
      // A key carried as undefined is one the state must not hold (the saved `emitted` of records now as received).
      for (const [key, value] of Object.entries(carried)) if (value === undefined) delete stamped[key as keyof StreamState];
    }
    const written = this.#emitter.state(stream, stamped);
    return report ? afterWrite(written, () => report.state(stream.name, stamped)) : written;
  }

  async streamComplete(stream: StreamDefinition, skipped?: boolean): Promise<void> {
    this.#options.observer?.ended(stream.name, 'complete');
    // The emitter first (the tap's final STATE of the stream): a listener of the report (Dagster Pipes) hears of it after.
    await this.#emitter.streamComplete(stream, skipped);
    this.#options.report?.streamEnded(stream.name, skipped === true ? 'skipped' : 'complete');
  }

  streamIncomplete(stream: StreamDefinition, error: ConnectorError): void | Promise<void> {
    this.#options.observer?.ended(stream.name, 'failed');
    this.#options.report?.streamEnded(stream.name, 'incomplete', error);
    return this.#emitter.streamIncomplete(stream, error);
  }

  streamStopped(stream: StreamDefinition): void | Promise<void> {
    this.#options.observer?.ended(stream.name, 'failed');
    this.#options.report?.streamEnded(stream.name, 'stopped');
    return this.#emitter.streamStopped(stream);
  }

  runFailed(error: ConnectorError, stopped: readonly StreamDefinition[]): void | Promise<void> {
    this.#options.report?.fail(error);
    return this.#emitter.runFailed(error, stopped);
  }

  log(level: LogLevel, message: string): void | Promise<void> {
    return this.#emitter.log(level, message);
  }
}
