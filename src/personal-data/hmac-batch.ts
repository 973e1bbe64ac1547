/// <reference path="./webassembly.d.ts" />
/**
 * HMAC-SHA-256 tokens of many short values at once: a page's values are
 * queued, normalized on their way into the message blocks (no intermediate
 * string), then hashed four at a time by a WebAssembly SIMD kernel
 * (hmac-sha256-x4.wat) whose hex digests come back as one string the tokens
 * are cut from. About a third of the one-at-a-time HMAC's cost
 * (hmac-sha256.ts), which stays for what the queue does not take: a value
 * over 55 bytes once normalized, a value beyond ASCII (whose normalization
 * needs Unicode's rules), and every value on a Node.js run without
 * WebAssembly (`--jitless`). Both give the same tokens (tested).
 */
import { HMAC_SHA256_X4_WASM } from './hmac-sha256-x4.wasm.js';
import { K, hmacMidstates } from './hmac-sha256.js';
import type { PersonalKind } from '../streams.js';

/** Longest message (bytes) that fits one SHA-256 block with its padding. */
const ONE_BLOCK = 55;

let compiled: WebAssembly.Module | null | undefined;

/** The kernel's module, compiled once per process; null where this Node.js cannot run it. */
function kernelModule(): WebAssembly.Module | null {
  if (compiled === undefined) {
    try {
      compiled = new WebAssembly.Module(Buffer.from(HMAC_SHA256_X4_WASM, 'base64'));
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

/** An exported constant of the kernel (its memory layout). */
function layout(exports: WebAssembly.Exports, name: string): number {
  const value = exports[name];
  if (!(value instanceof WebAssembly.Global) || typeof value.value !== 'number') throw new Error(`the HMAC kernel exports no ${name}`);
  return value.value;
}

/** ASCII white space as String.prototype.trim removes it. */
const isAsciiSpace = (c: number): boolean => c === 32 || (c >= 9 && c <= 13);

/** A queue of values to hash under one key; `run` hashes them all. */
export class HmacBatch {
  /** Values a batch holds at most; `queue` refuses more until `run`. */
  readonly capacity: number;
  readonly #words: Int32Array;
  readonly #bytes: Buffer;
  readonly #hmac: (count: number) => void;
  /** Where message 0's block starts, in words. */
  readonly #input: number;
  /** Where message 0's hex digest starts, in bytes. */
  readonly #output: number;
  #count = 0;

  /** A batch for this key; undefined where WebAssembly (with SIMD) is not available. */
  static create(key: string | Uint8Array): HmacBatch | undefined {
    const module = kernelModule();
    return module === null ? undefined : new HmacBatch(new WebAssembly.Instance(module, {}).exports, key);
  }

  private constructor(exports: WebAssembly.Exports, key: string | Uint8Array) {
    const memory = exports.memory;
    const hmac = exports.hmac;
    if (!(memory instanceof WebAssembly.Memory) || typeof hmac !== 'function') throw new Error('the HMAC kernel exports no memory or hmac');
    this.#hmac = hmac as (count: number) => void;
    this.#words = new Int32Array(memory.buffer);
    this.#bytes = Buffer.from(memory.buffer);
    this.#input = layout(exports, 'input') / 4;
    this.#output = layout(exports, 'output');
    this.capacity = layout(exports, 'capacity');
    const { inner, outer } = hmacMidstates(key);
    this.#fourLanes(layout(exports, 'roundConstants'), K);
    this.#fourLanes(layout(exports, 'innerState'), inner);
    this.#fourLanes(layout(exports, 'outerState'), outer);
    // The outer hash's block after the 32-byte inner digest: 0x80, zeros, and its length in bits after the key's block.
    this.#fourLanes(layout(exports, 'outerBlock') + 32 * 4, [0x80000000 | 0, 0, 0, 0, 0, 0, 0, (64 + 32) * 8]);
    this.#bytes.write('0123456789abcdef', layout(exports, 'hexDigits'), 'latin1');
  }

  /** Values queued since the last run. */
  get size(): number {
    return this.#count;
  }

  /**
   * Queues `value`, normalized for its kind (as treatments.ts's normalize
   * does): its slot in the next run, or -1 when the batch does not take it
   * (full, over 55 bytes, or beyond ASCII where the kind's normalization
   * needs Unicode: hash it one at a time).
   */
  queue(value: string, kind: PersonalKind): number {
    const slot = this.#count;
    if (slot === this.capacity) return -1;
    const taken = kind === 'phone' ? this.#phone(value, slot) : this.#trimmed(value, kind === 'email', slot);
    if (!taken) return -1;
    this.#count = slot + 1;
    return slot;
  }

  /** Hashes the queued values and empties the queue: slot k's token is characters [64k, 64k + 64) of the string returned. */
  run(): string {
    const count = this.#count;
    this.#count = 0;
    this.#hmac(count);
    return this.#bytes.toString('latin1', this.#output, this.#output + count * 64);
  }

  /** A phone: `+` and digits, every other character left out. */
  #phone(value: string, slot: number): boolean {
    const words = this.#words;
    const base = this.#block(slot);
    let n = 0;
    let word = 0;
    for (let i = 0; i < value.length; i++) {
      const c = value.charCodeAt(i);
      if (c !== 43 && (c < 48 || c > 57)) continue;
      if (n === ONE_BLOCK) return false;
      word = (word << 8) | c;
      if ((n & 3) === 3) {
        words[base + (n & ~3)] = word;
        word = 0;
      }
      n++;
    }
    this.#pad(base, word, n);
    return true;
  }

  /** Text trimmed (and A-Z lower-cased for an e-mail); false beyond ASCII or over one block. */
  #trimmed(value: string, lower: boolean, slot: number): boolean {
    let from = 0;
    let to = value.length;
    while (from < to && isAsciiSpace(value.charCodeAt(from))) from++;
    while (to > from && isAsciiSpace(value.charCodeAt(to - 1))) to--;
    const n = to - from;
    if (n > ONE_BLOCK) return false;
    const words = this.#words;
    const base = this.#block(slot);
    let word = 0;
    for (let i = 0; i < n; i++) {
      let c = value.charCodeAt(from + i);
      if (c >= 0x80) return false;
      if (lower && c >= 65 && c <= 90) c |= 0x20;
      word = (word << 8) | c;
      if ((i & 3) === 3) {
        words[base + (i & ~3)] = word;
        word = 0;
      }
    }
    this.#pad(base, word, n);
    return true;
  }

  /** Where message `slot`'s word 0 is (word i is 4 i further: the lanes of four messages interleave). */
  #block(slot: number): number {
    return this.#input + (slot >> 2) * 64 + (slot & 3);
  }

  /** The block's end after `n` bytes (`word` holding the last n % 4): 0x80, zeros, and the length in bits after the key's block. */
  #pad(base: number, word: number, n: number): void {
    const words = this.#words;
    let i = n + 1;
    word = (word << 8) | 0x80;
    for (; (i & 3) !== 0; i++) word <<= 8;
    words[base + i - 4] = word;
    for (; i < 60; i += 4) words[base + i] = 0;
    words[base + 60] = (64 + n) * 8;
  }

  /** `values` as consecutive 32-bit words from byte `at`, each in four lanes. */
  #fourLanes(at: number, values: ArrayLike<number>): void {
    for (let i = 0; i < values.length; i++) this.#words.fill(values[i] as number, at / 4 + i * 4, at / 4 + i * 4 + 4);
  }
}
