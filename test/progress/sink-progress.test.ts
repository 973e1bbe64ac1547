/**
 * The status line watches the record pipeline (its CountObserver): every
 * event reaches the face's emitter unchanged, and the status line is told
 * what it shows on the way; when nothing is shown, there is no observer.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { captureStderr } from '../helpers/stderr.js';
import { RecordPipeline } from '../../src/engine/pipeline.js';
import { StderrLogger } from '../../src/runtime/output.js';
import { Progress } from '../../src/progress/progress.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { ConnectorError } from '../../src/errors.js';
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

const through = (inner: RecordingSink, progress: Progress) =>
  new RecordPipeline(inner, { config: { personal_data: 'keep', field_treatments: [] }, streams: [], observer: progress.observer() });

describe('progress watches the record pipeline', () => {
  it('nothing shown (not a terminal): no observer', () => {
    const progress = new Progress({ logger: new StderrLogger('test'), out: terminal(false), stdoutIsTerminal: false });
    expect(progress.observer()).toBeUndefined();
  });

  it('a terminal: every event reaches the sink unchanged, and the status line shows the counts, the wait and the ends', async () => {
    const inner = new RecordingSink();
    const logger = new StderrLogger('test');
    const out = terminal();
    let now = T0;
    const progress = new Progress({ logger, requests: () => ({ requests: 7, rateLimitWaits: 1 }), out, stdoutIsTerminal: false, now: () => now });
    const sink = through(inner, progress);
    progress.start();
    await sink.streamStarted(contacts);
    await sink.streamStarted(deletions);
    await sink.records(contacts, [{ id: 'a' }, { id: 'b' }], now);
    now += 1000;
    await sink.streamRunning(contacts, T0 + 57_000);
    await sink.streamRunning(deletions, T0 + 57_000);
    now += 1000;
    logger.log('INFO', 'Pausing requests for 56 s, until 2026-03-01T12:00:57.000Z.');
    expect(out.text()).toMatch(/rate limit: contacts, deletions waiting 55 s, until 12:00:57Z \| contacts 2/);
    // A log line clears the status line and is printed whole.
    expect(printed.join('')).toMatch(/INFO test: Pausing requests for 56 s, until 2026-03-01T12:00:57\.000Z\.\n$/);
    now = T0 + 58_000;
    await sink.records(contacts, [{ id: 'c' }], now);
    await sink.streamComplete(contacts);
    await sink.streamIncomplete(deletions, new ConnectorError('transient_error', 'gone'));
    expect(printed.filter((l) => l.includes('The rate-limit wait is over'))).toHaveLength(1);
    now += 1000;
    logger.log('INFO', 'end');
    expect(out.text()).toMatch(/deletions 0 FAILED \| done: contacts 3 \| 7 requests, 1 rate-limit waits$/);
    expect(inner.events.map((e) => e.kind)).toEqual(['started', 'started', 'records', 'running', 'running', 'records', 'complete', 'incomplete']);
    progress.stop();
    // Stopped: the status line is cleared and log lines go straight to stderr again.
    expect(out.text().endsWith('\r\x1b[K')).toBe(true);
    logger.log('INFO', 'after');
    expect(printed.at(-1)).toMatch(/INFO test: after\n$/);
  });
});
