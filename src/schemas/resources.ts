/**
 * The Data-Read API's resources as zod schemas: the one source of truth for the
 * JSON Schemas in `schemas/`, the discovered catalog, the Singer SCHEMA messages
 * and the emulator's OpenAPI document. Field meanings are taken from the API
 * description (`data-read-api.md`, section 2).
 *
 * Nullability follows the connector contract: `id` and the stream's cursor field
 * are never null; a field is non-null elsewhere only when the API description
 * says so; every other field is nullable.
 */
import { z } from 'zod';

/** An ISO 8601 instant with a zone, as the service writes it (UTC, ms, `Z`). */
export const instant = (description: string) =>
  z.iso.datetime({ offset: true }).meta({ description, airbyte_type: 'timestamp_with_timezone' });

const text = (description: string) => z.string().meta({ description });
const int = (description: string) => z.number().int().meta({ description });
const bool = (description: string) => z.boolean().meta({ description });

export const Contact = z.looseObject({
  id: text('Unique identifier of the contact'),
  created_at: instant('Creation time').nullable(),
  updated_at: instant('Time of last change (the cursor of incremental syncs)'),
  name: text('Full name').nullable(),
  first_name: text('First name').nullable(),
  last_name: text('Last name').nullable(),
  email: text('E-mail address').nullable(),
  phone: text('Phone number in E.164 format').nullable(),
  job_title: text('Job title').nullable(),
  company_name: text('Company').nullable(),
  icp_id: text('Ideal customer profile the contact was matched to').nullable(),
  qualification_score: int("Qualification score computed by the profile's rules").nullable(),
  temperature: text('Estimated purchase propensity: hot, warm or cold').nullable(),
  source: text('How the contact entered: manual, inbound_<messaging app>, webhook_form, api or a CRM name').nullable(),
  source_detail: text('Complement of the source, such as the material, page or campaign').nullable(),
  consent_given_at: instant('When the contact gave consent').nullable(),
  do_not_contact: bool('True when the contact asked not to receive messages').nullable(),
  do_not_contact_at: instant('When the do-not-contact request was made; null when none').nullable(),
  won_at: instant('When the contact reached a winning stage; null when not yet').nullable(),
  lost_at: instant('When the contact reached a losing stage; null when not yet').nullable(),
  current_stage_id: text('Current funnel stage of the contact (see pipeline_stages)').nullable(),
  current_stage_entered_at: instant('When the current stage was entered').nullable(),
  current_agent_id: text('Agent responsible for the contact now').nullable(),
  last_activity_at: instant('Time of the last message exchanged with the contact, in any conversation').nullable(),
  first_origin_kind: text('Origin of the first conversation with a known origin: ad or link').nullable(),
  first_origin_ad_id: text('Identifier of the advertisement on the ad platform, for the first origin').nullable(),
  first_origin_ctwa_clid: text('Click identifier from the ad platform, for the first origin').nullable(),
  first_origin_headline: text('Advertisement title, for the first origin').nullable(),
  first_origin_at: instant('When the first origin was recorded').nullable(),
  first_campaign_id: text('Campaign registered in the service that matches the first origin').nullable(),
});

export const Conversation = z.looseObject({
  id: text('Identifier of the conversation'),
  contact_id: text('Contact of the conversation').nullable(),
  created_at: instant('Creation time').nullable(),
  updated_at: instant('Last change (the cursor of incremental syncs)'),
  closed_at: instant('Closing time; null while open').nullable(),
  active: bool('Whether the conversation is active').nullable(),
  channel_id: text('Channel of the conversation').nullable(),
  agent_id: text('Agent on the conversation').nullable(),
  origin_kind: text('Kind of origin (ad or link for contacts)').nullable(),
  origin_ad_id: text('Advertisement identifier on the ad platform').nullable(),
  origin_ctwa_clid: text('Click identifier from the ad platform').nullable(),
  origin_headline: text('Advertisement title').nullable(),
  origin_at: instant('When the origin was recorded').nullable(),
  campaign_id: text('Campaign registered in the service').nullable(),
  outcome_category: text('Outcome category; null when no outcome').nullable(),
  outcome_stage_id: text('Stage tied to the outcome; null when no outcome').nullable(),
  outcome_set_at: instant('When the outcome was set; null when no outcome').nullable(),
  contact_message_count: int('Number of messages sent by the contact').nullable(),
  agent_message_count: int('Number of messages sent by agents').nullable(),
  first_response_at: instant('Time of the first response').nullable(),
});

export const StageEvent = z.looseObject({
  id: text('Unique identifier of the stage change'),
  contact_id: text('Contact whose stage changed'),
  pipeline_id: text('Funnel').nullable(),
  agent_id: text('Agent handling the contact at the time of the change').nullable(),
  from_stage_id: text('Source stage; null on entry into the funnel').nullable(),
  from_stage_key: text('Key of the source stage').nullable(),
  to_stage_id: text('Destination stage').nullable(),
  to_stage_key: text('Key of the destination stage').nullable(),
  created_at: instant('Creation time (the cursor of incremental syncs); stage changes are immutable'),
});

export const Deletion = z.looseObject({
  id: text('Identifier of the deletion record'),
  object_type: text('Kind of the deleted object; contact for a contact').nullable(),
  object_id: text('Identifier of the deleted contact or conversation').nullable(),
  deleted_at: instant('Deletion time (the cursor of incremental syncs)'),
});

/** Only `id` is documented; everything else the service sends is kept as it is. */
export const PipelineStage = z.looseObject({
  id: text('Identifier of the funnel stage'),
});

export const Me = z.looseObject({
  account_name: z.string(),
  scopes: z.array(z.string()),
  limits: z.looseObject({ per_minute: z.number().int(), per_day: z.number().int() }),
});
export type Me = z.infer<typeof Me>;

/** The page envelope of every list operation; all four fields are always present. */
export const PageEnvelope = z.object({
  // Records are checked one by one by the stream reader (an `id` on each); the
  // envelope check stays O(pages), not O(fields), so it costs nothing per record.
  data: z.array(z.unknown()),
  next_cursor: z.string().nullable(),
  has_more: z.boolean(),
  sync_watermark: z.iso.datetime({ offset: true }),
});

/** application/problem+json, all fields always present. */
export const Problem = z.looseObject({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  request_id: z.string(),
});
export type Problem = z.infer<typeof Problem>;

export type Contact = z.infer<typeof Contact>;
export type Conversation = z.infer<typeof Conversation>;
export type StageEvent = z.infer<typeof StageEvent>;
export type Deletion = z.infer<typeof Deletion>;
