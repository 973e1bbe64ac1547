/**
 * Changes to an account's data, as the service would make them: each changed
 * contact (with what changes alongside it) gets its own, strictly later
 * timestamp from the virtual clock.
 */
import { iso, type VirtualClock } from './clock.js';
import type { Pipeline } from './context.js';
import { Generator, OUTCOME_CATEGORIES, temperatureFor } from './generator.js';
import type { Row } from './keyset.js';
import { ProblemError } from './problem.js';
import { Prng } from './prng.js';
import { parseKeepingNumbers } from './raw-json.js';
import type { ContactRecord, PipelineStageRecord } from './records.js';
import type { AccountData, ContactRow, ConversationRow } from './store.js';

export type OutcomeCategory = (typeof OUTCOME_CATEGORIES)[number];
type Scalar = string | number | boolean | null;

interface Target {
  /** How many records to pick at random (visible ones); ignored when ids is given. */
  readonly count?: number;
  /** Exactly these records (test-environment ones included). */
  readonly ids?: readonly string[];
}

/**
 * Fields to write as JSON text, numbers kept as written (9007199254740993,
 * 1.50): `{"qualification_score": "9007199254740993", "x_price": "1.50"}`.
 * Unlike `set`, it may add fields the schema does not know (a service that
 * sends more than it documents).
 */
type SetJson = Readonly<Record<string, string>>;

export type Mutation =
  | (Target & { readonly op: 'update_contacts'; readonly set?: Readonly<Record<string, Scalar>>; readonly setJson?: SetJson })
  | (Target & {
      readonly op: 'update_conversations';
      /** true: close; false: keep open (reopen if closed); absent: close one in four. */
      readonly close?: boolean;
      /** true: set a random outcome; a category: set that one; false: none; absent: one in five of the closed ones. */
      readonly outcome?: boolean | OutcomeCategory;
      readonly set?: Readonly<Record<string, Scalar>>;
      readonly setJson?: SetJson;
    })
  | (Target & { readonly op: 'move_contacts'; readonly stageKey?: string })
  | { readonly op: 'create_contacts'; readonly count: number; readonly testEnvironment?: boolean; readonly withConversation?: boolean }
  | (Target & { readonly op: 'create_conversations' })
  | (Target & { readonly op: 'delete_contacts' })
  | (Target & { readonly op: 'delete_conversations' });

export type MutationOp = Mutation['op'];

/**
 * A day in an account's life, for the demo and the tests: edits, stage moves,
 * closed conversations with outcomes, new contacts, deletions. Counts are
 * those of the demo times `scale`, at least 1 each.
 */
export function dayOfActivity(scale = 1): Mutation[] {
  const n = (k: number): number => Math.max(1, Math.round(k * scale));
  return [
    { op: 'update_contacts', count: n(60) },
    { op: 'move_contacts', count: n(40) },
    { op: 'update_conversations', count: n(50), close: true, outcome: true },
    { op: 'create_contacts', count: n(25), withConversation: true },
    { op: 'delete_contacts', count: n(12) },
    { op: 'delete_conversations', count: n(6) },
  ];
}

export interface MutationResult {
  readonly op: MutationOp;
  /** Ids of the records changed, created or deleted (contacts or conversations, per op). */
  readonly ids: string[];
  /** Ids of deletion records written. */
  readonly deletionIds: string[];
  /** Ids of stage events written. */
  readonly stageEventIds: string[];
  /** First and last timestamp given. */
  readonly from: string | null;
  readonly to: string | null;
}

const PROTECTED = new Set(['id', 'created_at', 'updated_at', 'contact_id']);

function applySet(rec: Record<string, unknown>, set: Readonly<Record<string, Scalar>> | undefined): void {
  if (set === undefined) return;
  for (const [k, v] of Object.entries(set)) {
    if (PROTECTED.has(k) || !(k in rec)) throw new ProblemError(400, `field '${k}' cannot be set`);
    rec[k] = v;
  }
}

function applySetJson(data: AccountData, rec: Record<string, unknown>, setJson: SetJson | undefined): void {
  if (setJson === undefined) return;
  data.hasRawNumbers = true;
  for (const [k, text] of Object.entries(setJson)) {
    if (PROTECTED.has(k)) throw new ProblemError(400, `field '${k}' cannot be set`);
    try {
      rec[k] = parseKeepingNumbers(text);
    } catch {
      throw new ProblemError(400, `setJson.${k} must be JSON text (got ${JSON.stringify(text.slice(0, 40))})`);
    }
  }
}

function choose<R extends { readonly id: string }, W extends Row<R>>(
  p: Prng, map: ReadonlyMap<string, W>, target: Target, what: string,
): W[] {
  if (target.ids !== undefined) {
    return target.ids.map((id) => {
      const row = map.get(id);
      if (row === undefined) throw new ProblemError(404, `no ${what} with id ${id}`);
      return row;
    });
  }
  const visible: W[] = [];
  for (const row of map.values()) if (!row.hidden) visible.push(row);
  return p.sample(visible.length, target.count ?? 1).map((i) => visible[i] as W);
}

class Run {
  readonly data: AccountData;
  readonly clock: VirtualClock;
  readonly p: Prng;
  readonly ids: string[] = [];
  readonly deletionIds: string[] = [];
  readonly stageEventIds: string[] = [];
  first: number | null = null;
  last: number | null = null;

  constructor(data: AccountData, clock: VirtualClock, p: Prng) {
    this.data = data;
    this.clock = clock;
    this.p = p;
  }

  stamp(): number {
    const t = this.clock.stamp();
    if (this.first === null) this.first = t;
    this.last = t;
    return t;
  }

  pipelineOf(c: ContactRecord): Pipeline | undefined {
    const stage = c.current_stage_id === null ? undefined : this.data.ctx.stageById.get(c.current_stage_id);
    return stage === undefined ? undefined : this.data.ctx.pipelineById.get(stage.pipeline_id);
  }

  /** Move a contact to a stage at t: a stage event, current stage fields, won_at/lost_at. */
  move(row: ContactRow, to: PipelineStageRecord, t: number): void {
    const c = row.rec;
    const current = c.current_stage_id === null ? undefined : this.data.ctx.stageById.get(c.current_stage_id);
    if (current?.id === to.id) return;
    // Entering another funnel (or the first one) is an entry: from_stage_id null.
    const from = current !== undefined && current.pipeline_id === to.pipeline_id ? current : null;
    const event = this.data.gen.stageEvent(this.p, c.id, c.current_agent_id, from, to, t);
    this.data.addStageEvent({ rec: event, t }, row.hidden);
    this.stageEventIds.push(event.id);
    c.current_stage_id = to.id;
    c.current_stage_entered_at = iso(t);
    if (to.outcome === 'won') c.won_at = iso(t);
    if (to.outcome === 'lost') c.lost_at = iso(t);
    c.updated_at = iso(t);
  }

  /** The stage a random move goes to: forward in the funnel, sometimes won or lost. */
  nextStage(c: ContactRecord): PipelineStageRecord {
    const pipeline = this.pipelineOf(c) ?? (this.data.ctx.pipelines[0] as Pipeline);
    const current = c.current_stage_id === null ? undefined : this.data.ctx.stageById.get(c.current_stage_id);
    if (current === undefined) return pipeline.open[0] as PipelineStageRecord;
    if (current.outcome !== null) return this.p.pick(pipeline.open);
    const i = pipeline.open.findIndex((s) => s.id === current.id);
    const next = pipeline.open[i + 1];
    if (next !== undefined && this.p.chance(0.7)) return next;
    return this.p.chance(0.45) ? pipeline.won : pipeline.lost;
  }

  stageByKey(c: ContactRecord, key: string): PipelineStageRecord {
    const own = this.pipelineOf(c)?.stages.find((s) => s.key === key);
    const any = own ?? this.data.ctx.stages.find((s) => s.key === key);
    if (any === undefined) throw new ProblemError(400, `no pipeline stage with key '${key}'`);
    return any;
  }

  result(op: MutationOp): MutationResult {
    return {
      op, ids: this.ids, deletionIds: this.deletionIds, stageEventIds: this.stageEventIds,
      from: this.first === null ? null : iso(this.first), to: this.last === null ? null : iso(this.last),
    };
  }
}

const asCount = (v: unknown): number => (typeof v === 'number' ? v : 0);

function updateConversation(run: Run, conv: ConversationRow, m: Extract<Mutation, { op: 'update_conversations' }>): void {
  const { p, data } = run;
  const c = conv.rec;
  const t = run.stamp();
  // Counts set with setJson (raw JSON numbers) or set to another type start over from 0.
  c.contact_message_count = asCount(c.contact_message_count) + p.between(1, 5);
  c.agent_message_count = asCount(c.agent_message_count) + p.between(0, 5);
  if (c.first_response_at === null && c.agent_message_count > 0) c.first_response_at = iso(t);
  const close = m.close ?? p.chance(0.25);
  if (close) {
    c.closed_at = iso(t);
    c.active = false;
  } else if (c.closed_at !== null) {
    // A new message reopens a closed conversation.
    c.closed_at = null;
    c.active = true;
  }
  const wantOutcome = m.outcome === undefined ? close && p.chance(0.2) : m.outcome !== false;
  const contact = data.contacts.get(conv.contactId);
  if (wantOutcome) {
    const category: OutcomeCategory = typeof m.outcome === 'string' ? m.outcome : p.pick(OUTCOME_CATEGORIES);
    if (contact !== undefined) {
      const pipeline = run.pipelineOf(contact.rec) ?? (data.ctx.pipelines[0] as Pipeline);
      if (category === 'converted') run.move(contact, pipeline.won, t);
      if (category === 'not_interested') run.move(contact, pipeline.lost, t);
    }
    c.outcome_category = category;
    c.outcome_stage_id = contact?.rec.current_stage_id ?? null;
    c.outcome_set_at = iso(t);
  }
  applySet(c, m.set);
  applySetJson(data, c, m.setJson);
  c.updated_at = iso(t);
  data.touchConversation(conv, t);
  if (contact !== undefined) {
    contact.rec.last_activity_at = iso(t);
    contact.rec.updated_at = iso(t);
    data.touchContact(contact, t);
  }
  run.ids.push(conv.id);
}

export function applyMutation(data: AccountData, clock: VirtualClock, seed: number, m: Mutation): MutationResult {
  const run = new Run(data, clock, Prng.derive(seed, 'mutation', data.ordinal, data.mutationCalls++));
  const { p } = run;
  switch (m.op) {
    case 'update_contacts':
      for (const row of choose(p, data.contacts, m, 'contact')) {
        const t = run.stamp();
        data.gen.changeContact(p, row.rec);
        applySet(row.rec, m.set);
        applySetJson(data, row.rec, m.setJson);
        if (m.set !== undefined && 'qualification_score' in m.set && !('temperature' in m.set)) {
          row.rec.temperature = temperatureFor(row.rec.qualification_score, p);
        }
        row.rec.updated_at = iso(t);
        data.touchContact(row, t);
        run.ids.push(row.id);
      }
      break;
    case 'update_conversations':
      for (const conv of choose(p, data.conversations, m, 'conversation')) updateConversation(run, conv, m);
      break;
    case 'move_contacts':
      for (const row of choose(p, data.contacts, m, 'contact')) {
        const to = m.stageKey === undefined ? run.nextStage(row.rec) : run.stageByKey(row.rec, m.stageKey);
        if (to.id === row.rec.current_stage_id) continue;
        const t = run.stamp();
        run.move(row, to, t);
        data.touchContact(row, t);
        run.ids.push(row.id);
      }
      break;
    case 'create_contacts':
      for (let i = 0; i < m.count; i++) {
        const t = run.stamp();
        const g = data.gen.fresh(p, t, m.withConversation ?? p.chance(0.8));
        data.addContact(g, m.testEnvironment ?? false);
        run.ids.push(g.contact.rec.id);
        for (const e of g.events) run.stageEventIds.push(e.rec.id);
      }
      break;
    case 'create_conversations':
      for (const row of choose(p, data.contacts, m, 'contact')) {
        const t = run.stamp();
        const conv = data.gen.freshConversation(p, row.rec, t);
        data.addConversation(row, { rec: conv, t });
        const c = row.rec;
        c.last_activity_at = iso(t);
        Generator.adoptFirstOrigin(c, conv, t);
        c.updated_at = iso(t);
        data.touchContact(row, t);
        run.ids.push(conv.id);
      }
      break;
    case 'delete_contacts': {
      const rows = choose(p, data.contacts, m, 'contact');
      const byContact = data.conversationsByContact();
      for (const row of rows) {
        const t = run.stamp();
        for (const d of data.deleteContact(p, row, byContact.get(row.id) ?? [], t)) run.deletionIds.push(d.id);
        run.ids.push(row.id);
      }
      break;
    }
    case 'delete_conversations':
      for (const conv of choose(p, data.conversations, m, 'conversation')) {
        const t = run.stamp();
        run.deletionIds.push(data.deleteConversation(p, conv, t).id);
        run.ids.push(conv.id);
      }
      break;
  }
  return run.result(m.op);
}
