/** Running the real executables, and the protocol checkers their output must pass. */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../scripts/root.js';
import { checkAirbyte } from './protocol/airbyte.js';
import { checkSinger } from './protocol/singer.js';
import type { CheckSummary } from './protocol/summary.js';

export { ROOT };
export const SOURCE_BIN = join(ROOT, 'bin', 'source-data-read');
/** The emulator package's command (packages/emulator, built by `npm run build`). */
export const EMULATOR_BIN = join(ROOT, 'packages', 'emulator', 'bin', 'data-read-emulator');
export const TAP_BIN = join(ROOT, 'bin', 'tap-data-read');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Run an executable to completion (asynchronously, so an in-process emulator keeps serving). */
export function runCli(bin: string, args: readonly string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; uid?: number } = {}): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const as = options.uid === undefined ? {} : { uid: options.uid, gid: options.uid };
    const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'], ...as });
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
 * Run an executable and send it `signal` once its stdout (`on`: or its
 * stderr) has carried `count` matches of `pattern` (by default STATE lines,
 * Airbyte or Singer), or once `trigger` resolves when given; the result as
 * runCli's.
 */
export function runAndSignal(
  bin: string,
  args: readonly string[],
  options: { signal: NodeJS.Signals; count?: number; pattern?: RegExp; trigger?: Promise<unknown>; timeoutMs?: number; on?: 'stdout' | 'stderr' },
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
    // Matches are counted in whole lines: a pipe's chunks end anywhere (where they end depends on how fast each side
    // runs), and a match cut in two by a chunk's end would be counted in neither chunk.
    let partial = '';
    const watch = (b: Buffer): void => {
      const text = partial + b.toString('utf8');
      const end = text.lastIndexOf('\n') + 1;
      partial = text.slice(end);
      seen += (text.slice(0, end).match(pattern) ?? []).length;
      if (options.trigger === undefined && seen >= (options.count ?? 1)) send();
    };
    child.stdout.on('data', (b: Buffer) => {
      out.push(b);
      if ((options.on ?? 'stdout') === 'stdout') watch(b);
    });
    child.stderr.on('data', (b: Buffer) => {
      err.push(b);
      if (options.on === 'stderr') watch(b);
    });
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

/** The protocol checkers (test/helpers/protocol/), by the names tests call them. */
export type Checker = 'airbyte' | 'singer';

export type { CheckSummary };

const CHECKERS: Record<Checker, (stdout: string) => CheckSummary> = {
  'airbyte': checkAirbyte,
  'singer': checkSinger,
};

/** Check protocol output (Airbyte or Singer) and return its summary; `n_errors` 0 when it passes. */
export function protocolCheck(checker: Checker, stdout: string): CheckSummary {
  return CHECKERS[checker](stdout);
}

/** The same, after the event loop has had a turn (tests whose emulator lives in this process call this one). */
export function protocolCheckAsync(checker: Checker, stdout: string): Promise<CheckSummary> {
  return new Promise((resolvePromise, reject) => {
    setImmediate(() => {
      try {
        resolvePromise(protocolCheck(checker, stdout));
      } catch (e) {
        reject(e as Error);
      }
    });
  });
}

export function parseLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
