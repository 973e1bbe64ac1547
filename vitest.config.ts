import { defineConfig } from 'vitest/config';

// The tests start their own proxies on loopback; a proxy configured for this machine (HTTPS_PROXY, ...)
// must not carry the traffic of the other tests to their emulators. Tests that want a proxy set one.
for (const name of ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY', 'all_proxy', 'ALL_PROXY', 'no_proxy', 'NO_PROXY']) delete process.env[name];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // One temporary folder per run (TMPDIR for the tests and what they start), removed at the end.
    globalSetup: ['test/helpers/run-tmpdir.ts'],
  },
});
