/**
 * The control interface as a typed in-process API. The HTTP routes under
 * /_control (control-routes.ts) call exactly these methods. Inputs are checked
 * with zod; a bad input throws ProblemError 400, an unknown account or key 404.
 */
import { z } from 'zod';
import { iso } from './clock.js';
import { EXTRA_FIELD_TYPES, type ExtraField } from './extra-fields.js';
import { FAULT_KINDS, type FaultCounts, type FaultRule } from './faults.js';
import type { Indexable } from './keyset.js';
import { resolveLimits, type LimitOverrides, type Limits } from './limits.js';
import { applyMutation, type Mutation, type MutationResult } from './mutations.js';
import { OUTCOME_CATEGORIES } from './generator.js';
import { ProblemError } from './problem.js';
import { parseKeepingNumbers } from './raw-json.js';
import {
  LIST_NAMES, type ContactRecord, type ConversationRecord, type DeletionRecord, type ListName, type PipelineStageRecord, type StageEventRecord,
} from './records.js';
import { seedAccount, type SeedOptions, type SeedResult } from './seed.js';
import type { EmulatorState } from './state.js';
import type { StatsSnapshot } from './stats.js';
import { AccountData, type ApiKeyData } from './store.js';

export const DATA_SCOPE = 'data:read';
export const KEY_PATTERN = /^[a-z0-9]+_live_[A-Za-z0-9]+$/;

export interface AccountInput {
  readonly name?: string;
  /** Data API switched on (default true); off: every /v1 call of its keys is 403. */
  readonly dataApi?: boolean;
  /** The plan includes the data API (default true); false: 403. */
  readonly planAccess?: boolean;
  /** Limits of the account's keys (over the emulator defaults). */
  readonly limits?: LimitOverrides;
}

export interface AccountInfo {
  readonly id: string;
  readonly name: string;
  readonly dataApi: boolean;
  readonly planAccess: boolean;
  readonly limits: LimitOverrides;
  readonly effectiveLimits: Limits;
  /** Records as the API serves them now (test environment excluded) and test contacts stored. */
  readonly counts: {
    readonly contacts: number;
    readonly conversations: number;
    readonly stage_events: number;
    readonly deletions: number;
    readonly pipeline_stages: number;
    readonly test_contacts: number;
  };
}

export interface KeyInput {
  /** Default ["data:read"]. */
  readonly scopes?: readonly string[];
  /** Use this key (format <prefix>_live_<secret>) instead of a generated one. */
  readonly key?: string;
  readonly limits?: LimitOverrides;
}

export interface KeyPatch {
  readonly scopes?: readonly string[];
  readonly limits?: LimitOverrides;
  readonly revoked?: boolean;
}

export interface KeyInfo {
  readonly id: string;
  readonly key: string;
  readonly accountId: string;
  readonly scopes: string[];
  readonly revoked: boolean;
  readonly limits: LimitOverrides;
  readonly effectiveLimits: Limits;
}

/** An account's live dataset exactly as the API serves it now, each list sorted by id. */
export interface Dump {
  contacts: ContactRecord[];
  conversations: ConversationRecord[];
  stage_events: StageEventRecord[];
  deletions: DeletionRecord[];
  pipeline_stages: PipelineStageRecord[];
}

export interface FaultsInfo {
  readonly rules: (FaultRule & { fired: number })[];
  readonly injected: FaultCounts;
}

export interface EmulatorStats extends StatsSnapshot {
  readonly faults: FaultCounts;
}

const LimitsSchema = z.strictObject({
  perMinute: z.int().min(0).optional(),
  perDay: z.int().min(0).optional(),
  concurrency: z.int().min(1).optional(),
  windowMs: z.int().min(1).optional(),
  dayWindowMs: z.int().min(1).optional(),
});
const AccountSchema = z.strictObject({
  name: z.string().min(1).optional(),
  dataApi: z.boolean().optional(),
  planAccess: z.boolean().optional(),
  limits: LimitsSchema.optional(),
});
const KeySchema = z.strictObject({
  scopes: z.array(z.string()).optional(),
  key: z.string().regex(KEY_PATTERN, 'key must look like <prefix>_live_<secret>').optional(),
  limits: LimitsSchema.optional(),
});
const KeyPatchSchema = z.strictObject({
  scopes: z.array(z.string()).optional(),
  limits: LimitsSchema.optional(),
  revoked: z.boolean().optional(),
});
const SeedSchema = z.strictObject({
  contacts: z.int().min(0).max(5_000_000),
  testFraction: z.number().min(0).max(1).optional(),
  deletedFraction: z.number().min(0).max(10).optional(),
  historyDays: z.number().positive().max(36_500).optional(),
});
const Scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);
/** Field -> JSON text (numbers kept as written). */
const SetJson = z.record(z.string(), z.string());
const target = { count: z.int().min(0).optional(), ids: z.array(z.string()).optional() };
const MutationSchema = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('update_contacts'), ...target, set: z.record(z.string(), Scalar).optional(), setJson: SetJson.optional() }),
  z.strictObject({
    op: z.literal('update_conversations'), ...target,
    close: z.boolean().optional(),
    outcome: z.union([z.boolean(), z.enum(OUTCOME_CATEGORIES)]).optional(),
    set: z.record(z.string(), Scalar).optional(),
    setJson: SetJson.optional(),
  }),
  z.strictObject({ op: z.literal('move_contacts'), ...target, stageKey: z.string().optional() }),
  z.strictObject({ op: z.literal('create_contacts'), count: z.int().min(0), testEnvironment: z.boolean().optional(), withConversation: z.boolean().optional() }),
  z.strictObject({ op: z.literal('create_conversations'), ...target }),
  z.strictObject({ op: z.literal('delete_contacts'), ...target }),
  z.strictObject({ op: z.literal('delete_conversations'), ...target }),
]);
const StageSchema = z.strictObject({
  key: z.string().min(1),
  name: z.string().min(1),
  pipeline_id: z.string().optional(),
  position: z.int().min(0).optional(),
  outcome: z.enum(['won', 'lost']).nullable().optional(),
});
const ExtraFieldSchema = z.strictObject({
  list: z.enum(LIST_NAMES),
  name: z.string(),
  type: z.enum(EXTRA_FIELD_TYPES),
  described: z.boolean().optional(),
  description: z.string().optional(),
});
const FaultRuleSchema = z.strictObject({
  kind: z.enum(FAULT_KINDS),
  probability: z.number().min(0).max(1).optional(),
  every: z.int().min(1).optional(),
  paths: z.array(z.string()).optional(),
  times: z.int().min(0).optional(),
  retryAfterSeconds: z.int().min(0).optional(),
  rateLimitRemaining: z.int().min(0).optional(),
  rateLimitReset: z.int().min(0).optional(),
  slowMs: z.int().min(0).optional(),
}).refine((r) => (r.probability === undefined) !== (r.every === undefined), 'give exactly one of probability and every');

function parse<S extends z.ZodType>(schema: S, input: unknown, what: string): z.output<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issues = r.error.issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : what}: ${i.message}`);
  throw new ProblemError(400, `invalid ${what}: ${issues.join('; ')}`);
}

const DUMP_LISTS: readonly ListName[] = ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages'];

function byId(a: Indexable, b: Indexable): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

export class EmulatorControl {
  private readonly state: EmulatorState;

  constructor(state: EmulatorState) {
    this.state = state;
  }

  private account(id: string): AccountData {
    const a = this.state.registry.accounts.get(id);
    if (a === undefined) throw new ProblemError(404, `no account with id ${id}`);
    return a;
  }

  private key(id: string): ApiKeyData {
    const k = this.state.registry.keys.get(id);
    if (k === undefined) throw new ProblemError(404, `no API key with id ${id}`);
    return k;
  }

  private accountInfo(a: AccountData): AccountInfo {
    const s = a.settings;
    const now = this.state.clock.now();
    return {
      id: a.id, name: s.name, dataApi: s.dataApi, planAccess: s.planAccess,
      limits: { ...s.limits },
      effectiveLimits: resolveLimits(this.state.defaultLimits, s.limits),
      counts: {
        contacts: a.indexed('contacts'),
        conversations: a.indexed('conversations'),
        stage_events: a.indexed('stage_events'),
        deletions: a.read('deletions', { watermark: now, since: null, after: null, limit: Number.MAX_SAFE_INTEGER }).rows.length,
        pipeline_stages: a.stages.length,
        test_contacts: a.contacts.size - a.indexed('contacts'),
      },
    };
  }

  private keyInfo(k: ApiKeyData): KeyInfo {
    const a = this.account(k.accountId);
    return {
      id: k.id, key: k.key, accountId: k.accountId, scopes: [...k.scopes], revoked: k.revoked,
      limits: { ...k.limits },
      effectiveLimits: resolveLimits(this.state.defaultLimits, a.settings.limits, k.limits),
    };
  }

  createAccount(input: AccountInput = {}): AccountInfo {
    const v = parse(AccountSchema, input, 'account');
    const registry = this.state.registry;
    const ordinal = registry.accounts.size;
    const id = this.state.idPrng.uuid();
    const data = new AccountData(id, ordinal, {
      name: v.name ?? `Account ${ordinal + 1}`,
      dataApi: v.dataApi ?? true,
      planAccess: v.planAccess ?? true,
      limits: { ...(v.limits ?? {}) },
    }, this.state.seed, this.state.getPools(), this.state.extraFields);
    registry.accounts.set(id, data);
    return this.accountInfo(data);
  }

  listAccounts(): AccountInfo[] {
    return [...this.state.registry.accounts.values()].map((a) => this.accountInfo(a));
  }

  getAccount(id: string): AccountInfo {
    return this.accountInfo(this.account(id));
  }

  updateAccount(id: string, patch: AccountInput): AccountInfo {
    const a = this.account(id);
    const v = parse(AccountSchema, patch, 'account');
    if (v.name !== undefined) a.settings.name = v.name;
    if (v.dataApi !== undefined) a.settings.dataApi = v.dataApi;
    if (v.planAccess !== undefined) a.settings.planAccess = v.planAccess;
    if (v.limits !== undefined) a.settings.limits = { ...a.settings.limits, ...v.limits };
    return this.accountInfo(a);
  }

  createKey(accountId: string, input: KeyInput = {}): KeyInfo {
    this.account(accountId);
    const v = parse(KeySchema, input, 'key');
    const registry = this.state.registry;
    const key = v.key ?? `${this.state.keyPrefix}_live_${this.state.idPrng.base64url(32).replace(/[-_]/g, 'x')}`;
    if (registry.keysBySecret.has(key)) throw new ProblemError(400, 'this key exists already');
    const data: ApiKeyData = {
      id: `key_${this.state.idPrng.hex(16)}`, key, accountId,
      scopes: [...(v.scopes ?? [DATA_SCOPE])], revoked: false, limits: { ...(v.limits ?? {}) },
    };
    registry.keys.set(data.id, data);
    registry.keysBySecret.set(key, data);
    return this.keyInfo(data);
  }

  listKeys(accountId: string): KeyInfo[] {
    this.account(accountId);
    return [...this.state.registry.keys.values()].filter((k) => k.accountId === accountId).map((k) => this.keyInfo(k));
  }

  updateKey(keyId: string, patch: KeyPatch): KeyInfo {
    const k = this.key(keyId);
    const v = parse(KeyPatchSchema, patch, 'key');
    if (v.scopes !== undefined) k.scopes = [...v.scopes];
    if (v.limits !== undefined) k.limits = { ...k.limits, ...v.limits };
    if (v.revoked !== undefined) k.revoked = v.revoked;
    return this.keyInfo(k);
  }

  revokeKey(keyId: string): KeyInfo {
    return this.updateKey(keyId, { revoked: true });
  }

  /** Add N contacts with their past to an account. */
  seed(accountId: string, options: SeedOptions): SeedResult {
    const a = this.account(accountId);
    return seedAccount(a, this.state.clock, this.state.seed, parse(SeedSchema, options, 'seed options'));
  }

  mutate(accountId: string, mutation: Mutation): MutationResult {
    const a = this.account(accountId);
    return applyMutation(a, this.state.clock, this.state.seed, parse(MutationSchema, mutation, 'mutation'));
  }

  /** The pipeline stages served now, in list order (by funnel, then position). */
  pipelineStages(accountId: string): PipelineStageRecord[] {
    const rows = this.account(accountId).read('pipeline_stages', { watermark: this.state.clock.now(), since: null, after: null, limit: Number.MAX_SAFE_INTEGER }).rows;
    return rows.map((row) => JSON.parse(row.json()) as PipelineStageRecord);
  }

  /**
   * Remove a pipeline stage, as someone does in the service's settings: it is
   * no longer served (contacts in it keep its id, its stage events stay).
   * 404 when the account serves no stage with that id.
   */
  removePipelineStage(accountId: string, stageId: string): PipelineStageRecord[] {
    if (!this.account(accountId).removeStage(stageId)) throw new ProblemError(404, `no pipeline stage with id ${stageId}`);
    return this.pipelineStages(accountId);
  }

  /**
   * Add a pipeline stage: `pipeline_id` (default: the first funnel), `key`,
   * `name`, `position` (default: after the funnel's last stage), `outcome`
   * (default null). Returns the stage as served.
   */
  addPipelineStage(accountId: string, input: { key: string; name: string; pipeline_id?: string; position?: number; outcome?: 'won' | 'lost' | null }): PipelineStageRecord {
    const a = this.account(accountId);
    const v = parse(StageSchema, input, 'pipeline stage');
    const pipeline = v.pipeline_id === undefined ? a.ctx.pipelines[0] : a.ctx.pipelineById.get(v.pipeline_id);
    if (pipeline === undefined) throw new ProblemError(400, `no pipeline with id ${v.pipeline_id ?? '(none)'}`);
    const positions = a.stages.filter((row) => row.rec.pipeline_id === pipeline.id).map((row) => row.rec.position);
    const position = v.position ?? (positions.length === 0 ? 0 : Math.max(...positions) + 1);
    return a.addStage({ id: this.state.idPrng.uuid(), key: v.key, name: v.name, pipeline_id: pipeline.id, position, outcome: v.outcome ?? null });
  }

  /** Virtual now, ISO. */
  now(): string {
    return iso(this.state.clock.now());
  }

  /** Move the virtual clock forward by ms; returns the new now. */
  advanceClock(ms: number): string {
    if (!Number.isInteger(ms) || ms < 0) throw new ProblemError(400, 'ms must be a non-negative integer (advancing never goes back; rewindClock moves the clock back)');
    return iso(this.state.clock.advance(ms));
  }

  /**
   * Move the virtual clock back by ms, as a service's clock goes back (a
   * failover to a lagging replica, a clock fix): watermarks and change stamps
   * follow the earlier time, below those already handed out, until
   * advanceClock puts it right. Rate-limit windows restart. Returns the new now.
   */
  rewindClock(ms: number): string {
    if (!Number.isInteger(ms) || ms < 0) throw new ProblemError(400, 'ms must be a non-negative integer');
    const now = this.state.clock.rewind(ms);
    this.state.limiter.resetWindows();
    return iso(now);
  }

  /**
   * Serve a field beyond the API description's on every record of a list,
   * as a service adds one between connector releases: existing records get it
   * without a change of their cursor (an incremental read sees it on records
   * that change from now on), new ones as they are made, and /v1/openapi.json
   * describes it unless `described` is false.
   */
  addExtraField(field: ExtraField): ExtraField[] {
    const v = parse(ExtraFieldSchema, field, 'extra field');
    const added: ExtraField = { list: v.list, name: v.name, type: v.type, ...(v.described === undefined ? {} : { described: v.described }), ...(v.description === undefined ? {} : { description: v.description }) };
    this.state.extraFields.add(added);
    const now = this.state.clock.now();
    for (const account of this.state.registry.accounts.values()) account.addExtraField(added, now);
    return this.extraFields();
  }

  /** The extra fields served now. */
  extraFields(): ExtraField[] {
    return LIST_NAMES.flatMap((list) => this.state.extraFields.forList(list).map((f) => ({ ...f })));
  }

  setFaults(rules: readonly FaultRule[]): FaultsInfo {
    const valid = parse(z.array(FaultRuleSchema), rules, 'faults');
    this.state.faults.set(valid);
    return this.faults();
  }

  addFault(rule: FaultRule): FaultsInfo {
    const current = this.state.faults.rules().map(({ fired: _fired, ...r }) => r);
    return this.setFaults([...current, rule]);
  }

  clearFaults(): FaultsInfo {
    this.state.faults.clear();
    return this.faults();
  }

  faults(): FaultsInfo {
    return { rules: this.state.faults.rules(), injected: this.state.faults.snapshot() };
  }

  /** Change the emulator-wide default limits (fields given replace the current ones). */
  setDefaultLimits(limits: LimitOverrides): Limits {
    const v = parse(LimitsSchema, limits, 'limits');
    this.state.defaultLimits = { ...this.state.defaultLimits, ...v };
    return this.state.effectiveDefaults();
  }

  defaultLimits(): Limits {
    return this.state.effectiveDefaults();
  }

  /** Added delay of every API response, ms. */
  setLatency(ms: number): void {
    if (!Number.isInteger(ms) || ms < 0) throw new ProblemError(400, 'latency must be a non-negative integer of ms');
    this.state.latencyMs = ms;
  }

  stats(): EmulatorStats {
    return { ...this.state.stats.snapshot(), faults: this.state.faults.snapshot() };
  }

  /** Zero the request and fault counters and the rate-limit windows. */
  resetStats(): void {
    this.state.stats.reset();
    this.state.faults.resetCounts();
    this.state.limiter.resetWindows();
  }

  private dumpRows(accountId: string): Record<ListName, Indexable[]> {
    const a = this.account(accountId);
    const now = this.state.clock.now();
    const out = {} as Record<ListName, Indexable[]>;
    for (const list of DUMP_LISTS) {
      out[list] = a.read(list, { watermark: now, since: null, after: null, limit: Number.MAX_SAFE_INTEGER }).rows.sort(byId);
    }
    return out;
  }

  /** The account's live dataset as the API would serve it now, each list sorted by id (numbers as served: see setJson). */
  dump(accountId: string): Dump {
    const json = this.dumpJson(accountId);
    return (this.account(accountId).hasRawNumbers ? parseKeepingNumbers(json) : JSON.parse(json)) as Dump;
  }

  /** dump() as a JSON string, built from the records' cached JSON. */
  dumpJson(accountId: string): string {
    const rows = this.dumpRows(accountId);
    const parts = DUMP_LISTS.map((list) => `"${list}":[${rows[list].map((r) => r.json()).join(',')}]`);
    return `{${parts.join(',')}}`;
  }

  /** The account and key owning an API key secret (for tools and tests). */
  lookupKey(key: string): KeyInfo | undefined {
    const k = this.state.registry.keysBySecret.get(key);
    return k === undefined ? undefined : this.keyInfo(k);
  }
}
