/**
 * `tap-data-read`: the Singer tap. Modes: --about, --discover, and sync (the
 * default). Protocol output on stdout only; logs on stderr.
 */
import { exitStatusHelp } from '../runtime/exit-status.js';
import { VERSION } from '../runtime/version.js';
import { lastValue, type ArgsSpec, type ParsedArgs } from './args.js';
import { commandFiles, runCommand, type CommandIo } from './run-end.js';
import { UsageError, helpOrVersion } from './usage.js';

export const TAP_HELP = `tap-data-read ${VERSION}: Singer tap for the Data-Read API

Usage:
  tap-data-read --config CONFIG.json [--config MORE.json | --config ENV] --discover
  tap-data-read --config CONFIG.json [--catalog CATALOG.json | --properties PROPERTIES.json] [--state STATE.json] [--summary FILE]
  tap-data-read --about [--format json|markdown]
  tap-data-read --version | --help

--config      repeatable; merged left to right. ENV reads TAP_DATA_READ_<SETTING>
              environment variables (e.g. TAP_DATA_READ_API_KEY, TAP_DATA_READ_BASE_URL).
--discover    write the Singer catalog of every stream.
--catalog     sync the streams and fields the catalog selects (--properties: legacy name).
              Without a catalog every stream is synced, incrementally where it can be.
--state       resume from the bookmarks of a previous run (the value of its last STATE, that STATE line,
              or what meltano state get prints); {} is no state.
--summary     (sync) write one JSON object saying what the run did when it ends, whatever the outcome:
              status, exit code, per stream records and bookmarks, requests. Its fields:
              https://github.com/source-data-read/source-data-read/blob/main/docs/orchestrators.md#the-run-summary---summary-file

stdout carries Singer messages only (SCHEMA, RECORD, STATE, and ACTIVATE_VERSION for FULL_TABLE streams:
catalog metadata activate-version: false on the stream turns it off for a target that does not know it),
one JSON object a line; logs go to stderr, with a status line under them when stderr is a terminal and
stdout is not (records per stream, waits, requests).
After a CRITICAL error the last STATE written is safe to resume from.
SIGTERM or SIGINT stops a sync at once: a final STATE of what was checkpointed, exit 143 (130 for SIGINT).
${exitStatusHelp(false)}`;

const ARGS: ArgsSpec = {
  values: { config: 'a file path, or ENV', catalog: 'a file path', properties: 'a file path', state: 'a file path', format: 'json or markdown', summary: 'a file path' },
  switches: ['discover', 'about', 'version', 'help'],
  // --config: merged. --catalog, --properties, --state: the later one is used, with a WARNING (run below), since
  // `meltano invoke tap-data-read --state mine.json` puts the state file Meltano holds first.
  repeatable: ['config', 'catalog', 'properties', 'state'],
  positionals: 0,
};

function aboutFormat(args: ParsedArgs): 'json' | 'markdown' {
  const format = lastValue(args, 'format') ?? 'json';
  if (format !== 'json' && format !== 'markdown') throw new UsageError(`--format must be json or markdown (got "${format}").`);
  return format;
}

async function run(argv: readonly string[], { out, logger, end, signal }: CommandIo): Promise<number> {
  if (argv.length === 0) throw new UsageError('No arguments given.');
  // A sync's usage mistake is reported in its --summary too.
  const args = await end.readArgs(argv, ARGS, (loose) => (loose.switches.has('about') || loose.switches.has('discover') ? undefined : 'sync'));
  if (helpOrVersion('tap-data-read', TAP_HELP, { help: args.switches.has('help'), version: args.switches.has('version') })) return 0;
  const isSync = !args.switches.has('about') && !args.switches.has('discover');
  // A sync reports what it did (--summary FILE), whatever the outcome, usage mistakes included.
  const report = isSync ? await end.start('sync', lastValue(args, 'summary'), commandFiles(args)) : undefined;
  if (!isSync && args.values.has('summary')) throw new UsageError('--summary is an option of a sync, not of --about or --discover.');
  // A --format without --about formats nothing: refused rather than passed over. A --catalog, --properties or --state
  // beside --discover or --about is taken and not used: Meltano passes the files it holds (its catalog, its state) to
  // every invocation, `meltano invoke tap-data-read --discover` and its own discovery before a sync included.
  if (!args.switches.has('about') && args.values.has('format')) throw new UsageError('--format is an option of --about.');
  const singer = await import('../protocols/singer/commands.js');
  const ctx = { out, logger, env: process.env, signal, report };
  if (args.switches.has('about')) return singer.about(ctx, aboutFormat(args));
  const configs = args.values.get('config') ?? [];
  if (configs.length === 0) throw new UsageError('--config FILE is required (a JSON file, or ENV for TAP_DATA_READ_* variables).');
  if (args.switches.has('discover')) return singer.discover(ctx, configs);
  for (const flag of ['catalog', 'properties', 'state']) {
    const given = [...new Set(args.values.get(flag) ?? [])];
    if (given.length > 1) {
      logger.log('WARNING', `--${flag} is given ${given.length} times, with different files (${given.map((g) => `"${g}"`).join(', ')}); the last one is used.`);
    }
  }
  const catalogPath = lastValue(args, 'catalog');
  const propertiesPath = lastValue(args, 'properties');
  if (catalogPath !== undefined && propertiesPath !== undefined) logger.log('WARNING', 'Both --catalog and --properties given; --properties is ignored.');
  const catalog =
    catalogPath !== undefined
      ? { path: catalogPath, flag: 'catalog' as const }
      : propertiesPath !== undefined
        ? { path: propertiesPath, flag: 'properties' as const }
        : undefined;
  return singer.sync(ctx, { configs, catalog, state: lastValue(args, 'state') });
}

export function main(argv: readonly string[]): Promise<number> {
  // Usage mistakes (no arguments, an unknown option, no --config, a bad --format) come with the usage text.
  return runCommand('tap-data-read', 'CRITICAL', TAP_HELP, (io) => run(argv, io));
}
