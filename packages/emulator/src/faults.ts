/**
 * Fault injection, off by default. A rule fires by probability (seeded, so a
 * run is reproducible) or on every Nth eligible request, optionally only on
 * some paths and at most `times` times. The first rule that fires wins.
 *
 * Transport faults replace or spoil the response; contract faults make a list
 * response break the API's own rules, for the connector's reliability suite.
 */
import type { RateHeaders } from './limits.js';
import { Prng } from './prng.js';

export const TRANSPORT_FAULTS = ['500', '503', '429', 'reset', 'slow', 'truncated', 'not_json', 'html'] as const;
export const CONTRACT_FAULTS = ['null_cursor', 'watermark_shift', 'cursor_loop', 'missing_id', 'unknown_object_type'] as const;
export const FAULT_KINDS = [...TRANSPORT_FAULTS, ...CONTRACT_FAULTS] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultRule {
  readonly kind: FaultKind;
  /** Fire with this probability (0..1) on each eligible request. */
  readonly probability?: number;
  /** Fire on every Nth eligible request (N >= 1). Exactly one of probability/every. */
  readonly every?: number;
  /** Only these paths: exact paths, route templates (/v1/contacts/{id}) or prefixes ending in '*'. */
  readonly paths?: readonly string[];
  /** Stop after firing this many times. */
  readonly times?: number;
  /** Retry-After of 429/503 faults, seconds (default 1). */
  readonly retryAfterSeconds?: number;
  /**
   * RateLimit-Remaining of 429/503 faults instead of the key's own: 0 with
   * `rateLimitReset` 1 is what a burst or simultaneous-request limiter sends
   * while the minute's quota is far from spent.
   */
  readonly rateLimitRemaining?: number;
  /** RateLimit-Reset of 429/503 faults instead of the key's own, seconds. */
  readonly rateLimitReset?: number;
  /** Delay of slow faults, ms (default 2000). */
  readonly slowMs?: number;
}

/** What the injector needs to know about a request to decide. */
export interface RequestShape {
  readonly path: string;
  /** Route template, e.g. /v1/contacts/{id}. */
  readonly route: string;
  readonly isList: boolean;
  readonly hasCursor: boolean;
}

export interface FaultCounts {
  total: number;
  byKind: Partial<Record<FaultKind, number>>;
}

interface ActiveRule {
  readonly rule: FaultRule;
  readonly prng: Prng;
  seen: number;
  fired: number;
}

export function validateFaultRule(rule: FaultRule): string | null {
  if (!(FAULT_KINDS as readonly string[]).includes(rule.kind)) return `unknown fault kind '${String(rule.kind)}'`;
  const hasP = rule.probability !== undefined;
  const hasEvery = rule.every !== undefined;
  if (hasP === hasEvery) return 'give exactly one of probability and every';
  if (hasP && !(typeof rule.probability === 'number' && rule.probability >= 0 && rule.probability <= 1)) return 'probability must be from 0 to 1';
  if (hasEvery && !(Number.isInteger(rule.every) && (rule.every ?? 0) >= 1)) return 'every must be an integer >= 1';
  if (rule.times !== undefined && !(Number.isInteger(rule.times) && rule.times >= 0)) return 'times must be an integer >= 0';
  if (rule.retryAfterSeconds !== undefined && !(Number.isInteger(rule.retryAfterSeconds) && rule.retryAfterSeconds >= 0)) return 'retryAfterSeconds must be an integer >= 0';
  for (const name of ['rateLimitRemaining', 'rateLimitReset'] as const) {
    const value = rule[name];
    if (value !== undefined && !(Number.isInteger(value) && value >= 0)) return `${name} must be an integer >= 0`;
  }
  if (rule.slowMs !== undefined && !(Number.isInteger(rule.slowMs) && rule.slowMs >= 0)) return 'slowMs must be an integer >= 0';
  return null;
}

function eligible(kind: FaultKind, req: RequestShape): boolean {
  switch (kind) {
    case 'null_cursor':
      return req.isList;
    case 'missing_id':
      return req.isList || req.route === '/v1/contacts/{id}';
    case 'watermark_shift':
    case 'cursor_loop':
      return req.isList && req.hasCursor;
    case 'unknown_object_type':
      return req.route === '/v1/deletions';
    default:
      return true;
  }
}

function pathMatches(paths: readonly string[] | undefined, req: RequestShape): boolean {
  if (paths === undefined || paths.length === 0) return true;
  return paths.some((p) => p === req.path || p === req.route || (p.endsWith('*') && req.path.startsWith(p.slice(0, -1))));
}

/** The RateLimit-* a fault's response carries: the key's own, or those the rule gives for a 429/503. */
export function faultRateHeaders(rule: FaultRule | null, own: RateHeaders): RateHeaders {
  if (rule === null || (rule.kind !== '429' && rule.kind !== '503')) return own;
  return { limit: own.limit, remaining: rule.rateLimitRemaining ?? own.remaining, reset: rule.rateLimitReset ?? own.reset };
}

export class FaultInjector {
  private readonly seed: number;
  private active: ActiveRule[] = [];
  private readonly counts: FaultCounts = { total: 0, byKind: {} };

  constructor(seed: number) {
    this.seed = seed;
  }

  /** Replace the rules (their schedules start again). Throws RangeError on an invalid rule. */
  set(rules: readonly FaultRule[]): void {
    for (const rule of rules) {
      const problem = validateFaultRule(rule);
      if (problem !== null) throw new RangeError(problem);
    }
    this.active = rules.map((rule, i) => ({ rule: { ...rule }, prng: Prng.derive(this.seed, 'fault', i, JSON.stringify(rule)), seen: 0, fired: 0 }));
  }

  clear(): void {
    this.active = [];
  }

  rules(): (FaultRule & { fired: number })[] {
    return this.active.map((a) => ({ ...a.rule, fired: a.fired }));
  }

  /** The rule that fires for this request, if any. */
  pick(req: RequestShape): FaultRule | null {
    for (const a of this.active) {
      const { rule } = a;
      if (rule.times !== undefined && a.fired >= rule.times) continue;
      if (!eligible(rule.kind, req) || !pathMatches(rule.paths, req)) continue;
      a.seen++;
      const fires = rule.every !== undefined ? a.seen % rule.every === 0 : a.prng.float() < (rule.probability ?? 0);
      if (fires) {
        a.fired++;
        return rule;
      }
    }
    return null;
  }

  /** Count a fault that was actually injected into a response. */
  record(kind: FaultKind): void {
    this.counts.total++;
    this.counts.byKind[kind] = (this.counts.byKind[kind] ?? 0) + 1;
  }

  snapshot(): FaultCounts {
    return { total: this.counts.total, byKind: { ...this.counts.byKind } };
  }

  resetCounts(): void {
    this.counts.total = 0;
    this.counts.byKind = {};
  }
}
