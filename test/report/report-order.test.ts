/**
 * A stream's end reaches the run report (and so Dagster Pipes) only after the
 * face has taken it: the tap writes the stream's final STATE in its
 * streamComplete, and Dagster must not hear of a materialization whose state
 * was never written. The real session, the real client, the emulator in process.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseUserConfig } from '../../src/config/config.js';
import type { SyncSink } from '../../src/engine/sync-sink.js';
import { RunRecorder } from '../../src/report/run-report.js';
import { SyncSession } from '../../src/engine/session.js';
import { startEmulator, type Emulator } from 'data-read-emulator';
import { STREAMS } from '../../src/streams.js';
import { LIMITS_OUT_OF_REACH } from '../helpers/emulator-runs.js';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ seed: 'pipes-order', limits: LIMITS_OUT_OF_REACH });
});
afterAll(async () => {
  await emu?.close();
});

it("tells the report of a completed stream after the face's streamComplete has finished", async () => {
  const account = emu.control.createAccount({ name: 'order' });
  const { key } = emu.control.createKey(account.id);
  emu.control.seed(account.id, { contacts: 20 });
  const { config } = parseUserConfig({ api_key: key, base_url: emu.url }, { addSecret: () => undefined }, {});
  const events: string[] = [];
  const recorder = new RunRecorder('sync', { version: 'test' });
  recorder.onStreamEnd((s) => events.push(`report ${s.name} ${s.status}`));
  const sink: SyncSink = {
    streamStarted: () => undefined,
    streamRunning: () => undefined,
    records: () => undefined,
    state: () => undefined,
    // As the tap's sink does: a write to stdout (awaited) before the completion is done.
    streamComplete: async (stream) => {
      await new Promise((resolve) => setImmediate(resolve));
      events.push(`face ${stream.name} complete`);
    },
    streamIncomplete: () => undefined,
    streamStopped: () => undefined,
    runFailed: () => undefined,
    log: () => undefined,
  };
  const session = await SyncSession.open(config, () => undefined, recorder);
  try {
    const result = await session.run({ streams: STREAMS.map((stream) => ({ stream, mode: 'full_refresh' as const })), states: new Map() }, sink);
    expect(result.failures).toEqual([]);
  } finally {
    await session.close();
  }
  expect(events).toHaveLength(STREAMS.length * 2);
  for (const stream of STREAMS) {
    const face = events.indexOf(`face ${stream.name} complete`);
    const report = events.indexOf(`report ${stream.name} complete`);
    expect({ stream: stream.name, face: face >= 0, reportAfterFace: report > face }).toEqual({ stream: stream.name, face: true, reportAfterFace: true });
  }
});
