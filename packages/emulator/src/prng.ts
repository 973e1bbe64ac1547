/**
 * A small, fast, seeded pseudo-random generator (sfc32) and helpers. Every
 * random choice of the emulator goes through one of these, so a seed fixes the
 * data set, the keys and the fault schedule.
 */

const HEX_CODES: readonly number[] = [...'0123456789abcdef'].map((c) => c.charCodeAt(0));
const B64URL_CODES: readonly number[] = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'].map((c) => c.charCodeAt(0));
const DASH = 45;
const ZERO = 48;
/** Scratch buffer of char codes: strings built from it with fromCharCode are flat (no rope of concatenations). */
const scratch: number[] = [];

function fromCodes(n: number): string {
  scratch.length = n;
  return String.fromCharCode.apply(null, scratch);
}

/** Mix any list of strings and numbers into one 32-bit seed (FNV-1a, then a murmur finaliser). */
export function hashSeed(...parts: readonly (string | number)[]): number {
  let h = 0x811c9dc5;
  const text = parts.join('\u0001');
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed >>> 0;
    for (let i = 0; i < 15; i++) this.u32();
  }

  /** A generator derived from a seed and labels, independent of this one's state. */
  static derive(...parts: readonly (string | number)[]): Prng {
    return new Prng(hashSeed(...parts));
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.u32() / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.float() * n);
  }

  /** Uniform integer in [min, max] (both included). */
  between(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[this.int(items.length)] as T;
  }

  /** Pick by weight: [[value, weight], ...]. */
  weighted<T>(items: readonly (readonly [T, number])[]): T {
    let total = 0;
    for (const [, w] of items) total += w;
    let r = this.float() * total;
    for (const [value, w] of items) {
      r -= w;
      if (r < 0) return value;
    }
    const last = items[items.length - 1];
    if (last === undefined) throw new RangeError('weighted pick from an empty list');
    return last[0];
  }

  /** A UUID version 4 shaped string (8-4-4-4-12 lower-case hex), built as one flat string. */
  uuid(): string {
    const a = this.u32();
    const b = (this.u32() & 0xffff0fff) | 0x00004000; // version 4
    const c = ((this.u32() & 0x3fffffff) | 0x80000000) >>> 0; // RFC 4122 variant
    const d = this.u32();
    const x = (w: number, nib: number): number => HEX_CODES[(w >>> (nib * 4)) & 0xf] as number;
    return String.fromCharCode(
      x(a, 7), x(a, 6), x(a, 5), x(a, 4), x(a, 3), x(a, 2), x(a, 1), x(a, 0), DASH,
      x(b, 7), x(b, 6), x(b, 5), x(b, 4), DASH, x(b, 3), x(b, 2), x(b, 1), x(b, 0), DASH,
      x(c, 7), x(c, 6), x(c, 5), x(c, 4), DASH, x(c, 3), x(c, 2), x(c, 1), x(c, 0),
      x(d, 7), x(d, 6), x(d, 5), x(d, 4), x(d, 3), x(d, 2), x(d, 1), x(d, 0),
    );
  }

  /** n decimal digits (may start with 0). */
  digits(n: number): string {
    for (let i = 0; i < n; i++) scratch[i] = ZERO + this.int(10);
    return fromCodes(n);
  }

  /** n hexadecimal characters. */
  hex(n: number): string {
    for (let i = 0; i < n; i++) scratch[i] = HEX_CODES[this.int(16)] as number;
    return fromCodes(n);
  }

  /** n characters of the base64url alphabet. */
  base64url(n: number): string {
    for (let i = 0; i < n; i++) scratch[i] = B64URL_CODES[this.int(64)] as number;
    return fromCodes(n);
  }

  /** k distinct indexes out of [0, n), in random order (k is capped at n). */
  sample(n: number, k: number): number[] {
    const take = Math.min(n, Math.max(0, k));
    if (take * 3 > n) {
      const all = Array.from({ length: n }, (_, i) => i);
      for (let i = 0; i < take; i++) {
        const j = i + this.int(n - i);
        const tmp = all[i] as number;
        all[i] = all[j] as number;
        all[j] = tmp;
      }
      return all.slice(0, take);
    }
    const seen = new Set<number>();
    const out: number[] = [];
    while (out.length < take) {
      const i = this.int(n);
      if (!seen.has(i)) {
        seen.add(i);
        out.push(i);
      }
    }
    return out;
  }
}
