/**
 * A test-only entry point: `source-data-read` as bin/ runs it (the built
 * dist/cli/source.js), given settings no production run can be given, as
 * JSON in its first argument: the replica's writer-lock intervals and host
 * name (a run posing as another host where `unshare --uts` is not allowed).
 *
 *   node test/helpers/source-with-settings.ts '{"replicaLock":{"staleMs":1}}' replicate --config C --db F
 *
 * Needs `npm run build`; run by Node itself (type stripping), not by vitest.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as Source from '../../src/cli/source.js';

const [settings = '{}', ...argv] = process.argv.slice(2);
const entry = pathToFileURL(join(import.meta.dirname, '..', '..', 'dist', 'cli', 'source.js')).href;
const { main } = (await import(entry)) as typeof Source;
process.exitCode = await main(argv, JSON.parse(settings) as Source.TestSettings);
