/**
 * The exit status of every command of both executables, so that a scheduler
 * can act on it (sysexits.h codes): 0 success; 2 a usage mistake; 78 the user
 * must act (config_error: retrying will not help); 75 run again later
 * (transient_error, a wait beyond max_wait_seconds, the replica locked by a
 * live run; state saved); 70 the service broke its contract or a bug
 * (system_error); 128 + the signal when stopped (130 SIGINT, 143 SIGTERM).
 */
import type { FailureType } from '../errors.js';

export const EXIT_OK = 0;
export const EXIT_USAGE = 2;
/** EX_SOFTWARE: a system_error. */
export const EXIT_SOFTWARE = 70;
/** EX_TEMPFAIL: a transient_error; run again later. */
export const EXIT_TEMPFAIL = 75;
/** EX_CONFIG: a config_error; the user must act. */
const EXIT_CONFIG = 78;

/** The exit status of a command that ended with a failure of this type. */
export function exitStatusFor(failureType: FailureType): number {
  switch (failureType) {
    case 'config_error':
      return EXIT_CONFIG;
    case 'transient_error':
      return EXIT_TEMPFAIL;
    case 'system_error':
      return EXIT_SOFTWARE;
  }
}

/**
 * The exit status of a run whose streams failed with these types: the most
 * actionable wins (a config_error needs a person; a system_error will not be
 * cured by waiting; only transient failures alone say "run again later").
 */
export function exitStatusForAll(failureTypes: Iterable<FailureType>): number {
  const types = new Set(failureTypes);
  if (types.has('config_error')) return EXIT_CONFIG;
  if (types.has('system_error')) return EXIT_SOFTWARE;
  if (types.has('transient_error')) return EXIT_TEMPFAIL;
  return EXIT_OK;
}

/**
 * The failure types, most actionable first, across accounts (connector
 * contract, "Many accounts": 78 before 75 before 70): a person must act, then
 * run again later, then the service or a bug. Unlike a run's streams
 * (exitStatusForAll), an account's transient failure outranks another's
 * system_error: waiting cures that account, and the run says so.
 */
const ACTIONABLE: readonly FailureType[] = ['config_error', 'transient_error', 'system_error'];

/** The most actionable of these failure types across accounts; undefined for none. */
export function mostActionable(types: Iterable<FailureType>): FailureType | undefined {
  const given = new Set(types);
  return ACTIONABLE.find((t) => given.has(t));
}

/**
 * The lines of `--help` that list the exit statuses: the same for both
 * executables, but for the replica's lock, which only `source-data-read`
 * (its `replicate`) has (`replica`).
 */
export function exitStatusHelp(replica: boolean): string {
  const busy = replica
    ? `  75   transient_error, a wait beyond max_wait_seconds, the replica locked by a live run,
       or stdout closed by its reader or on a full disk: run again later (state saved)`
    : `  75   transient_error, a wait beyond max_wait_seconds, or stdout closed by its reader
       or on a full disk: run again later (state saved)`;
  return `Exit status (sysexits.h, for schedulers):
  0    success
  2    usage mistake (bad arguments)
  78   config_error: the user must act (key, config, permissions); retrying will not help
${busy}
  70   system_error: the service broke its contract, or a bug
  130  interrupted by SIGINT, 143 by SIGTERM (state saved)
`;
}
