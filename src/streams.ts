/**
 * The streams, as one table of data. Adding a stream is adding a row here
 * (and its zod schema in `schemas/resources.ts`); nothing else names a stream.
 * What is special about a stream (the deletion log, the streams its records
 * delete from, an optional path) is a column, read by the engine and the faces.
 */
import type { z } from 'zod';
import { andList } from './errors.js';
import { Contact, Conversation, Deletion, PipelineStage, StageEvent } from './schemas/resources.js';

export type SyncMode = 'full_refresh' | 'incremental';

/** How a personal field's values are normalized before they are hashed (personal-data/treatments.ts). */
export type PersonalKind = 'email' | 'phone' | 'text';

/** What makes a stream the service's deletion log: each record names one deleted object of another stream. */
interface DeletionLog {
  /** Field naming the deleted object's type: the `tombstoneObjectType` of the stream it belongs to. */
  readonly objectTypeField: string;
  /** Field holding the deleted object's primary key. */
  readonly objectIdField: string;
  /** How long the service keeps a deletion record; a watermark older than that has missed deletions. */
  readonly retentionDays: number;
  /**
   * Read before every other stream when deletions become tombstones: the
   * tombstones go into the deleted objects' streams while those are read.
   */
  readonly readFirstForTombstones: boolean;
}

export interface StreamDefinition {
  /** Stream name, as Airbyte and Singer see it. */
  readonly name: string;
  /** API path of the list operation. */
  readonly path: string;
  /** Primary key field (a top-level field). */
  readonly primaryKey: string;
  /** Cursor field for incremental syncs; null for full-refresh-only streams. */
  readonly cursorField: string | null;
  /** Sync modes the stream supports. */
  readonly syncModes: readonly SyncMode[];
  /** zod schema of one record; generates `schemas/<name>.json`. */
  readonly schema: z.ZodType;
  /**
   * The object_type by which the deletion log names this stream's objects;
   * such a stream has rows deleted by the log and may receive tombstones
   * (deletions_as_tombstones). Null: the log never names its objects.
   */
  readonly tombstoneObjectType: string | null;
  /** Set on the stream that is the service's deletion log (its deletion time is the cursor field). */
  readonly deletionLog: DeletionLog | null;
  /** A 404 on this path means the service does not offer it: skip with a warning. */
  readonly optional: boolean;
  /** One line a user reads in the docs and the catalog. */
  readonly description: string;
  /**
   * The fields that identify a person (GDPR, LGPD, CCPA), with how their
   * values normalize: what `personal_data` (hash, drop) applies to.
   */
  readonly personal: Readonly<Record<string, PersonalKind>>;
}

const both: readonly SyncMode[] = ['full_refresh', 'incremental'];

export const STREAMS: readonly StreamDefinition[] = [
  {
    name: 'contacts', path: '/v1/contacts', primaryKey: 'id', cursorField: 'updated_at', syncModes: both,
    schema: Contact, tombstoneObjectType: 'contact', deletionLog: null, optional: false,
    description: 'Contacts with their current funnel stage and first origin.',
    // The person's names and addresses, and the ad platform's click id: it names one person's click and the
    // ad platform can tie it back to that person's account.
    personal: { name: 'text', first_name: 'text', last_name: 'text', email: 'email', phone: 'phone', first_origin_ctwa_clid: 'text' },
  },
  {
    name: 'conversations', path: '/v1/conversations', primaryKey: 'id', cursorField: 'updated_at', syncModes: both,
    schema: Conversation, tombstoneObjectType: 'conversation', deletionLog: null, optional: false,
    description: 'Conversations with origin, outcome, message counts and first-response time (no message content).',
    personal: { origin_ctwa_clid: 'text' },
  },
  {
    name: 'stage_events', path: '/v1/stage_events', primaryKey: 'id', cursorField: 'created_at', syncModes: both,
    schema: StageEvent, tombstoneObjectType: null, deletionLog: null, optional: false,
    description: 'Immutable history of contact stage changes; entry into a funnel has from_stage_id null.',
    personal: {},
  },
  {
    name: 'deletions', path: '/v1/deletions', primaryKey: 'id', cursorField: 'deleted_at', syncModes: both,
    schema: Deletion, tombstoneObjectType: null, optional: false,
    deletionLog: { objectTypeField: 'object_type', objectIdField: 'object_id', retentionDays: 90, readFirstForTombstones: true },
    description: 'Log of contacts and conversations deleted in the last 90 days.',
    personal: {},
  },
  {
    name: 'pipeline_stages', path: '/v1/pipeline_stages', primaryKey: 'id', cursorField: null, syncModes: ['full_refresh'],
    schema: PipelineStage, tombstoneObjectType: null, deletionLog: null, optional: true,
    description: 'Funnel stages (open schema: only id is documented); skipped with a warning when the service does not offer it.',
    personal: {},
  },
];

export function findStream(name: string): StreamDefinition | undefined {
  return STREAMS.find((s) => s.name === name);
}

/** The stream read from an API path (as the client reports it in wait notices). */
export function findStreamByPath(path: string): StreamDefinition | undefined {
  return STREAMS.find((s) => s.path === path);
}

/** A stream that is the deletion log, with its log columns; its cursor field is the deletion time. */
export type DeletionLogStream = StreamDefinition & { readonly deletionLog: DeletionLog; readonly cursorField: string };

export function isDeletionLog(stream: StreamDefinition): stream is DeletionLogStream {
  return stream.deletionLog !== null && stream.cursorField !== null;
}

/** The service's deletion log, if there is one. */
export function findDeletionLog(): DeletionLogStream | undefined {
  return STREAMS.find(isDeletionLog);
}

/** The streams whose objects the deletion log names (rows it deletes, tombstone targets). */
export function deletionTargets(): StreamDefinition[] {
  return STREAMS.filter((s) => s.tombstoneObjectType !== null);
}

/** Whether a stream gets the tombstone column with this config. */
export function hasTombstones(stream: StreamDefinition, tombstones: boolean): boolean {
  return tombstones && stream.tombstoneObjectType !== null;
}

/** The stream whose objects the deletion log names with `objectType`. */
export function findDeletionTarget(objectType: unknown): StreamDefinition | undefined {
  return typeof objectType === 'string' ? STREAMS.find((s) => s.tombstoneObjectType === objectType) : undefined;
}

/** "a, b and c": stream names for a message. */
export function streamList(streams: readonly StreamDefinition[]): string {
  return andList(streams.map((s) => s.name));
}

