/**
 * The WARN about a gap in the deletion log is measured on the service's clock
 * (the deletion read's sync_watermark against the saved one), never the
 * machine's; a log without state while contacts or conversations have state
 * is a gap too; a face gives its own advice or heals the gap itself (null).
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.js';
import type { StreamState } from '../../src/engine/state.js';
import { runSync, type SelectedStream } from '../../src/engine/sync.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import { FakeApi } from '../helpers/fake-api.js';
import { RecordingSink } from '../helpers/recording-sink.js';

const stream = (name: string): StreamDefinition => {
  const s = findStream(name);
  if (!s) throw new Error(name);
  return s;
};
const incremental = (name: string): SelectedStream => ({ stream: stream(name), mode: 'incremental' });
const { config } = parseConfig({ api_key: 'dr_live_x', base_url: 'http://127.0.0.1:1' });

async function warnings(
  serviceNow: string,
  states: Record<string, StreamState>,
  options: { advice?: string | null; streams?: string[]; api?: FakeApi } = {},
): Promise<string[]> {
  const api = options.api ?? new FakeApi({ '/v1/contacts': [], '/v1/conversations': [], '/v1/deletions': [] }, serviceNow);
  const sink = new RecordingSink();
  await runSync({
    config,
    client: api,
    sink,
    streams: (options.streams ?? ['contacts', 'conversations', 'deletions']).map(incremental),
    states: new Map(Object.entries(states)),
    ...(options.advice === undefined ? {} : { deletionGapAdvice: options.advice }),
  });
  return sink.events.flatMap((e) => (e.kind === 'log' && e.level === 'WARN' ? [e.message] : []));
}

describe('the deletion gap', () => {
  it('warns when the saved watermark is 100 days older than the service says now, whatever the machine clock says', async () => {
    // The service's clock runs ahead of the machine's: measured on the machine's, the gap would be negative.
    const serviceNow = new Date(Date.now() + 400 * 86_400_000).toISOString();
    const saved = new Date(Date.parse(serviceNow) - 100 * 86_400_000).toISOString();
    const found = await warnings(serviceNow, { deletions: { sync_watermark: saved }, contacts: { sync_watermark: saved } });
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(`the saved watermark ${saved} is 100 days old on the service's clock (its now: ${serviceNow})`);
    expect(found[0]).toContain('keeps deletions for 90 days only');
    expect(found[0]).toContain('Run a full refresh of contacts and conversations');
  });

  it('measures a first read of the log still under way (a resume only) from its watermark too', async () => {
    const serviceNow = '2026-06-01T00:00:00.000Z';
    const saved = '2026-02-01T00:00:00.000Z';
    const found = await warnings(serviceNow, { deletions: { resume: { cursor: 'deletions#1', sync_watermark: saved } }, contacts: { sync_watermark: saved } });
    // (The fake service refuses the made-up cursor: the read restarts, and says so.)
    expect(found.filter((w) => w.includes('keeps deletions for 90 days only'))).toEqual([expect.stringContaining(`the saved watermark ${saved} is 120 days old on the service's clock`)]);
  });

  it('measures a read resumed months later on the service\'s now, not on the resumed read\'s own watermark', async () => {
    const serviceNow = '2026-06-01T00:00:00.000Z';
    const saved = '2026-01-01T00:00:00.000Z';
    const interrupted = '2026-01-02T00:00:00.000Z';
    const api = new FakeApi({ '/v1/contacts': [], '/v1/conversations': [], '/v1/deletions': [] }, serviceNow);
    // The service takes the saved cursor: its pages carry the watermark of the read it continues (one watermark per read).
    api.beforePage = (path, query) =>
      path === '/v1/deletions' && query.cursor === 'c1' ? { data: [], has_more: false, next_cursor: null, sync_watermark: interrupted } : undefined;
    const found = await warnings(serviceNow, { deletions: { sync_watermark: saved, resume: { cursor: 'c1', sync_watermark: interrupted } }, contacts: { sync_watermark: saved } }, { api });
    expect(found).toEqual([expect.stringContaining(`the saved watermark ${saved} is 151 days old on the service's clock (its now: ${serviceNow})`)]);
    // The resumed read still ends on its own watermark, and reads from the cursor.
    expect(api.calls.filter((c) => c.path === '/v1/deletions' && c.query.cursor === 'c1')).toHaveLength(1);
  });

  it('warns at exactly 90 days: the deletions a read takes from 5 minutes before the watermark are gone by then', async () => {
    const serviceNow = '2026-06-01T00:00:00.000Z';
    const saved = new Date(Date.parse(serviceNow) - 90 * 86_400_000).toISOString();
    const found = await warnings(serviceNow, { deletions: { sync_watermark: saved }, contacts: { sync_watermark: saved } });
    expect(found).toEqual([expect.stringContaining(`the saved watermark ${saved} is 90 days old on the service's clock (its now: ${serviceNow}), at the edge of the 90 days`)]);
    expect(found[0]).toMatch(/may be gone already \(its days may be counted in a time zone with daylight saving time, one of them an hour short\)\. Run a full refresh/);
  });

  it('warns from 90 days less an hour (a day short across daylight saving time) and 5 minutes (the look-back), not before', async () => {
    const serviceNow = '2026-04-01T12:00:00.000Z';
    const edge = Date.parse(serviceNow) - (90 * 86_400_000 - 3_600_000 - 300_000);
    const past = new Date(edge - 1).toISOString();
    expect(await warnings(serviceNow, { deletions: { sync_watermark: past }, contacts: { sync_watermark: past } })).toEqual([
      expect.stringContaining(`the saved watermark ${past} is 89 days old`),
    ]);
    const within = new Date(edge).toISOString();
    expect(await warnings(serviceNow, { deletions: { sync_watermark: within }, contacts: { sync_watermark: within } })).toEqual([]);
  });

  it('says nothing for a 10-day pause even when the machine clock is years ahead of the service', async () => {
    const serviceNow = '2021-03-01T00:00:00.000Z';
    expect(await warnings(serviceNow, { deletions: { sync_watermark: '2021-02-19T00:00:00.000Z' }, contacts: { sync_watermark: '2021-02-19T00:00:00.000Z' } })).toEqual([]);
  });

  it('a deletion log without state while contacts has state is a gap; without any state it is not', async () => {
    const found = await warnings('2026-03-01T00:00:00.000Z', { contacts: { sync_watermark: '2026-02-01T00:00:00.000Z' } });
    expect(found).toEqual([expect.stringContaining('deletions has no saved state while contacts has')]);
    expect(await warnings('2026-03-01T00:00:00.000Z', {})).toEqual([]);
  });

  it("uses the face's advice, and says nothing when the face heals gaps itself", async () => {
    const states = { deletions: { sync_watermark: '2025-01-01T00:00:00.000Z' } };
    const advised = await warnings('2026-03-01T00:00:00.000Z', states, { advice: 'Refresh the two streams.' });
    expect(advised).toEqual([expect.stringMatching(/are gone\. Refresh the two streams\.$/)]);
    expect(await warnings('2026-03-01T00:00:00.000Z', states, { advice: null })).toEqual([]);
  });
});
