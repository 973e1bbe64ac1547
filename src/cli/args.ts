/** A small argv parser: `--flag value`, `--flag=value`, repeatable flags and boolean switches. */
import { ConfigError } from '../errors.js';
import { unknownOption } from './usage.js';

export interface ParsedArgs {
  readonly positional: string[];
  readonly values: Map<string, string[]>;
  readonly switches: Set<string>;
}

/**
 * @param valueFlags flags that take a value (without the leading --)
 * @param switchFlags flags that take none
 */
export function parseArgs(argv: readonly string[], valueFlags: readonly string[], switchFlags: readonly string[]): ParsedArgs {
  const positional: string[] = [];
  const values = new Map<string, string[]>();
  const switches = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    if (switchFlags.includes(name) && eq === -1) {
      switches.add(name);
    } else if (valueFlags.includes(name)) {
      const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
      if (value === undefined || (eq === -1 && value.startsWith('--'))) throw new ConfigError(`--${name} needs a value (a file path).`, { field: `--${name}` });
      values.set(name, [...(values.get(name) ?? []), value]);
    } else {
      throw unknownOption(arg, [...valueFlags, ...switchFlags]);
    }
  }
  return { positional, values, switches };
}

/** The last value of a flag, or undefined. */
export function lastValue(args: ParsedArgs, name: string): string | undefined {
  const all = args.values.get(name);
  return all === undefined ? undefined : all[all.length - 1];
}
