/** Benchmark plumbing: measured child processes, the page server, files, statistics. */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

/** The repository root (this file runs from .build/bench/bench/). */
export const ROOT = resolve(import.meta.dirname, '..', '..', '..');
export const BENCH_DIST = import.meta.dirname;
/** The executable measured; BENCH_SOURCE_BIN compares another build (e.g. a checkout of an older commit). */
export const SOURCE_BIN = process.env.BENCH_SOURCE_BIN ?? join(ROOT, 'bin', 'source-data-read');
export const NODE = process.execPath;
export const API_KEY = 'bench_live_0123456789abcdef';
const TIME = '/usr/bin/time';
/** GNU time for peak RSS and CPU; BENCH_NO_TIME=1 tries the /proc polling fallback. */
export const HAS_TIME = existsSync(TIME) && process.env.BENCH_NO_TIME === undefined;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'sdr-bench-'));
}

export function writeJson(dir: string, name: string, value: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export interface Machine {
  readonly nproc: number;
  readonly cpu: string;
  readonly node: string;
  readonly os: string;
  readonly memTotal: string;
}

export function machine(): Machine {
  const nproc = Number(spawnSync('nproc', { encoding: 'utf8' }).stdout.trim()) || cpus().length;
  let cpu = cpus()[0]?.model ?? 'unknown';
  let memTotal = 'unknown';
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    cpu = /^model name\s*:\s*(.+)$/m.exec(info)?.[1]?.trim() ?? cpu;
    const kb = Number(/^MemTotal:\s*(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1]);
    if (kb > 0) memTotal = `${(kb / 1024 / 1024).toFixed(1)} GiB`;
  } catch {
    // not Linux: keep os.cpus()
  }
  return { nproc, cpu, node: process.version, os: `${process.platform} ${process.arch}`, memTotal };
}

export interface Measured {
  readonly code: number | null;
  readonly wallMs: number;
  /** Peak resident set size of the measured process, KiB (NaN when unknown). */
  readonly maxRssKb: number;
  /** User + system CPU time of the measured process, seconds (NaN when unknown). */
  readonly cpuSeconds: number;
  readonly stderr: string;
  readonly stdout: string;
}

export type StdoutMode = 'null' | 'slow' | 'capture';

/**
 * Whether `script` is an executable that has sh start Node (its second line:
 * `":" //; ... exec node FLAGS "$0" "$@"`, the Node flags and the malloc
 * setting users get from PATH and from the image): the bench runs it through
 * sh, as users do, with this Node first on PATH.
 */
export function isLauncher(script: string | undefined): boolean {
  if (script === undefined || !existsSync(script)) return false;
  return /^":" \/\/;.*\bexec node .*"\$0" "\$@"$/m.test(readFileSync(script, 'utf8'));
}

/**
 * Run `node ARGS` (an executable of bin/ through sh), stdout to /dev/null,
 * to a slow reader process, or captured; wall time measured around the whole
 * run, peak RSS by /usr/bin/time -v (or VmHWM polling when it is missing).
 */
export async function measure(args: readonly string[], stdout: StdoutMode, options: { slowReader?: readonly string[]; timeoutMs?: number } = {}): Promise<Measured> {
  const dir = tempDir();
  const timeFile = join(dir, 'time.txt');
  const q = (s: string): string => `'${s.replaceAll("'", "'\\''")}'`;
  const nodeCmd = [isLauncher(args[0]) ? 'sh' : NODE, ...args].map(q).join(' ');
  const timed = HAS_TIME ? `${TIME} -v -o ${q(timeFile)} ${nodeCmd}` : `exec ${nodeCmd}`;
  let script: string;
  if (stdout === 'null') script = `${timed} > /dev/null`;
  else if (stdout === 'slow') script = `${timed} | ${[NODE, join(BENCH_DIST, 'slow-reader.js'), ...(options.slowReader ?? [])].map(q).join(' ')}`;
  else script = timed;
  const started = process.hrtime.bigint();
  const child = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PATH: `${dirname(NODE)}${delimiter}${process.env.PATH ?? ''}` } });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (b: Buffer) => out.push(b));
  child.stderr.on('data', (b: Buffer) => err.push(b));
  let hwm = Number.NaN;
  let poller: NodeJS.Timeout | undefined;
  if (!HAS_TIME && stdout !== 'slow') {
    // Without /usr/bin/time the shell exec's node: poll its VmHWM.
    poller = setInterval(() => {
      try {
        const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
        const kb = Number(/^VmHWM:\s*(\d+)/m.exec(status)?.[1]);
        if (kb > 0 && !(kb <= hwm)) hwm = kb;
      } catch {
        // exited
      }
    }, 10);
  }
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 300_000);
  const code = await new Promise<number | null>((resolveCode) => child.on('close', (c) => resolveCode(c)));
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  clearTimeout(timer);
  if (poller) clearInterval(poller);
  let maxRssKb = hwm;
  let cpuSeconds = Number.NaN;
  let exit = code;
  if (HAS_TIME && existsSync(timeFile)) {
    const report = readFileSync(timeFile, 'utf8');
    maxRssKb = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(report)?.[1] ?? Number.NaN);
    cpuSeconds = Number(/User time \(seconds\): ([\d.]+)/.exec(report)?.[1]) + Number(/System time \(seconds\): ([\d.]+)/.exec(report)?.[1]);
    const status = /Exit status: (\d+)/.exec(report)?.[1];
    if (status !== undefined) exit = Number(status);
    if (/Command terminated by signal/.test(report)) exit = -1;
  }
  removeDir(dir);
  return { code: exit, wallMs, maxRssKb, cpuSeconds, stderr: Buffer.concat(err).toString('utf8'), stdout: Buffer.concat(out).toString('utf8') };
}

export interface ServerStats {
  readonly list: Record<string, number>;
  readonly other: Record<string, number>;
  readonly badRequests: number;
  readonly maxInFlight: number;
  readonly firstAt: number;
  readonly lastAt: number;
}

/** The pre-rendered page server, in its own process. */
export class PageServer {
  readonly url: string;
  readonly #stop: () => void;

  private constructor(url: string, stop: () => void) {
    this.url = url;
    this.#stop = stop;
  }

  static async start(): Promise<PageServer> {
    const child = spawn(NODE, [join(BENCH_DIST, 'server.js')], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout });
    const port = await new Promise<number>((resolvePort, reject) => {
      child.on('error', reject);
      child.on('exit', (c) => reject(new Error(`bench server exited (${c}) before listening`)));
      lines.once('line', (line) => resolvePort((JSON.parse(line) as { port: number }).port));
    });
    return new PageServer(`http://127.0.0.1:${port}`, () => {
      child.stdin.end();
      child.kill('SIGTERM');
    });
  }

  /** Serve `records` per path; `changedOf`: serve changed versions of records of a larger run (see server.ts). */
  async setup(records: Record<string, number>, delayMs = 0, changedOf?: Record<string, number>): Promise<void> {
    const res = await fetch(`${this.url}/__setup`, { method: 'POST', body: JSON.stringify({ records, delayMs, changedOf }) });
    if (!res.ok) throw new Error(`setup failed: ${res.status} ${await res.text()}`);
  }

  async stats(): Promise<ServerStats> {
    const res = await fetch(`${this.url}/__stats`);
    return (await res.json()) as ServerStats;
  }

  stop(): void {
    this.#stop();
  }
}

export function catalogFor(streams: readonly string[]): unknown {
  return {
    streams: streams.map((name) => ({
      stream: { name, json_schema: {}, supported_sync_modes: ['full_refresh', 'incremental'] },
      sync_mode: 'incremental',
      destination_sync_mode: 'append_dedup',
    })),
  };
}

/**
 * List requests a full read of `records` makes from the page server
 * (bench/server.ts, 200 a page): its pages, and for more than
 * one page the read from its watermark that follows it (the connector's
 * catch-up of what moved while it paged), which this server answers with an
 * empty page: nothing changes here once a read is served.
 */
export const listRequestsOf = (records: number): number => Math.max(1, Math.ceil(records / 200)) + (records > 200 ? 1 : 0);
