/**
 * In-memory data of the emulator: accounts (settings, context, records and
 * their keyset indexes) and API keys. Test-environment records are stored but
 * never indexed, so no list, lookup or dump can serve them.
 */
import { iso } from './clock.js';
import { buildAccountContext, type AccountContext } from './context.js';
import { Generator, type Generated, type GeneratedContact } from './generator.js';
import { JsonArena, KeysetIndex, Row, type ScanResult } from './keyset.js';
import { extraValue, type ExtraField, type ExtraFields } from './extra-fields.js';
import type { LimitOverrides } from './limits.js';
import type { Pools } from './pools.js';
import type { Prng } from './prng.js';
import type {
  ContactRecord, ConversationRecord, DeletionObjectType, DeletionRecord, ListName, PipelineStageRecord, StageEventRecord,
} from './records.js';

export const DELETION_RETENTION_MS = 90 * 86_400_000;

export type ContactRow = Row<ContactRecord>;

export class ConversationRow extends Row<ConversationRecord> {
  readonly contactId: string;
  constructor(arena: JsonArena, rec: ConversationRecord, hidden: boolean) {
    super(arena, rec, hidden);
    this.contactId = rec.contact_id;
  }
}

export interface ReadWindow {
  readonly watermark: number;
  /** Lower bound (look-back applied); null: none. */
  readonly since: number | null;
  readonly after: { readonly t: number; readonly id: string } | null;
  readonly limit: number;
}

export interface AccountSettings {
  name: string;
  dataApi: boolean;
  planAccess: boolean;
  limits: LimitOverrides;
}

export class AccountData {
  readonly id: string;
  readonly ordinal: number;
  readonly settings: AccountSettings;
  readonly ctx: AccountContext;
  readonly gen: Generator;
  /** JSON of all the account's records. */
  readonly arena = new JsonArena();
  readonly contacts = new Map<string, ContactRow>();
  readonly conversations = new Map<string, ConversationRow>();
  /** Stage events and deletions of test-environment contacts (kept, never served). */
  readonly hiddenEvents: Row<StageEventRecord>[] = [];
  readonly hiddenDeletions: Row<DeletionRecord>[] = [];
  /** The pipeline stages served (removeStage / addStage change them; the account context keeps the original funnels). */
  private readonly stageRows: Row<PipelineStageRecord>[];
  private readonly index: Readonly<Record<ListName, KeysetIndex>>;
  /** Calls so far, for the PRNG streams of seeding and mutations. */
  seedCalls = 0;
  mutationCalls = 0;
  /** Some record holds a number kept as written (setJson): dumps then parse keeping them. */
  hasRawNumbers = false;

  /** Fields served beyond the API description's (every record of their list carries them). */
  readonly extraFields: ExtraFields;

  constructor(id: string, ordinal: number, settings: AccountSettings, seed: number, pools: Pools, extraFields: ExtraFields) {
    this.id = id;
    this.ordinal = ordinal;
    this.settings = settings;
    this.extraFields = extraFields;
    this.ctx = buildAccountContext(seed, ordinal, pools);
    this.gen = new Generator(pools, this.ctx);
    this.index = {
      contacts: new KeysetIndex(),
      conversations: new KeysetIndex(),
      stage_events: new KeysetIndex(),
      deletions: new KeysetIndex(),
      pipeline_stages: new KeysetIndex(),
    };
    this.stageRows = this.ctx.stages.map((s) => new Row(this.arena, this.withExtra('pipeline_stages', { ...s }), false));
    for (const row of this.stageRows) this.index.pipeline_stages.put(row, this.stageOrder(row.rec));
  }

  /** The pipeline stages served now. */
  get stages(): readonly Row<PipelineStageRecord>[] {
    return this.stageRows;
  }

  /** Where a stage sorts in its list: by funnel, then position. */
  private stageOrder(stage: PipelineStageRecord): number {
    const funnel = this.ctx.pipelines.findIndex((p) => p.id === stage.pipeline_id);
    return (funnel < 0 ? this.ctx.pipelines.length : funnel) * 1000 + stage.position;
  }

  /**
   * Stop serving a pipeline stage (someone removed it from a funnel). Contacts
   * in it keep its id as their current stage, and its stage events stay, as
   * the service keeps history. Returns whether a stage with that id was served.
   */
  removeStage(id: string): boolean {
    const at = this.stageRows.findIndex((row) => row.id === id);
    if (at < 0) return false;
    const [row] = this.stageRows.splice(at, 1);
    if (row) this.index.pipeline_stages.remove(row);
    return true;
  }

  /** Serve a new pipeline stage (someone added one to a funnel). */
  addStage(stage: PipelineStageRecord): PipelineStageRecord {
    const row = new Row(this.arena, this.withExtra('pipeline_stages', { ...stage }), false);
    this.stageRows.push(row);
    this.index.pipeline_stages.put(row, this.stageOrder(stage));
    return row.rec;
  }

  /**
   * Store a generated contact with its conversations and stage events.
   * compact: keep only the JSON of the records (seeding: memory and GC stay small).
   */
  addContact(g: GeneratedContact, hidden: boolean, compact = false): ContactRow {
    const row = new Row(this.arena, this.withExtra('contacts', g.contact.rec), hidden);
    if (compact) row.compact();
    this.contacts.set(row.id, row);
    if (!hidden) this.index.contacts.put(row, g.contact.t);
    for (const c of g.conversations) this.addConversation(row, c, compact);
    for (const e of g.events) this.addStageEvent(e, hidden, compact);
    return row;
  }

  addConversation(contact: ContactRow, c: Generated<ConversationRecord>, compact = false): ConversationRow {
    const conv = new ConversationRow(this.arena, this.withExtra('conversations', c.rec), contact.hidden);
    if (compact) conv.compact();
    this.conversations.set(conv.id, conv);
    if (!conv.hidden) this.index.conversations.put(conv, c.t);
    return conv;
  }

  addStageEvent(e: Generated<StageEventRecord>, hidden: boolean, compact = false): void {
    const row = new Row(this.arena, this.withExtra('stage_events', e.rec), hidden);
    if (compact) row.compact();
    if (hidden) this.hiddenEvents.push(row);
    else this.index.stage_events.put(row, e.t);
  }

  addDeletion(p: Prng, objectType: DeletionObjectType, objectId: string, t: number, hidden: boolean, compact = false): Row<DeletionRecord> {
    const rec: DeletionRecord = { id: p.uuid(), object_type: objectType, object_id: objectId, deleted_at: iso(t) };
    const row = new Row<DeletionRecord>(this.arena, this.withExtra('deletions', rec), hidden);
    if (compact) row.compact();
    if (hidden) this.hiddenDeletions.push(row);
    else this.index.deletions.put(row, t);
    return row;
  }

  /** A record made now, with the list's extra fields set. */
  private withExtra<R extends { readonly id: string }>(list: ListName, rec: R): R {
    if (this.extraFields.apply(list, rec)) this.hasRawNumbers = true;
    return rec;
  }

  /**
   * A field added at run time: set on every record of the list (served ones
   * and those of the test environment), their cursors unchanged.
   */
  addExtraField(field: ExtraField, now: number): void {
    const rows: Row<{ readonly id: string }>[] = [];
    if (field.list === 'contacts') rows.push(...this.contacts.values());
    else if (field.list === 'conversations') rows.push(...this.conversations.values());
    else if (field.list === 'pipeline_stages') rows.push(...this.stageRows);
    else {
      const served = this.read(field.list, { watermark: now, since: null, after: null, limit: Number.MAX_SAFE_INTEGER }).rows;
      rows.push(...(served as Row<{ readonly id: string }>[]), ...(field.list === 'stage_events' ? this.hiddenEvents : this.hiddenDeletions));
    }
    for (const row of rows) {
      const rec = row.rec as Record<string, unknown>;
      const value = extraValue(field, row.id);
      rec[field.name] = value;
      if (typeof value === 'object' && value !== null) this.hasRawNumbers = true;
      row.changed();
    }
  }

  /** Live (indexed) records of a list, whatever their time. */
  indexed(list: ListName): number {
    return this.index[list].size;
  }

  /** Conversation ids per contact id (one pass over the conversations). */
  conversationsByContact(): Map<string, ConversationRow[]> {
    const out = new Map<string, ConversationRow[]>();
    for (const conv of this.conversations.values()) {
      const list = out.get(conv.contactId);
      if (list === undefined) out.set(conv.contactId, [conv]);
      else list.push(conv);
    }
    return out;
  }

  /** After changing a contact's record in place: new JSON, new position (t = its updated_at). */
  touchContact(row: ContactRow, t: number): void {
    row.changed();
    if (!row.hidden) this.index.contacts.put(row, t);
  }

  touchConversation(row: ConversationRow, t: number): void {
    row.changed();
    if (!row.hidden) this.index.conversations.put(row, t);
  }

  /** Delete a conversation at t: a deletion record "conversation". */
  deleteConversation(p: Prng, row: ConversationRow, t: number): Row<DeletionRecord> {
    this.conversations.delete(row.id);
    this.index.conversations.remove(row);
    return this.addDeletion(p, 'conversation', row.id, t, row.hidden);
  }

  /** Delete a contact and its conversations at t; its stage events stay (immutable history). */
  deleteContact(p: Prng, row: ContactRow, conversations: readonly ConversationRow[], t: number): Row<DeletionRecord>[] {
    const out: Row<DeletionRecord>[] = [];
    for (const conv of conversations) {
      if (this.conversations.get(conv.id) === conv) out.push(this.deleteConversation(p, conv, t));
    }
    this.contacts.delete(row.id);
    this.index.contacts.remove(row);
    out.push(this.addDeletion(p, 'contact', row.id, t, row.hidden));
    return out;
  }

  /** One page of a list, keyset order (cursor ms, id); deletions older than 90 days before the watermark are gone. */
  read(list: ListName, w: ReadWindow): ScanResult {
    let minT = w.since ?? Number.NEGATIVE_INFINITY;
    let maxT = w.watermark;
    if (list === 'deletions') minT = Math.max(minT, w.watermark - DELETION_RETENTION_MS);
    if (list === 'pipeline_stages') {
      minT = Number.NEGATIVE_INFINITY;
      maxT = Number.POSITIVE_INFINITY;
    }
    return this.index[list].scan({ after: w.after, minT, maxT, limit: w.limit });
  }

  /** Visible contact (not test environment, not deleted), or undefined. */
  visibleContact(id: string): ContactRow | undefined {
    const row = this.contacts.get(id);
    return row === undefined || row.hidden ? undefined : row;
  }
}

export interface ApiKeyData {
  readonly id: string;
  readonly key: string;
  readonly accountId: string;
  scopes: string[];
  revoked: boolean;
  limits: LimitOverrides;
}

export class Registry {
  readonly accounts = new Map<string, AccountData>();
  readonly keys = new Map<string, ApiKeyData>();
  readonly keysBySecret = new Map<string, ApiKeyData>();
}
