/**
 * A stop that comes while Node loads the compiled code (about half a second
 * after the start: a scheduler cancelling a run it just started, a node
 * drained): the run still ends as the contract says of SIGTERM and SIGINT
 * (143 or 130, its --summary written as interrupted), not killed by the
 * signal with no summary (an earlier run's summary left in its place) nor,
 * as a container's PID 1, deaf to it. The signal is sent from a module hook
 * at the moment the launcher imports the entry point.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withTempDir } from '../../helpers/suite.js';
import { ROOT, SOURCE_BIN, TAP_BIN, runCli, writeJson } from '../../helpers/cli.js';

let dir: string;
withTempDir('early-signal-', (d) => (dir = d));

/** A module for NODE_OPTIONS=--import that sends this process `signal` when the launcher resolves the compiled entry point. */
function signalAtEntry(signal: 'SIGTERM' | 'SIGINT'): string {
  const file = join(dir, `at-entry-${signal}.mjs`);
  writeFileSync(
    file,
    `import { registerHooks } from 'node:module';
registerHooks({
  resolve(specifier, context, nextResolve) {
    if (/dist\\/cli\\/(source|tap)\\.js$/.test(specifier)) process.kill(process.pid, '${signal}');
    return nextResolve(specifier, context);
  },
});
`,
  );
  return file;
}

const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');

describe('a signal while the compiled code loads', () => {
  const cases = [
    { name: 'read, SIGTERM', bin: SOURCE_BIN, args: (c: string) => ['read', '--config', c, '--catalog', CATALOG], signal: 'SIGTERM', code: 143 },
    { name: 'replicate, SIGINT', bin: SOURCE_BIN, args: (c: string) => ['replicate', '--config', c, '--db', join(dir, 'r.db')], signal: 'SIGINT', code: 130 },
    { name: 'the tap, SIGTERM', bin: TAP_BIN, args: (c: string) => ['--config', c], signal: 'SIGTERM', code: 143 },
  ] as const;

  for (const c of cases) {
    it(`${c.name}: ends with ${c.code} and an interrupted summary, not killed by the signal`, async () => {
      // Nothing listens there: the run must not get as far as a request.
      const config = writeJson(dir, 'config.json', { api_key: 'drk_live_early0signal', base_url: 'http://127.0.0.1:9' });
      const summary = join(dir, `summary-${c.code}.json`);
      writeFileSync(summary, '{"status": "succeeded", "from": "the run before"}\n');
      const run = await runCli(c.bin, [...c.args(config), '--summary', summary], { env: { NODE_OPTIONS: `--import=${signalAtEntry(c.signal)}` } });
      expect({ code: run.code, signal: run.signal }, run.stderr).toEqual({ code: c.code, signal: null });
      expect(JSON.parse(readFileSync(summary, 'utf8'))).toMatchObject({ status: 'interrupted', exit_code: c.code });
    });
  }
});
