/** When replicate heals (heal.ts): the saved states, and the service's now asked only when it decides. */
import { describe, expect, it } from 'vitest';
import type { StreamState } from '../../src/engine/state.js';
import { findHeal, healDone } from '../../src/replica/heal.js';
import type { StreamDefinition } from '../../src/streams.js';

const NOW = '2026-06-01T00:00:00.000Z';
const daysBefore = (days: number): string => new Date(Date.parse(NOW) - days * 86_400_000).toISOString();

async function decide(states: Record<string, StreamState>): Promise<{ heal: Awaited<ReturnType<typeof findHeal>>; asked: (string | undefined)[] }> {
  const asked: (string | undefined)[] = [];
  const heal = await findHeal(new Map(Object.entries(states)), async (stream: StreamDefinition, since) => {
    expect(stream.name).toBe('deletions');
    asked.push(since);
    return NOW;
  });
  return { heal, asked };
}

describe('findHeal', () => {
  it('a first run (no state) heals nothing and asks nothing', async () => {
    expect(await decide({})).toEqual({ heal: undefined, asked: [] });
    expect(await decide({ deletions: { sync_watermark: daysBefore(200) } })).toEqual({ heal: undefined, asked: [] });
  });

  it('heals when the log is more than 90 days old on the service clock', async () => {
    const { heal, asked } = await decide({ deletions: { sync_watermark: daysBefore(105) }, contacts: { sync_watermark: daysBefore(105) } });
    expect(asked).toEqual([daysBefore(105)]);
    expect(heal?.streams.map((s) => s.name)).toEqual(['contacts', 'conversations']);
    expect(heal && healDone(heal, new Map([['contacts', 4], ['conversations', 10]]))).toMatch(
      /105 days old on the service's clock.*removed 14 row\(s\) the service no longer has \(contacts 4, conversations 10\)\.$/,
    );
  });

  it('does not heal a pause within the retention', async () => {
    expect((await decide({ deletions: { sync_watermark: daysBefore(89) }, conversations: { sync_watermark: daysBefore(89) } })).heal).toBeUndefined();
  });

  it('heals a pause of exactly 90 days, and from 90 days less an hour and 5 minutes on (a short day, the look-back)', async () => {
    const edge = 90 * 86_400_000 - 3_600_000 - 300_000;
    const before = (ms: number): string => new Date(Date.parse(NOW) - ms).toISOString();
    for (const [age, heals] of [[90 * 86_400_000, true], [edge + 1, true], [edge, false]] as const) {
      const states = { deletions: { sync_watermark: before(age) }, contacts: { sync_watermark: before(age) } };
      expect((await decide(states)).heal !== undefined, `${age} ms`).toBe(heals);
    }
  });

  it('heals when the log has no state while contacts has some, without asking', async () => {
    const { heal, asked } = await decide({ contacts: { sync_watermark: daysBefore(1) } });
    expect(asked).toEqual([]);
    expect(heal?.gap).toMatchObject({ since: undefined, streamsWithState: ['contacts'] });
  });

  it("a log whose first read is under way (a first run stopped) is measured on that read's watermark", async () => {
    const resume = { cursor: 'c', sync_watermark: daysBefore(2) };
    const { heal, asked } = await decide({ deletions: { resume }, contacts: { resume } });
    expect(heal).toBeUndefined();
    expect(asked).toEqual([daysBefore(2)]);
  });
});
