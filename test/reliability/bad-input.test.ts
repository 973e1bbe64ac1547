/**
 * Bad input from the user: each case one clear message naming the field;
 * check FAILED (exit 0), read config_error (exit 78), no stack trace on stdout.
 * Adds to the cases of test/e2e/airbyte/without-service.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { expectNoLeaksAfterAll } from '../helpers/leaks.js';
import { BAD_INPUT_CASES, runBadInput } from '../../reliability/bad-input.js';

expectNoLeaksAfterAll();

describe('bad config, catalog and state', () => {
  it(`${BAD_INPUT_CASES.length} cases, each with one clear message`, async () => {
    expect(BAD_INPUT_CASES.length).toBeGreaterThanOrEqual(30);
    const results = await runBadInput(BAD_INPUT_CASES, 4);
    expect(results.flatMap((r) => r.problems)).toEqual([]);
    for (const r of results) expect(r.readMessage, r.name).not.toBe('');
  }, 120_000);
});
