/** What a test's code writes to process.stderr, captured instead of printed. */
import { beforeEach, vi } from 'vitest';

/** Before each test, stderr's writes go to the returned list (emptied first). */
export function captureStderr(): string[] {
  const written: string[] = [];
  beforeEach(() => {
    written.length = 0;
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
  });
  return written;
}
