/**
 * A slow reader: the same full sync read once as fast as possible and once at
 * a trickle. The connector must respect the pipe's backpressure (its memory
 * stays flat: peak RSS from /proc/<pid>/status VmHWM, close to the fast run's,
 * and no growth from the first quarter of the output to the end) and must
 * neither lose nor reorder the messages of a stream.
 */
import { Lab, protocolProblems, type ConnectorRun, type Message } from './harness.js';
import { MemoryDestination, lostOf } from '../test/helpers/destination.js';

export interface SlowReaderResult {
  readonly outputBytes: number;
  readonly records: number;
  readonly fastMs: number;
  readonly slowMs: number;
  readonly readRateKBs: number;
  readonly fastPeakRssMb: number;
  readonly slowPeakRssMb: number;
  /** RSS at the end of the output minus RSS once a quarter of it was read. */
  readonly slowGrowthMb: number;
  readonly reordered: number;
  readonly lost: number;
  readonly problems: string[];
}

/** Per stream: the ids of its records and the record counts of its STATEs, in order. */
function sequences(messages: readonly Message[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const add = (stream: string, item: string): void => {
    let list = out.get(stream);
    if (list === undefined) out.set(stream, (list = []));
    list.push(item);
  };
  for (const m of messages) {
    if (m.type === 'RECORD') {
      const r = m.record as { stream: string; data: { id: unknown } };
      add(r.stream, String(r.data.id));
    } else if (m.type === 'STATE') {
      const s = m.state as { stream: { stream_descriptor: { name: string } }; sourceStats?: { recordCount?: number } };
      add(s.stream.stream_descriptor.name, `STATE(${String(s.sourceStats?.recordCount)})`);
    }
  }
  return out;
}

function growthMb(run: ConnectorRun): number {
  const total = run.stdout.length;
  const quarter = run.memory.find((s) => s.bytes >= total / 4);
  const last = run.memory[run.memory.length - 1];
  if (quarter === undefined || last === undefined) return Number.NaN;
  return (last.rssKb - quarter.rssKb) / 1024;
}

export async function runSlowReader(o: { contacts: number; pageSize: number; trickleBytes: number; everyMs: number; seed: number }): Promise<SlowReaderResult> {
  const lab = await Lab.start({ seed: o.seed });
  const problems: string[] = [];
  try {
    const acc = lab.account({ contacts: o.contacts });
    const config = { page_size: o.pageSize };
    const fast = await lab.read(acc, config, { label: 'fast reader', spawn: { sampleMemory: true, timeoutMs: 600_000 } });
    const slow = await lab.read(acc, config, {
      label: 'slow reader',
      spawn: { sampleMemory: true, trickle: { bytes: o.trickleBytes, everyMs: o.everyMs }, timeoutMs: 600_000 },
    });
    for (const [name, run] of [['fast reader', fast], ['slow reader', slow]] as const) {
      if (run.code !== 0) problems.push(`${name}: exit ${String(run.code)}: ${run.stderr.slice(-300)}`);
      problems.push(...protocolProblems(run, name));
    }
    // Nothing changed between the runs: each stream's messages must come in the same order.
    const a = sequences(fast.messages);
    const b = sequences(slow.messages);
    let reordered = 0;
    for (const [stream, list] of a) {
      const other = b.get(stream) ?? [];
      if (list.length !== other.length || list.some((item, i) => other[i] !== item)) {
        reordered += 1;
        problems.push(`slow reader: the messages of ${stream} differ from the fast run (${list.length} vs ${other.length})`);
      }
    }
    const replica = new MemoryDestination();
    replica.applyAirbyte(slow.messages);
    const diff = replica.diff(lab.dump(acc.id));
    if (lostOf(diff) + diff.extra > 0) problems.push(`slow reader: replica differs: ${diff.examples.join('; ')}`);
    const fastPeak = (fast.peakRssKb ?? Number.NaN) / 1024;
    const slowPeak = (slow.peakRssKb ?? Number.NaN) / 1024;
    const growth = growthMb(slow);
    const outputMb = slow.stdout.length / 1024 / 1024;
    // Flat: the slow run needs no more memory than the fast one (plus noise), and does not grow with the output.
    if (!(slowPeak <= fastPeak * 1.25 + 16)) problems.push(`slow reader: peak RSS ${slowPeak.toFixed(0)} MB against ${fastPeak.toFixed(0)} MB when read fast`);
    if (!(growth <= Math.max(16, outputMb / 4))) problems.push(`slow reader: RSS grew ${growth.toFixed(1)} MB while ${outputMb.toFixed(1)} MB were read`);
    return {
      outputBytes: slow.stdout.length,
      records: slow.messages.filter((m) => m.type === 'RECORD').length,
      fastMs: fast.ms,
      slowMs: slow.ms,
      readRateKBs: (o.trickleBytes / o.everyMs) * 1000 / 1024,
      fastPeakRssMb: fastPeak,
      slowPeakRssMb: slowPeak,
      slowGrowthMb: growth,
      reordered,
      lost: lostOf(diff),
      problems,
    };
  } finally {
    await lab.close();
  }
}

export interface ClosedReaderResult {
  readonly code: number | null;
  readonly exitAfterCloseMs: number;
  /** Requests the connector made after its reader went away. */
  readonly requestsAfterClose: number;
  readonly message: string;
  readonly problems: string[];
}

/** The reader goes away mid-sync (stdout closed): a prompt exit 75 with one clear line on stderr, no usage text. */
export async function runClosedReader(o: { contacts: number; closeAfterBytes: number; seed: number }): Promise<ClosedReaderResult> {
  const lab = await Lab.start({ seed: o.seed, latencyMs: 20 });
  const problems: string[] = [];
  try {
    const acc = lab.account({ contacts: o.contacts });
    let atClose = 0;
    const onClose = (): void => {
      atClose = lab.emu.control.stats().total;
    };
    const run = await lab.read(acc, { page_size: 100 }, { label: 'reader goes away', spawn: { closeAfterBytes: o.closeAfterBytes, onClose } });
    const exitAfterCloseMs = run.exitAfterCloseMs ?? Number.NaN;
    const lines = run.stderr.split('\n').filter((l) => / ERROR /.test(l));
    const message = lines[0] ?? '';
    if (run.code !== 75) problems.push(`reader goes away: exit ${String(run.code)} (75 expected: run again later)`);
    // How soon it exited (exitAfterCloseMs) is a figure of `npm run reliability`; the requests made after the close are the check.
    if (!/stdout was closed/.test(message) || /Usage:/.test(run.stderr) || /^\s+at /m.test(run.stderr)) problems.push(`reader goes away: unclear stderr: ${run.stderr.slice(0, 400)}`);
    // A request per stream already under way may still go out; the connector must not go on reading pages.
    const requestsAfterClose = lab.emu.control.stats().total - atClose;
    if (requestsAfterClose > 5) problems.push(`reader goes away: ${requestsAfterClose} requests after stdout was closed`);
    return { code: run.code, exitAfterCloseMs, requestsAfterClose, message, problems };
  } finally {
    await lab.close();
  }
}
