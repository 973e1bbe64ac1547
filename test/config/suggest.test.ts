/** "Did you mean": the known key a misspelled one was meant to be, and none for another word. */
import { describe, expect, it } from 'vitest';
import { closestName } from '../../src/config/suggest.js';

const KEYS = ['api_key', 'base_url', 'start_date', 'page_size', 'max_concurrent_requests', 'request_timeout_seconds', 'max_retries', 'max_wait_seconds', 'deletions_as_tombstones'];

describe('closestName', () => {
  it('finds the key behind a slip: a letter wrong, missing, extra or swapped; case and dashes', () => {
    expect(closestName('page_sise', KEYS)).toBe('page_size');
    expect(closestName('base_ur', KEYS)).toBe('base_url');
    expect(closestName('api_kye', KEYS)).toBe('api_key');
    expect(closestName('max_retires', KEYS)).toBe('max_retries');
    expect(closestName('PAGE-SIZE', KEYS)).toBe('page_size');
    expect(closestName('startdate', KEYS)).toBe('start_date');
  });

  it('suggests nothing for another word', () => {
    for (const word of ['foo', 'api', 'start', 'proxy', 'timeout', 'tombstones', 'airbyte_secret']) expect(closestName(word, KEYS), word).toBeUndefined();
  });
});
