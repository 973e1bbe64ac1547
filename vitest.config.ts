import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The tests start their own proxies on loopback; a proxy configured for this machine (HTTPS_PROXY, ...)
// must not carry the traffic of the other tests to their emulators. Tests that want a proxy set one.
for (const name of ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY', 'all_proxy', 'ALL_PROXY', 'no_proxy', 'NO_PROXY']) delete process.env[name];

export default defineConfig({
  // The tests run on the sources of both packages, as `npm run typecheck` reads them (tsconfig.json's paths):
  // the connector's schemas entry (the emulator's one import of it) and the emulator package.
  resolve: {
    alias: [
      { find: /^source-data-read\/schemas$/, replacement: fileURLToPath(new URL('./src/schemas/resources.ts', import.meta.url)) },
      { find: /^data-read-emulator$/, replacement: fileURLToPath(new URL('./packages/emulator/src/index.ts', import.meta.url)) },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Test files in parallel, one per CPU and at least two. Vitest's own default (CPUs - 1) runs one file at a time
    // on a 2-CPU machine, which then idles while an end-to-end file waits on its connector processes, the
    // emulator's latency, backoffs and timeouts; a second file fills that time.
    maxWorkers: Math.max(2, availableParallelism()),
    // One temporary folder per run (TMPDIR for the tests and what they start), removed at the end; then one
    // PostgreSQL server for the tests of the stores (DATABASE_URL's, or a throw-away one started in the background).
    globalSetup: ['test/helpers/run-tmpdir.ts', 'test/helpers/postgres-global.ts'],
  },
});
