/**
 * Usage mistakes on the command line (no command, an unknown command or
 * option, a missing file flag): both executables tell them on stderr, with
 * the usage text, and exit 2; an unknown option is told in one line, with
 * the option most likely meant ("did you mean --catalog?"). The usage text goes to stdout only when asked
 * for (`--help`), and the version line is the same for both executables.
 * Any other failure exits with the status of its failure type (exit-status.ts).
 */
import { closestName } from '../config/suggest.js';
import { messageOf, toConnectorError } from '../errors.js';
import { EXIT_USAGE, exitStatusFor } from '../runtime/exit-status.js';
import { VERSION } from '../runtime/version.js';

/** A mistake in the command line: told on stderr with the usage text (or alone, when `brief`), exit 2. */
export class UsageError extends Error {
  /** Told in one line, without the usage text: the line says all there is to fix. */
  readonly brief: boolean;

  constructor(message: string, options: { readonly brief?: boolean } = {}) {
    super(message);
    this.name = 'UsageError';
    this.brief = options.brief ?? false;
  }
}

/**
 * An option the executable does not know (`arg` as given, `--name` or
 * `--name=value`), among the `known` ones (without `--`): one line, naming
 * the option meant when the name is a slip of the keyboard.
 */
export function unknownOption(arg: string, known: readonly string[]): UsageError {
  const given = arg.split('=')[0] as string;
  const meant = closestName(given.replace(/^-+/, ''), known);
  return new UsageError(`Unknown option ${given}${meant === undefined ? '.' : `: did you mean --${meant}?`} Run with --help to see the options.`, { brief: true });
}

/** What `--help` (the usage text) or else `--version` (`<executable> <version>`) asks for, on stdout; false when neither was asked for. */
export function helpOrVersion(executable: string, help: string, asked: { readonly help: boolean; readonly version: boolean }): boolean {
  if (asked.help) process.stdout.write(help);
  else if (asked.version) process.stdout.write(`${executable} ${VERSION}\n`);
  return asked.help || asked.version;
}

/** The message of a usage mistake followed by the usage text (for stderr); a brief one alone. */
function usageMessage(err: unknown, help: string): string {
  const message = messageOf(err);
  return err instanceof UsageError && err.brief ? message : `${message}\n\n${help.trimEnd()}`;
}

/**
 * What ended a command, told on stderr through `log`, and the exit status:
 * a usage mistake with the usage text (exit 2), anything else as it is, with
 * the exit status of its failure type (78 config_error, 75 transient_error, 70 system_error).
 */
export function failureExit(err: unknown, log: (message: string) => void, help: string): number {
  if (err instanceof UsageError) {
    log(usageMessage(err, help));
    return EXIT_USAGE;
  }
  log(messageOf(err));
  return exitStatusFor(toConnectorError(err).failureType);
}
