/**
 * Both command lines, read by `util.parseArgs` (strict): `--flag value`,
 * `--flag=value`, repeatable flags, switches, `-h`. Its mistakes become the
 * project's usage mistakes (usage.ts): an unknown option in one line naming
 * the option meant, a flag without its value, an argument nothing takes.
 */
import { parseArgs } from 'node:util';
import { maskUrlPassword, messageOf } from '../errors.js';
import { UsageError, unknownOption } from './usage.js';

export interface ArgsSpec {
  /** The options that take a value, each with what the value is ("a file path"); its values kept in order. */
  readonly values: Readonly<Record<string, string>>;
  /**
   * The options of `values` whose repeats mean something (the tap's --config
   * files, merged). Any other may be repeated with the same value only: with
   * two different ones, taking either would silently drop the other.
   */
  readonly repeatable?: readonly string[];
  /** The options that take none (`help` also answers to -h). */
  readonly switches: readonly string[];
  /** How many arguments that are not options it takes (source-data-read: its command). */
  readonly positionals: number;
}

export interface ParsedArgs {
  readonly positional: readonly string[];
  readonly values: ReadonlyMap<string, readonly string[]>;
  readonly switches: ReadonlySet<string>;
}

type Options = Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }>;
type Token = NonNullable<ReturnType<typeof parseArgs>['tokens']>[number];

/** The usage mistake behind an error of util.parseArgs, in the project's words, found again on the command line's tokens. */
function usageMistake(err: unknown, argv: readonly string[], options: Options, spec: ArgsSpec): UsageError {
  const code = (err as { code?: unknown }).code;
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const isOption = (t: Token): t is Extract<Token, { kind: 'option' }> => t.kind === 'option';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const unknown = tokens.filter(isOption).find((t) => options[t.name] === undefined);
    if (unknown) return unknownOption(unknown.rawName, Object.keys(options));
  }
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    for (const t of tokens.filter(isOption)) {
      const what = spec.values[t.name];
      if (what === undefined && t.value !== undefined) return new UsageError(`--${t.name} takes no value.`);
      if (what !== undefined && (t.value === undefined || (!t.inlineValue && /^-./.test(t.value)))) {
        // The word after the flag begins with a dash: a value meant (a file named -x.json), or the next option.
        const next = t.inlineValue ? undefined : (t.value ?? argv[t.index + 1]);
        const optionName = next?.replace(/^--?/, '').split('=')[0] ?? '';
        const meant = next !== undefined && /^-./.test(next) && options[optionName] === undefined && next !== '-h';
        const how = meant ? ` To give one that begins with "-", write --${t.name}=${next}.` : '';
        return new UsageError(`--${t.name} needs a value (${what}).${how}`);
      }
    }
  }
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    const extra = tokens.filter((t) => t.kind === 'positional')[spec.positionals];
    // Quoted with a URL's password masked (a --db URL given without its flag).
    if (extra) return new UsageError(`Unexpected argument "${maskUrlPassword(extra.value ?? '')}".`);
  }
  return new UsageError(messageOf(err));
}

/** The command line `argv` read as `spec` says; any mistake in it throws a UsageError. */
function optionsOf(spec: ArgsSpec): Options {
  const options: Options = {};
  for (const name of Object.keys(spec.values)) options[name] = { type: 'string', multiple: true };
  for (const name of spec.switches) options[name] = name === 'help' ? { type: 'boolean', short: 'h' } : { type: 'boolean' };
  return options;
}

function toParsed(parsed: { values: Record<string, unknown>; positionals: string[] }): ParsedArgs {
  const values = new Map<string, string[]>();
  const switches = new Set<string>();
  for (const [name, value] of Object.entries(parsed.values)) {
    if (Array.isArray(value)) values.set(name, value.filter((v): v is string => typeof v === 'string'));
    else if (value === true) switches.add(name);
  }
  return { positional: parsed.positionals, values, switches };
}

export function readArgs(argv: readonly string[], spec: ArgsSpec): ParsedArgs {
  const options = optionsOf(spec);
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: spec.positionals > 0 });
  } catch (err) {
    throw usageMistake(err, argv, options, spec);
  }
  const extra = parsed.positionals[spec.positionals];
  if (extra !== undefined) throw new UsageError(`Unexpected argument "${maskUrlPassword(extra)}".`);
  const args = toParsed(parsed);
  for (const [name, given] of args.values) {
    // An empty value is a value missing (`--summary "$FILE"` with FILE unset), not a file named "".
    if (given.includes('')) throw new UsageError(`--${name} needs a value (${spec.values[name] ?? 'a value'}).`);
    const distinct = [...new Set(given)];
    if (distinct.length > 1 && !(spec.repeatable ?? []).includes(name)) {
      const quoted = distinct.map((v) => `"${maskUrlPassword(v)}"`).join(', ');
      throw new UsageError(`--${name} is given ${given.length} times, with different values (${quoted}): give it once.`, { brief: true });
    }
  }
  return args;
}

/**
 * What can be read of a command line that `readArgs` refused (unknown options
 * and extra arguments passed over): enough to write the --summary of a usage
 * mistake.
 */
export function readArgsLoosely(argv: readonly string[], spec: ArgsSpec): ParsedArgs {
  return toParsed(parseArgs({ args: [...argv], options: optionsOf(spec), strict: false, allowPositionals: true }));
}

/** The last value of a flag (readArgs lets a flag be repeated with the same value only, unless `repeatable`), or undefined. */
export function lastValue(args: ParsedArgs, name: string): string | undefined {
  return args.values.get(name)?.at(-1);
}
