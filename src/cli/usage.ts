/**
 * Usage mistakes on the command line (no command, an unknown command or
 * option, a missing file flag): both executables tell them on stderr, with
 * the usage text, and exit 2. The usage text goes to stdout only when asked
 * for (`--help`), and the version line is the same for both executables.
 * Any other failure exits with the status of its failure type (exit-status.ts).
 */
import { toConnectorError } from '../errors.js';
import { EXIT_USAGE, exitStatusFor } from '../process/exit-status.js';
import { VERSION } from '../process/version.js';

/** A mistake in the command line: told on stderr with the usage text, exit 2. */
export class UsageError extends Error {}

/** The line `--version` prints: `<executable> <version>`. */
export function versionLine(executable: string): string {
  return `${executable} ${VERSION}\n`;
}

/** The message of a usage mistake followed by the usage text (for stderr). */
export function usageMessage(message: string, help: string): string {
  return `${message}\n\n${help.trimEnd()}`;
}

/**
 * What ended a command, told on stderr through `log`, and the exit status:
 * a usage mistake with the usage text (exit 2), anything else as it is, with
 * the exit status of its failure type (78 config_error, 75 transient_error, 70 system_error).
 */
export function failureExit(err: unknown, log: (message: string) => void, help: string): number {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof UsageError) {
    log(usageMessage(message, help));
    return EXIT_USAGE;
  }
  log(message);
  return exitStatusFor(toConnectorError(err).failureType);
}
