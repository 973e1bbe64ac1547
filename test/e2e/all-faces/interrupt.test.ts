/**
 * SIGTERM and SIGINT to the real executables in the middle of a sync (what
 * `docker stop`, an Airbyte cancel or Ctrl-C sends), against the real
 * emulator with some latency so that the sync is still running: the process
 * ends by its own handler (exit 143 / 130, not killed by the signal), its
 * stdout is whole protocol lines that pass the protocol checker, and a run
 * resumed from the last STATE it wrote completes the replica exactly. Needs
 * `npm run build`.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from 'data-read-emulator';
import { ROOT, SOURCE_BIN, TAP_BIN, parseLines, protocolCheck, runAndSignal, runCli, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';
import { MemoryDestination, airbyteStateFile, normalizeDump } from '../../helpers/destination.js';
import { LIMITS_OUT_OF_REACH } from '../../helpers/emulator-runs.js';

const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');
let emu: Emulator;
const dir = tempDir('sdr-interrupt-');

beforeAll(async () => {
  // 40 ms per response: a read of a few hundred small pages lasts seconds, long enough to be interrupted.
  emu = await startEmulator({ seed: 'interrupt', latencyMs: 40, limits: LIMITS_OUT_OF_REACH });
});
afterAll(async () => {
  await emu?.close();
});

let accounts = 0;
function account(contacts: number, limits?: Record<string, number>): { id: string; key: string; config: string } {
  const acc = emu.control.createAccount({ name: `interrupt ${++accounts}`, ...(limits ? { limits } : {}) });
  emu.control.seed(acc.id, { contacts });
  const { key } = emu.control.createKey(acc.id);
  const config = writeJson(dir, `config-${accounts}.json`, { api_key: key, base_url: emu.url, page_size: 20, max_concurrent_requests: 2 });
  return { id: acc.id, key, config };
}

function lastLine(stdout: string): Record<string, unknown> {
  const lines = parseLines(stdout);
  return lines[lines.length - 1] ?? {};
}

/**
 * Run `bin` with its stdout left unread (the pipe fills, the connector waits
 * on it), send SIGTERM `stallMs` after its first output, and read stdout to
 * its end only `busyMs` later: a reader that is busy (a destination loading a
 * batch), not gone; or, `thenGone`, close it then unread. `killed`: still
 * running after 20 s. Timed from the first output, not from the start: on a
 * busy machine the start alone can take longer than `stallMs`.
 */
function runStoppedWhileReaderBusy(bin: string, args: readonly string[], o: { stallMs: number; busyMs: number; thenGone?: boolean }): Promise<CliResult & { killed: boolean }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let reading = false;
    const take = (): void => {
      if (reading) for (let chunk = child.stdout.read() as Buffer | null; chunk !== null; chunk = child.stdout.read() as Buffer | null) out.push(chunk);
    };
    let stop: NodeJS.Timeout | undefined;
    let read: NodeJS.Timeout | undefined;
    // Paused mode: nothing is read from the pipe beyond the stream's buffer until `take` reads (and nothing is lost at the exit).
    child.stdout.on('readable', () => {
      if (stop === undefined) {
        stop = setTimeout(() => child.kill('SIGTERM'), o.stallMs);
        read = setTimeout(() => {
          if (o.thenGone === true) child.stdout.destroy();
          reading = true;
          take();
        }, o.stallMs + o.busyMs);
      }
      take();
    });
    child.stderr.on('data', (b: Buffer) => err.push(b));
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, 20_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      for (const t of [stop, read, timer]) clearTimeout(t);
      reading = !child.stdout.destroyed;
      take();
      resolvePromise({ code, signal, killed, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

/** The signals that stop a sync, each with the exit status it ends with (128 + its number). */
const SIGNALS = [
  ['SIGTERM', 143],
  ['SIGINT', 130],
] as const;

// Each case has an account (or a server) of its own and waits on the emulator's latency or on its signal most of the
// time: the cases, and the three groups, run together.
describe.concurrent('source-data-read read, interrupted', () => {
  it.each(SIGNALS)('%s mid-sync: INCOMPLETE streams and a transient ERROR trace, exit %i; resuming from the states loses nothing', async (signal, code) => {
    const acc = account(400);
    const stopped = await runAndSignal(SOURCE_BIN, ['read', '--config', acc.config, '--catalog', CATALOG], { signal, count: 3 });
    expect(stopped.signalled).toBe(true);
    // Ended by its handler (an exit status), not by the signal's default action.
    expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code, signal: null });
    const summary = protocolCheck('airbyte', stopped.stdout);
    expect(summary.errors).toEqual([]);
    expect(Object.values(summary.final_status ?? {})).toContain('INCOMPLETE');
    const last = lastLine(stopped.stdout) as { type: string; trace?: { type: string; error?: { failure_type: string; message: string } } };
    expect(last.type).toBe('TRACE');
    expect(last.trace?.type).toBe('ERROR');
    expect(last.trace?.error?.failure_type).toBe('transient_error');
    expect(last.trace?.error?.message).toContain(`interrupted (${signal})`);
    expect(stopped.stderr).toContain(`interrupted (${signal})`);
    expect(stopped.stdout + stopped.stderr).not.toContain(acc.key);

    const replica = new MemoryDestination();
    const states = replica.applyAirbyte(stopped.stdout);
    const resumedStreams = [...states].filter(([, s]) => typeof s === 'object' && s !== null && 'resume' in s).map(([name]) => name);
    expect(resumedStreams.length).toBeGreaterThan(0);
    const resumed = await runCli(SOURCE_BIN, ['read', '--config', acc.config, '--catalog', CATALOG, '--state', writeJson(dir, `state-${signal}.json`, airbyteStateFile(states))]);
    expect(resumed.code).toBe(0);
    expect(protocolCheck('airbyte', resumed.stdout).errors).toEqual([]);
    replica.applyAirbyte(resumed.stdout);
    const dump = emu.control.dump(acc.id);
    expect(replica.toDump()).toEqual(normalizeDump(dump));
    // The resumed run continued where the checkpoint was, instead of starting over.
    const stream = resumedStreams[0] as keyof typeof dump;
    const reread = parseLines(resumed.stdout).filter((l) => l.type === 'RECORD' && (l.record as { stream: string }).stream === stream).length;
    expect(reread).toBeLessThan(dump[stream].length);
  });


  it('SIGTERM while waiting on a rate limit ends the wait at once', async () => {
    // 4 requests per minute, 3 of them spent by another client of the key: the sync's first request takes the
    // last one, and its next waits for the window's end (about a minute) and says so. (Alone on a fresh key, the
    // connector would spread the 4 over the minute before it ever waited on the limit.)
    const acc = account(200, { perMinute: 4, windowMs: 60_000 });
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${emu.url}/v1/me`, { headers: { authorization: `Bearer ${acc.key}` } });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    const stopped = await runAndSignal(SOURCE_BIN, ['read', '--config', acc.config, '--catalog', CATALOG], {
      signal: 'SIGTERM',
      count: 1,
      pattern: /"RATE_LIMITED"/,
      timeoutMs: 45_000, // shorter than the wait: a process that ignored SIGTERM would be SIGKILLed here
    });
    expect(stopped.signalled).toBe(true);
    expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code: 143, signal: null });
    expect(protocolCheck('airbyte', stopped.stdout).errors).toEqual([]);
    expect((lastLine(stopped.stdout) as { trace?: { type: string } }).trace?.type).toBe('ERROR');
  });

  it('check also ends on SIGTERM with exit 143 (in a container, PID 1 has no default action for it)', async () => {
    // A service that accepts the connection and never answers: check would wait out its request timeout (60 s).
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    try {
      const { port } = silent.address() as { port: number };
      const config = writeJson(dir, 'config-silent.json', { api_key: 'drk_live_0123456789abcdef0123456789abcdef', base_url: `http://127.0.0.1:${port}` });
      const stopped = await runAndSignal(SOURCE_BIN, ['check', '--config', config], { signal: 'SIGTERM', trigger: once(silent, 'connection'), timeoutMs: 45_000 });
      expect(stopped.signalled).toBe(true);
      expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code: 143, signal: null });
      expect(stopped.stderr).toMatch(/Interrupted by SIGTERM/);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });
});

describe.concurrent('tap-data-read sync, interrupted', () => {
  it.each(SIGNALS)('%s mid-sync: ends with a STATE of what was checkpointed, exit %i; resuming from it completes the replica', async (signal, code) => {
    const acc = account(400);
    const stopped = await runAndSignal(TAP_BIN, ['--config', acc.config], { signal, count: 3 });
    expect(stopped.signalled).toBe(true);
    expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code, signal: null });
    const summary = protocolCheck('singer', stopped.stdout);
    expect(summary.errors).toEqual([]);
    expect(lastLine(stopped.stdout).type).toBe('STATE');
    expect(stopped.stderr).toMatch(new RegExp(`CRITICAL tap-data-read: Interrupted by ${signal}`));
    expect(stopped.stdout + stopped.stderr).not.toContain(acc.key);

    const replica = new MemoryDestination();
    const state = replica.applySinger(stopped.stdout);
    expect(state?.currently_syncing).not.toBeNull();
    const resumed = await runCli(TAP_BIN, ['--config', acc.config, '--state', writeJson(dir, `tap-state-${signal}.json`, state ?? {})]);
    expect(resumed.code).toBe(0);
    expect(protocolCheck('singer', resumed.stdout).errors).toEqual([]);
    replica.applySinger(resumed.stdout);
    const dump = emu.control.dump(acc.id);
    for (const stream of ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages'] as const) {
      expect({ stream, rows: replica.rows(stream) }).toEqual({ stream, rows: dump[stream] });
    }
  });
});

// Each case waits on its connector process most of the time (the stall, the busy reader): they run together.
describe.concurrent('stopped while the reader of stdout is busy, or gone', () => {
  it('read: SIGTERM while the reader of stdout is busy: it is waited for, the output ends with whole lines and the ERROR trace', async () => {
    const acc = account(3000);
    const config = writeJson(dir, 'config-slow-reader.json', { api_key: acc.key, base_url: emu.url, page_size: 200 });
    const stopped = await runStoppedWhileReaderBusy(SOURCE_BIN, ['read', '--config', config, '--catalog', CATALOG], { stallMs: 1500, busyMs: 4000 });
    expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code: 143, signal: null });
    expect(stopped.stdout.endsWith('\n')).toBe(true);
    expect(protocolCheck('airbyte', stopped.stdout).errors).toEqual([]);
    const last = lastLine(stopped.stdout) as { trace?: { type: string; error?: { message: string } } };
    expect(last.trace?.type).toBe('ERROR');
    expect(last.trace?.error?.message).toContain('interrupted (SIGTERM)');
  });

  it('read: SIGTERM, then the busy reader of stdout goes away: the process ends at once, without waiting out its grace', async () => {
    const acc = account(3000);
    const config = writeJson(dir, 'config-gone-reader.json', { api_key: acc.key, base_url: emu.url, page_size: 200 });
    const stopped = await runStoppedWhileReaderBusy(SOURCE_BIN, ['read', '--config', config, '--catalog', CATALOG], { stallMs: 1500, busyMs: 1000, thenGone: true });
    // The grace is 25 s; the helper kills what still runs 20 s after the start.
    expect(stopped.killed).toBe(false);
    expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code: 143, signal: null });
    expect(stopped.stderr).toContain('interrupted (SIGTERM)');
  });

  it('the tap: SIGTERM while the reader of stdout is busy: it is waited for, the output ends with whole lines and the final STATE', async () => {
    const acc = account(3000);
    const config = writeJson(dir, 'config-tap-slow-reader.json', { api_key: acc.key, base_url: emu.url, page_size: 200 });
    const stopped = await runStoppedWhileReaderBusy(TAP_BIN, ['--config', config], { stallMs: 1500, busyMs: 4000 });
    expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code: 143, signal: null });
    expect(stopped.stdout.endsWith('\n')).toBe(true);
    expect(protocolCheck('singer', stopped.stdout).errors).toEqual([]);
    expect(lastLine(stopped.stdout).type).toBe('STATE');
  });
});
