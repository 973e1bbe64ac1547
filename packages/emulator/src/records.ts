/**
 * The records the emulator serves, field by field and in the order they are
 * written. Types (not interfaces) so they fit the loose zod types of
 * src/schemas/resources.ts (checked in test/emulator/schemas.test.ts).
 */

export type Temperature = 'hot' | 'warm' | 'cold';
export type OriginKind = 'ad' | 'link';
export type StageOutcome = 'won' | 'lost';

export type ContactRecord = {
  id: string;
  created_at: string;
  updated_at: string;
  name: string;
  first_name: string;
  last_name: string;
  email: string | null;
  phone: string | null;
  job_title: string | null;
  company_name: string | null;
  icp_id: string | null;
  qualification_score: number | null;
  temperature: Temperature | null;
  source: string | null;
  source_detail: string | null;
  consent_given_at: string | null;
  do_not_contact: boolean;
  do_not_contact_at: string | null;
  won_at: string | null;
  lost_at: string | null;
  current_stage_id: string | null;
  current_stage_entered_at: string | null;
  current_agent_id: string | null;
  last_activity_at: string | null;
  first_origin_kind: OriginKind | null;
  first_origin_ad_id: string | null;
  first_origin_ctwa_clid: string | null;
  first_origin_headline: string | null;
  first_origin_at: string | null;
  first_campaign_id: string | null;
};

export type ConversationRecord = {
  id: string;
  contact_id: string;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  active: boolean;
  channel_id: string;
  agent_id: string | null;
  origin_kind: OriginKind | null;
  origin_ad_id: string | null;
  origin_ctwa_clid: string | null;
  origin_headline: string | null;
  origin_at: string | null;
  campaign_id: string | null;
  outcome_category: string | null;
  outcome_stage_id: string | null;
  outcome_set_at: string | null;
  contact_message_count: number;
  agent_message_count: number;
  first_response_at: string | null;
};

export type StageEventRecord = {
  id: string;
  contact_id: string;
  pipeline_id: string;
  agent_id: string | null;
  from_stage_id: string | null;
  from_stage_key: string | null;
  to_stage_id: string;
  to_stage_key: string;
  created_at: string;
};

export type DeletionObjectType = 'contact' | 'conversation';

export type DeletionRecord = {
  id: string;
  object_type: DeletionObjectType;
  object_id: string;
  deleted_at: string;
};

export type PipelineStageRecord = {
  id: string;
  key: string;
  name: string;
  pipeline_id: string;
  position: number;
  outcome: StageOutcome | null;
};

/** GET /v1/me. */
export type MeRecord = {
  account_name: string;
  scopes: string[];
  limits: { per_minute: number; per_day: number };
};

export const LIST_NAMES = ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages'] as const;
export type ListName = (typeof LIST_NAMES)[number];
