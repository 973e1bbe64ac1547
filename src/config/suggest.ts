/**
 * "Did you mean …?" for a name the connector does not know (a misspelled
 * config key): the known name closest to it, when it is close enough to be a
 * slip of the keyboard (case, `-` for `_`, or at most two letters wrong,
 * missing, extra or swapped).
 */

/** Edit distance with adjacent transpositions (optimal string alignment). */
function distance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = d[i] as number[];
      const above = d[i - 1] as number[];
      let best = Math.min((above[j] as number) + 1, (row[j - 1] as number) + 1, (above[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, ((d[i - 2] as number[])[j - 2] as number) + 1);
      row[j] = best;
    }
  }
  return (d[rows - 1] as number[])[cols - 1] as number;
}

const normal = (name: string): string => name.toLowerCase().replace(/[-\s]/g, '_');

/** The known name `name` is most likely a slip for, or undefined. */
export function closestName(name: string, known: Iterable<string>): string | undefined {
  let best: { name: string; d: number } | undefined;
  for (const candidate of known) {
    const d = distance(normal(name), candidate);
    if (best === undefined || d < best.d) best = { name: candidate, d };
  }
  if (best === undefined) return undefined;
  // Two slips in a long name, one in a short one: beyond that it is another word.
  const allowed = best.name.length >= 8 ? 2 : 1;
  return best.d <= allowed ? best.name : undefined;
}
