/**
 * The status line (src/progress/progress.ts), with an injected stderr and
 * clock: told counts and stream statuses, it draws one line in place on a
 * terminal (log lines above it), plain lines elsewhere when asked to, and
 * nothing at all otherwise.
 */
import { describe, expect, it } from 'vitest';
import { Progress, type ProgressLogger, type ProgressOutput } from '../../src/progress/progress.js';

/** A stderr stand-in: what was written, and whether it says it is a terminal and how wide. */
class FakeStderr implements ProgressOutput {
  text = '';
  readonly isTTY: boolean;
  columns: number | undefined;
  constructor(isTTY: boolean, columns?: number) {
    this.isTTY = isTTY;
    this.columns = columns;
  }
  write(text: string): boolean {
    this.text += text;
    return true;
  }
}

/** A logger that writes "LEVEL message" lines to `out`, through the status line while it is drawn. */
function fakeLogger(out: FakeStderr): ProgressLogger {
  let through: ((level: string, message: string) => void) | undefined;
  const print = (level: string, message: string): void => void out.write(`${level} ${message}\n`);
  return {
    log: (level, message) => (through ?? print)(level, message),
    print,
    redact: (s) => s.replaceAll('secret', '***'),
    routeThrough: (t) => (through = t),
  };
}

/** The status lines drawn in place, in order (each drawing starts with \r and erase-line). */
function drawn(text: string): string[] {
  return text
    .split('\r\x1b[K')
    .slice(1)
    .map((s) => s.split('\n').at(-1) ?? '')
    .filter((s) => s !== '');
}

const T0 = Date.parse('2026-03-01T10:00:00.000Z');

/** contacts being read, conversations (7 records) waiting for the rate limit until 10:01:00; `advance` moves the clock and counts contacts. */
function setup(out: FakeStderr, plainEveryMs = 10_000) {
  let now = T0;
  const logger = fakeLogger(out);
  const progress = new Progress({ logger, out, plainEveryMs, stdoutIsTerminal: false, now: () => now, requests: () => ({ requests: 3, rateLimitWaits: 1 }) });
  progress.started('contacts');
  progress.started('conversations');
  progress.waiting('contacts', undefined);
  progress.counted('conversations', 7);
  progress.waiting('conversations', Date.parse('2026-03-01T10:01:00.000Z'));
  return {
    progress,
    logger,
    advance(ms: number, add = 0) {
      now += ms;
      progress.counted('contacts', add);
    },
  };
}

/** Progress on `out`: `contacts` counted and drawn 300 ms in, then one log line, then stopped. */
function drawThenLog(out: FakeStderr, contacts: number, level: string, message: string): void {
  const { progress, logger, advance } = setup(out);
  progress.start();
  advance(300, contacts);
  logger.log(level, message);
  progress.stop();
}

describe('Progress on a terminal', () => {
  it('redraws one line in place, at most every 200 ms, fitted to the width, with rows/s once known', () => {
    const out = new FakeStderr(true, 60);
    const { progress, advance } = setup(out);
    progress.start();
    advance(100, 100); // too soon: not drawn
    expect(out.text).toBe('');
    advance(150, 100);
    advance(800, 800);
    progress.stop();
    const lines = drawn(out.text);
    expect(lines).toEqual([
      'rate limit: conversations waiting 60 s, until 10:01:00Z',
      'rate limit: conversations waiting 59 s, until 10:01:00Z',
    ]);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(59);
    // Stopping clears the line.
    expect(out.text.endsWith('\r\x1b[K')).toBe(true);

    const wide = new FakeStderr(true, 200);
    const w = setup(wide);
    w.progress.start();
    w.advance(600, 600);
    w.advance(1000, 1000);
    w.progress.stop();
    expect(drawn(wide.text).at(-1)).toBe(
      'rate limit: conversations waiting 59 s, until 10:01:00Z | contacts 1,600 (1.0k/s) | conversations 7 | 3 requests, 1 rate-limit waits',
    );
  });

  it('a terminal that reports width 0 (or none) gets lines of the default width, none cut short by two characters', () => {
    for (const columns of [0, undefined]) {
      const out = new FakeStderr(true, columns);
      drawThenLog(out, 10, 'INFO', 'a log line keeps every character');
      expect(out.text).toContain('INFO a log line keeps every character\n');
      const lines = drawn(out.text);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        expect(line.length).toBeLessThanOrEqual(79);
        expect(line).toBe('rate limit: conversations waiting 60 s, until 10:01:00Z | contacts 10');
      }
    }
  });

  it('clears the line before a log line and draws it again under it', () => {
    const out = new FakeStderr(true, 100);
    drawThenLog(out, 5, 'WARN', 'a warning');
    const [before, after] = out.text.split('WARN a warning\n');
    expect(before?.endsWith('\r\x1b[K')).toBe(true);
    expect(after?.startsWith('\r\x1b[Krate limit:')).toBe(true);
  });

  it('redacts what it draws', () => {
    const out = new FakeStderr(true, 100);
    const logger = fakeLogger(out);
    const progress = new Progress({ logger, out, stdoutIsTerminal: false });
    progress.started('secret_stream');
    progress.counted('secret_stream', 1);
    progress.start();
    logger.log('INFO', 'x');
    progress.stop();
    expect(drawn(out.text)).toEqual(['***_stream 1']);
  });

  it('follows a resized terminal', () => {
    const out = new FakeStderr(true, 200);
    const { progress, advance } = setup(out);
    progress.start();
    advance(300, 5);
    out.columns = 40;
    advance(300, 5);
    progress.stop();
    const lines = drawn(out.text);
    expect(lines[0]?.length).toBeGreaterThan(30);
    expect(lines[1]).toBe('rate limit: 60 s | contacts 10 (17/s)');
  });
});

describe('Progress elsewhere (a pipe, a file)', () => {
  it('prints a plain log line every interval, whole, and never draws in place', () => {
    const out = new FakeStderr(false, 40);
    const { progress, logger, advance } = setup(out, 1000);
    progress.start();
    advance(500, 500);
    advance(600, 600);
    advance(100, 100);
    logger.log('INFO', 'done');
    progress.stop();
    expect(out.text).not.toContain('\r');
    expect(out.text).not.toContain('\x1b');
    expect(out.text).toBe(
      'INFO rate limit: conversations waiting 59 s, until 10:01:00Z | contacts 1,100 (1.0k/s) | conversations 7 | 3 requests, 1 rate-limit waits\n' +
        'INFO done\n',
    );
  });

  it('with an interval of 0, at every change', () => {
    const out = new FakeStderr(false);
    const { progress, advance } = setup(out, 0);
    progress.start();
    for (let i = 0; i < 3; i++) advance(10, 1);
    progress.stop();
    expect(out.text.split('\n').filter((l) => l.startsWith('INFO ')).length).toBe(3);
  });
});

describe('Progress told by a sync', () => {
  it('shows nothing, and keeps nothing, when stderr is no terminal (no plain lines asked for) or stdout is the same terminal', () => {
    for (const [out, stdoutIsTerminal] of [
      [new FakeStderr(false), false],
      [new FakeStderr(true), true],
    ] as const) {
      const logger = fakeLogger(out);
      const progress = new Progress({ logger, out, stdoutIsTerminal });
      expect(progress.active).toBe(false);
      progress.start();
      progress.started('contacts');
      progress.counted('contacts', 5);
      logger.log('INFO', 'straight');
      progress.stop();
      expect(out.text).toBe('INFO straight\n');
    }
  });

  it('records of a page received before the stream\'s next request began to wait do not end the wait: it is said over once it ended', () => {
    const out = new FakeStderr(false);
    let now = T0;
    const logger = fakeLogger(out);
    const progress = new Progress({ logger, out, stdoutIsTerminal: false, plainEveryMs: 0, now: () => now });
    progress.start();
    progress.started('contacts');
    // The next page's request leaves while this page is treated: it is the one that waits, till T0 + 3 s.
    progress.waiting('contacts', T0 + 3000);
    now += 10;
    progress.counted('contacts', 200);
    expect(out.text).not.toContain('The rate-limit wait is over');
    expect(out.text.trimEnd().split('\n').at(-1)).toContain('rate limit: contacts waiting');
    now = T0 + 3050;
    progress.counted('contacts', 200);
    progress.stop();
    expect(out.text.split('\n').filter((l) => l.includes('The rate-limit wait is over'))).toEqual(['INFO The rate-limit wait is over (it ended at 10:00:03Z); reading again.']);
  });

  it('a rate-limit wait, shown with its end, is said to be over once when reading goes on, whoever waited; a second pass starts a stream again', () => {
    const out = new FakeStderr(true, 120);
    let now = T0;
    const logger = fakeLogger(out);
    const progress = new Progress({ logger, out, stdoutIsTerminal: false, now: () => now });
    progress.start();
    progress.started('contacts');
    progress.started('deletions');
    progress.counted('contacts', 2);
    now += 1000;
    progress.waiting('contacts', T0 + 57_000);
    progress.waiting('deletions', T0 + 57_000);
    now += 1000;
    logger.log('INFO', 'Pausing requests for 56 s.');
    expect(drawn(out.text).at(-1)).toBe('rate limit: contacts, deletions waiting 55 s, until 10:00:57Z | contacts 2 | deletions 0');
    now = T0 + 58_000;
    progress.counted('contacts', 1);
    progress.counted('deletions', 1);
    progress.ended('deletions', 'complete');
    progress.ended('contacts', 'failed');
    // Printed once, whole, on a cleared line.
    expect(out.text.split(/\n|\r\x1b\[K/).filter((l) => l.includes('The rate-limit wait is over'))).toEqual([
      'INFO The rate-limit wait is over (it ended at 10:00:57Z); reading again.',
    ]);
    // A finished stream ignores a late wait notice.
    progress.waiting('deletions', T0 + 120_000);
    now += 1000;
    logger.log('INFO', 'x');
    expect(drawn(out.text).at(-1)).toBe('contacts 3 FAILED | done: deletions 1');
    progress.started('deletions');
    now += 1000;
    logger.log('INFO', 'y');
    expect(drawn(out.text).at(-1)).toBe('contacts 3 FAILED | deletions 1');
    progress.stop();
    expect(out.text.endsWith('\r\x1b[K')).toBe(true);
  });
});
