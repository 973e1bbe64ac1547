/**
 * HMAC-SHA-256 for many short messages under one key, in JavaScript. The
 * native `createHmac` costs about 1.7 µs a call, mostly crossing into C++ and
 * allocating: five personal fields per record would double a sync's CPU.
 * HMAC's two key blocks are compressed once per key (their "midstates"), so
 * a message of up to 55 bytes costs two compressions of SHA-256 (FIPS 180-4)
 * and no allocation but the token. An ASCII message goes from its characters
 * straight into the block's 32-bit words, and the outer hash takes the inner
 * digest as words: no byte buffer between them. Checked against RFC 4231 and
 * `createHmac` in the tests.
 */

/** SHA-256's round constants. */
export const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
  0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
  0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const IV = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);

/**
 * SHA-256's compression into `state` of the block whose 16 big-endian words
 * are `w[0..15]`; the rest of `w` (64 words) is the message schedule. Two
 * rounds per turn of the loop, the working variables renamed instead of
 * shifted (the second round writes into the names the first one freed; a
 * swap puts them back). (Unrolled straight-line code measured slower: more
 * live values than registers.)
 */
function compress(state: Int32Array, w: Int32Array): void {
  for (let i = 16; i < 64; i++) {
    const a = w[i - 15] as number;
    const b = w[i - 2] as number;
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
    w[i] = ((w[i - 16] as number) + s0 + (w[i - 7] as number) + s1) | 0;
  }
  let a = state[0] as number;
  let b = state[1] as number;
  let c = state[2] as number;
  let d = state[3] as number;
  let e = state[4] as number;
  let f = state[5] as number;
  let g = state[6] as number;
  let h = state[7] as number;
  for (let i = 0; i < 64; i += 2) {
    // Round i: the new a goes into d, the new e into h.
    let t1 = (h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + (g ^ (e & (f ^ g))) + (K[i] as number) + (w[i] as number)) | 0;
    let t2 = ((((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) | (c & (a | b)))) | 0;
    h = (d + t1) | 0;
    d = (t1 + t2) | 0;
    // Round i + 1, on (d, a, b, c, h, e, f, g): the new a goes into c, the new e into g.
    t1 = (g + (((h >>> 6) | (h << 26)) ^ ((h >>> 11) | (h << 21)) ^ ((h >>> 25) | (h << 7))) + (f ^ (h & (e ^ f))) + (K[i + 1] as number) + (w[i + 1] as number)) | 0;
    t2 = ((((d >>> 2) | (d << 30)) ^ ((d >>> 13) | (d << 19)) ^ ((d >>> 22) | (d << 10))) + ((d & a) | (b & (d | a)))) | 0;
    g = (c + t1) | 0;
    c = (t1 + t2) | 0;
    // Back to (a, b, c, d, e, f, g, h): now (c, d, a, b, g, h, e, f).
    let x = a;
    a = c;
    c = x;
    x = b;
    b = d;
    d = x;
    x = e;
    e = g;
    g = x;
    x = f;
    f = h;
    h = x;
  }
  state[0] = ((state[0] as number) + a) | 0;
  state[1] = ((state[1] as number) + b) | 0;
  state[2] = ((state[2] as number) + c) | 0;
  state[3] = ((state[3] as number) + d) | 0;
  state[4] = ((state[4] as number) + e) | 0;
  state[5] = ((state[5] as number) + f) | 0;
  state[6] = ((state[6] as number) + g) | 0;
  state[7] = ((state[7] as number) + h) | 0;
}

/** The 64-byte block at `bytes[offset]` as big-endian words into `words`. */
function wordsOf(bytes: Uint8Array, offset: number, words: Int32Array): void {
  for (let i = 0; i < 16; i++) {
    const j = offset + i * 4;
    words[i] = ((bytes[j] as number) << 24) | ((bytes[j + 1] as number) << 16) | ((bytes[j + 2] as number) << 8) | (bytes[j + 3] as number);
  }
}

/** The padded last blocks of a message of `len` bytes in `bytes` (whole blocks before `off` already compressed), after `prefixBytes`. */
function finishBytes(state: Int32Array, bytes: Uint8Array, off: number, len: number, prefixBytes: number, words: Int32Array): void {
  const block = new Uint8Array(128);
  const rest = len - off;
  block.set(bytes.subarray(off, len));
  block[rest] = 0x80;
  const total = rest >= 56 ? 128 : 64;
  // Messages are far below 2^32 bits: the high word stays 0.
  const bits = (prefixBytes + len) * 8;
  block[total - 4] = (bits >>> 24) & 0xff;
  block[total - 3] = (bits >>> 16) & 0xff;
  block[total - 2] = (bits >>> 8) & 0xff;
  block[total - 1] = bits & 0xff;
  for (let o = 0; o < total; o += 64) {
    wordsOf(block, o, words);
    compress(state, words);
  }
}

/** A keyed HMAC-SHA-256: `hex(message)` gives the lower-case hex MAC of the message's UTF-8 bytes. */
export class HmacSha256 {
  readonly #inner = new Int32Array(8);
  readonly #outer = new Int32Array(8);
  readonly #state = new Int32Array(8);
  readonly #words = new Int32Array(64);
  /** The outer hash's block: the inner digest in words 0-7, then padding and length that never change. */
  readonly #outerWords = new Int32Array(64);
  readonly #digest = Buffer.alloc(32);
  readonly #encoder = new TextEncoder();

  constructor(key: string | Uint8Array) {
    const { inner, outer } = hmacMidstates(key);
    this.#inner.set(inner);
    this.#outer.set(outer);
    this.#outerWords[8] = 0x80000000 | 0;
    this.#outerWords[15] = (64 + 32) * 8;
  }

  /** The MAC of a string's UTF-8 bytes, lower-case hex. */
  hex(message: string): string {
    return this.hexIfAscii(message) ?? this.hexOfBytes(this.#encoder.encode(message));
  }

  /**
   * The MAC of an ASCII string, lower-case hex; undefined when the string has
   * a character beyond ASCII (found on the way, so the caller's check for
   * ASCII costs nothing more).
   */
  hexIfAscii(message: string): string | undefined {
    const n = message.length;
    if (n > 55) {
      for (let i = 0; i < n; i++) if (message.charCodeAt(i) >= 0x80) return undefined;
      return this.hexOfBytes(Buffer.from(message, 'latin1'));
    }
    // One block: the characters as big-endian words, then 0x80, zeros and the length in bits (the key block before it included).
    const m = this.#words;
    m.fill(0, 0, 15);
    for (let i = 0; i < n; i++) {
      const c = message.charCodeAt(i);
      if (c >= 0x80) return undefined;
      m[i >> 2] = (m[i >> 2] as number) | (c << (24 - ((i & 3) << 3)));
    }
    m[n >> 2] = (m[n >> 2] as number) | (0x80 << (24 - ((n & 3) << 3)));
    m[15] = (64 + n) * 8;
    const state = this.#state;
    state.set(this.#inner);
    compress(state, m);
    return this.#outerHex();
  }

  /** The MAC of bytes, lower-case hex. */
  hexOfBytes(message: Uint8Array): string {
    const state = this.#state;
    state.set(this.#inner);
    let off = 0;
    for (; off + 64 <= message.length; off += 64) {
      wordsOf(message, off, this.#words);
      compress(state, this.#words);
    }
    finishBytes(state, message, off, message.length, 64, this.#words);
    return this.#outerHex();
  }

  /** The outer hash of the inner digest in `#state` (32 bytes after the key block: one block), as lower-case hex. */
  #outerHex(): string {
    const state = this.#state;
    const m = this.#outerWords;
    for (let i = 0; i < 8; i++) m[i] = state[i] as number;
    state.set(this.#outer);
    compress(state, m);
    // One flat string from native code (a string built of 32 pieces is a rope the GC then chases).
    const digest = this.#digest;
    for (let i = 0; i < 8; i++) {
      const v = state[i] as number;
      digest[i * 4] = v >>> 24;
      digest[i * 4 + 1] = (v >>> 16) & 0xff;
      digest[i * 4 + 2] = (v >>> 8) & 0xff;
      digest[i * 4 + 3] = v & 0xff;
    }
    return digest.toString('hex');
  }
}

/**
 * HMAC's two key blocks compressed (RFC 2104: the key, hashed first when
 * longer than a block, XOR 0x36 and 0x5c): the states every MAC under this
 * key starts its inner and its outer hash from.
 */
export function hmacMidstates(key: string | Uint8Array): { readonly inner: Int32Array; readonly outer: Int32Array } {
  let k: Uint8Array = typeof key === 'string' ? new TextEncoder().encode(key) : key;
  if (k.length > 64) k = sha256Bytes(k);
  const pad = new Uint8Array(64);
  const words = new Int32Array(64);
  const state = (x: number): Int32Array => {
    pad.fill(x);
    for (let i = 0; i < k.length; i++) pad[i] = (k[i] as number) ^ x;
    const s = new Int32Array(IV);
    wordsOf(pad, 0, words);
    compress(s, words);
    return s;
  };
  return { inner: state(0x36), outer: state(0x5c) };
}

/** Plain SHA-256 of bytes (for a key longer than a block). */
function sha256Bytes(data: Uint8Array): Uint8Array {
  const state = new Int32Array(IV);
  const words = new Int32Array(64);
  let off = 0;
  for (; off + 64 <= data.length; off += 64) {
    wordsOf(data, off, words);
    compress(state, words);
  }
  finishBytes(state, data, off, data.length, 0, words);
  const out = Buffer.alloc(32);
  for (let i = 0; i < 8; i++) out.writeInt32BE(state[i] as number, i * 4);
  return out;
}
