/**
 * Realistic, deterministic records for the benchmark server: every field of
 * each resource schema (data-read-api.md, section 2), values shaped like the
 * live service's (UUIDs, ms-precision UTC instants, E.164 phones). A contact
 * renders to about 1 KB of JSON. test/bench/records.test.ts holds every
 * record to its stream's zod schema: every declared field, nothing else.
 *
 * Each record's id ends in a fixed-width slot that the server overwrites with
 * the page number, so every record of a run has its own id while pages are
 * rendered only once.
 */
import { Prng } from 'data-read-emulator';

/** Uniform floats in [0, 1) from a seed (the emulator's PRNG). */
export function prng(seed: number): () => number {
  const p = new Prng(seed);
  return () => p.float();
}

type Rand = () => number;

const hex = (r: Rand, n: number): string => {
  let s = '';
  for (let i = 0; i < n; i++) s += '0123456789abcdef'[Math.floor(r() * 16)];
  return s;
};
const uuid = (r: Rand): string => `${hex(r, 8)}-${hex(r, 4)}-4${hex(r, 3)}-${'89ab'[Math.floor(r() * 4)]}${hex(r, 3)}-${hex(r, 12)}`;
const pick = <T>(r: Rand, items: readonly T[]): T => items[Math.floor(r() * items.length)] as T;
const chance = (r: Rand, p: number): boolean => r() < p;

/** Width of the page-number slot at the end of every id (hex digits). */
export const PAGE_SLOT = 8;
const SLOT = 'P'.repeat(PAGE_SLOT);
/** A record id: UUID-shaped, last group = page slot (8) + index in page (4 hex). */
const recordId = (r: Rand, index: number): string =>
  `${hex(r, 8)}-${hex(r, 4)}-4${hex(r, 3)}-${'89ab'[Math.floor(r() * 4)]}${hex(r, 3)}-${SLOT}${index.toString(16).padStart(4, '0')}`;

const BASE_MS = Date.parse('2024-01-01T00:00:00.000Z');
const SPAN_MS = 600 * 24 * 3600 * 1000;
const instant = (r: Rand, from = BASE_MS, span = SPAN_MS): string => new Date(from + Math.floor(r() * span)).toISOString();

const FIRST = ['Ana', 'Bruno', 'Carla', 'Diego', 'Elena', 'Felipe', 'Gabriela', 'Hugo', 'Isabela', 'João', 'Karina', 'Lucas', 'Mariana', 'Nicolás', 'Olivia', 'Pedro'];
const LAST = ['Silva', 'Santos', 'Oliveira', 'Souza', 'Rodrigues', 'Ferreira', 'Alves', 'Pereira', 'Lima', 'Gomes', 'Costa', 'Ribeiro', 'Martins', 'Carvalho'];
const JOBS = ['Head of Marketing', 'Sales Manager', 'Chief Executive Officer', 'Operations Analyst', 'Procurement Coordinator', 'Founder', 'IT Director'];
const COMPANIES = ['Acme Comércio Ltda', 'Borealis Logística S.A.', 'Cobalto Software', 'Delta Alimentos', 'Estrela Saúde', 'Faro Educação', 'Granito Engenharia'];
const SOURCES = ['manual', 'inbound_whatsapp', 'inbound_instagram', 'webhook_form', 'api', 'hubspot', 'pipedrive'];
const DETAILS = ['ebook-guia-de-vendas-2025', 'landing/demo-request', 'campaign/black-friday', 'webinar-automacao', 'pricing-page', 'partner-referral'];
const HEADLINES = ['Fale com um especialista hoje', 'Teste grátis por 14 dias', 'Automatize seu atendimento', 'Descubra o plano ideal para sua equipe'];

function contact(r: Rand, index: number): Record<string, unknown> {
  const first = pick(r, FIRST);
  const last = pick(r, LAST);
  const created = instant(r);
  const createdMs = Date.parse(created);
  const later = (): string => instant(r, createdMs, 90 * 24 * 3600 * 1000);
  const won = chance(r, 0.15);
  const lost = !won && chance(r, 0.2);
  const dnc = chance(r, 0.05);
  const ad = chance(r, 0.6);
  const company = pick(r, COMPANIES);
  return {
    id: recordId(r, index),
    created_at: created,
    updated_at: later(),
    name: `${first} ${last}`,
    first_name: first,
    last_name: last,
    email: `${first.toLowerCase().normalize('NFD').replace(/[^a-z]/g, '')}.${last.toLowerCase()}@${company.split(' ')[0]?.toLowerCase()}.com.br`,
    phone: `+55119${String(Math.floor(r() * 1e8)).padStart(8, '0')}`,
    job_title: pick(r, JOBS),
    company_name: company,
    icp_id: uuid(r),
    qualification_score: Math.floor(r() * 101),
    temperature: pick(r, ['hot', 'warm', 'cold']),
    source: pick(r, SOURCES),
    source_detail: pick(r, DETAILS),
    consent_given_at: later(),
    do_not_contact: dnc,
    do_not_contact_at: dnc ? later() : null,
    won_at: won ? later() : null,
    lost_at: lost ? later() : null,
    current_stage_id: uuid(r),
    current_stage_entered_at: later(),
    current_agent_id: uuid(r),
    last_activity_at: later(),
    first_origin_kind: ad ? 'ad' : 'link',
    first_origin_ad_id: String(120_000_000_000_000 + Math.floor(r() * 1e12)),
    first_origin_ctwa_clid: `ARA${hex(r, 40)}`,
    first_origin_headline: pick(r, HEADLINES),
    first_origin_at: later(),
    first_campaign_id: uuid(r),
  };
}

function conversation(r: Rand, index: number): Record<string, unknown> {
  const created = instant(r);
  const createdMs = Date.parse(created);
  const later = (): string => instant(r, createdMs, 30 * 24 * 3600 * 1000);
  const closed = chance(r, 0.6);
  const outcome = closed && chance(r, 0.7);
  return {
    id: recordId(r, index),
    contact_id: uuid(r),
    created_at: created,
    updated_at: later(),
    closed_at: closed ? later() : null,
    active: !closed,
    channel_id: uuid(r),
    agent_id: uuid(r),
    origin_kind: pick(r, ['ad', 'link']),
    origin_ad_id: String(120_000_000_000_000 + Math.floor(r() * 1e12)),
    origin_ctwa_clid: `ARA${hex(r, 40)}`,
    origin_headline: pick(r, HEADLINES),
    origin_at: created,
    campaign_id: uuid(r),
    outcome_category: outcome ? pick(r, ['converted', 'not_interested', 'no_response', 'follow_up']) : null,
    outcome_stage_id: outcome ? uuid(r) : null,
    outcome_set_at: outcome ? later() : null,
    contact_message_count: Math.floor(r() * 40),
    agent_message_count: Math.floor(r() * 40),
    first_response_at: later(),
  };
}

function stageEvent(r: Rand, index: number): Record<string, unknown> {
  const entry = chance(r, 0.2);
  return {
    id: recordId(r, index),
    contact_id: uuid(r),
    pipeline_id: uuid(r),
    agent_id: uuid(r),
    from_stage_id: entry ? null : uuid(r),
    from_stage_key: entry ? null : pick(r, ['new', 'qualified', 'proposal', 'negotiation']),
    to_stage_id: uuid(r),
    to_stage_key: pick(r, ['qualified', 'proposal', 'negotiation', 'won', 'lost']),
    created_at: instant(r),
  };
}

function deletion(r: Rand, index: number): Record<string, unknown> {
  return {
    id: recordId(r, index),
    object_type: pick(r, ['contact', 'conversation']),
    object_id: uuid(r),
    deleted_at: instant(r),
  };
}

export const GENERATORS: Readonly<Record<string, (r: Rand, index: number) => Record<string, unknown>>> = {
  '/v1/contacts': contact,
  '/v1/conversations': conversation,
  '/v1/stage_events': stageEvent,
  '/v1/deletions': deletion,
};

