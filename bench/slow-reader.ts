/**
 * A slow stdout consumer: reads at most 64 KB from stdin every 5 ms (about
 * 13 MB/s) and discards it, so the writer feels backpressure. Prints the byte
 * count on stderr at the end.
 *
 *   producer | node .build/bench/bench/slow-reader.js [CHUNK_BYTES] [INTERVAL_MS]
 */
import { readSync } from 'node:fs';

const chunk = Number(process.argv[2] ?? 65_536);
const intervalMs = Number(process.argv[3] ?? 5);
const buffer = Buffer.allocUnsafe(chunk);
let total = 0;

const timer = setInterval(() => {
  let n: number;
  try {
    n = readSync(0, buffer, 0, chunk, null);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EAGAIN') return;
    throw err;
  }
  if (n === 0) {
    clearInterval(timer);
    process.stderr.write(`slow-reader: ${total} bytes\n`);
    return;
  }
  total += n;
}, intervalMs);
