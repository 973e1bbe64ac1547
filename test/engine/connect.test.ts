/**
 * The client options of short, interactive commands (check, discover) against
 * those of a sync: what each command's client is built with.
 */
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config.js';
import { interactivePatience } from '../../src/engine/connect.js';

const config = ConfigSchema.parse({ api_key: 'drk_live_test', base_url: 'http://127.0.0.1:9', max_retries: 8, max_wait_seconds: 900 });

describe('interactivePatience (check, discover)', () => {
  it('few retries, short waits, one connection, no word of a saved state', () => {
    expect(interactivePatience(config)).toMatchObject({ maxRetries: 2, maxWaitSeconds: 30, retryMaxMs: 5000, stopNote: '', maxConcurrent: 1 });
    expect(interactivePatience({ ...config, max_retries: 0, max_wait_seconds: 5 })).toMatchObject({ maxRetries: 0, maxWaitSeconds: 5 });
  });

  it('a short-lived client: the HTTP parser is not recompiled by the optimizing tier, which the process would wait for at exit', () => {
    expect(interactivePatience(config).shortLived).toBe(true);
  });
});
