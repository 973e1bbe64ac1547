/**
 * Node 22 (which the executables accept from 22.19) warns that node:sqlite is
 * experimental on every run that loads it: two lines on stderr, "(node:PID)
 * ExperimentalWarning: SQLite is an experimental feature and might change at
 * any time", at each `replicate` into SQLite. The launcher drops that one
 * warning. Node 24, which runs the tests, no longer says it: a module hook
 * says it as Node 22 does, when the run loads node:sqlite, together with a
 * warning of another feature, which must still be told.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { replicate, type Account } from '../../helpers/emulator-runs.js';
import { withEmulatorAccount } from '../../helpers/suite.js';

describe('replicate into SQLite on a Node that calls node:sqlite experimental', () => {
  let account: Account;
  let dir: string;
  withEmulatorAccount('sqlite-warning-', { contacts: 20 }, (s) => ({ account, dir } = s));

  it("tells no SQLite ExperimentalWarning, and every other warning as Node does", async () => {
    const hook = join(dir, 'node22-sqlite.mjs');
    writeFileSync(
      hook,
      "import { registerHooks } from 'node:module';\n" +
        "import { isMainThread } from 'node:worker_threads';\n" +
        'let said = false;\n' +
        'registerHooks({ resolve(specifier, context, next) {\n' +
        // Node 22 says it once, in the thread that loads node:sqlite first (the main one: the WAL thread comes later).
        "  if (specifier === 'node:sqlite' && isMainThread && !said) {\n" +
        '    said = true;\n' +
        "    process.emitWarning('SQLite is an experimental feature and might change at any time', 'ExperimentalWarning');\n" +
        "    process.emitWarning('Another feature is experimental', 'ExperimentalWarning');\n" +
        '  }\n' +
        '  return next(specifier, context);\n' +
        '} });\n',
    );
    const run = await replicate(account.config(dir), join(dir, 'replica.db'), { env: { NODE_OPTIONS: `--import=${pathToFileURL(hook).href}` } });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('ExperimentalWarning: Another feature is experimental');
    expect(run.stderr).not.toContain('SQLite is an experimental feature');
  });
});
