/**
 * Records kept as their JSON bytes, and a keyset index over (cursor ms, id).
 *
 * A row's JSON is written once per change into a byte arena (large buffers
 * outside the JS heap), so a big data set costs about its JSON size, the
 * garbage collector has little to move, and a page is one buffer filled by
 * copying ready bytes. The record object exists only while someone works on it.
 *
 * The index keeps two parallel arrays (times, rows) sorted by (t, id). A change
 * appends the row again and leaves its old slot stale (a row knows its current
 * slot); changes get ever later times, so appending keeps the order. Anything
 * out of order (seeded history) marks the arrays for one sort before the next
 * read; stale slots are dropped when they pile up.
 */

import { parseKeepingNumbers } from './raw-json.js';

const CHUNK_BYTES = 4 << 20;
/** Position = chunk * SPAN + offset. */
const SPAN = 2 ** 32;

/** Append-only storage of JSON texts in large buffers. */
export class JsonArena {
  private readonly chunks: Buffer[] = [];
  private current: Buffer = Buffer.alloc(0);
  private pos = 0;
  /** Byte length of the last text appended. */
  lastLength = 0;

  /** Store a text (UTF-8); returns its position (length in lastLength). */
  append(text: string): number {
    const worst = text.length * 3;
    if (this.pos + worst > this.current.length) {
      this.current = Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, worst));
      this.chunks.push(this.current);
      this.pos = 0;
    }
    const n = this.current.write(text, this.pos, 'utf8');
    const at = (this.chunks.length - 1) * SPAN + this.pos;
    this.pos += n;
    this.lastLength = n;
    return at;
  }

  text(at: number, length: number): string {
    const chunk = this.chunks[Math.floor(at / SPAN)] as Buffer;
    const off = at % SPAN;
    return chunk.toString('utf8', off, off + length);
  }

  copy(at: number, length: number, target: Buffer, targetAt: number): void {
    const chunk = this.chunks[Math.floor(at / SPAN)] as Buffer;
    const off = at % SPAN;
    chunk.copy(target, targetAt, off, off + length);
  }

  /** Bytes held. */
  get size(): number {
    return this.chunks.reduce((n, c) => n + c.length, 0);
  }
}

export interface Indexable {
  readonly id: string;
  /** Current slot in the index; -1 when not indexed. */
  slot: number;
  json(): string;
  /** Length of the JSON in UTF-8 bytes. */
  byteLength(): number;
  /** Copy the JSON bytes into target at `at`. */
  copyTo(target: Buffer, at: number): void;
}

/** One stored record. */
export class Row<R extends { readonly id: string }> implements Indexable {
  readonly id: string;
  /** Not served by the API (test environment). */
  readonly hidden: boolean;
  slot = -1;
  private readonly arena: JsonArena;
  private obj: R | null;
  /** Arena position of the JSON; -1 while not written. */
  private at = -1;
  private length = 0;

  constructor(arena: JsonArena, rec: R, hidden: boolean) {
    this.arena = arena;
    this.id = rec.id;
    this.obj = rec;
    this.hidden = hidden;
  }

  private write(): void {
    if (this.at < 0) {
      this.at = this.arena.append(JSON.stringify(this.obj));
      this.length = this.arena.lastLength;
    }
  }

  /** The record, as an object to read or change in place (call changed() after a change). */
  get rec(): R {
    // Numbers kept as written (setJson, extra fields) survive a change of a compacted record.
    if (this.obj === null) this.obj = parseKeepingNumbers(this.json()) as R;
    return this.obj;
  }

  json(): string {
    if (this.at < 0) return JSON.stringify(this.obj);
    return this.arena.text(this.at, this.length);
  }

  byteLength(): number {
    this.write();
    return this.length;
  }

  copyTo(target: Buffer, at: number): void {
    this.write();
    this.arena.copy(this.at, this.length, target, at);
  }

  /** The record changed in place: its JSON is written again when next needed. */
  changed(): void {
    if (this.obj === null) this.obj = parseKeepingNumbers(this.json()) as R;
    this.at = -1;
  }

  /** Write the JSON now and drop the object (it is parsed again on demand). */
  compact(): this {
    this.write();
    this.obj = null;
    return this;
  }
}

function compare(aT: number, aId: string, bT: number, bId: string): number {
  if (aT !== bT) return aT < bT ? -1 : 1;
  if (aId === bId) return 0;
  return aId < bId ? -1 : 1;
}

export interface ScanRequest {
  /** Key of the last record already served; the scan starts after it. */
  readonly after: { readonly t: number; readonly id: string } | null;
  /** Smallest t included. */
  readonly minT: number;
  /** Largest t included. */
  readonly maxT: number;
  readonly limit: number;
}

export interface ScanResult {
  readonly rows: Indexable[];
  /** Key time of the last row of `rows`. */
  readonly lastT: number;
  readonly hasMore: boolean;
}

export class KeysetIndex {
  private ts: number[] = [];
  private rows: Indexable[] = [];
  private sorted = true;
  private stale = 0;

  /** Rows indexed (live). */
  get size(): number {
    return this.rows.length - this.stale;
  }

  /** Index a row (again) at time t; its previous slot becomes stale. */
  put(row: Indexable, t: number): void {
    if (row.slot >= 0) this.stale++;
    const n = this.rows.length;
    const lastRow = this.rows[n - 1];
    if (lastRow !== undefined && compare(this.ts[n - 1] as number, lastRow.id, t, row.id) > 0) this.sorted = false;
    row.slot = n;
    this.ts.push(t);
    this.rows.push(row);
  }

  remove(row: Indexable): void {
    if (row.slot >= 0) {
      row.slot = -1;
      this.stale++;
    }
  }

  private prepare(): void {
    const tooStale = this.stale > 1024 && this.stale * 2 > this.rows.length;
    if (this.sorted && !tooStale) return;
    const order: number[] = [];
    for (let i = 0; i < this.rows.length; i++) if ((this.rows[i] as Indexable).slot === i) order.push(i);
    if (!this.sorted) {
      const ts = this.ts;
      const rows = this.rows;
      order.sort((a, b) => compare(ts[a] as number, (rows[a] as Indexable).id, ts[b] as number, (rows[b] as Indexable).id));
    }
    const ts: number[] = new Array<number>(order.length);
    const rows: Indexable[] = new Array<Indexable>(order.length);
    for (let j = 0; j < order.length; j++) {
      const i = order[j] as number;
      ts[j] = this.ts[i] as number;
      const row = this.rows[i] as Indexable;
      row.slot = j;
      rows[j] = row;
    }
    this.ts = ts;
    this.rows = rows;
    this.stale = 0;
    this.sorted = true;
  }

  /** First slot whose key is > (t, id) (strict) or >= (t, id). */
  private bound(t: number, id: string, strict: boolean): number {
    let lo = 0;
    let hi = this.rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = compare(this.ts[mid] as number, (this.rows[mid] as Indexable).id, t, id);
      if (c < 0 || (strict && c === 0)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  scan(req: ScanRequest): ScanResult {
    this.prepare();
    let start = this.bound(req.minT, '', false);
    if (req.after !== null) start = Math.max(start, this.bound(req.after.t, req.after.id, true));
    const out: Indexable[] = [];
    let lastT = Number.NaN;
    const { ts, rows } = this;
    for (let i = start; i < rows.length; i++) {
      const t = ts[i] as number;
      if (t > req.maxT) break;
      const row = rows[i] as Indexable;
      if (row.slot !== i) continue;
      if (out.length >= req.limit) return { rows: out, lastT, hasMore: true };
      out.push(row);
      lastT = t;
    }
    return { rows: out, lastT, hasMore: false };
  }
}
