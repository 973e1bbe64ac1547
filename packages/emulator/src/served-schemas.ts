/**
 * The record schema of each list as the emulator serves it: the resources of
 * src/schemas/resources.ts, and pipeline stages with the fields the emulator
 * gives them (the API description documents only their id).
 */
import { z } from 'zod';
import { Contact, Conversation, Deletion, PipelineStage, StageEvent } from 'source-data-read/schemas';
import type { ListName } from './records.js';

/** Pipeline stages as the emulator serves them (resources.ts documents only id). */
export const PipelineStageServed = PipelineStage.extend({
  key: z.string().meta({ description: 'Key of the stage, unique within its funnel' }),
  name: z.string().meta({ description: 'Display name of the stage' }),
  pipeline_id: z.string().meta({ description: 'Funnel of the stage' }),
  position: z.number().int().meta({ description: 'Position of the stage in its funnel, from 0' }),
  outcome: z.enum(['won', 'lost']).nullable().meta({ description: 'won or lost for a closing stage; null for an open stage' }),
});

export const SERVED_SCHEMAS = {
  contacts: Contact,
  conversations: Conversation,
  stage_events: StageEvent,
  deletions: Deletion,
  pipeline_stages: PipelineStageServed,
} as const satisfies Record<ListName, z.ZodObject>;

/** The fields a list's records carry (before any extra field). */
export function servedFieldNames(list: ListName): ReadonlySet<string> {
  return new Set(Object.keys(SERVED_SCHEMAS[list].shape));
}
