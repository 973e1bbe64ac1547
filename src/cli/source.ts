/**
 * `source-data-read`: the Airbyte protocol commands, plus `replicate` (a
 * local SQLite replica). Commands are loaded on demand so `spec` and `check`
 * start fast.
 */
import { andList } from '../errors.js';
import { exitStatusHelp } from '../runtime/exit-status.js';
import { VERSION } from '../runtime/version.js';
import { lastValue, type ArgsSpec } from './args.js';
import { commandFiles, runCommand, type CommandIo } from './run-end.js';
import { UsageError, helpOrVersion } from './usage.js';
import type { LockSettings } from '../replica/lock.js';

/** What only a test gives the command line (bin/ never does): the replica's writer-lock settings. */
export interface TestSettings {
  readonly replicaLock?: Partial<LockSettings>;
}

export const HELP = `source-data-read ${VERSION}: Airbyte source for the Data-Read API

Usage:
  source-data-read spec
  source-data-read check    --config CONFIG.json
  source-data-read discover --config CONFIG.json
  source-data-read read     --config CONFIG.json --catalog CATALOG.json [--state STATE.json] [--summary FILE]
  source-data-read replicate --config CONFIG.json --db TARGET [--schema NAME] [--summary FILE]
                            (a replica with its state kept in it; one writer at a time. TARGET:
                            a SQLite file (replica.db), a postgresql://user@host/db URL (PG* variables
                            honoured; --schema default data_read) or a DuckDB file (x.duckdb, duckdb:PATH))
  source-data-read --version | --help

stdout carries Airbyte protocol messages only, one JSON object a line, logs as LOG messages.
When stderr is a terminal and stdout is not, the logs are also told there, and read shows
its progress (records per stream, rate-limit waits and when they end, requests).
--summary FILE   (read, replicate) write one JSON object saying what the run did when it ends,
                 whatever the outcome: status, exit code, per stream records and watermarks,
                 requests. /dev/termination-log works on Kubernetes. Its fields:
                 https://github.com/source-data-read/source-data-read/blob/main/docs/orchestrators.md#the-run-summary---summary-file
SIGTERM or SIGINT stops a command at once: a read ends with an ERROR trace and exits 143 (130 for SIGINT);
every STATE written before it is safe to resume from.
check exits 0 with CONNECTION_STATUS FAILED when the connection does not work (what Airbyte asks).
${exitStatusHelp(true)}`;

const ARGS: ArgsSpec = {
  values: { config: 'a file path', catalog: 'a file path', state: 'a file path', db: 'a file path or a postgresql:// URL', schema: 'a schema name', summary: 'a file path' },
  switches: ['help', 'version'],
  positionals: 1,
};
/** The options each command takes; any other is refused, not passed over (`read --db` would print to stdout what the user meant to replicate). */
const COMMAND_OPTIONS: Readonly<Record<string, readonly string[]>> = {
  spec: [],
  check: ['config'],
  discover: ['config'],
  read: ['config', 'catalog', 'state', 'summary'],
  replicate: ['config', 'db', 'schema', 'summary'],
};
const COMMANDS = new Set(Object.keys(COMMAND_OPTIONS));

/** The commands that take `--flag`, as a message says them: "read and replicate". */
function commandsTaking(flag: string): string {
  return andList(Object.keys(COMMAND_OPTIONS).filter((c) => COMMAND_OPTIONS[c]?.includes(flag)));
}

async function run(argv: readonly string[], { out, logger, end, signal }: CommandIo, testing: TestSettings): Promise<number> {
  // Before the options are read: the emulator's own options (--contacts, ...) are no options of the connector.
  if (argv[0] === 'emulator') {
    throw new UsageError('"emulator" is not a command of source-data-read: the local Data-Read API is its own package in the source checkout, packages/emulator/bin/data-read-emulator.');
  }
  // A sync command's usage mistake is reported in its --summary too.
  const args = await end.readArgs(argv, ARGS, ({ positional: [named] }) => (named === 'read' || named === 'replicate' ? named : undefined));
  const [command] = args.positional;
  if (helpOrVersion('source-data-read', HELP, { help: args.switches.has('help') || command === 'help', version: args.switches.has('version') })) return 0;
  if (command === undefined) throw new UsageError('No command given.');
  if (!COMMANDS.has(command)) throw new UsageError(`unknown command "${command}"`);
  // The sync commands report what they did (--summary FILE), whatever the outcome, usage mistakes included.
  const report = command === 'read' || command === 'replicate' ? await end.start(command, lastValue(args, 'summary'), commandFiles(args)) : undefined;
  if (command === 'replicate' && (args.values.has('catalog') || args.values.has('state'))) {
    throw new UsageError('replicate takes no --catalog or --state: it replicates every stream and keeps its state in the --db file');
  }
  const foreign = [...args.values.keys()].find((flag) => !(COMMAND_OPTIONS[command] ?? []).includes(flag));
  if (foreign !== undefined) throw new UsageError(`--${foreign} is an option of ${commandsTaking(foreign)}, not of ${command}.`);
  const need = (flag: string): string => {
    const value = lastValue(args, flag);
    if (value === undefined) throw new UsageError(`${command} needs --${flag} ${flag === 'db' ? 'TARGET (a SQLite or DuckDB file, or a postgresql:// URL)' : 'FILE'}`);
    return value;
  };
  if (command === 'replicate') {
    const replica = await import('../replica/command.js');
    return replica.replicate({ logger, report, signal, beforeExit: (code) => end.finish(code), lock: testing.replicaLock }, need('config'), need('db'), lastValue(args, 'schema'));
  }
  const airbyte = await import('../protocols/airbyte/commands.js');
  const ctx = { out, logger, signal, report };
  switch (command) {
    case 'spec':
      return airbyte.spec(ctx);
    case 'check':
      return airbyte.check(ctx, need('config'));
    case 'discover':
      return airbyte.discover(ctx, need('config'));
    default:
      return airbyte.read(ctx, need('config'), need('catalog'), lastValue(args, 'state'));
  }
}

/** Run the command line `argv`; `testing` is for test entry points alone (bin/launch.cjs passes none). */
export function main(argv: readonly string[], testing: TestSettings = {}): Promise<number> {
  // Usage mistakes (no or an unknown command or option, missing file flag) come with the usage text.
  return runCommand('source-data-read', 'ERROR', HELP, (io) => run(argv, io, testing));
}
