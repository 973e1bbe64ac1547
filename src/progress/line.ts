/**
 * The progress line a person reads on a terminal, for any face: per-stream
 * counts and rates, the rate-limit wait and when it ends, requests made.
 * Plain data in, one line out, fitted to the terminal's width with the most
 * important figures first: a part that does not fit is shortened, then left
 * out, never cut in the middle of a number.
 *
 * Order of importance: a rate-limit wait (the one thing that explains a line
 * that stops moving), failed streams, streams being read (count and rate),
 * finished streams, requests.
 */

export type StreamPhase = 'waiting' | 'running' | 'rate_limited' | 'complete' | 'failed';

export interface StreamProgress {
  readonly name: string;
  /** Records (or rows) so far. */
  readonly count: number;
  /** Per second, recently; undefined when not known yet. */
  readonly rate?: number;
  readonly phase: StreamPhase;
  /** When the stream's rate-limit wait ends (epoch ms), while it waits. */
  readonly waitUntil?: number;
}

export interface ProgressSnapshot {
  readonly streams: readonly StreamProgress[];
  /** Requests made so far, and rate-limit waits; undefined when not known. */
  readonly requests?: number;
  readonly rateLimitWaits?: number;
}

/** The width used when the terminal reports none (or 0, as some do when detached). */
export const DEFAULT_WIDTH = 80;
const SEPARATOR = ' | ';

const int = (n: number): string => Math.round(n).toLocaleString('en-US');
/** A rate with few digits: 48,213 -> 48.2k. */
function rate(n: number): string {
  if (n >= 10_000) return `${(n / 1000).toFixed(0)}k`;
  if (n >= 1000) return `${(n / 1000).toFixed(1)}k`;
  return n.toFixed(0);
}

function clock(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 19)}Z`;
}

/**
 * The usable width of a terminal that reports `columns` (the last column is
 * left free: writing there wraps on some terminals). Infinity: no limit.
 */
export function usableWidth(columns: number | undefined): number {
  if (columns === Number.POSITIVE_INFINITY) return columns;
  const width = columns !== undefined && Number.isFinite(columns) && columns > 0 ? Math.floor(columns) : DEFAULT_WIDTH;
  return Math.max(1, width - 1);
}

/** Each part of the line, from the most important, as its forms from the longest to the shortest. */
function parts(snapshot: ProgressSnapshot, now: number): string[][] {
  const out: string[][] = [];
  const waits = snapshot.streams.filter((s) => s.phase === 'rate_limited' && s.waitUntil !== undefined && s.waitUntil > now);
  if (waits.length > 0) {
    const until = Math.max(...waits.map((s) => s.waitUntil ?? now));
    const seconds = Math.ceil((until - now) / 1000);
    const names = waits.map((s) => s.name).join(', ');
    out.push([
      `rate limit: ${names} waiting ${seconds} s, until ${clock(until)}`,
      `rate limit: waiting ${seconds} s, until ${clock(until)}`,
      `rate limit: ${seconds} s`,
    ]);
  }
  for (const s of snapshot.streams.filter((x) => x.phase === 'failed')) out.push([`${s.name} ${int(s.count)} FAILED`, `${s.name} FAILED`]);
  for (const s of snapshot.streams.filter((x) => x.phase === 'running' || x.phase === 'rate_limited' || x.phase === 'waiting')) {
    const count = `${s.name} ${int(s.count)}`;
    out.push(s.rate === undefined || s.phase !== 'running' ? [count] : [`${count} (${rate(s.rate)}/s)`, count]);
  }
  const done = snapshot.streams.filter((s) => s.phase === 'complete');
  if (done.length > 0) {
    out.push([
      `done: ${done.map((s) => `${s.name} ${int(s.count)}`).join(', ')}`,
      `${done.length} done (${int(done.reduce((n, s) => n + s.count, 0))})`,
    ]);
  }
  if (snapshot.requests !== undefined) {
    const waits = snapshot.rateLimitWaits ?? 0;
    out.push([`${int(snapshot.requests)} requests, ${int(waits)} rate-limit waits`, `${int(snapshot.requests)} req`]);
  }
  return out;
}

/**
 * The line for a terminal `columns` wide (undefined or 0: DEFAULT_WIDTH;
 * Infinity: every part in its longest form). Never longer than the usable width.
 */
export function progressLine(snapshot: ProgressSnapshot, columns: number | undefined, now = Date.now()): string {
  const width = usableWidth(columns);
  const chosen: string[] = [];
  let used = 0;
  for (const forms of parts(snapshot, now)) {
    const room = width - used - (chosen.length > 0 ? SEPARATOR.length : 0);
    const form = forms.find((f) => f.length <= room);
    if (form === undefined) {
      // The most important part is shortened to fit; a later one that does not fit ends the line.
      if (chosen.length === 0) {
        const shortest = forms.at(-1) ?? '';
        chosen.push(shortest.length <= width ? shortest : `${shortest.slice(0, Math.max(0, width - 1))}…`);
      }
      break;
    }
    used += (chosen.length > 0 ? SEPARATOR.length : 0) + form.length;
    chosen.push(form);
  }
  return chosen.join(SEPARATOR);
}
