/**
 * The Airbyte sink's order of a stream's messages (src/protocols/airbyte/sink.ts):
 * STARTED, RUNNING, then its records, whoever sends them first: the
 * stream's own read, or the deletion log's tombstones, which reach contacts
 * and conversations before their own read has begun.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AirbyteSink } from '../../../src/protocols/airbyte/sink.js';
import { LineWriter } from '../../../src/runtime/output.js';
import { findStream, type StreamDefinition } from '../../../src/streams.js';

/** A sink on an in-memory stdout, and what it wrote, one word a line: the status, or RECORD. */
function sinkOnMemory(): { sink: AirbyteSink; out: LineWriter; kinds: () => string[] } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (b: Buffer) => chunks.push(b));
  const out = new LineWriter(stream);
  const kinds = (): string[] =>
    Buffer.concat(chunks)
      .toString('utf8')
      .trimEnd()
      .split('\n')
      .map((line) => {
        const m = JSON.parse(line) as { type: string; trace?: { stream_status?: { status: string; reasons?: unknown[] } } };
        const status = m.trace?.stream_status;
        return status === undefined ? m.type : `${status.status}${status.reasons === undefined ? '' : ' (rate limited)'}`;
      });
  return { sink: new AirbyteSink(out, (t) => t), out, kinds };
}

const contacts = findStream('contacts') as StreamDefinition;

describe('AirbyteSink: a stream RUNNING before its records', () => {
  it('tombstones before the stream\'s own read: RUNNING first, once', async () => {
    const { sink, out, kinds } = sinkOnMemory();
    await sink.streamStarted(contacts);
    await sink.records(contacts, [{ id: 'c1' }], 1);
    await sink.records(contacts, [{ id: 'c2' }], 1);
    // The stream's own read begins: it says RUNNING, already said.
    await sink.streamRunning(contacts);
    await sink.records(contacts, [{ id: 'c3' }], 1);
    await sink.streamComplete(contacts);
    await out.flush();
    expect(kinds()).toEqual(['STARTED', 'RUNNING', 'RECORD', 'RECORD', 'RECORD', 'COMPLETE']);
  });

  it('a rate-limit wait is told each time, and a plain RUNNING after it too', async () => {
    const { sink, out, kinds } = sinkOnMemory();
    await sink.streamStarted(contacts);
    await sink.streamRunning(contacts, 1_700_000_000_000);
    await sink.records(contacts, [{ id: 'c1' }], 1);
    await sink.streamRunning(contacts);
    await sink.streamRunning(contacts, 1_700_000_060_000);
    await sink.streamComplete(contacts);
    await out.flush();
    expect(kinds()).toEqual(['STARTED', 'RUNNING (rate limited)', 'RECORD', 'RUNNING', 'RUNNING (rate limited)', 'COMPLETE']);
  });
});
