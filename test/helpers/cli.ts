/** Running the real executables and the shared protocol checkers. */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');
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

/** Pipe protocol output through ../shared/tools/<checker>.py and return its JSON summary. */
export function protocolCheck(checker: 'airbyte-check.py' | 'singer-check.py', stdout: string): CheckSummary {
  const run = spawnSync('python3', [join(SHARED, 'tools', checker)], { input: stdout, encoding: 'utf8', maxBuffer: 1 << 30 });
  if (run.error) throw run.error;
  return JSON.parse(run.stdout) as CheckSummary;
}

export function parseLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
