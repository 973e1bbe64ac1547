/**
 * Reading a command line (src/cli/args.ts): util.parseArgs, strict, its
 * mistakes told as the project's usage mistakes rather than in Node's words.
 */
import { describe, expect, it } from 'vitest';
import { lastValue, readArgs, type ArgsSpec } from '../../src/cli/args.js';
import { UsageError } from '../../src/cli/usage.js';

const SOURCE: ArgsSpec = { values: { config: 'a file path', catalog: 'a file path', summary: 'a file path' }, switches: ['help', 'version'], positionals: 1 };
const TAP: ArgsSpec = { values: { config: 'a file path, or ENV', format: 'json or markdown' }, switches: ['discover', 'help'], repeatable: ['config'], positionals: 0 };

/** The usage mistake `argv` makes, as [message, told in one line]. */
function mistake(argv: readonly string[], spec: ArgsSpec): [string, boolean] {
  try {
    readArgs(argv, spec);
  } catch (err) {
    if (err instanceof UsageError) return [err.message, err.brief];
    throw err;
  }
  throw new Error(`no mistake in ${argv.join(' ')}`);
}

describe('readArgs', () => {
  it('reads --flag value and --flag=value, every value of a repeated flag in order, switches, -h, the command', () => {
    const args = readArgs(['read', '--config', 'a.json', '--catalog=c.json', '--config=a.json', '-h'], SOURCE);
    expect(args.positional).toEqual(['read']);
    expect(args.values.get('config')).toEqual(['a.json', 'a.json']);
    expect(lastValue(args, 'config')).toBe('a.json');
    expect(lastValue(args, 'catalog')).toBe('c.json');
    expect(lastValue(args, 'summary')).toBeUndefined();
    expect([...args.switches]).toEqual(['help']);
    // The tap's repeated --config files and ENV, merged later in this order.
    expect(readArgs(['--config', 'base.json', '--config', 'ENV', '--discover'], TAP).values.get('config')).toEqual(['base.json', 'ENV']);
    // A value that is only a dash, and one after =, are values.
    expect(readArgs(['--config', '-', '--format=-x'], TAP).values).toEqual(new Map([['config', ['-']], ['format', ['-x']]]));
  });

  it('an unknown option, long or short: one line naming the option meant when it is a slip', () => {
    expect(mistake(['read', '--catlog', 'x.json'], SOURCE)).toEqual(['Unknown option --catlog: did you mean --catalog? Run with --help to see the options.', true]);
    expect(mistake(['--Discover'], TAP)).toEqual(['Unknown option --Discover: did you mean --discover? Run with --help to see the options.', true]);
    expect(mistake(['--summray=s.json'], SOURCE)[0]).toBe('Unknown option --summray: did you mean --summary? Run with --help to see the options.');
    expect(mistake(['spec', '-x'], SOURCE)).toEqual(['Unknown option -x. Run with --help to see the options.', true]);
  });

  it('a flag without its value, a switch given one, an argument nothing takes: told with the usage text', () => {
    expect(mistake(['read', '--config'], SOURCE)).toEqual(['--config needs a value (a file path).', false]);
    expect(mistake(['read', '--config', '--catalog', 'c.json'], SOURCE)).toEqual(['--config needs a value (a file path).', false]);
    expect(mistake(['--about', '--format'], { ...TAP, switches: ['about'] })).toEqual(['--format needs a value (json or markdown).', false]);
    // A value that begins with a dash (a file named -x.json) is read as an option: told how to give it.
    expect(mistake(['read', '--config', '-c.json'], SOURCE)).toEqual([
      '--config needs a value (a file path). To give one that begins with "-", write --config=-c.json.',
      false,
    ]);
    expect(mistake(['spec', '--help=yes'], SOURCE)).toEqual(['--help takes no value.', false]);
    expect(mistake(['read', 'extra'], SOURCE)).toEqual(['Unexpected argument "extra".', false]);
    expect(mistake(['--config', 'c.json', 'extra'], TAP)).toEqual(['Unexpected argument "extra".', false]);
    expect(mistake(['--config', 'c.json', '--', '--discover'], TAP)).toEqual(['Unexpected argument "--discover".', false]);
  });

  it('an empty value (a variable of a script that was not set: --summary "$FILE"): the value missing, not a file named ""', () => {
    expect(mistake(['read', '--config', 'c.json', '--summary', ''], SOURCE)).toEqual(['--summary needs a value (a file path).', false]);
    expect(mistake(['read', '--config=', '--catalog', 'c.json'], SOURCE)).toEqual(['--config needs a value (a file path).', false]);
    expect(mistake(['--config', 'c.json', '--config', ''], TAP)).toEqual(['--config needs a value (a file path, or ENV).', false]);
  });

  it('a flag given twice with different values, unless its repeats mean something: one line naming both values', () => {
    // Taking the later one would silently drop the earlier (a read from the wrong state, a replica in the wrong file).
    expect(mistake(['read', '--config', 'c.json', '--catalog', 'a.json', '--catalog=b.json'], SOURCE)).toEqual([
      '--catalog is given 2 times, with different values ("a.json", "b.json"): give it once.',
      true,
    ]);
    expect(mistake(['replicate', '--summary', 's.json', '--summary', 'postgresql://bob:S3cr3t@db/x'], SOURCE)[0]).toBe(
      '--summary is given 2 times, with different values ("s.json", "postgresql://bob:***@db/x"): give it once.',
    );
    expect(mistake(['--config', 'c.json', '--format', 'json', '--format', 'markdown'], TAP)[0]).toBe('--format is given 2 times, with different values ("json", "markdown"): give it once.');
    // The same value twice takes nothing away.
    expect(readArgs(['check', '--config', 'c.json', '--config=c.json'], SOURCE).values.get('config')).toEqual(['c.json', 'c.json']);
  });

  it("quotes an unexpected argument with a URL's password masked (a --db URL given without its flag)", () => {
    expect(mistake(['replicate', '--config', 'c.json', 'postgresql://bob:S3cr3t@db.example/analytics'], SOURCE)).toEqual(['Unexpected argument "postgresql://bob:***@db.example/analytics".', false]);
    expect(mistake(['replicate', 'postgresql://db.example/analytics?user=bob&password=S3cr3t'], SOURCE)[0]).toBe('Unexpected argument "postgresql://db.example/analytics?user=bob&password=***".');
  });
});
