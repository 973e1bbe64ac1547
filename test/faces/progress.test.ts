/**
 * The status line of read and the tap (src/faces/progress.ts), with an
 * injected terminal: drawn only when stderr is a terminal and stdout is not;
 * the face's sink gets every event unchanged; a rate-limit wait is shown with
 * its end, and said to be over once when reading goes on; log lines go
 * through the display while it is drawn.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { captureStderr } from '../helpers/stderr.js';
import { terminalProgress } from '../../src/faces/progress.js';
import { StderrLogger } from '../../src/process/output.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { RecordingSink } from '../helpers/recording-sink.js';

const contacts = findStream('contacts') as StreamDefinition;
const deletions = findStream('deletions') as StreamDefinition;
const T0 = Date.parse('2026-03-01T12:00:00.000Z');

/** A terminal 80 columns wide that keeps what is drawn. */
function terminal(isTTY = true): { write(text: string): boolean; readonly isTTY: boolean; readonly columns: number; text: () => string } {
  const chunks: string[] = [];
  return { write: (t: string) => chunks.push(t) > 0, isTTY, columns: 80, text: () => chunks.join('') };
}

const printed = captureStderr();
afterEach(() => vi.restoreAllMocks());

describe('terminalProgress', () => {
  it('not a terminal, or stdout on the same terminal: the sink as it is, nothing drawn', () => {
    const inner = new RecordingSink();
    const logger = new StderrLogger('test');
    for (const [out, stdoutIsTerminal] of [
      [terminal(false), false],
      [terminal(true), true],
    ] as const) {
      const progress = terminalProgress(inner, { logger, requests: () => undefined, out, stdoutIsTerminal });
      expect(progress.active).toBe(false);
      expect(progress.sink).toBe(inner);
      progress.start();
      progress.stop();
      expect(out.text()).toBe('');
    }
  });

  it('a terminal: the counts and the rate-limit wait with its end on the status line; the wait said to be over once', async () => {
    const inner = new RecordingSink();
    const logger = new StderrLogger('test');
    const out = terminal();
    let now = T0;
    const progress = terminalProgress(inner, { logger, requests: () => ({ requests: 7, rateLimitWaits: 1 }), out, stdoutIsTerminal: false, now: () => now });
    expect(progress.active).toBe(true);
    progress.start();
    const sink = progress.sink;
    await sink.streamStarted(contacts);
    await sink.streamStarted(deletions);
    await sink.records(contacts, [{ id: 'a' }, { id: 'b' }], now);
    now += 1000;
    await sink.streamRunning(contacts, T0 + 57_000);
    await sink.streamRunning(deletions, T0 + 57_000);
    now += 1000;
    logger.log('INFO', 'Pausing requests for 56 s, until 2026-03-01T12:00:57.000Z.');
    // The face's sink got every event, unchanged.
    expect(inner.events.map((e) => e.kind)).toEqual(['started', 'started', 'records', 'running', 'running']);
    const drawn = out.text();
    expect(drawn).toMatch(/rate limit: contacts, deletions waiting 55 s, until 12:00:57Z/);
    expect(drawn).toMatch(/contacts 2/);
    // A log line clears the status line and is printed whole.
    expect(printed.join('')).toMatch(/INFO test: Pausing requests for 56 s, until 2026-03-01T12:00:57\.000Z\.\n$/);

    now = T0 + 58_000;
    await sink.records(contacts, [{ id: 'c' }], now);
    await sink.records(deletions, [{ id: 'd' }], now);
    const over = printed.filter((l) => l.includes('The rate-limit wait is over'));
    expect(over).toHaveLength(1);
    expect(over[0]).toMatch(/INFO test: The rate-limit wait is over \(it ended at 12:00:57Z\); reading again\.\n$/);
    await sink.streamComplete(contacts);
    progress.stop();
    // Stopped: the status line is cleared and log lines go straight to stderr again.
    expect(out.text().endsWith('\r\x1b[K')).toBe(true);
    logger.log('INFO', 'after');
    expect(printed.at(-1)).toMatch(/INFO test: after\n$/);
  });
});
