/** Running the real executables and the shared protocol checkers. */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ROOT } from '../../scripts/root.js';

export { ROOT };
export const SHARED = resolve(ROOT, '..', 'shared');
export const SOURCE_BIN = join(ROOT, 'bin', 'source-data-read');
export const TAP_BIN = join(ROOT, 'bin', 'tap-data-read');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Run an executable to completion (asynchronously, so an in-process emulator keeps serving). */
export function runCli(bin: string, args: readonly string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

/**
 * Run an executable and send it `signal` once its stdout has carried `count`
 * matches of `pattern` (by default STATE lines, Airbyte or Singer), or once
 * `trigger` resolves when given; the result as runCli's.
 */
export function runAndSignal(
  bin: string,
  args: readonly string[],
  options: { signal: NodeJS.Signals; count?: number; pattern?: RegExp; trigger?: Promise<unknown>; timeoutMs?: number },
): Promise<CliResult & { signalled: boolean }> {
  const pattern = new RegExp(options.pattern?.source ?? '"type":"STATE"', 'g');
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let seen = 0;
    let signalled = false;
    const send = (): void => {
      if (signalled || child.exitCode !== null || child.signalCode !== null) return;
      signalled = true;
      child.kill(options.signal);
    };
    void options.trigger?.then(send);
    child.stdout.on('data', (b: Buffer) => {
      out.push(b);
      seen += (b.toString('utf8').match(pattern) ?? []).length;
      if (options.trigger === undefined && seen >= (options.count ?? 1)) send();
    });
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, signalled, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

export function tempDir(prefix = 'sdr-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function writeJson(dir: string, name: string, value: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

/** The CONNECTION_STATUS of a `check`'s output (a LOG line, the schema drift, may come before it). */
export function connectionStatusOf(stdout: string): { status: string; message: string } {
  const message = parseLines(stdout).find((m) => m.type === 'CONNECTION_STATUS') as { connectionStatus: { status: string; message: string } } | undefined;
  if (message === undefined) throw new Error(`no CONNECTION_STATUS in: ${stdout.slice(0, 500)}`);
  return message.connectionStatus;
}

export type Checker = 'airbyte-check.py' | 'singer-check.py';

export interface CheckSummary {
  n_errors: number;
  errors: string[];
  messages?: Record<string, number>;
  records?: Record<string, number>;
  counts?: Record<string, number>;
  final_status?: Record<string, string>;
  last_state?: Record<string, unknown>;
  warnings?: string[];
}

/** The path of a shared checker; a missing one fails the test that needs it (never a silent pass). */
export function checkerPath(checker: Checker): string {
  const path = join(SHARED, 'tools', checker);
  if (!existsSync(path)) throw new Error(`The shared protocol checker ${path} is missing: a checkout of shared/ belongs beside this repository.`);
  return path;
}

/** Pipe protocol output through ../shared/tools/<checker>.py and return its JSON summary. */
export function protocolCheck(checker: Checker, stdout: string): CheckSummary {
  const run = spawnSync('python3', [checkerPath(checker)], { input: stdout, encoding: 'utf8', maxBuffer: 1 << 30 });
  if (run.error) throw run.error;
  return parseSummary(checker, run.stdout, run.stderr);
}

/** The same, without blocking the event loop (for tests whose emulator lives in this process). */
export function protocolCheckAsync(checker: Checker, stdout: string): Promise<CheckSummary> {
  const path = checkerPath(checker);
  return new Promise((resolvePromise, reject) => {
    const child = spawn('python3', [path], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', () => {
      try {
        resolvePromise(parseSummary(checker, Buffer.concat(out).toString('utf8'), Buffer.concat(err).toString('utf8')));
      } catch (e) {
        reject(e as Error);
      }
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdout);
  });
}

function parseSummary(checker: Checker, stdout: string, stderr: string): CheckSummary {
  try {
    return JSON.parse(stdout) as CheckSummary;
  } catch {
    throw new Error(`${checker} gave no summary: ${stderr.slice(0, 500)}`);
  }
}

export function parseLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
