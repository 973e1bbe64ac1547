/**
 * The reliability suite's harness: the real `source-data-read` executable run
 * against an in-process emulator on 127.0.0.1, with
 * - a canary API key per account, searched for in every byte of stdout and
 *   stderr of every run (the leak watch);
 * - the destination in memory of test/helpers/destination.ts, which commits a
 *   stream's records only when a STATE of that stream follows them (what
 *   Airbyte destinations do), so a resume that skipped anything shows up as a
 *   lost record;
 * - kills (SIGKILL) at a number of STATE lines, of stdout bytes or of ms, and
 *   stdout read at a trickle, with peak RSS taken from /proc/<pid>/status.
 *
 * Used by `npm run reliability` (full size) and test/reliability (CI size).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Prng, startEmulator, type Dump, type Emulator, type EmulatorOptions, type LimitOverrides } from 'data-read-emulator';
import { STREAMS } from '../src/streams.js';
import { secretForms } from '../src/errors.js';
import { ROOT, SOURCE_BIN, protocolCheckAsync } from '../test/helpers/cli.js';
import { airbyteStateFile, type StreamStates } from '../test/helpers/destination.js';
import { LIMITS_OUT_OF_REACH } from '../test/helpers/emulator-runs.js';

export const FULL_CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');

export type Row = Record<string, unknown>;
export interface Message {
  readonly type: string;
  readonly [field: string]: unknown;
}

// --- small utilities ----------------------------------------------------------

/** A seeded PRNG (the emulator's): kill points and case orders are reproducible. */
export class Rand {
  readonly #prng: Prng;
  constructor(seed: number) {
    this.#prng = new Prng(seed);
  }
  float(): number {
    return this.#prng.float();
  }
  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.float() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.float() * items.length)];
    if (item === undefined) throw new RangeError('pick from an empty list');
    return item;
  }
}

/** Run `fn` over `items` with at most `limit` at once; results in input order. */
export async function inPool<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      out[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A canary key the emulator accepts (<prefix>_live_<secret>), unique per call. */
export function canaryKey(): string {
  return `canary_live_CANARY${randomBytes(12).toString('hex')}`;
}

/** The parts of a canary that must never be printed: the whole key and its secret part, in every form output gives them (secretForms). */
export function secretsOf(key: string): string[] {
  const at = key.indexOf('_live_');
  return [...new Set((at < 0 ? [key] : [key, key.slice(at + '_live_'.length)]).flatMap(secretForms))];
}

// --- the leak watch -------------------------------------------------------------

/** Every run of the connector is searched for the canary keys it was given. */
export class LeakWatch {
  runs = 0;
  bytes = 0;
  readonly leaks: string[] = [];

  check(label: string, secrets: readonly string[], ...texts: string[]): void {
    this.runs += 1;
    for (const text of texts) {
      this.bytes += Buffer.byteLength(text);
      for (const secret of secrets) {
        const at = text.indexOf(secret);
        if (at >= 0) this.leaks.push(`${label}: the key appears at byte ${at}: …${text.slice(Math.max(0, at - 80), at)}<KEY>…`);
      }
    }
  }
}

/** One watch per process: every section of the suite reports into it. */
export const leakWatch = new LeakWatch();

// --- running the connector ---------------------------------------------------------

export interface KillPoint {
  /** SIGKILL once this many STATE lines were seen. */
  readonly states?: number;
  /** SIGKILL once this many RECORD lines were read (the kill lands inside a page). */
  readonly records?: number;
  /** SIGKILL once this many bytes of stdout were read. */
  readonly bytes?: number;
  /** SIGKILL this long after the start. */
  readonly ms?: number;
  /**
   * When a threshold above is reached, stop reading for this long before the
   * SIGKILL: the connector fills the pipe and blocks in the middle of a write,
   * so the kill cuts a page (with a slow reader only).
   */
  readonly stallMs?: number;
}

export interface SpawnOptions {
  /** Canary strings that must not appear in stdout or stderr. */
  readonly secrets: readonly string[];
  /** For messages about leaks. */
  readonly label: string;
  readonly timeoutMs?: number;
  readonly kill?: KillPoint;
  /** Read stdout at a trickle: at most `bytes` every `everyMs`. */
  readonly trickle?: { readonly bytes: number; readonly everyMs: number };
  /** Sample VmRSS/VmHWM of the connector every 50 ms. */
  readonly sampleMemory?: boolean;
  /** The reader goes away: stdout is closed once this many bytes were read. */
  readonly closeAfterBytes?: number;
  /** Called when stdout is closed (closeAfterBytes). */
  readonly onClose?: () => void;
}

export interface MemorySample {
  readonly ms: number;
  readonly rssKb: number;
  /** stdout bytes read by then. */
  readonly bytes: number;
}

export interface ConnectorRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly killed: boolean;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
  /** Whole lines of stdout, parsed; a partial last line (after a kill) is left out. */
  readonly messages: Message[];
  /** Whole lines that are not JSON objects with a type. */
  readonly badLines: string[];
  /** Output ended inside a line (only possible after a kill). */
  readonly partialLine: boolean;
  readonly peakRssKb: number | undefined;
  readonly memory: MemorySample[];
  /** ms from closing stdout (closeAfterBytes) to the exit. */
  readonly exitAfterCloseMs: number | undefined;
}

function readStatus(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = /VmRSS:\s+(\d+) kB/.exec(text)?.[1];
    const hwm = /VmHWM:\s+(\d+) kB/.exec(text)?.[1];
    return rss === undefined || hwm === undefined ? undefined : { rss: Number(rss), hwm: Number(hwm) };
  } catch {
    return undefined;
  }
}

export function parseOutput(stdout: string): { messages: Message[]; badLines: string[]; partialLine: boolean } {
  const end = stdout.lastIndexOf('\n') + 1;
  const messages: Message[] = [];
  const badLines: string[] = [];
  for (const line of stdout.slice(0, end).split('\n')) {
    if (line === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      badLines.push(line.slice(0, 200));
      continue;
    }
    if (typeof value === 'object' && value !== null && !Array.isArray(value) && typeof (value as { type?: unknown }).type === 'string') {
      messages.push(value as Message);
    } else badLines.push(line.slice(0, 200));
  }
  return { messages, badLines, partialLine: end < stdout.length };
}

/** Run `bin/source-data-read` with args; never rejects on a non-zero exit. */
export function runConnector(args: readonly string[], options: SpawnOptions): Promise<ConnectorRun> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SOURCE_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let bytes = 0;
    let states = 0;
    let records = 0;
    let killed = false;
    let peak: number | undefined;
    const memory: MemorySample[] = [];
    const timers: NodeJS.Timeout[] = [];
    let stalled = false;
    const killNow = (): void => {
      stalled = false;
      if (killed || child.exitCode !== null || child.signalCode !== null) return;
      killed = true;
      child.kill('SIGKILL');
    };
    let triggered = false;
    const kill = (): void => {
      if (triggered) return;
      triggered = true;
      const stall = options.kill?.stallMs;
      if (stall === undefined || options.trickle === undefined) return killNow();
      stalled = true;
      timers.push(setTimeout(killNow, stall));
    };
    let closedAt: number | undefined;
    const take = (chunk: Buffer): void => {
      out.push(chunk);
      bytes += chunk.length;
      if (options.closeAfterBytes !== undefined && closedAt === undefined && bytes >= options.closeAfterBytes) {
        closedAt = performance.now();
        child.stdout.destroy();
        options.onClose?.();
      }
      const k = options.kill;
      if (k === undefined || triggered) return;
      if (k.states !== undefined) {
        states += chunk.toString('utf8').split('"type":"STATE"').length - 1;
        if (states >= k.states) kill();
      }
      if (k.records !== undefined) {
        records += chunk.toString('utf8').split('"type":"RECORD"').length - 1;
        if (records >= k.records) kill();
      }
      if (k.bytes !== undefined && bytes >= k.bytes) kill();
    };
    const trickle = options.trickle;
    if (trickle === undefined) child.stdout.on('data', take);
    else {
      child.stdout.pause();
      // A 'readable' listener keeps Node from resuming (and so discarding) the stream when the child exits.
      child.stdout.on('readable', () => undefined);
      const tick = setInterval(() => {
        // After a kill, what is left in the pipe is read at once (a destination would get it).
        if (stalled) return;
        for (let n = 0; n < (killed ? 1 << 30 : trickle.bytes); ) {
          const available = child.stdout.readableLength;
          if (available === 0) {
            child.stdout.read(0);
            break;
          }
          const chunk = child.stdout.read(Math.min(available, trickle.bytes)) as Buffer | null;
          if (chunk === null) break;
          n += chunk.length;
          take(chunk);
        }
      }, trickle.everyMs);
      timers.push(tick);
      child.stdout.on('end', () => clearInterval(tick));
    }
    child.stderr.on('data', (b: Buffer) => err.push(b));
    if (options.kill?.ms !== undefined) timers.push(setTimeout(kill, options.kill.ms));
    if (options.sampleMemory === true && child.pid !== undefined) {
      const pid = child.pid;
      const sample = (): void => {
        const s = readStatus(pid);
        if (s === undefined) return;
        peak = s.hwm;
        memory.push({ ms: Math.round(performance.now() - started), rssKb: s.rss, bytes });
      };
      sample();
      timers.push(setInterval(sample, 50));
    }
    const timeout = setTimeout(() => {
      process.stderr.write(`reliability: ${options.label}: no exit after ${options.timeoutMs ?? 120_000} ms; killed\n`);
      killNow();
    }, options.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timeout);
      for (const t of timers) clearTimeout(t);
      // 'close' can come while a paused stdout still holds data: read the rest.
      if (!child.stdout.destroyed) for (let chunk = child.stdout.read() as Buffer | null; chunk !== null; chunk = child.stdout.read() as Buffer | null) take(chunk);
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      leakWatch.check(options.label, options.secrets, stdout, stderr);
      const parsed = parseOutput(stdout);
      const exitAfterCloseMs = closedAt === undefined ? undefined : performance.now() - closedAt;
      resolve({ code, signal, killed, stdout, stderr, ms: performance.now() - started, ...parsed, peakRssKb: peak, memory, exitAfterCloseMs });
    });
  });
}

// --- reading protocol output ------------------------------------------------------

export interface ErrorTrace {
  readonly failureType: string;
  readonly message: string;
  readonly stream: string | undefined;
  readonly stackTrace: string | undefined;
}

export function errorTraces(messages: readonly Message[]): ErrorTrace[] {
  const out: ErrorTrace[] = [];
  for (const m of messages) {
    const trace = m.trace as { type?: string; error?: { failure_type?: string; message?: string; stack_trace?: string; stream_descriptor?: { name?: string } } } | undefined;
    if (m.type !== 'TRACE' || trace?.type !== 'ERROR' || trace.error === undefined) continue;
    out.push({
      failureType: String(trace.error.failure_type),
      message: String(trace.error.message),
      stream: trace.error.stream_descriptor?.name,
      stackTrace: trace.error.stack_trace,
    });
  }
  return out;
}

export function logs(messages: readonly Message[], level?: string): string[] {
  return messages
    .filter((m) => m.type === 'LOG' && (level === undefined || (m.log as { level?: string }).level === level))
    .map((m) => String((m.log as { message?: unknown }).message));
}

export interface StatusReason {
  readonly stream: string;
  readonly status: string;
  readonly quotaReset: number | undefined;
}

export function streamStatuses(messages: readonly Message[]): StatusReason[] {
  const out: StatusReason[] = [];
  for (const m of messages) {
    const trace = m.trace as { type?: string; stream_status?: { stream_descriptor: { name: string }; status: string; reasons?: { type: string; rate_limited?: { quota_reset?: number } }[] } } | undefined;
    if (m.type !== 'TRACE' || trace?.type !== 'STREAM_STATUS' || trace.stream_status === undefined) continue;
    const s = trace.stream_status;
    const limited = s.reasons?.find((r) => r.type === 'RATE_LIMITED');
    out.push({ stream: s.stream_descriptor.name, status: s.status, quotaReset: limited?.rate_limited?.quota_reset });
  }
  return out;
}

export interface RunSummary {
  readonly requests: number;
  readonly retries: number;
  readonly rateLimitWaits: number;
}

/** The connector's closing log line: requests, retries and rate-limit waits of the run. */
export function runSummary(messages: readonly Message[]): RunSummary | undefined {
  for (const line of logs(messages)) {
    const m = /requests: (\d+), retries: (\d+), rate-limit waits: (\d+)/.exec(line);
    if (m) return { requests: Number(m[1]), retries: Number(m[2]), rateLimitWaits: Number(m[3]) };
  }
  return undefined;
}

/**
 * What a destination would object to: lines that are not messages, and STATE
 * messages whose sourceStats.recordCount differs from the records of their
 * stream since the stream's previous STATE (a lost or reordered message).
 */
export function protocolProblems(run: Pick<ConnectorRun, 'messages' | 'badLines'>, label: string): string[] {
  const problems = run.badLines.map((l) => `${label}: a stdout line is not a protocol message: ${l.slice(0, 120)}`);
  const since = new Map<string, number>();
  for (const m of run.messages) {
    if (m.type === 'RECORD') {
      const r = m.record as { stream?: unknown; data?: unknown };
      const stream = String(r.stream);
      since.set(stream, (since.get(stream) ?? 0) + 1);
      if (typeof r.data !== 'object' || r.data === null || typeof (r.data as Row).id !== 'string') problems.push(`${label}: a ${stream} RECORD without a string id`);
    } else if (m.type === 'STATE') {
      const s = m.state as { stream?: { stream_descriptor?: { name?: string } }; sourceStats?: { recordCount?: number } };
      const stream = String(s.stream?.stream_descriptor?.name);
      const count = s.sourceStats?.recordCount;
      if (count !== (since.get(stream) ?? 0)) problems.push(`${label}: STATE of ${stream} counts ${String(count)} records, ${since.get(stream) ?? 0} were sent`);
      since.set(stream, 0);
    } else if (!['LOG', 'TRACE', 'SPEC', 'CATALOG', 'CONNECTION_STATUS'].includes(m.type)) {
      problems.push(`${label}: unexpected message type ${m.type}`);
    }
  }
  return problems;
}

/**
 * The Airbyte protocol checker (test/helpers/protocol/airbyte.ts: the
 * protocol schema, payloads, STREAM_STATUS order, STATE shape) over a
 * complete run's stdout, as problems. A checker that throws is a problem,
 * never a pass.
 */
export async function airbyteCheck(stdout: string, label: string): Promise<string[]> {
  try {
    const summary = await protocolCheckAsync('airbyte', stdout);
    return (summary.errors ?? []).map((e) => `${label}: airbyte-check: ${e}`);
  } catch (err) {
    return [`${label}: ${err instanceof Error ? err.message : String(err)}`];
  }
}

/** Where a killed run stopped, seen from its output. */
export function killPosition(run: ConnectorRun): 'before any record' | 'inside a page' | 'between pages' {
  if (run.partialLine) return 'inside a page';
  const last = [...run.messages].reverse().find((m) => m.type === 'RECORD' || m.type === 'STATE');
  if (last === undefined) return 'before any record';
  return last.type === 'RECORD' ? 'inside a page' : 'between pages';
}

// --- the lab: an emulator, accounts with canary keys, files ---------------------------------

export interface LabAccount {
  readonly id: string;
  readonly key: string;
  readonly keyId: string;
  readonly secrets: readonly string[];
}

export interface ReadOptions {
  readonly states?: StreamStates;
  readonly catalog?: string;
  readonly spawn?: Omit<SpawnOptions, 'secrets' | 'label'>;
  readonly label?: string;
}

export class Lab {
  readonly emu: Emulator;
  readonly dir: string;
  #files = 0;

  private constructor(emu: Emulator, dir: string) {
    this.emu = emu;
    this.dir = dir;
  }

  /** An emulator on 127.0.0.1 with request limits out of reach unless `options` give others (rate-limit scenarios set theirs per account). */
  static async start(options: EmulatorOptions = {}): Promise<Lab> {
    const emu = await startEmulator({ limits: LIMITS_OUT_OF_REACH, ...options, host: '127.0.0.1', port: 0 });
    return new Lab(emu, mkdtempSync(join(tmpdir(), 'sdr-reliability-')));
  }

  /** An account seeded with `contacts`, and a canary key. */
  account(options: { contacts: number; limits?: LimitOverrides; name?: string }): LabAccount {
    const acc = this.emu.control.createAccount({ name: options.name ?? `Reliability ${options.contacts}`, ...(options.limits ? { limits: options.limits } : {}) });
    if (options.contacts > 0) this.emu.control.seed(acc.id, { contacts: options.contacts });
    const key = this.emu.control.createKey(acc.id, { key: canaryKey() });
    return { id: acc.id, key: key.key, keyId: key.id, secrets: secretsOf(key.key) };
  }

  /** Write a file in the lab's directory: JSON for values, as is for strings. */
  file(name: string, value: unknown): string {
    const path = join(this.dir, `${this.#files++}-${name}`);
    writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
    return path;
  }

  config(acc: LabAccount, extra: Record<string, unknown> = {}): string {
    return this.file('config.json', { api_key: acc.key, base_url: this.emu.url, ...extra });
  }

  /** `read` with this account's canary key; states (when given) become the --state file. */
  read(acc: LabAccount, config: Record<string, unknown>, options: ReadOptions = {}): Promise<ConnectorRun> {
    const args = ['read', '--config', this.config(acc, config), '--catalog', options.catalog ?? FULL_CATALOG];
    if (options.states !== undefined && options.states.size > 0) args.push('--state', this.file('state.json', airbyteStateFile(options.states)));
    return runConnector(args, { ...options.spawn, secrets: acc.secrets, label: options.label ?? 'read' });
  }

  /** A configured catalog of some streams (incremental where they can be). */
  catalog(streams: readonly string[]): string {
    return this.file('catalog.json', {
      streams: streams.map((name) => {
        const def = STREAMS.find((s) => s.name === name);
        const incremental = def?.syncModes.includes('incremental') === true;
        return {
          stream: { name, json_schema: {}, supported_sync_modes: def?.syncModes ?? ['full_refresh'] },
          sync_mode: incremental ? 'incremental' : 'full_refresh',
          destination_sync_mode: incremental ? 'append_dedup' : 'overwrite',
        };
      }),
    });
  }

  /** Changes, new records and deletions, as a round of the service's life. */
  change(accountId: string, scale = 1): void {
    const c = this.emu.control;
    const n = (k: number): number => Math.max(1, Math.round(k * scale));
    c.advanceClock(60_000);
    c.mutate(accountId, { op: 'update_contacts', count: n(6) });
    c.mutate(accountId, { op: 'move_contacts', count: n(4) });
    c.mutate(accountId, { op: 'update_conversations', count: n(5), close: true, outcome: true });
    c.mutate(accountId, { op: 'create_contacts', count: n(4), withConversation: true });
    c.mutate(accountId, { op: 'delete_contacts', count: n(2) });
    c.mutate(accountId, { op: 'delete_conversations', count: n(2) });
    c.advanceClock(60_000);
  }

  dump(accountId: string): Dump {
    return this.emu.control.dump(accountId);
  }

  async close(): Promise<void> {
    await this.emu.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
