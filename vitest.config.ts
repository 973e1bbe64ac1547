import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

// The tests start their own proxies on loopback; a proxy configured for this machine (HTTPS_PROXY, ...)
// must not carry the traffic of the other tests to their emulators. Tests that want a proxy set one.
for (const name of ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY', 'all_proxy', 'ALL_PROXY', 'no_proxy', 'NO_PROXY']) delete process.env[name];

const ALONE = ['test/e2e/airbyte/shared-key.test.ts'];

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
    // A guard against a hang, not a bound on speed: the end-to-end cases run the connector several times each, and on
    // a loaded 2-core machine (the files beside them, up to five cases at once) a case that takes 10 s alone took
    // 30-60 s. A case that needs more says so.
    testTimeout: 90_000,
    hookTimeout: 90_000,
    pool: 'forks',
    // Test files in parallel, one per CPU and at least two. Vitest's own default (CPUs - 1) runs one file at a time
    // on a 2-CPU machine, which then idles while an end-to-end file waits on its connector processes, the
    // emulator's latency, backoffs and timeouts; a second file fills that time. More workers than CPUs gain
    // nothing: two keep two CPUs busy most of the time (the connector processes the files start cost CPU).
    maxWorkers: Math.max(2, availableParallelism()),
    // A worker keeps its process and its modules from one test file to the next instead of starting both again
    // for each file, which took about a fifth of the suite's CPU time.
    // So a file that mocks a module imports what it tests again (vi.resetModules), and a file compares
    // module-wide counters as differences.
    isolate: false,
    // Files whose subject is timing between processes (several processes started together on one key's rate
    // limit) run last and alone, once every other file has ended, so that the processes they start are not slowed
    // at random by the files beside them. Their assertions are the same. Each part has one temporary folder
    // (TMPDIR for the tests and what they start), removed at its end; the first part, one PostgreSQL server for
    // the tests of the stores (DATABASE_URL's, or a throw-away one started in the background).
    projects: [
      {
        extends: true,
        test: {
          name: 'files',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ALONE],
          globalSetup: ['test/helpers/run-tmpdir.ts', 'test/helpers/postgres-global.ts'],
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: 'alone', include: [...ALONE], globalSetup: ['test/helpers/run-tmpdir.ts'], sequence: { groupOrder: 1 } } },
    ],
  },
});
