/** What a test's code writes to process.stderr, captured instead of printed. */
import { afterEach, beforeEach, vi, type MockInstance } from 'vitest';

/** Before each test, stderr's writes go to the returned list (emptied first); after it, to stderr again. */
export function captureStderr(): string[] {
  const written: string[] = [];
  let spy: MockInstance | undefined;
  afterEach(() => spy?.mockRestore());
  beforeEach(() => {
    written.length = 0;
    spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array, encoding?: unknown, callback?: unknown) => {
      if (String(chunk) !== '') written.push(String(chunk));
      // Told written at once, as a write to a file or a pipe is.
      const done = typeof encoding === 'function' ? encoding : callback;
      if (typeof done === 'function') queueMicrotask(() => (done as () => void)());
      return true;
    });
  });
  return written;
}
