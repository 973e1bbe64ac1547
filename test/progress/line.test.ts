import { describe, expect, it, vi } from 'vitest';
import { DEFAULT_WIDTH, progressLine, usableWidth, type ProgressSnapshot } from '../../src/progress/progress.js';

const NOW = Date.parse('2026-03-01T10:00:00.000Z');

const busy: ProgressSnapshot = {
  streams: [
    { name: 'contacts', count: 134_800, rate: 48_213, phase: 'running' },
    { name: 'conversations', count: 96_512, rate: 31_007, phase: 'rate_limited', waitUntil: NOW + 56_000 },
    { name: 'stage_events', count: 5_161, phase: 'complete' },
    { name: 'deletions', count: 55, phase: 'complete' },
    { name: 'pipeline_stages', count: 0, phase: 'waiting' },
  ],
  requests: 1_234,
  rateLimitWaits: 3,
};

describe('progressLine', () => {
  it('shows the wait and its end first, then the streams being read with their rates (none while waiting), finished streams, requests', () => {
    expect(progressLine(busy, Number.POSITIVE_INFINITY, NOW)).toBe(
      'rate limit: conversations waiting 56 s, until 10:00:56Z | contacts 134,800 (48k/s) | conversations 96,512 | ' +
        'pipeline_stages 0 | done: stage_events 5,161, deletions 55 | 1,234 requests, 3 rate-limit waits',
    );
  });

  it('fits every width, dropping or shortening the least important parts and never cutting a number', () => {
    const full = progressLine(busy, Number.POSITIVE_INFINITY, NOW);
    const pieces = new Set([
      ...full.split(' | '),
      'rate limit: waiting 56 s, until 10:00:56Z',
      'rate limit: 56 s',
      'contacts 134,800',
      'conversations 96,512',
      '2 done (5,216)',
      '1,234 req',
    ]);
    for (let columns = 1; columns <= 260; columns++) {
      const line = progressLine(busy, columns, NOW);
      expect(line.length, `${columns} columns: ${line}`).toBeLessThanOrEqual(columns - 1 || 1);
      if (columns >= 20) {
        // Whole parts only, each one of the forms the line knows, and the wait always first.
        for (const part of line.split(' | ')) expect(pieces.has(part), `${columns} columns: "${part}"`).toBe(true);
        expect(line.startsWith('rate limit: ')).toBe(true);
      }
    }
    expect(progressLine(busy, 80, NOW)).toBe('rate limit: conversations waiting 56 s, until 10:00:56Z | contacts 134,800');
    expect(progressLine(busy, 126, NOW)).toBe(
      'rate limit: conversations waiting 56 s, until 10:00:56Z | contacts 134,800 (48k/s) | conversations 96,512 | pipeline_stages 0',
    );
  });

  it('takes a width of 0 or none as DEFAULT_WIDTH, and a width too narrow for the first part as a shortened first part', () => {
    expect(usableWidth(0)).toBe(DEFAULT_WIDTH - 1);
    expect(usableWidth(undefined)).toBe(DEFAULT_WIDTH - 1);
    expect(usableWidth(Number.NaN)).toBe(DEFAULT_WIDTH - 1);
    expect(progressLine(busy, 0, NOW)).toBe(progressLine(busy, DEFAULT_WIDTH, NOW));
    expect(progressLine(busy, 0, NOW).length).toBeLessThanOrEqual(DEFAULT_WIDTH - 1);
    expect(progressLine(busy, 12, NOW)).toBe('rate limit…');
  });

  it('without a wait, the streams being read come first; a failed stream before them', () => {
    const snapshot: ProgressSnapshot = {
      streams: [
        { name: 'contacts', count: 2_000, rate: 950, phase: 'running' },
        { name: 'conversations', count: 10, phase: 'failed' },
        { name: 'deletions', count: 3, phase: 'complete' },
      ],
      requests: 12,
      rateLimitWaits: 0,
    };
    expect(progressLine(snapshot, Number.POSITIVE_INFINITY, NOW)).toBe(
      'conversations 10 FAILED | contacts 2,000 (950/s) | done: deletions 3 | 12 requests, 0 rate-limit waits',
    );
    // A wait that has ended is not shown.
    const ended: ProgressSnapshot = { streams: [{ name: 'contacts', count: 5, phase: 'rate_limited', waitUntil: NOW - 1 }] };
    expect(progressLine(ended, 80, NOW)).toBe('contacts 5');
  });

  it('groups the thousands of its counts without the locale machinery (ICU data would stay resident: some 8 MB)', () => {
    const localized = vi.spyOn(Number.prototype, 'toLocaleString');
    try {
      const big: ProgressSnapshot = { streams: [{ name: 'contacts', count: 1_234_567, phase: 'running' }, { name: 'deletions', count: 999, phase: 'complete' }], requests: 1_000 };
      expect(progressLine(big, Number.POSITIVE_INFINITY, NOW)).toBe('contacts 1,234,567 | done: deletions 999 | 1,000 requests, 0 rate-limit waits');
      expect(localized).not.toHaveBeenCalled();
    } finally {
      localized.mockRestore();
    }
  });
});
