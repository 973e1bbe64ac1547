import { describe, expect, it } from 'vitest';
import { ProgressDisplay, type ProgressOutput } from '../../src/progress/display.js';
import type { ProgressSnapshot } from '../../src/progress/line.js';

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

/** The status lines drawn in place, in order (each drawing starts with \r and erase-line). */
function drawn(text: string): string[] {
  return text
    .split('\r\x1b[K')
    .slice(1)
    .map((s) => s.split('\n').at(-1) ?? '')
    .filter((s) => s !== '');
}

function setup(out: FakeStderr, plainEveryMs = 10_000) {
  let now = Date.parse('2026-03-01T10:00:00.000Z');
  let count = 0;
  const snapshot = (): ProgressSnapshot => ({
    streams: [
      { name: 'contacts', count, phase: 'running' },
      { name: 'conversations', count: 7, phase: 'rate_limited', waitUntil: Date.parse('2026-03-01T10:01:00.000Z') },
    ],
    requests: 3,
    rateLimitWaits: 1,
  });
  const display = new ProgressDisplay({
    snapshot,
    log: (level, message) => out.write(`${level} ${message}\n`),
    out,
    plainEveryMs,
    now: () => now,
    redact: (s) => s.replaceAll('secret', '***'),
  });
  return {
    display,
    advance(ms: number, add = 0) {
      now += ms;
      count += add;
    },
  };
}

/** A display on `out`: `contacts` counted and drawn 300 ms in, then one log line, then stopped. */
function drawThenLog(out: FakeStderr, contacts: number, level: string, message: string): void {
  const { display, advance } = setup(out);
  display.start();
  advance(300, contacts);
  display.changed();
  display.log(level, message);
  display.stop();
}

describe('ProgressDisplay on a terminal', () => {
  it('redraws one line in place, at most every 200 ms, fitted to the width, with rows/s once known', () => {
    const out = new FakeStderr(true, 60);
    const { display, advance } = setup(out);
    display.start();
    advance(100, 100);
    display.changed(); // too soon: not drawn
    expect(out.text).toBe('');
    advance(150, 100);
    display.changed();
    advance(800, 800);
    display.changed();
    display.stop();
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
    w.display.start();
    w.advance(600, 600);
    w.display.changed();
    w.advance(1000, 1000);
    w.display.changed();
    w.display.stop();
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
    const display = new ProgressDisplay({
      snapshot: () => ({ streams: [{ name: 'secret_stream', count: 1, phase: 'running' }] }),
      log: () => undefined,
      out,
      redact: (s) => s.replaceAll('secret', '***'),
    });
    display.start();
    display.log('INFO', 'x');
    display.stop();
    expect(drawn(out.text)).toEqual(['***_stream 1']);
  });

  it('follows a resized terminal', () => {
    const out = new FakeStderr(true, 200);
    const { display, advance } = setup(out);
    display.start();
    advance(300, 5);
    display.changed();
    out.columns = 40;
    advance(300, 5);
    display.changed();
    display.stop();
    const lines = drawn(out.text);
    expect(lines[0]?.length).toBeGreaterThan(30);
    expect(lines[1]).toBe('rate limit: 60 s | contacts 10 (17/s)');
  });
});

describe('ProgressDisplay elsewhere (a pipe, a file)', () => {
  it('prints a plain log line every interval, whole, and never draws in place', () => {
    const out = new FakeStderr(false, 40);
    const { display, advance } = setup(out, 1000);
    display.start();
    advance(500, 500);
    display.changed();
    advance(600, 600);
    display.changed();
    advance(100, 100);
    display.changed();
    display.log('INFO', 'done');
    display.stop();
    expect(out.text).not.toContain('\r');
    expect(out.text).not.toContain('\x1b');
    expect(out.text).toBe(
      'INFO rate limit: conversations waiting 59 s, until 10:01:00Z | contacts 1,100 (1.0k/s) | conversations 7 | 3 requests, 1 rate-limit waits\n' +
        'INFO done\n',
    );
  });

  it('with an interval of 0, at every change', () => {
    const out = new FakeStderr(false);
    const { display, advance } = setup(out, 0);
    display.start();
    for (let i = 0; i < 3; i++) {
      advance(10, 1);
      display.changed();
    }
    display.stop();
    expect(out.text.split('\n').filter((l) => l.startsWith('INFO ')).length).toBe(3);
  });
});
