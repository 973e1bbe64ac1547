/**
 * What a protocol checker returns: the JSON summary the checkers print (the
 * same fields the hand-run cross-check tools print), and the line splitting
 * both checkers share.
 */

export interface CheckSummary {
  n_errors: number;
  /** The first 50 errors, each naming its line. */
  errors: string[];
  /** Airbyte: messages per type, RECORDs per stream, the last STREAM_STATUS and STATE per stream. */
  messages?: Record<string, number>;
  records?: Record<string, number>;
  final_status?: Record<string, string>;
  last_state?: Record<string, unknown>;
  /** Singer: messages per type, and what is allowed but worth knowing. */
  counts?: Record<string, number>;
  warnings?: string[];
}

export const MAX_LISTED_ERRORS = 50;

/** One stdout line with its 1-based number; a final newline ends the last line and starts none. */
export interface Line {
  n: number;
  text: string;
}

export function linesOf(stdout: string): Line[] {
  const texts = stdout.split('\n');
  if (texts.at(-1) === '') texts.pop();
  return texts.map((text, i) => ({ n: i + 1, text }));
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function increment(counter: Record<string, number>, key: string): void {
  counter[key] = (counter[key] ?? 0) + 1;
}

export function summarize(errors: readonly string[], fields: Omit<CheckSummary, 'n_errors' | 'errors'>): CheckSummary {
  return { ...fields, n_errors: errors.length, errors: errors.slice(0, MAX_LISTED_ERRORS) };
}
