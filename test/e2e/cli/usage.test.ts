/**
 * What both executables print around their usage: the usage text on stdout
 * only when asked for (--help), on stderr with exit 2 for every usage mistake
 * (no arguments, an unknown command or option; `emulator`, the emulator
 * package's own command); one `--version` format.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, SOURCE_BIN, TAP_BIN, runCli } from '../../helpers/cli.js';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const EXECUTABLES = [
  ['source-data-read', SOURCE_BIN, /^source-data-read \S+: Airbyte source/m],
  ['tap-data-read', TAP_BIN, /^tap-data-read \S+: Singer tap/m],
] as const;

describe.each(EXECUTABLES)('%s', (name, bin, usage) => {
  it('--version: "<executable> <version>", one line on stdout', async () => {
    const run = await runCli(bin, ['--version']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${name} ${VERSION}\n`);
    expect(run.stderr).toBe('');
  });

  it('--help: the usage on stdout, exit 0', async () => {
    const run = await runCli(bin, ['--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(usage);
    expect(run.stderr).toBe('');
  });

  it('--help names the docs by their address: the npm package and the image carry no docs/', async () => {
    const run = await runCli(bin, ['--help']);
    const files = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] }).files;
    expect(files.some((f) => f.startsWith('docs'))).toBe(false);
    // No page as a path of a checkout; every page as a URL of the repository, a page and a heading of this checkout.
    expect(run.stdout.replace(/https:\/\/\S+/g, '')).not.toMatch(/\bdocs\/|\.md\b/);
    const links = [...run.stdout.matchAll(/https:\/\/github\.com\/source-data-read\/source-data-read\/blob\/main\/(docs\/[\w-]+\.md)#(\S+)/g)];
    expect(links.length).toBeGreaterThan(0);
    for (const [, page = '', anchor] of links) {
      const ids = readFileSync(join(ROOT, page), 'utf8')
        .split('\n')
        .filter((l) => /^#{1,6} /.test(l))
        // GitHub's heading ids: lower case, punctuation but - and _ dropped, each space a -.
        .map((l) => l.replace(/^#+ /, '').toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-'));
      expect(ids, `${page}#${anchor}`).toContain(anchor);
    }
  });

  it('no arguments: a usage mistake, the usage on stderr, nothing on stdout, exit 2', async () => {
    const run = await runCli(bin, []);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/(ERROR|CRITICAL) \S+: No (command|arguments) given\./);
    expect(run.stderr).toMatch(usage);
  });

  it('an unknown command, or another usage mistake: the same, on stderr, exit 2', async () => {
    for (const args of name === 'source-data-read' ? [['bogus'], ['read', '--config']] : [['extra'], ['--discover']]) {
      const run = await runCli(bin, args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout, args.join(' ')).toBe('');
      expect(run.stderr, args.join(' ')).toMatch(usage);
    }
  });

  it('an unknown option: one line on stderr, naming the option meant when it is a slip ("did you mean --catalog?"), exit 2', async () => {
    const level = name === 'source-data-read' ? 'ERROR' : 'CRITICAL';
    const cases: readonly (readonly [string[], string])[] =
      name === 'source-data-read'
        ? [
            [['read', '--config', 'c.json', '--catlog', 'x.json'], 'Unknown option --catlog: did you mean --catalog?'],
            [['replicate', '--config=c.json', '--summray=s.json'], 'Unknown option --summray: did you mean --summary?'],
            [['spec', '--bogus'], 'Unknown option --bogus.'],
          ]
        : [
            [['--config', 'c.json', '--catlog', 'x.json'], 'Unknown option --catlog: did you mean --catalog?'],
            [['--config', 'c.json', '--Discover'], 'Unknown option --Discover: did you mean --discover?'],
            [['--bogus'], 'Unknown option --bogus.'],
          ];
    for (const [args, message] of cases) {
      const run = await runCli(bin, args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout, args.join(' ')).toBe('');
      const lines = run.stderr.split('\n').filter((l) => l !== '');
      expect(lines, args.join(' ')).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^\\S+ ${level} ${name}: ${message.replace(/[?.]/g, '\\$&')} Run with --help to see the options\\.$`));
    }
  });
});

describe('an option the command does not take', () => {
  // Passed over, it would do something else than what was asked: `read --db` prints to stdout what was meant for a replica.
  const cases: readonly (readonly ['source-data-read' | 'tap-data-read', readonly string[], string])[] = [
    ['source-data-read', ['read', '--config', 'c.json', '--catalog', 'k.json', '--db', 'r.db'], '--db is an option of replicate, not of read.'],
    ['source-data-read', ['check', '--config', 'c.json', '--catalog', 'k.json'], '--catalog is an option of read, not of check.'],
    ['source-data-read', ['discover', '--config', 'c.json', '--state', 's.json'], '--state is an option of read, not of discover.'],
    ['source-data-read', ['spec', '--config', 'c.json'], '--config is an option of check, discover, read and replicate, not of spec.'],
    ['tap-data-read', ['--config', 'c.json', '--format', 'json'], '--format is an option of --about.'],
  ];
  it.each(cases)('%s %j: a usage mistake naming the option, exit 2, nothing on stdout', async (name, args, message) => {
    const run = await runCli(name === 'source-data-read' ? SOURCE_BIN : TAP_BIN, args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(message);
  });
});

describe("the tap's --discover and --about beside a catalog and a state", () => {
  // Meltano adds --catalog and --state to every invocation when it holds those files: its discovery before a sync included.
  it('are no usage mistake (the run goes on to read its config)', async () => {
    for (const args of [
      ['--config', 'c.json', '--catalog', 'k.json', '--state', 's.json', '--discover'],
      ['--config', 'c.json', '--properties', 'p.json', '--about'],
    ]) {
      const run = await runCli(TAP_BIN, args);
      expect(run.stderr, args.join(' ')).not.toMatch(/is an option of/);
      expect(run.code, args.join(' ')).toBe(args.includes('--about') ? 0 : 78);
    }
  });
});

describe("the tap's --catalog, --properties and --state given twice", () => {
  // `meltano invoke tap-data-read --state mine.json` puts the state file Meltano holds before the user's.
  it('are no usage mistake: the last file is used, with a WARNING naming both', async () => {
    const run = await runCli(TAP_BIN, ['--config', 'c.json', '--state', 'held.json', '--state', 'mine.json']);
    expect(run.code).toBe(78);
    expect(run.stderr).toMatch(/ WARNING tap-data-read: --state is given 2 times, with different files \("held\.json", "mine\.json"\); the last one is used\.\n/);
    expect(run.stderr).toMatch(/Cannot read the config file "c\.json"/);
  });
});

describe('source-data-read emulator', () => {
  it('is no command of the connector: a usage mistake (exit 2) that names the emulator package', async () => {
    const run = await runCli(SOURCE_BIN, ['emulator', '--contacts', '10']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('"emulator" is not a command of source-data-read');
    expect(run.stderr).toContain('packages/emulator/bin/data-read-emulator');
  });
});
