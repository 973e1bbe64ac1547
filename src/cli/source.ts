/**
 * `source-data-read`: the Airbyte protocol commands, plus `replicate` (a
 * local SQLite replica). Commands are loaded on demand so `spec` and `check`
 * start fast. `emulator` (the local Data-Read API) is started by
 * bin/source-data-read itself: the connector never loads the emulator.
 */
import { LineWriter, StderrLogger } from '../output.js';
import { Interrupt } from '../interrupt.js';
import { VERSION } from '../version.js';
import { lastValue, parseArgs } from './args.js';
import { UsageError, failureExit, versionLine } from './usage.js';

export const HELP = `source-data-read ${VERSION}: Airbyte source for the Data-Read API

Usage:
  source-data-read spec
  source-data-read check    --config CONFIG.json
  source-data-read discover --config CONFIG.json
  source-data-read read     --config CONFIG.json --catalog CATALOG.json [--state STATE.json]
  source-data-read replicate --config CONFIG.json --db REPLICA.db   (a local SQLite replica; state kept in it)
  source-data-read emulator [options]        (a local Data-Read API; emulator --help)
  source-data-read --version | --help

stdout carries Airbyte protocol messages only, one JSON object a line, logs as LOG messages.
When stderr is a terminal and stdout is not, the logs are also told there, and read shows
its progress (records per stream, rate-limit waits and when they end, requests).
Exit status: 0 on success, 1 after an ERROR trace (the state written so far is safe to resume from).
SIGTERM or SIGINT stops a command at once: a read ends with an ERROR trace and exits 143 (130 for SIGINT);
every STATE written before it is safe to resume from.
`;

/** The reader of stdout went away (a closed pipe): no usage text, exit 1. */
function outputClosed(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED' || code === 'ERR_STREAM_WRITE_AFTER_END' ? String(code) : undefined;
}

async function run(argv: readonly string[], out: LineWriter, logger: StderrLogger, interrupt: Interrupt): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) throw new UsageError('No command given.');
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  if (command === '--version') {
    process.stdout.write(versionLine('source-data-read'));
    return 0;
  }
  let args: ReturnType<typeof parseArgs>;
  try {
    args = parseArgs(rest, ['config', 'catalog', 'state', 'db'], ['help']);
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  if (args.switches.has('help')) {
    process.stdout.write(HELP);
    return 0;
  }
  const need = (flag: string): string => {
    const value = lastValue(args, flag);
    if (value === undefined) throw new UsageError(`${command} needs --${flag} FILE`);
    return value;
  };
  if (command === 'replicate') {
    if (args.values.has('catalog') || args.values.has('state')) {
      throw new UsageError('replicate takes no --catalog or --state: it replicates every stream and keeps its state in the --db file');
    }
    const replica = await import('../faces/replica/command.js');
    return replica.replicate({ logger }, need('config'), need('db'));
  }
  // The Airbyte commands stop on SIGTERM/SIGINT (the emulator and replicate handle their own).
  interrupt.install();
  const airbyte = await import('../faces/airbyte/commands.js');
  const ctx = { out, logger, interrupt };
  switch (command) {
    case 'spec':
      return airbyte.spec(ctx);
    case 'check':
      return airbyte.check(ctx, need('config'));
    case 'discover':
      return airbyte.discover(ctx, need('config'));
    case 'read':
      return airbyte.read(ctx, need('config'), need('catalog'), lastValue(args, 'state'));
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

export async function main(argv: readonly string[]): Promise<number> {
  const out = new LineWriter(process.stdout);
  const logger = new StderrLogger('source-data-read');
  const interrupt = new Interrupt({ out, log: (message) => logger.log('ERROR', message) });
  let code: number;
  try {
    code = await run(argv, out, logger, interrupt);
  } catch (err) {
    const closed = err instanceof UsageError ? undefined : outputClosed(err);
    if (closed !== undefined) {
      logger.log('ERROR', `stdout was closed before the command ended (${closed}: its reader went away); stopped. Every STATE written before is safe to resume from.`);
      code = 1;
    } else {
      // Usage mistakes (no or an unknown command or option, missing file flag) come with the usage text.
      code = failureExit(err, (message) => logger.log('ERROR', message), HELP);
    }
  }
  await out.flush();
  interrupt.uninstall();
  return code;
}
