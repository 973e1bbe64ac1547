/**
 * Text that goes into messages: every piece that came from outside (a body,
 * an error message from the network stack) passes through `clean`, which
 * removes the API key and control characters and bounds the length.
 */
import { Redactor } from '../errors.js';

export type Clean = (text: string, max?: number) => string;

/** A cleaner that removes the given secrets (and the `Bearer <secret>` forms). */
export function cleaner(secrets: readonly string[]): Clean {
  const all = secrets.filter((s) => s.length > 0);
  const redactor = new Redactor(all);
  return (text: string, max = 300): string => {
    let out = redactor.redact(text);
    // A very short key slips past the Redactor (it ignores secrets under 4 chars); catch it anyway.
    for (const secret of all) if (secret.length < 4 && out.includes(`Bearer ${secret}`)) out = out.split(`Bearer ${secret}`).join('Bearer ***');
    out = out.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').replace(/\s+/g, ' ').trim();
    if (out.length > max) out = `${out.slice(0, max)}…`;
    return out;
  };
}

/** "250 ms", "1.5 s", "45 s", "12 min", "3 h 20 min" for a wait in ms. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${Math.round(ms / 100) / 10} s`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 2 * 3_600_000) return `${Math.round(ms / 60_000)} min`;
  // Whole minutes first: 23 h 59 min 50 s is 24 h, not "23 h 60 min".
  const total = Math.round(ms / 60_000);
  const hours = Math.floor(total / 60);
  const minutes = total % 60;
  return minutes > 0 ? `${hours} h ${minutes} min` : `${hours} h`;
}

/** An instant as ISO 8601; one past the dates a Date holds (a Retry-After of some 10^13 s and more) in words, not a RangeError. */
export function isoTime(epochMs: number): string {
  const date = new Date(Math.round(epochMs));
  return Number.isNaN(date.getTime()) ? 'a time past any date' : date.toISOString();
}
