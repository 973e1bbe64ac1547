/**
 * The executables' code as `npm run build` leaves it in dist/cli/: the
 * entry points tsc compiled (dist/cli/source.js, dist/cli/tap.js), each
 * bundled with the connector's modules and its two libraries, undici and
 * zod, into a few files, and the WAL thread's file beside them (the writer
 * starts it from its own folder). A command then loads about 20 files
 * instead of about 250 (its own modules, undici's and zod's, each resolved,
 * read and compiled on every start): short commands start with about a
 * third less CPU (docs/performance.md, "How it stays fast"). The rest
 * of dist/ is tsc's output as it is, of which the package ships the
 * `source-data-read/schemas` export and its types. The optional stores'
 * drivers stay outside, loaded only when a --db asks for them, as Node's
 * own modules do.
 */
import { defineConfig } from 'rolldown';

export default defineConfig({
  input: { source: 'dist/cli/source.js', tap: 'dist/cli/tap.js', 'wal-thread': 'dist/replica/wal-thread.js' },
  platform: 'node',
  external: [/^node:/, '@duckdb/node-api', 'pg', 'pg-copy-streams'],
  output: { dir: 'dist/cli', format: 'esm', cleanDir: true, chunkFileNames: '[name]-[hash].js' },
});
