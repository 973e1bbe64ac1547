/**
 * Alone on a key with a large quota (100,000 requests a minute), a service
 * whose burst limiter refuses 5 % of the list requests with "429, Retry-After
 * 1, RateLimit-Remaining 0, RateLimit-Reset 1" while the minute's quota is far
 * from spent. The read costs at most those Retry-After waits (no wait for the
 * rest of the window, none for "other users of the key"), and its records
 * equal the emulator's. The real executable against the real emulator; the
 * test counts waits and reads the announced lengths, never the clock.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from 'data-read-emulator';
import type { RunSummary } from '../../../src/report/run-summary-schema.js';
import { STREAMS } from '../../../src/streams.js';
import { ROOT, SOURCE_BIN, parseLines, protocolCheck, runCli, tempDir, writeJson } from '../../helpers/cli.js';
import { MemoryDestination, normalizeDump } from '../../helpers/destination.js';
import { requireBuild } from '../../helpers/emulator-runs.js';

const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');
const RETRY_AFTER_S = 1;

let emulator: Emulator;
let dir: string;
let accountId: string;
let key: string;

beforeAll(async () => {
  requireBuild();
  dir = tempDir('transient-429-');
  emulator = await startEmulator({ host: '127.0.0.1', port: 0, seed: 29, limits: { perMinute: 100_000, windowMs: 60_000, perDay: 10_000_000, concurrency: 8 } });
  const account = emulator.control.createAccount({ name: 'Large quota' });
  accountId = account.id;
  key = emulator.control.createKey(account.id).key;
  emulator.control.seed(account.id, { contacts: 1200 });
});
afterAll(async () => {
  await emulator?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a burst limiter\'s 429s on a large quota', () => {
  it('5 % transient 429s on every list cost their Retry-After alone, and nothing is lost', async () => {
    emulator.control.setFaults([
      {
        kind: '429', probability: 0.05, retryAfterSeconds: RETRY_AFTER_S, rateLimitRemaining: 0, rateLimitReset: 1,
        paths: STREAMS.map((s) => s.path),
      },
    ]);
    emulator.control.resetStats();
    const config = writeJson(dir, 'config.json', { api_key: key, base_url: emulator.url, page_size: 100 });
    const summaryPath = join(dir, 'summary.json');
    const result = await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', CATALOG, '--summary', summaryPath], { timeoutMs: 90_000 });
    const pauses = parseLines(result.stdout)
      .filter((m) => m.type === 'LOG')
      .map((m) => (m.log as { message: string }).message)
      .filter((text) => text.startsWith('Pausing requests'));
    expect(result.code, pauses.join('\n')).toBe(0);
    expect(protocolCheck('airbyte', result.stdout).errors).toEqual([]);
    expect(result.stdout + result.stderr).not.toContain(key);

    const throttled = emulator.control.faults().injected.byKind['429'] ?? 0;
    expect(throttled).toBeGreaterThanOrEqual(2);
    expect(emulator.control.stats().throttled).toBe(throttled);

    // Every pause is one the service asked for; none waits for the window or for other users of the key.
    expect(pauses.length).toBeGreaterThan(0);
    for (const text of pauses) expect(text).toMatch(/^Pausing requests for (\d+ ms|1 s), until .*: the service asked to wait \(Retry-After\)\.$/);

    const summary = JSON.parse(readFileSync(summaryPath, 'utf8')) as RunSummary;
    expect(summary.status).toBe('succeeded');
    expect(summary.retries).toBe(throttled); // one retry per 429, nothing else failed
    expect(summary.rate_limit_waits).toBeLessThanOrEqual(throttled);
    expect(summary.rate_limit_wait_seconds).toBeLessThanOrEqual(throttled * RETRY_AFTER_S);

    const replica = new MemoryDestination();
    replica.applyAirbyte(result.stdout);
    expect(replica.toDump()).toEqual(normalizeDump(emulator.control.dump(accountId)));
  }, 120_000);
});
