/** Request counters of the API (the control interface is not counted). */

export interface StatsSnapshot {
  /** API requests received. */
  total: number;
  /** Per path (route template for known routes), per status ("reset" for a destroyed socket). */
  byPath: Record<string, Record<string, number>>;
  byStatus: Record<string, number>;
  /** Responses with status 429 (limits and injected). */
  throttled: number;
  /** Requests in flight now, over all keys. */
  inFlight: number;
  /** Most requests in flight at once, over all keys. */
  maxInFlight: number;
  /** Most requests in flight at once, per key id. */
  maxInFlightByKey: Record<string, number>;
}

const MAX_PATHS = 500;

export class RequestStats {
  private total = 0;
  private byPath = new Map<string, Map<string, number>>();
  private byStatus = new Map<string, number>();
  private throttled = 0;
  private inFlight = 0;
  private maxInFlight = 0;
  private readonly keyInFlight = new Map<string, number>();
  private maxByKey = new Map<string, number>();

  received(): void {
    this.total++;
  }

  begin(keyId: string): void {
    this.inFlight++;
    if (this.inFlight > this.maxInFlight) this.maxInFlight = this.inFlight;
    const n = (this.keyInFlight.get(keyId) ?? 0) + 1;
    this.keyInFlight.set(keyId, n);
    if (n > (this.maxByKey.get(keyId) ?? 0)) this.maxByKey.set(keyId, n);
  }

  end(keyId: string): void {
    if (this.inFlight > 0) this.inFlight--;
    const n = this.keyInFlight.get(keyId) ?? 0;
    if (n > 1) this.keyInFlight.set(keyId, n - 1);
    else this.keyInFlight.delete(keyId);
  }

  responded(path: string, status: number | 'reset'): void {
    const s = String(status);
    const key = this.byPath.has(path) || this.byPath.size < MAX_PATHS ? path : '(other)';
    let m = this.byPath.get(key);
    if (m === undefined) {
      m = new Map();
      this.byPath.set(key, m);
    }
    m.set(s, (m.get(s) ?? 0) + 1);
    this.byStatus.set(s, (this.byStatus.get(s) ?? 0) + 1);
    if (status === 429) this.throttled++;
  }

  snapshot(): StatsSnapshot {
    const byPath: Record<string, Record<string, number>> = {};
    for (const [p, m] of this.byPath) byPath[p] = Object.fromEntries(m);
    return {
      total: this.total,
      byPath,
      byStatus: Object.fromEntries(this.byStatus),
      throttled: this.throttled,
      inFlight: this.inFlight,
      maxInFlight: this.maxInFlight,
      maxInFlightByKey: Object.fromEntries(this.maxByKey),
    };
  }

  /** Zero the counters (requests in flight stay counted). */
  reset(): void {
    this.total = 0;
    this.byPath = new Map();
    this.byStatus = new Map();
    this.throttled = 0;
    this.maxInFlight = this.inFlight;
    this.maxByKey = new Map(this.keyInFlight);
  }
}
