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
            [['spec', '--bogus'], 'Unknown option --bogus'],
          ]
        : [
            [['--config', 'c.json', '--catlog', 'x.json'], 'Unknown option --catlog: did you mean --catalog?'],
            [['--config', 'c.json', '--Discover'], 'Unknown option --Discover: did you mean --discover?'],
            [['--bogus'], 'Unknown option --bogus'],
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

describe('source-data-read emulator', () => {
  it('is no command of the connector: a usage mistake (exit 2) that names the emulator package', async () => {
    const run = await runCli(SOURCE_BIN, ['emulator', '--contacts', '10']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('"emulator" is not a command of source-data-read');
    expect(run.stderr).toContain('packages/emulator/bin/data-read-emulator');
  });
});
