/**
 * A checkpoint's rows as the bytes of their lines, for the stores that load
 * text (PostgreSQL's COPY text, DuckDB's CSV). Each line goes into the bytes
 * as soon as it is made: the text of a whole checkpoint as one string
 * (hundreds of KB) would be a large object, which V8 moves to the old
 * generation at the first scavenge it lives through, so that checkpoint
 * after checkpoint they would fill it and call for full collections
 * (bench/stores-replicate.ts).
 */

/** The size of the buffer lines are written into before their exact length is copied out: a usual checkpoint's. */
const SCRATCH_BYTES = 256 * 1024;
/** Kept between calls; grown for a larger checkpoint, and let go after it (a page may hold up to 64 MiB). */
let scratch = Buffer.allocUnsafe(SCRATCH_BYTES);

/**
 * `line(row)` of each row, each ended by a newline, as UTF-8 in one Buffer
 * of its own; undefined when a line takes `limit` bytes or more.
 */
export function lineBytes<R>(rows: readonly R[], line: (row: R) => string, limit = Infinity): Buffer | undefined {
  let at = 0;
  try {
    for (const row of rows) {
      const text = line(row);
      // UTF-8 takes at most 3 bytes per UTF-16 code unit; one more for the newline.
      const most = text.length * 3 + 1;
      if (at + most > scratch.length) {
        const larger = Buffer.allocUnsafe(Math.max(scratch.length * 2, at + most));
        scratch.copy(larger, 0, 0, at);
        scratch = larger;
      }
      const written = scratch.write(text, at);
      if (written >= limit) return undefined;
      at += written;
      scratch[at++] = 0x0a;
    }
    return Buffer.from(scratch.subarray(0, at));
  } finally {
    if (scratch.length > SCRATCH_BYTES) scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
  }
}
