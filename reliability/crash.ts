/**
 * Crash and resume: the connector is killed with SIGKILL at random points of
 * a sync (after a number of STATE lines; after a number of RECORD lines or of
 * stdout bytes read at a trickle, so the kill lands inside a page write; or
 * after a number of ms, which may fall inside a request or before any output),
 * and restarted from the last STATE the destination committed. Once a sync completes, the replica must equal the dump.
 */
import { Lab, Rand, airbyteCheck, killPosition, protocolProblems, type KillPoint, type SpawnOptions } from './harness.js';
import { MemoryDestination, lostOf } from '../test/helpers/destination.js';

export interface CrashScenario {
  readonly seed: number;
  readonly contacts: number;
  readonly pageSize: number;
  /** Kills to make in all. */
  readonly kills: number;
  /** Kills in one sync before it is let complete (then changes and the next sync). */
  readonly killsPerSync: number;
  /** Delay the emulator adds to every response, so a sync lasts long enough to be hit anywhere. */
  readonly latencyMs: number;
  /** deletions_as_tombstones on, and a destination that deletes rows by tombstones only. */
  readonly tombstones?: boolean;
}

export interface CrashResult {
  readonly seed: number;
  readonly tombstones: boolean;
  readonly kills: number;
  /** Where the output of the killed runs ended. */
  readonly positions: Record<string, number>;
  /** Kill points by how they were chosen. */
  readonly modes: Record<string, number>;
  readonly syncs: number;
  readonly runs: number;
  readonly lost: number;
  readonly extra: number;
  readonly problems: string[];
  readonly ms: number;
}

function killPoint(rand: Rand): { mode: string; kill: KillPoint; spawn: Omit<SpawnOptions, 'secrets' | 'label'> } {
  // A slow reader keeps the connector blocked in the middle of its writes, so a kill cuts a page.
  const slow = { trickle: { bytes: 4_096, everyMs: 5 } };
  switch (rand.pick(['states', 'records', 'bytes', 'ms'] as const)) {
    case 'states':
      return { mode: 'after n STATE lines', kill: { states: rand.int(1, 10) }, spawn: {} };
    case 'records':
      return { mode: 'after n RECORD lines (slow reader, stalled)', kill: { records: rand.int(1, 120), stallMs: 400 }, spawn: slow };
    case 'bytes':
      return { mode: 'after n bytes (slow reader)', kill: { bytes: rand.int(1_000, 400_000) }, spawn: slow };
    default:
      return { mode: 'after n ms', kill: { ms: rand.int(150, 1_500) }, spawn: {} };
  }
}

export async function runCrashScenario(s: CrashScenario): Promise<CrashResult> {
  const started = performance.now();
  const rand = new Rand(s.seed);
  const lab = await Lab.start({ seed: s.seed, latencyMs: s.latencyMs });
  const problems: string[] = [];
  const positions: Record<string, number> = {};
  const modes: Record<string, number> = {};
  let kills = 0;
  let syncs = 0;
  let runs = 0;
  let lost = 0;
  let extra = 0;
  try {
    const acc = lab.account({ contacts: s.contacts });
    const config = { page_size: s.pageSize, max_concurrent_requests: 2, deletions_as_tombstones: s.tombstones === true };
    const replica = new MemoryDestination(s.tombstones === true ? 'tombstones' : 'deletions');
    while (kills < s.kills) {
      if (syncs > 0) lab.change(acc.id, 2);
      syncs += 1;
      let killsInSync = 0;
      let complete = false;
      while (!complete) {
        const where = `seed ${s.seed}, sync ${syncs}, run ${runs + 1}`;
        const point = killsInSync < s.killsPerSync && kills < s.kills ? killPoint(rand) : undefined;
        const run = await lab.read(acc, config, {
          states: replica.states,
          label: where,
          spawn: point === undefined ? {} : { kill: point.kill, ...point.spawn },
        });
        runs += 1;
        problems.push(...protocolProblems(run, where));
        if (run.signal !== 'SIGKILL') problems.push(...(await airbyteCheck(run.stdout, where)));
        replica.applyAirbyte(run.messages);
        if (run.signal === 'SIGKILL') {
          kills += 1;
          killsInSync += 1;
          const at = killPosition(run);
          positions[at] = (positions[at] ?? 0) + 1;
          if (point !== undefined) modes[point.mode] = (modes[point.mode] ?? 0) + 1;
          continue;
        }
        if (run.code === 0) complete = true;
        else {
          problems.push(`${where}: exit ${String(run.code)} without a kill: ${run.stdout.slice(-300)} ${run.stderr.slice(-300)}`);
          break;
        }
      }
      const diff = replica.diff(lab.dump(acc.id));
      lost += lostOf(diff);
      extra += diff.extra;
      if (lostOf(diff) + diff.extra > 0) problems.push(`seed ${s.seed}, sync ${syncs}: replica differs from the dump: ${diff.examples.join('; ')}`);
    }
  } finally {
    await lab.close();
  }
  return { seed: s.seed, tombstones: s.tombstones === true, kills, positions, modes, syncs, runs, lost, extra, problems, ms: performance.now() - started };
}
