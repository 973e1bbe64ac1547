/**
 * Builds records: a contact with a plausible past (conversations, a stage
 * history, outcomes, won/lost dates) for seeding, and fresh records at one
 * instant for mutations. All times are integers (epoch ms), all choices from
 * the PRNG passed in, so a seed fixes the data.
 */
import { iso } from './clock.js';
import type { AccountContext, Pipeline } from './context.js';
import { asciiSlug, type Company, type LocalePool, type Name, type Pools } from './pools.js';
import type { Prng } from './prng.js';
import type {
  ContactRecord, ConversationRecord, OriginKind, PipelineStageRecord, StageEventRecord, Temperature,
} from './records.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export interface Generated<R> {
  readonly rec: R;
  /** Cursor time of the record (updated_at or created_at), epoch ms. */
  readonly t: number;
}

export interface GeneratedContact {
  readonly contact: Generated<ContactRecord>;
  readonly conversations: readonly Generated<ConversationRecord>[];
  readonly events: readonly Generated<StageEventRecord>[];
}

export interface Origin {
  readonly kind: OriginKind;
  readonly adId: string | null;
  readonly clid: string | null;
  readonly headline: string | null;
  readonly campaignId: string | null;
}

interface Person {
  readonly locale: LocalePool;
  readonly first: Name;
  readonly last: Name;
  readonly email: string | null;
  readonly phone: string | null;
  readonly jobTitle: string | null;
  readonly company: Company | null;
}

interface ConversationDraft {
  rec: ConversationRecord;
  start: number;
  lastMsg: number;
  closed: number | null;
  outcomeAt: number | null;
}

export const OUTCOME_CATEGORIES = ['converted', 'not_interested', 'no_response', 'follow_up', 'invalid_contact'] as const;
const INBOUND_SOURCES = [['inbound_whatsapp', 75], ['inbound_instagram', 15], ['inbound_messenger', 10]] as const;
const OTHER_SOURCES = [['manual', 20], ['webhook_form', 30], ['api', 15], ['hubspot', 12], ['salesforce', 8], ['pipedrive', 6], ['rdstation', 9]] as const;
const CRM_DETAILS = ['list: Q3 MQLs', 'workflow: lead nurturing', 'sync: all contacts', 'segment: enterprise'];
const MANUAL_DETAILS = ['Added by agent', 'CSV import', 'Business card scan', 'Trade show'];
const API_DETAILS = ['integration: zapier', 'integration: make', 'integration: n8n', 'custom: erp-sync'];

/** A click-to-WhatsApp click id (ctwa_clid) as the ad platform issues them. */
export function ctwaClid(prng: Prng): string {
  return `AR${prng.base64url(78)}`;
}

export function temperatureFor(score: number | null, prng: Prng): Temperature | null {
  if (score === null) return prng.chance(0.5) ? prng.pick(['hot', 'warm', 'cold'] as const) : null;
  if (prng.chance(0.1)) return prng.pick(['hot', 'warm', 'cold'] as const);
  return score >= 70 ? 'hot' : score >= 40 ? 'warm' : 'cold';
}

export class Generator {
  private readonly pools: Pools;
  readonly ctx: AccountContext;

  constructor(pools: Pools, ctx: AccountContext) {
    this.pools = pools;
    this.ctx = ctx;
  }

  private person(p: Prng): Person {
    const locale = p.weighted(this.pools.locales);
    const first = p.pick(locale.firstNames);
    const last = p.pick(locale.lastNames);
    const company = p.chance(0.9) ? p.pick(locale.companies) : null;
    let email: string | null = null;
    if (p.chance(0.93)) {
      const f = first.slug || 'contact';
      const l = last.slug || 'person';
      const local = p.weighted([[`${f}.${l}`, 5], [`${f.slice(0, 1)}${l}`, 3], [`${f}${l}${p.between(1, 99)}`, 2]] as const);
      const domain = company !== null && p.chance(0.6) ? company.domain : p.pick(locale.freeEmailDomains);
      email = `${local}@${domain}`;
    }
    return {
      locale, first, last, email, company,
      phone: p.chance(0.96) ? locale.phone(p) : null,
      jobTitle: p.chance(0.85) ? p.pick(locale.jobTitles) : null,
    };
  }

  /** An origin of the given kind: ads carry ad id, click id and headline; links their text. */
  origin(p: Prng, kind: OriginKind): Origin {
    const campaign = p.pick(this.ctx.campaigns);
    if (kind === 'ad') {
      const ad = p.pick(campaign.ads);
      return { kind, adId: ad.adId, clid: ctwaClid(p), headline: ad.headline, campaignId: campaign.id };
    }
    const matched = p.chance(0.75);
    return { kind, adId: null, clid: null, headline: campaign.linkText, campaignId: matched ? campaign.id : null };
  }

  private maybeOrigin(p: Prng, weights: readonly (readonly [OriginKind | null, number])[]): Origin | null {
    const kind = p.weighted(weights);
    return kind === null ? null : this.origin(p, kind);
  }

  private conversation(p: Prng, contactId: string, agent: string | null, start: number, origin: Origin | null): ConversationRecord {
    const channel = origin?.kind === 'ad' ? (this.ctx.channels[0] as string) : p.pick(this.ctx.channels);
    const at = iso(start);
    return {
      id: p.uuid(),
      contact_id: contactId,
      created_at: at,
      updated_at: at,
      closed_at: null,
      active: true,
      channel_id: channel,
      agent_id: agent,
      origin_kind: origin?.kind ?? null,
      origin_ad_id: origin?.adId ?? null,
      origin_ctwa_clid: origin?.clid ?? null,
      origin_headline: origin?.headline ?? null,
      origin_at: origin === null ? null : at,
      campaign_id: origin?.campaignId ?? null,
      outcome_category: null,
      outcome_stage_id: null,
      outcome_set_at: null,
      contact_message_count: 1,
      agent_message_count: 0,
      first_response_at: null,
    };
  }

  private sourceFor(p: Prng, inbound: boolean, campaignId: string | null, locale: LocalePool): [string | null, string | null] {
    if (inbound) {
      const source = p.weighted(INBOUND_SOURCES);
      const campaign = campaignId === null ? undefined : this.ctx.campaignById.get(campaignId);
      return [source, campaign?.name ?? 'direct message'];
    }
    const source = p.weighted(OTHER_SOURCES);
    if (p.chance(0.08)) return [source, null];
    const product = p.pick(locale.products).slug;
    switch (source) {
      case 'manual': return [source, p.pick(MANUAL_DETAILS)];
      case 'webhook_form': return [source, p.pick(['landing: /pricing', 'landing: /demo', `ebook: ${product}`, `webinar: ${product}`])];
      case 'api': return [source, p.pick(API_DETAILS)];
      default: return [source, p.pick(CRM_DETAILS)];
    }
  }

  private baseContact(p: Prng, person: Person, created: number, agent: string | null): ContactRecord {
    const icp = p.chance(0.8) ? p.pick(this.ctx.icps) : null;
    const score = icp === null ? null : p.between(0, 100);
    const at = iso(created);
    return {
      id: p.uuid(),
      created_at: at,
      updated_at: at,
      name: `${person.first.text} ${person.last.text}`,
      first_name: person.first.text,
      last_name: person.last.text,
      email: person.email,
      phone: person.phone,
      job_title: person.jobTitle,
      company_name: person.company?.name ?? null,
      icp_id: icp,
      qualification_score: score,
      temperature: temperatureFor(score, p),
      source: null,
      source_detail: null,
      consent_given_at: null,
      do_not_contact: false,
      do_not_contact_at: null,
      won_at: null,
      lost_at: null,
      current_stage_id: null,
      current_stage_entered_at: null,
      current_agent_id: agent,
      last_activity_at: null,
      first_origin_kind: null,
      first_origin_ad_id: null,
      first_origin_ctwa_clid: null,
      first_origin_headline: null,
      first_origin_at: null,
      first_campaign_id: null,
    };
  }

  /** A stage change record (from null = entry into the funnel). */
  stageEvent(p: Prng, contactId: string, agent: string | null, from: PipelineStageRecord | null, to: PipelineStageRecord, t: number): StageEventRecord {
    return {
      id: p.uuid(),
      contact_id: contactId,
      pipeline_id: to.pipeline_id,
      agent_id: agent,
      from_stage_id: from?.id ?? null,
      from_stage_key: from?.key ?? null,
      to_stage_id: to.id,
      to_stage_key: to.key,
      created_at: iso(t),
    };
  }

  /** Set the contact's first-origin fields from an origin. */
  static applyFirstOrigin(c: ContactRecord, origin: Origin, at: number): void {
    c.first_origin_kind = origin.kind;
    c.first_origin_ad_id = origin.adId;
    c.first_origin_ctwa_clid = origin.clid;
    c.first_origin_headline = origin.headline;
    c.first_origin_at = iso(at);
    c.first_campaign_id = origin.campaignId;
  }

  /** A contact without a first origin takes the origin of this conversation, if it has one. */
  static adoptFirstOrigin(c: ContactRecord, conv: ConversationRecord, at: number): void {
    if (c.first_origin_kind !== null || conv.origin_kind === null) return;
    const origin: Origin = { kind: conv.origin_kind, adId: conv.origin_ad_id, clid: conv.origin_ctwa_clid, headline: conv.origin_headline, campaignId: conv.campaign_id };
    Generator.applyFirstOrigin(c, origin, at);
  }

  private pickPipeline(p: Prng): Pipeline {
    const pipelines = this.ctx.pipelines;
    return (p.chance(0.85) ? pipelines[0] : pipelines[1] ?? pipelines[0]) as Pipeline;
  }

  /** A contact created at `created` with a history up to `end` (inclusive). */
  history(p: Prng, created: number, end: number): GeneratedContact {
    const at = (lo: number, hi: number): number => (hi <= lo ? lo : lo + p.int(hi - lo + 1));
    const person = this.person(p);
    let agent = p.chance(0.9) ? p.pick(this.ctx.agents) : null;
    const c = this.baseContact(p, person, created, agent);

    // Conversations, oldest first.
    const nConv = p.weighted([[0, 12], [1, 55], [2, 23], [3, 10]] as const);
    const starts: number[] = [];
    for (let i = 0; i < nConv; i++) starts.push(i === 0 && p.chance(0.7) ? at(created, Math.min(end, created + 2 * MINUTE)) : at(created, end));
    starts.sort((a, b) => a - b);
    const drafts: ConversationDraft[] = starts.map((start, i) => {
      const origin = this.maybeOrigin(p, i === 0 ? [['ad', 50], ['link', 25], [null, 25]] : [['ad', 30], ['link', 20], [null, 50]]);
      const rec = this.conversation(p, c.id, agent ?? p.pick(this.ctx.agents), start, origin);
      const lastMsg = Math.min(end, start + (p.chance(0.5) ? at(MINUTE, HOUR) : at(HOUR, 5 * DAY)));
      rec.contact_message_count = p.between(1, 30);
      rec.agent_message_count = p.chance(0.9) ? p.between(1, 35) : 0;
      if (rec.agent_message_count > 0) rec.first_response_at = iso(Math.min(lastMsg, start + at(15_000, 2 * HOUR)));
      const closes = end - lastMsg > DAY ? p.chance(0.8) : p.chance(0.1);
      const closed = closes ? Math.min(end, lastMsg + at(0, 6 * HOUR)) : null;
      return { rec, start, lastMsg, closed, outcomeAt: null };
    });

    // Stage history: entry, forward moves, maybe a final won/lost.
    const pipeline = this.pickPipeline(p);
    const events: Generated<StageEventRecord>[] = [];
    let stage = pipeline.open[0] as PipelineStageRecord;
    events.push({ rec: this.stageEvent(p, c.id, agent, null, stage, created), t: created });
    const moves = Math.min(p.weighted([[0, 30], [1, 30], [2, 20], [3, 12], [4, 8]] as const), pipeline.open.length - 1);
    const moveTimes = [...new Set(Array.from({ length: moves }, () => at(created + 1, end)))].sort((a, b) => a - b);
    let lastT = created;
    for (const [i, t] of moveTimes.entries()) {
      if (t <= lastT) continue;
      const to = pipeline.open[i + 1];
      if (to === undefined) break;
      if (p.chance(0.1)) agent = p.pick(this.ctx.agents);
      events.push({ rec: this.stageEvent(p, c.id, agent, stage, to, t), t });
      stage = to;
      lastT = t;
    }
    const final = p.weighted([[null, 70], ['won', 12], ['lost', 18]] as const);
    const lastConv = drafts[drafts.length - 1];
    if (final !== null) {
      const tO = Math.min(end, Math.max(lastT, lastConv?.lastMsg ?? created) + at(MINUTE, HOUR));
      if (tO > lastT) {
        const to = final === 'won' ? pipeline.won : pipeline.lost;
        if (p.chance(0.1)) agent = p.pick(this.ctx.agents);
        events.push({ rec: this.stageEvent(p, c.id, agent, stage, to, tO), t: tO });
        stage = to;
        lastT = tO;
        if (final === 'won') c.won_at = iso(tO);
        else c.lost_at = iso(tO);
        if (lastConv !== undefined && lastConv.lastMsg <= tO) {
          lastConv.closed = tO;
          lastConv.outcomeAt = tO;
          lastConv.rec.outcome_category = final === 'won' ? 'converted' : 'not_interested';
          lastConv.rec.outcome_stage_id = to.id;
        }
      }
    }
    c.current_stage_id = stage.id;
    c.current_stage_entered_at = iso(lastT);
    c.current_agent_id = agent;

    const stageAt = (t: number): string => {
      let id = (events[0] as Generated<StageEventRecord>).rec.to_stage_id;
      for (const e of events) if (e.t <= t) id = e.rec.to_stage_id;
      return id;
    };

    // Finish conversations.
    let updated = lastT;
    let lastActivity: number | null = null;
    const conversations: Generated<ConversationRecord>[] = [];
    for (const d of drafts) {
      if (d.closed !== null && d.outcomeAt === null && p.chance(0.6)) {
        d.outcomeAt = d.closed;
        d.rec.outcome_category = p.pick(['no_response', 'follow_up', 'invalid_contact'] as const);
        d.rec.outcome_stage_id = stageAt(d.closed);
      }
      if (d.closed !== null) {
        d.rec.closed_at = iso(d.closed);
        d.rec.active = false;
      }
      if (d.outcomeAt !== null) d.rec.outcome_set_at = iso(d.outcomeAt);
      const u = Math.max(d.lastMsg, d.closed ?? 0, d.outcomeAt ?? 0);
      d.rec.updated_at = iso(u);
      conversations.push({ rec: d.rec, t: u });
      lastActivity = lastActivity === null ? d.lastMsg : Math.max(lastActivity, d.lastMsg);
      Generator.adoptFirstOrigin(c, d.rec, d.start);
    }
    if (lastActivity !== null) {
      c.last_activity_at = iso(lastActivity);
      updated = Math.max(updated, lastActivity);
    }

    const first = drafts[0];
    const inbound = first !== undefined && first.start - created <= 2 * MINUTE;
    [c.source, c.source_detail] = this.sourceFor(p, inbound, first?.rec.campaign_id ?? null, person.locale);
    if (p.chance(0.85)) {
      const consent = Math.min(end, created + at(0, 10 * MINUTE));
      c.consent_given_at = iso(consent);
      updated = Math.max(updated, consent);
    }
    if (p.chance(0.03)) {
      const dnc = at(created, end);
      c.do_not_contact = true;
      c.do_not_contact_at = iso(dnc);
      updated = Math.max(updated, dnc);
    }
    c.updated_at = iso(updated);
    return { contact: { rec: c, t: updated }, conversations, events };
  }

  /** A contact created now (t): entry into a funnel and, optionally, its first inbound conversation. */
  fresh(p: Prng, t: number, withConversation: boolean): GeneratedContact {
    const person = this.person(p);
    const agent = p.chance(0.9) ? p.pick(this.ctx.agents) : null;
    const c = this.baseContact(p, person, t, agent);
    const stage = this.pickPipeline(p).open[0] as PipelineStageRecord;
    const event = this.stageEvent(p, c.id, agent, null, stage, t);
    c.current_stage_id = stage.id;
    c.current_stage_entered_at = iso(t);
    const conversations: Generated<ConversationRecord>[] = [];
    let origin: Origin | null = null;
    if (withConversation) {
      origin = this.maybeOrigin(p, [['ad', 55], ['link', 25], [null, 20]]);
      conversations.push({ rec: this.conversation(p, c.id, agent ?? p.pick(this.ctx.agents), t, origin), t });
      c.last_activity_at = iso(t);
      if (origin !== null) Generator.applyFirstOrigin(c, origin, t);
    }
    [c.source, c.source_detail] = this.sourceFor(p, withConversation, origin?.campaignId ?? null, person.locale);
    if (p.chance(0.85)) c.consent_given_at = iso(t);
    return { contact: { rec: c, t }, conversations, events: [{ rec: event, t }] };
  }

  /** A new conversation of an existing contact, opened at t. */
  freshConversation(p: Prng, contact: ContactRecord, t: number): ConversationRecord {
    const origin = this.maybeOrigin(p, [['ad', 35], ['link', 20], [null, 45]]);
    return this.conversation(p, contact.id, contact.current_agent_id ?? p.pick(this.ctx.agents), t, origin);
  }

  /** Change one to three ordinary fields of a contact (not its times). */
  changeContact(p: Prng, c: ContactRecord): void {
    const changes = p.between(1, 3);
    for (let i = 0; i < changes; i++) {
      switch (p.int(5)) {
        case 0: {
          // A score set with setJson (a raw JSON number) or set to another type starts over.
          const base = typeof c.qualification_score === 'number' ? c.qualification_score : p.between(20, 60);
          c.qualification_score = Math.max(0, Math.min(100, base + p.between(-15, 20)));
          if (c.icp_id === null) c.icp_id = p.pick(this.ctx.icps);
          c.temperature = temperatureFor(c.qualification_score, p);
          break;
        }
        case 1:
          c.current_agent_id = p.pick(this.ctx.agents);
          break;
        case 2: {
          const person = this.person(p);
          c.job_title = person.jobTitle ?? c.job_title;
          break;
        }
        case 3:
          c.temperature = p.pick(['hot', 'warm', 'cold'] as const);
          break;
        default: {
          const person = this.person(p);
          if (person.email !== null) c.email = person.email.replace(/^[^@]*/, (asciiSlug(c.first_name) || 'contact') + '.' + (asciiSlug(c.last_name) || 'person'));
          break;
        }
      }
    }
  }
}
