/** Records and checkpoints for the stores' tests, shaped as the service sends them. */
import { expect } from 'vitest';
import { ConnectorError } from '../../src/errors.js';
import type { StoreCheckpoint } from '../../src/stores/checkpoint.js';
import type { Data } from '../../src/stores/values.js';

/** The instant `minute` minutes after 2026-01-01T00:00Z, as the service writes it. */
export function at(minute: number): string {
  return new Date(Date.UTC(2026, 0, 1) + minute * 60_000).toISOString();
}

/** A contact with every documented field, changed at `minute`. */
export function contact(id: string, minute: number, changes: Data = {}): Data {
  return {
    id,
    created_at: at(0),
    updated_at: at(minute),
    name: `Name ${id}`,
    first_name: 'Name',
    last_name: id,
    email: `${id}@example.com`,
    phone: '+5511999990000',
    job_title: 'Buyer',
    company_name: 'Acme',
    icp_id: 'icp_1',
    qualification_score: 42,
    temperature: 'warm',
    source: 'api',
    source_detail: null,
    consent_given_at: at(1),
    do_not_contact: false,
    do_not_contact_at: null,
    won_at: null,
    lost_at: null,
    current_stage_id: 'stage_1',
    current_stage_entered_at: at(2),
    current_agent_id: 'agent_1',
    last_activity_at: at(minute),
    first_origin_kind: 'ad',
    first_origin_ad_id: 'ad_1',
    first_origin_ctwa_clid: 'clid_1',
    first_origin_headline: 'Buy now',
    first_origin_at: at(1),
    first_campaign_id: null,
    ...changes,
  };
}

export function deletion(id: string, objectType: string | null, objectId: string, minute: number): Data {
  return { id, object_type: objectType, object_id: objectId, deleted_at: at(minute) };
}

/** A checkpoint of `stream` whose state names `minute`. */
export function checkpoint(stream: string, records: readonly Data[], minute: number, extra: Partial<StoreCheckpoint> = {}): StoreCheckpoint {
  return { stream, records, state: JSON.stringify({ resume: { sync_watermark: at(minute) } }), ...extra };
}

/** The ConnectorError `run` rejects with (fails the test when it resolves, or rejects with something else). */
export async function connectorFailure(run: () => Promise<unknown>): Promise<ConnectorError> {
  try {
    await run();
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectorError);
    return err as ConnectorError;
  }
  throw new Error('expected a ConnectorError, and nothing was thrown');
}
