/**
 * Stopping on SIGTERM/SIGINT, in-process (src/process/interrupt.ts): signals
 * from an EventEmitter, stdout and stderr as in-memory streams, exit recorded
 * instead of taken. One AbortSignal for the command: what listens to it
 * reacts, a command's last words (onStop) replace the generic message. The
 * real executables under real signals: test/e2e/all-faces/interrupt.test.ts.
 */
import { EventEmitter } from 'node:events';
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Interrupt, exitCodeFor, onStop, type StopSignal } from '../../src/runtime/interrupt.js';
import { LineWriter } from '../../src/runtime/output.js';
import { AirbyteSink } from '../../src/protocols/airbyte/sink.js';
import { STREAMS } from '../../src/streams.js';

/** Collects what is written, in order. */
function memory(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (b: Buffer) => chunks.push(b));
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

interface Harness {
  signals: EventEmitter;
  out: LineWriter;
  stdout: () => string;
  logs: string[];
  told: StopSignal[];
  exited: Promise<number>;
  exits: number[];
  interrupt: Interrupt;
}

/** An Interrupt installed on an EventEmitter; `lastWords`, when given, are the command's (written to stdout, said in `logs`). */
function harness(options: { stdout?: Writable; graceMs?: number; lastWords?: (signal: StopSignal) => { stdout: string; message: string } } = {}): Harness {
  const signals = new EventEmitter();
  const mem = memory();
  const out = new LineWriter(options.stdout ?? mem.stream);
  const logs: string[] = [];
  const told: StopSignal[] = [];
  const exits: number[] = [];
  let resolveExit: (code: number) => void = () => undefined;
  const exited = new Promise<number>((resolve) => (resolveExit = resolve));
  const interrupt = new Interrupt({
    out,
    log: (m) => logs.push(m),
    signals,
    stderr: new PassThrough(),
    graceMs: options.graceMs ?? 5000,
    onSignal: (signal) => told.push(signal),
    exit: (code) => {
      exits.push(code);
      resolveExit(code);
    },
  }).install();
  const { lastWords } = options;
  if (lastWords) {
    onStop(interrupt.signal, (signal) => {
      const words = lastWords(signal);
      void out.seal(words.stdout);
      logs.push(words.message);
    });
  }
  return { signals, out, stdout: mem.text, logs, told, exited, exits, interrupt };
}

const settled = async (p: Promise<unknown>): Promise<boolean> => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setTimeout(r, 20));
  return done;
};

describe('exit status', () => {
  it('is 128 + the signal number, as shells report it', () => {
    expect(exitCodeFor('SIGTERM')).toBe(143);
    expect(exitCodeFor('SIGINT')).toBe(130);
  });
});

describe('Interrupt', () => {
  it('on SIGTERM: the report told first, the signal aborted, the last words after what was written, later writes dropped, exit 143', async () => {
    const h = harness({ lastWords: (signal) => ({ stdout: `{"last":"${signal}"}\n`, message: `stopped by ${signal}` }) });
    const heard: unknown[] = [];
    h.interrupt.signal.addEventListener('abort', () => heard.push(h.told.length));
    await h.out.write('{"n":1}\n');
    expect(h.interrupt.signal.aborted).toBe(false);
    h.signals.emit('SIGTERM', 'SIGTERM');
    const late = h.out.write('{"n":2}\n');
    expect(await h.exited).toBe(143);
    expect(h.told).toEqual(['SIGTERM']);
    // What listens to the signal hears of the stop after the report was told.
    expect(heard).toEqual([1]);
    expect(h.stdout()).toBe('{"n":1}\n{"last":"SIGTERM"}\n');
    expect(h.logs).toEqual(['stopped by SIGTERM']);
    // The writer that came too late stalls: its promise never settles.
    expect(await settled(late)).toBe(false);
    expect(h.interrupt.signal.aborted).toBe(true);
  });

  it('on SIGINT exits 130 and says something even without last words', async () => {
    const h = harness();
    h.signals.emit('SIGINT', 'SIGINT');
    expect(await h.exited).toBe(130);
    expect(h.logs).toEqual(['Interrupted by SIGINT: stopped before the command finished.']);
    expect(h.stdout()).toBe('');
  });

  it('keeps lines queued behind a full pipe ahead of the last words', async () => {
    // A reader that takes one chunk at a time, late: writes pile up in the stream's buffer.
    const taken: string[] = [];
    const slow = new Writable({
      highWaterMark: 8,
      write(chunk: Buffer, _enc, done) {
        taken.push(chunk.toString('utf8'));
        setTimeout(done, 5);
      },
    });
    const h = harness({ stdout: slow, lastWords: () => ({ stdout: 'LAST\n', message: 'stopped' }) });
    const lines = ['aaaaaaaaa\n', 'bbbbbbbbb\n', 'ccccccccc\n']; // each over the pipe's 8 bytes: every write waits for 'drain'
    const pending = lines.map((l) => h.out.write(l));
    h.signals.emit('SIGTERM', 'SIGTERM');
    expect(await h.exited).toBe(143);
    expect(taken.join('')).toBe(`${lines.join('')}LAST\n`);
    await Promise.all(pending);
  });

  it('exits after the grace period when stdout never takes the last words', async () => {
    const stuck = new Writable({ highWaterMark: 1, write: () => undefined }); // never calls back
    const h = harness({ stdout: stuck, graceMs: 50, lastWords: () => ({ stdout: 'LAST\n', message: 'stopped' }) });
    h.signals.emit('SIGTERM', 'SIGTERM');
    expect(await h.exited).toBe(143);
    expect(h.exits).toEqual([143]);
  });

  it('a second signal exits at once, without waiting for the first to finish', async () => {
    const stuck = new Writable({ highWaterMark: 1, write: () => undefined });
    const h = harness({ stdout: stuck, graceMs: 60_000 });
    h.signals.emit('SIGTERM', 'SIGTERM');
    h.signals.emit('SIGINT', 'SIGINT');
    expect(await h.exited).toBe(130);
    expect(h.exits).toEqual([130]);
    expect(h.told).toEqual(['SIGTERM']);
  });

  it('stops even when the last words throw: the generic message instead', async () => {
    const h = harness({
      lastWords: () => {
        throw new Error('boom');
      },
    });
    h.signals.emit('SIGTERM', 'SIGTERM');
    expect(await h.exited).toBe(143);
    expect(h.logs).toEqual(['Interrupted by SIGTERM: stopped before the command finished.']);
  });

  it('last words removed, or set after the stop, are not said: the generic message is', async () => {
    const h = harness();
    const said: string[] = [];
    const remove = onStop(h.interrupt.signal, () => said.push('removed'));
    remove();
    h.signals.emit('SIGTERM', 'SIGTERM');
    onStop(h.interrupt.signal, () => said.push('late'));
    expect(await h.exited).toBe(143);
    expect(said).toEqual([]);
    expect(h.logs).toEqual(['Interrupted by SIGTERM: stopped before the command finished.']);
    // Only the stop's own abort counts: another abort reason is not a stop signal.
    const other = new AbortController();
    onStop(other.signal, () => said.push('other'));
    other.abort();
    expect(said).toEqual([]);
  });

  it('uninstall removes its listeners; install is idempotent', () => {
    const h = harness();
    h.interrupt.install();
    expect(h.signals.listenerCount('SIGTERM')).toBe(1);
    expect(h.signals.listenerCount('SIGINT')).toBe(1);
    h.interrupt.uninstall();
    expect(h.signals.listenerCount('SIGTERM')).toBe(0);
    expect(h.signals.listenerCount('SIGINT')).toBe(0);
  });
});

describe('AirbyteSink.interrupted', () => {
  it('closes every open stream INCOMPLETE, then one transient ERROR trace; finished streams stay as they were', async () => {
    const mem = memory();
    const sink = new AirbyteSink(new LineWriter(mem.stream), (t) => t.split('secret-key').join('***'));
    const [contacts, conversations, stages] = [STREAMS[0], STREAMS[1], STREAMS[4]];
    if (!contacts || !conversations || !stages) throw new Error('streams table changed');
    for (const s of [contacts, conversations, stages]) await sink.streamStarted(s);
    await sink.streamComplete(stages);
    const words = sink.interrupted('SIGTERM');
    const lines = words.lines.trimEnd().split('\n').map((l) => JSON.parse(l) as { trace: Record<string, unknown> });
    expect(lines.map((l) => (l.trace.stream_status as { status?: string } | undefined)?.status ?? l.trace.type)).toEqual(['INCOMPLETE', 'INCOMPLETE', 'ERROR']);
    expect(lines.slice(0, 2).map((l) => (l.trace.stream_status as { stream_descriptor: { name: string } }).stream_descriptor.name)).toEqual([
      contacts.name,
      conversations.name,
    ]);
    const error = lines[2]?.trace.error as { failure_type: string; message: string };
    expect(error.failure_type).toBe('transient_error');
    expect(error.message).toMatch(/interrupted \(SIGTERM\).*contacts, conversations.*safe to resume/);
    expect(words.message).toBe(error.message);
    // Asked twice (a second signal), nothing is closed twice.
    expect(sink.interrupted('SIGINT').lines.split('\n').filter(Boolean)).toHaveLength(1);
  });
});
