/**
 * `--config`, `--catalog` and `--state` naming a pipe: a named pipe (mkfifo:
 * a secret an orchestrator hands over) or a shell's process substitution
 * (`--config <(...)`). Read when a process writes it, as a file is; while no
 * process does, SIGTERM and SIGINT still stop the run (143, 130), saying which
 * file it was waiting for, where a read that blocked the process would wait
 * forever, deaf to the signal.
 *
 * The run is known to wait on the pipe when one of its threads sleeps in the
 * kernel's wait for a writer (Linux's /proc: wchan `wait_for_partner`), or,
 * for a writer that opened the pipe and writes nothing, once that writer's
 * open returned (a reader, the run, is there).
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, SOURCE_BIN, TAP_BIN, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';

const dir = tempDir('pipe-inputs-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A service that cannot be reached (a closed port) and no retry: a run that read its files ends at once, 75. */
const DOWN = { api_key: 'drk_live_pipeInputsTestKey12345', base_url: 'http://127.0.0.1:9', max_retries: 0 };
const config = writeJson(dir, 'down.json', DOWN);
const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');

let pipes = 0;
function fifo(): string {
  const path = join(dir, `pipe-${++pipes}`);
  execFileSync('mkfifo', [path]);
  return path;
}

/** Resolves once a thread of process `pid` waits in the kernel for a writer of a named pipe (polled: no time is measured). */
async function waitingForWriter(pid: number): Promise<void> {
  for (;;) {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      return; // gone: the result says how it ended
    }
    for (const task of tasks) {
      try {
        if (readFileSync(`/proc/${pid}/task/${task}/wchan`, 'utf8') === 'wait_for_partner') return;
      } catch {
        // a thread that ended meanwhile
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Runs `bin` with `args`, sends it `signal` once `ready` resolves; a guard (SIGKILL after 60 s) ends a run that never would. */
function runStopped(bin: string, args: readonly string[], signal: NodeJS.Signals, ready: (child: ChildProcess) => Promise<void>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code, by) => {
      clearTimeout(guard);
      resolve({ code, signal: by, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
    void ready(child).then(() => child.kill(signal));
  });
}

const waiting = (child: ChildProcess): Promise<void> => waitingForWriter(child.pid!);

describe.runIf(process.platform === 'linux')('a named pipe no process writes', () => {
  const cases: [string, string, (pipe: string) => string[], string, string][] = [
    ['read --config', SOURCE_BIN, (p) => ['read', '--config', p, '--catalog', CATALOG], 'config', 'ERROR source-data-read'],
    ['read --catalog', SOURCE_BIN, (p) => ['read', '--config', config, '--catalog', p], 'catalog', 'ERROR source-data-read'],
    ['read --state', SOURCE_BIN, (p) => ['read', '--config', config, '--catalog', CATALOG, '--state', p], 'state', 'ERROR source-data-read'],
    ['check --config', SOURCE_BIN, (p) => ['check', '--config', p], 'config', 'ERROR source-data-read'],
    ['replicate --config', SOURCE_BIN, (p) => ['replicate', '--config', p, '--db', join(dir, 'never.db')], 'config', 'ERROR source-data-read'],
    ['the tap --config', TAP_BIN, (p) => ['--config', p], 'config', 'CRITICAL tap-data-read'],
    ['the tap --catalog', TAP_BIN, (p) => ['--config', config, '--catalog', p], 'catalog', 'CRITICAL tap-data-read'],
    ['the tap --state', TAP_BIN, (p) => ['--config', config, '--state', p], 'state', 'CRITICAL tap-data-read'],
  ];

  it.each(cases)('%s: SIGTERM stops it (143), naming the file it waits for', async (_name, bin, args, what, logger) => {
    const pipe = fifo();
    const run = await runStopped(bin, args(pipe), 'SIGTERM', waiting);
    expect(run.signal, run.stderr).toBeNull();
    expect(run.code, run.stderr).toBe(143);
    expect(run.stderr).toContain(`${logger}: Interrupted by SIGTERM while waiting for a process to write the ${what} file "${pipe}" (a pipe): nothing was read from it.`);
    expect(run.stderr).not.toMatch(/\n\s+at |AbortError|Unexpected error/);
    expect(run.stdout).not.toContain(DOWN.api_key);
  });

  it('SIGINT too (130), with the summary saying the run was interrupted', async () => {
    const pipe = fifo();
    const summary = join(dir, 'interrupted.json');
    const run = await runStopped(TAP_BIN, ['--config', pipe, '--summary', summary], 'SIGINT', waiting);
    expect(run.code, run.stderr).toBe(130);
    expect(run.stderr).toContain(`Interrupted by SIGINT while waiting for a process to write the config file "${pipe}" (a pipe)`);
    expect(JSON.parse(readFileSync(summary, 'utf8'))).toMatchObject({ command: 'sync', status: 'interrupted', exit_code: 130 });
  });

  it('a writer that opened it and writes nothing: SIGTERM stops the run all the same', async () => {
    const pipe = fifo();
    // The writer's open returns once a reader, the run, has the pipe open; it then holds the pipe open, silent.
    const writer = spawn('sh', ['-c', 'exec 3>"$0"; echo opened; exec sleep 600', pipe], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const opened = new Promise<void>((resolve) => writer.stdout.once('data', () => resolve()));
      const run = await runStopped(SOURCE_BIN, ['check', '--config', pipe], 'SIGTERM', () => opened);
      expect(run.code, run.stderr).toBe(143);
      expect(run.stderr).toContain(`Interrupted by SIGTERM while waiting for a process to write the config file "${pipe}" (a pipe)`);
    } finally {
      writer.kill('SIGKILL');
    }
  });
});

describe.runIf(process.platform === 'linux')('a pipe a process writes', () => {
  it('named pipes, written before or after the run opens them: read as files (the run goes on to the service: 75)', async () => {
    const [configPipe, catalogPipe, statePipe] = [fifo(), fifo(), fifo()];
    // Writers that wait for the run (their open returns once it reads), and the config written once the run waits for it.
    const writers = [
      spawn('sh', ['-c', 'cat "$1" > "$0"', catalogPipe, CATALOG], { stdio: 'ignore' }),
      spawn('sh', ['-c', 'printf "[]" > "$0"', statePipe], { stdio: 'ignore' }),
    ];
    try {
      const run = await runStopped(SOURCE_BIN, ['read', '--config', configPipe, '--catalog', catalogPipe, '--state', statePipe], 'SIGKILL', async (child) => {
        await waiting(child);
        writeFileSync(configPipe, JSON.stringify(DOWN));
        return new Promise<void>(() => undefined); // no signal: the run ends on its own
      });
      expect(run.code, run.stderr).toBe(75);
      expect(run.stdout).toContain('Cannot reach the Data-Read API at http://127.0.0.1:9');
    } finally {
      for (const writer of writers) writer.kill('SIGKILL');
    }
  });

  it("a shell's process substitution (--config <(...)): read as a file", () => {
    const check = spawnSync('bash', ['-c', 'exec "$0" "$1" check --config <(cat "$2")', process.execPath, SOURCE_BIN, config], { encoding: 'utf8' });
    expect(check.status, check.stderr).toBe(0);
    expect(check.stdout).toContain('Cannot reach the Data-Read API at http://127.0.0.1:9');
    const tap = spawnSync('bash', ['-c', 'exec "$0" "$1" --config <(cat "$2") --state <(echo "{}")', process.execPath, TAP_BIN, config], { encoding: 'utf8' });
    expect(tap.status, tap.stderr).toBe(75);
    expect(tap.stderr).toContain('Cannot reach the Data-Read API at http://127.0.0.1:9');
  });
});

/**
 * `--config /dev/stdin` where standard input is a socket: a process started by Node.js (child_process, execa) with its
 * stdin a pipe gets one end of a socket pair, which an open by name cannot reach (ENXIO). Read through the run's own
 * standard input instead, waited for as a pipe is.
 */
describe.runIf(process.platform === 'linux')('--config /dev/stdin, standard input a socket', () => {
  /** Runs `check --config /dev/stdin` with a socket for stdin, which `feed` writes (or not). */
  function checkFromSocket(feed: (child: ChildProcess) => Promise<void>, signal?: NodeJS.Signals): Promise<CliResult> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [SOURCE_BIN, 'check', '--config', '/dev/stdin'], { stdio: ['pipe', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout!.on('data', (b: Buffer) => out.push(b));
      child.stderr!.on('data', (b: Buffer) => err.push(b));
      const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.on('error', reject);
      child.on('close', (code, by) => {
        clearTimeout(guard);
        resolve({ code, signal: by, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
      });
      void feed(child).then(() => signal !== undefined && child.kill(signal));
    });
  }

  it('is read to its end, as a file is', async () => {
    const run = await checkFromSocket(async (child) => void child.stdin!.end(JSON.stringify(DOWN)));
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('Cannot reach the Data-Read API at http://127.0.0.1:9');
    expect(run.stdout).not.toContain('ENXIO');
  });

  it('left silent: SIGTERM stops the run (143), naming it', async () => {
    // The run reads its stdin once its descriptor is made non-blocking (Node's stream of it): polled, no time measured.
    const reading = async (child: ChildProcess): Promise<void> => {
      for (;;) {
        try {
          const flags = /^flags:\s+(\d+)/m.exec(readFileSync(`/proc/${child.pid}/fdinfo/0`, 'utf8'))?.[1];
          if (flags !== undefined && (parseInt(flags, 8) & 0o4000) !== 0) return;
        } catch {
          return; // gone: the result says how it ended
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const run = await checkFromSocket(reading, 'SIGTERM');
    expect(run.code, run.stderr).toBe(143);
    expect(run.stderr).toContain('Interrupted by SIGTERM while waiting for the end of the config file "/dev/stdin" (standard input): nothing was read from it.');
    expect(run.stderr).not.toMatch(/\n\s+at |ENXIO/);
  });
});
