/**
 * replicate's stop handler around the face's own (src/cli/stop-bridge.ts):
 * signals from an EventEmitter, the stop recorded instead of taken.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { StopBridge } from '../../src/cli/stop-bridge.js';
import type { StopSignal } from '../../src/process/interrupt.js';

function harness() {
  const signals = new EventEmitter();
  const stops: [StopSignal, number][] = [];
  const bridge = new StopBridge({ signals, stop: (signal, code) => stops.push([signal, code]) }).install();
  return { signals, stops, bridge };
}

describe('StopBridge', () => {
  it('stops the run (143 for SIGTERM, 130 for SIGINT) while the face has no handler of its own', () => {
    const h = harness();
    h.bridge.reportReady();
    h.signals.emit('SIGTERM', 'SIGTERM');
    h.signals.emit('SIGINT', 'SIGINT');
    expect(h.stops).toEqual([
      ['SIGTERM', 143],
      ['SIGINT', 130],
    ]);
  });

  it("leaves the signal to the face while its handlers are installed, and takes it back once they are removed (the face's last awaits done)", () => {
    const h = harness();
    h.bridge.reportReady();
    h.bridge.handOver(true);
    h.signals.emit('SIGTERM', 'SIGTERM');
    expect(h.stops).toEqual([]);
    h.bridge.handOver(false);
    h.signals.emit('SIGTERM', 'SIGTERM');
    expect(h.stops).toEqual([['SIGTERM', 143]]);
  });

  it('a signal before the run report exists (its start, the face loading) stops the run once the report is ready, so the summary says so', () => {
    const h = harness();
    h.signals.emit('SIGINT', 'SIGINT');
    h.signals.emit('SIGTERM', 'SIGTERM');
    expect(h.stops).toEqual([]);
    h.bridge.reportReady();
    expect(h.stops).toEqual([['SIGINT', 130]]);
  });

  it('uninstalled, it listens no more', () => {
    const h = harness();
    expect(h.signals.listenerCount('SIGTERM')).toBe(1);
    h.bridge.uninstall();
    expect(h.signals.listenerCount('SIGTERM')).toBe(0);
    expect(h.signals.listenerCount('SIGINT')).toBe(0);
  });
});
