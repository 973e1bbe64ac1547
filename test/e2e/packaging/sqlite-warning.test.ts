/**
 * Node 22 (which the executables accept from 22.19) warns that node:sqlite is
 * experimental in every thread that loads it: two lines on stderr, "(node:PID)
 * ExperimentalWarning: SQLite is an experimental feature and might change at
 * any time", at each `replicate` into SQLite, and again from the WAL thread
 * of a replicate that writes enough to start one. The launcher drops that one
 * warning in the main thread, the writer every ExperimentalWarning in the WAL
 * thread (which uses no other experimental feature). Node 24, which runs the
 * tests, no longer says it: a module hook says it as Node 22 does, in each
 * thread that loads node:sqlite, together with a warning of another feature,
 * which must still be told.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { replicate, type Account } from '../../helpers/emulator-runs.js';
import { withEmulatorAccount } from '../../helpers/suite.js';

describe('replicate into SQLite on a Node that calls node:sqlite experimental', () => {
  let account: Account;
  let dir: string;
  // Enough rows for a WAL past 4 MiB, from which the writer starts its WAL thread (writer.ts), well before the last
  // commit (which starts none): 2,400 contacts were not on this machine, 3,000 just were.
  withEmulatorAccount('sqlite-warning-', { contacts: 5000 }, (s) => ({ account, dir } = s));

  it('tells no SQLite ExperimentalWarning, from any thread, and every other warning as Node does', async () => {
    const hook = join(dir, 'node22-sqlite.mjs');
    const walThreadRan = join(dir, 'wal-thread-loaded-sqlite');
    writeFileSync(
      hook,
      "import { writeFileSync } from 'node:fs';\n" +
        "import { registerHooks } from 'node:module';\n" +
        "import { isMainThread } from 'node:worker_threads';\n" +
        'let said = false;\n' +
        'registerHooks({ resolve(specifier, context, next) {\n' +
        // Node 22 says it once in each thread that loads node:sqlite: the main one, then the WAL thread.
        "  if (specifier === 'node:sqlite' && !said) {\n" +
        '    said = true;\n' +
        `    if (!isMainThread) writeFileSync(${JSON.stringify(walThreadRan)}, '');\n` +
        "    process.emitWarning('SQLite is an experimental feature and might change at any time', 'ExperimentalWarning');\n" +
        "    process.emitWarning('Another feature is experimental', 'ExperimentalWarning');\n" +
        '  }\n' +
        '  return next(specifier, context);\n' +
        '} });\n',
    );
    const run = await replicate(account.config(dir), join(dir, 'replica.db'), { env: { NODE_OPTIONS: `--import=${pathToFileURL(hook).href}` } });
    expect(run.code, run.stderr).toBe(0);
    expect(existsSync(walThreadRan), 'the WAL thread ran').toBe(true);
    expect(run.stderr).toContain('ExperimentalWarning: Another feature is experimental');
    expect(run.stderr).not.toContain('SQLite is an experimental feature');
  });
});
