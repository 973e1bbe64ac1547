/** Helpers of the replica's end-to-end tests: an emulator account, replicate runs (and kills), comparisons. */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startEmulator, Prng, type Emulator, type Dump, type Mutation } from 'data-read-emulator';
import { replicaRecords } from '../../src/replica/records.js';
import { ROOT, SOURCE_BIN, writeJson } from './cli.js';

export const LISTS = ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages'] as const;

export function requireBuild(): void {
  if (!existsSync(join(ROOT, 'dist', 'replica', 'command.js'))) {
    throw new Error('dist/ has no replica: run `npm run build` before the end-to-end tests');
  }
}

export interface Account {
  readonly emulator: Emulator;
  readonly accountId: string;
  readonly key: string;
  /** A config file for this account. */
  config(dir: string, extra?: Record<string, unknown>): string;
  mutate(m: Mutation): void;
  dump(): Dump;
}

/**
 * Request limits no test reaches, for emulators whose tests are not about rate limits. Under the emulator's
 * default (1000 a minute) the connector's pacer spreads a run's requests over the minute, one every 60 ms
 * (src/client/pacer.ts), and a test would spend most of its time waiting through that spread; on a shared key
 * a later run even waits for the window to end. Tests of pacing and limits set their own, per account or key
 * (they override these). With a frozen clock the windows never reset: these limits are out of reach then too.
 */
export const LIMITS_OUT_OF_REACH = { perMinute: 10_000_000, perDay: 100_000_000 } as const;

export async function emulatorAccount(contacts: number, seed = 11): Promise<Account> {
  // A frozen clock: reproducible data, and no deletion crossing the 90-day retention mid-test. Rate-limit
  // windows follow that clock and would never reset, so the limits are set out of reach.
  const emulator = await startEmulator({ host: '127.0.0.1', port: 0, seed, frozenClock: true, limits: LIMITS_OUT_OF_REACH });
  const control = emulator.control;
  const account = control.createAccount({ name: 'Replica test' });
  const key = control.createKey(account.id).key;
  control.seed(account.id, { contacts });
  return {
    emulator,
    accountId: account.id,
    key,
    config: (dir, extra = {}) =>
      writeJson(dir, 'config.json', { api_key: key, base_url: emulator.url, page_size: 100, max_concurrent_requests: 4, ...extra }),
    mutate: (m) => void control.mutate(account.id, m),
    dump: () => control.dump(account.id),
  };
}

/** A round of everything that can happen to an account: changes, moves, arrivals, deletions. */
export function changeRound(account: Account, scale = 1): void {
  const n = (k: number) => Math.max(1, Math.round(k * scale));
  account.mutate({ op: 'update_contacts', count: n(20) });
  account.mutate({ op: 'update_conversations', count: n(20), outcome: true });
  account.mutate({ op: 'move_contacts', count: n(10) });
  account.mutate({ op: 'create_contacts', count: n(15), withConversation: true });
  account.mutate({ op: 'create_conversations', count: n(5) });
  account.mutate({ op: 'delete_contacts', count: n(5) });
  account.mutate({ op: 'delete_conversations', count: n(5) });
}

/** The replica as records, in the dump's shape and order (each list by id). */
export function replicaAsDump(dbPath: string): Record<string, unknown[]> {
  const records = replicaRecords(dbPath);
  const out: Record<string, unknown[]> = {};
  for (const list of LISTS) out[list] = records.get(list) ?? [];
  return out;
}

export function dumpLists(dump: Dump): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const list of LISTS) out[list] = dump[list];
  return out;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  killed: boolean;
}

export interface RunOptions {
  /** SIGKILL after this many ms. */
  readonly killAfterMs?: number;
  /** SIGKILL once stderr has carried this many bytes. */
  readonly killAfterStderrBytes?: number;
  /** SIGKILL once `served()` (an in-process emulator's count of the requests it received, asked every 5 ms) reaches `at`. */
  readonly killAtServed?: { readonly served: () => number; readonly at: number };
  readonly env?: NodeJS.ProcessEnv;
  readonly timeoutMs?: number;
  /** Told the stderr carried so far, at each chunk (to start something once the run says a line). */
  readonly onStderr?: (stderr: string) => void;
  /** SIGKILL once this says yes to the stderr carried so far (asked at each chunk). */
  readonly killWhen?: (stderr: string) => boolean;
  /** More arguments after `--db` (`--summary FILE`). */
  readonly args?: readonly string[];
}

/** Run `source-data-read replicate`, maybe killing it with SIGKILL part-way. */
export function replicate(configPath: string, dbPath: string, options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SOURCE_BIN, 'replicate', '--config', configPath, '--db', dbPath, ...(options.args ?? [])], {
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let errBytes = 0;
    let killed = false;
    const kill = () => {
      if (child.exitCode === null && child.signalCode === null) {
        killed = child.kill('SIGKILL');
      }
    };
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => {
      err.push(b);
      errBytes += b.length;
      if (options.killAfterStderrBytes !== undefined && errBytes >= options.killAfterStderrBytes) kill();
      if (options.onStderr || options.killWhen) {
        const text = Buffer.concat(err).toString('utf8');
        options.onStderr?.(text);
        if (options.killWhen?.(text)) kill();
      }
    });
    const killTimer = options.killAfterMs === undefined ? undefined : setTimeout(kill, options.killAfterMs);
    const atServed = options.killAtServed;
    const servedPoll = atServed === undefined ? undefined : setInterval(() => (atServed.served() >= atServed.at ? kill() : undefined), 5);
    const guard = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      if (killTimer) clearTimeout(killTimer);
      if (servedPoll) clearInterval(servedPoll);
      resolve({ code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), killed: killed && signal === 'SIGKILL' });
    });
  });
}

/** A seeded PRNG (the emulator's), so a failing kill schedule can be replayed. */
export function prng(seed: number): () => number {
  const p = new Prng(seed);
  return () => p.float();
}
