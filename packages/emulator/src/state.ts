/** Everything one emulator instance holds, shared by the API, the control interface and the server. */
import { randomBytes } from 'node:crypto';
import { VirtualClock } from './clock.js';
import { CursorCodec } from './cursor.js';
import { ExtraFields, type ExtraField } from './extra-fields.js';
import { FaultInjector, type FaultRule } from './faults.js';
import { RateLimiter, resolveLimits, type LimitOverrides, type Limits } from './limits.js';
import { getPools, type Pools } from './pools.js';
import { hashSeed, Prng } from './prng.js';
import { Registry } from './store.js';
import { RequestStats } from './stats.js';

export interface EmulatorOptions {
  /** Port to listen on; 0 (default) picks a free one. */
  readonly port?: number;
  /** Address to bind; default 127.0.0.1. */
  readonly host?: string;
  /** Serve HTTPS with this certificate (PEM, the chain after the leaf) and key instead of plain HTTP. */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /** Seed of all data, keys and fault schedules; default 1. */
  readonly seed?: number | string;
  /** Bearer token of /_control; default: random. */
  readonly controlToken?: string;
  /** HMAC secret of cursors; default: random per emulator. */
  readonly cursorSecret?: string;
  /** Default limits of every key (accounts and keys may override). */
  readonly limits?: LimitOverrides;
  /** Fault rules active from the start. */
  readonly faults?: readonly FaultRule[];
  /** Virtual time at start: epoch ms or ISO 8601; default: real time. */
  readonly clockStart?: number | string;
  /** Virtual time stands still unless advanced (reproducible timestamps). */
  readonly frozenClock?: boolean;
  /** Added delay before every API response, ms (holds the request in flight); default 0. */
  readonly latencyMs?: number;
  /** Prefix of generated API keys (<prefix>_live_<secret>); default "drk". */
  readonly keyPrefix?: string;
  /** Fields served (and described in /v1/openapi.json) beyond the API description's, as a service adds them. */
  readonly extraFields?: readonly ExtraField[];
}

export function seedNumber(seed: number | string | undefined): number {
  if (seed === undefined) return 1;
  return typeof seed === 'number' && Number.isFinite(seed) ? Math.trunc(seed) >>> 0 : hashSeed(String(seed));
}

function clockStart(v: number | string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const t = typeof v === 'number' ? v : Date.parse(v);
  if (!Number.isFinite(t)) throw new RangeError(`clockStart is not a valid instant: ${String(v)}`);
  return t;
}

export class EmulatorState {
  readonly seed: number;
  readonly clock: VirtualClock;
  readonly registry = new Registry();
  readonly limiter = new RateLimiter();
  readonly faults: FaultInjector;
  readonly stats = new RequestStats();
  readonly extraFields: ExtraFields;
  readonly codec: CursorCodec;
  readonly controlToken: string;
  readonly keyPrefix: string;
  /** Ids of accounts and keys, key secrets. */
  readonly idPrng: Prng;
  defaultLimits: LimitOverrides;
  latencyMs: number;
  /** Base URL once listening (before /v1). */
  url = '';
  private requestSeq = 0;
  private readonly requestPrefix: string;
  private pools: Pools | null = null;

  constructor(options: EmulatorOptions = {}) {
    this.seed = seedNumber(options.seed);
    const start = clockStart(options.clockStart);
    this.clock = new VirtualClock({ ...(start === undefined ? {} : { start }), frozen: options.frozenClock ?? false });
    this.faults = new FaultInjector(this.seed);
    this.faults.set(options.faults ?? []);
    this.extraFields = new ExtraFields(options.extraFields ?? []);
    this.codec = new CursorCodec(options.cursorSecret ?? randomBytes(32));
    this.controlToken = options.controlToken ?? randomBytes(24).toString('base64url');
    this.keyPrefix = options.keyPrefix ?? 'drk';
    if (!/^[a-z0-9]+$/.test(this.keyPrefix)) throw new RangeError('keyPrefix must be lower-case letters and digits');
    this.idPrng = Prng.derive(this.seed, 'ids');
    this.defaultLimits = { ...(options.limits ?? {}) };
    resolveLimits(this.defaultLimits);
    this.latencyMs = options.latencyMs ?? 0;
    this.requestPrefix = randomBytes(4).toString('hex');
  }

  getPools(): Pools {
    if (this.pools === null) this.pools = getPools(this.seed);
    return this.pools;
  }

  effectiveDefaults(): Limits {
    return resolveLimits(this.defaultLimits);
  }

  nextRequestId(): string {
    this.requestSeq++;
    return `req_${this.requestPrefix}${this.requestSeq.toString(16).padStart(8, '0')}`;
  }
}
