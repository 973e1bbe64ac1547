/**
 * The streams, as one table of data. Adding a stream is adding a row here
 * (and its zod schema in `schemas/resources.ts`); nothing else names a stream.
 */
import type { z } from 'zod';
import { Contact, Conversation, Deletion, PipelineStage, StageEvent } from './schemas/resources.js';

export type SyncMode = 'full_refresh' | 'incremental';

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
  /** Whether the stream may receive tombstones (deletions_as_tombstones). */
  readonly tombstoneObjectType: string | null;
  /** A 404 on this path means the service does not offer it: skip with a warning. */
  readonly optional: boolean;
  /** One line a user reads in the docs and the catalog. */
  readonly description: string;
}

const both: readonly SyncMode[] = ['full_refresh', 'incremental'];

export const STREAMS: readonly StreamDefinition[] = [
  {
    name: 'contacts', path: '/v1/contacts', primaryKey: 'id', cursorField: 'updated_at', syncModes: both,
    schema: Contact, tombstoneObjectType: 'contact', optional: false,
    description: 'Contacts with their current funnel stage and first origin.',
  },
  {
    name: 'conversations', path: '/v1/conversations', primaryKey: 'id', cursorField: 'updated_at', syncModes: both,
    schema: Conversation, tombstoneObjectType: 'conversation', optional: false,
    description: 'Conversations with origin, outcome, message counts and first-response time (no message content).',
  },
  {
    name: 'stage_events', path: '/v1/stage_events', primaryKey: 'id', cursorField: 'created_at', syncModes: both,
    schema: StageEvent, tombstoneObjectType: null, optional: false,
    description: 'Immutable history of contact stage changes; entry into a funnel has from_stage_id null.',
  },
  {
    name: 'deletions', path: '/v1/deletions', primaryKey: 'id', cursorField: 'deleted_at', syncModes: both,
    schema: Deletion, tombstoneObjectType: null, optional: false,
    description: 'Log of contacts and conversations deleted in the last 90 days.',
  },
  {
    name: 'pipeline_stages', path: '/v1/pipeline_stages', primaryKey: 'id', cursorField: null, syncModes: ['full_refresh'],
    schema: PipelineStage, tombstoneObjectType: null, optional: true,
    description: 'Funnel stages (open schema: only id is documented); skipped with a warning when the service does not offer it.',
  },
];

export function findStream(name: string): StreamDefinition | undefined {
  return STREAMS.find((s) => s.name === name);
}

/** The stream read from an API path (as the client reports it in wait notices). */
export function findStreamByPath(path: string): StreamDefinition | undefined {
  return STREAMS.find((s) => s.path === path);
}
