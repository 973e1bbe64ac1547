/** Service rules: test environment, deletions and their retention, stage history, won/lost dates. */
import { afterEach, describe, expect, it } from 'vitest';
import type { Dump, Emulator } from '../../packages/emulator/src/index.js';
import { expectProblem, get, readAll, records, setup, type Setup } from './helpers.js';

const DAY = 86_400_000;
let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

/** An emulator with one account (stopped after the test), and its control. */
async function started(options: Parameters<typeof setup>[0]): Promise<{ s: Setup; ctl: Emulator['control'] }> {
  const s = await setup(options);
  emu = s.emu;
  return { s, ctl: s.emu.control };
}

function idsOf(rows: readonly { id: string }[] | readonly Record<string, unknown>[]): Set<unknown> {
  return new Set(rows.map((r) => r.id));
}

describe('test environment', () => {
  it('test contacts exist but never appear, nor their conversations, stage events and deletions', async () => {
    const { s, ctl } = await started({ contacts: 200 });
    expect(ctl.getAccount(s.accountId).counts.test_contacts).toBeGreaterThan(0);
    const hidden = ctl.mutate(s.accountId, { op: 'create_contacts', count: 5, testEnvironment: true, withConversation: true });
    const moved = ctl.mutate(s.accountId, { op: 'move_contacts', ids: hidden.ids, stageKey: 'contacted' });
    expect(moved.stageEventIds).toHaveLength(5);
    const before = ctl.dump(s.accountId);
    const dumpContactIds = idsOf(before.contacts);
    for (const id of hidden.ids) {
      expect(dumpContactIds.has(id)).toBe(false);
      expectProblem(await get(s.emu.url, `/v1/contacts/${id}`, { key: s.key }), 404);
    }
    const contacts = records(await readAll(s.emu.url, '/v1/contacts', s.key, { limit: 200 }));
    const conversations = records(await readAll(s.emu.url, '/v1/conversations', s.key, { limit: 200 }));
    const events = records(await readAll(s.emu.url, '/v1/stage_events', s.key, { limit: 200 }));
    const hiddenIds = new Set(hidden.ids);
    expect(contacts.some((c) => hiddenIds.has(c.id as string))).toBe(false);
    expect(conversations.some((c) => hiddenIds.has(c.contact_id as string))).toBe(false);
    expect(events.some((e) => hiddenIds.has(e.contact_id as string))).toBe(false);
    // Every conversation served belongs to a contact served.
    for (const c of conversations) expect(dumpContactIds.has(c.contact_id)).toBe(true);

    const del = ctl.mutate(s.accountId, { op: 'delete_contacts', ids: hidden.ids });
    expect(del.deletionIds.length).toBeGreaterThanOrEqual(5);
    const after = ctl.dump(s.accountId);
    expect(after.deletions).toEqual(before.deletions);
    const deletions = records(await readAll(s.emu.url, '/v1/deletions', s.key, { limit: 200 }));
    const served = idsOf(deletions);
    for (const id of del.deletionIds) expect(served.has(id)).toBe(false);
  });
});

describe('deletions', () => {
  it('deleting a contact deletes its conversations, records both kinds, keeps its stage events', async () => {
    const { s, ctl } = await started({ contacts: 60 });
    const before = ctl.dump(s.accountId);
    const byContact = new Map<string, number>();
    for (const c of before.conversations) byContact.set(c.contact_id, (byContact.get(c.contact_id) ?? 0) + 1);
    const victim = before.contacts.find((c) => (byContact.get(c.id) ?? 0) >= 2);
    expect(victim).toBeDefined();
    const id = victim?.id as string;
    const convIds = before.conversations.filter((c) => c.contact_id === id).map((c) => c.id);
    const eventIds = before.stage_events.filter((e) => e.contact_id === id).map((e) => e.id);
    expect(eventIds.length).toBeGreaterThan(0);

    const res = ctl.mutate(s.accountId, { op: 'delete_contacts', ids: [id] });
    const after = ctl.dump(s.accountId);
    const newDeletions = after.deletions.filter((d) => res.deletionIds.includes(d.id));
    expect(newDeletions).toHaveLength(convIds.length + 1);
    expect(newDeletions.filter((d) => d.object_type === 'contact').map((d) => d.object_id)).toEqual([id]);
    expect(newDeletions.filter((d) => d.object_type === 'conversation').map((d) => d.object_id).sort()).toEqual([...convIds].sort());
    expect(new Set(newDeletions.map((d) => d.deleted_at)).size).toBe(1);
    expect(after.contacts.some((c) => c.id === id)).toBe(false);
    expect(after.conversations.some((c) => convIds.includes(c.id))).toBe(false);
    const events = idsOf(after.stage_events);
    for (const e of eventIds) expect(events.has(e)).toBe(true);
    expectProblem(await get(s.emu.url, `/v1/contacts/${id}`, { key: s.key }), 404);

    const conv = after.conversations[0]?.id as string;
    const one = ctl.mutate(s.accountId, { op: 'delete_conversations', ids: [conv] });
    const rec = ctl.dump(s.accountId).deletions.find((d) => d.id === one.deletionIds[0]);
    expect(rec).toMatchObject({ object_type: 'conversation', object_id: conv });
  });

  it('are kept 90 days: older ones drop out of the list and the dump', async () => {
    const { s, ctl } = await started({ frozenClock: true, clockStart: '2025-06-01T00:00:00.000Z', contacts: 30 });
    // Seeded deletions lie up to 120 days back: part of them are already gone.
    const seededVisible = records(await readAll(s.emu.url, '/v1/deletions', s.key, { limit: 200 }));
    for (const d of seededVisible) expect(Date.parse(d.deleted_at as string)).toBeGreaterThanOrEqual(Date.parse('2025-06-01T00:00:00.000Z') - 90 * DAY);

    const del = ctl.mutate(s.accountId, { op: 'delete_contacts', count: 1 });
    const deletedAt = Date.parse(del.from as string);
    const listed = async (): Promise<boolean> => idsOf(records(await readAll(s.emu.url, '/v1/deletions', s.key, { limit: 200 }))).has(del.deletionIds.at(-1));
    expect(await listed()).toBe(true);
    ctl.advanceClock(deletedAt + 90 * DAY - Date.parse(ctl.now()));
    expect(Date.parse(ctl.now())).toBe(deletedAt + 90 * DAY);
    expect(await listed()).toBe(true);
    expect(idsOf(ctl.dump(s.accountId).deletions).has(del.deletionIds.at(-1))).toBe(true);
    ctl.advanceClock(1);
    expect(await listed()).toBe(false);
    expect(idsOf(ctl.dump(s.accountId).deletions).has(del.deletionIds.at(-1))).toBe(false);
    expect(ctl.dump(s.accountId).deletions).toEqual([]);
  });
});

function checkHistory(dump: Dump): void {
  const stages = new Map(dump.pipeline_stages.map((st) => [st.id, st]));
  const byContact = new Map<string, Dump['stage_events']>();
  for (const e of dump.stage_events) byContact.set(e.contact_id, [...(byContact.get(e.contact_id) ?? []), e]);
  for (const c of dump.contacts) {
    const events = (byContact.get(c.id) ?? []).sort((a, b) => a.created_at.localeCompare(b.created_at));
    expect(events.length, c.id).toBeGreaterThan(0);
    const first = events[0];
    expect(first?.from_stage_id, 'entry into a funnel').toBeNull();
    expect(first?.from_stage_key).toBeNull();
    for (let i = 1; i < events.length; i++) {
      const prev = events[i - 1];
      const e = events[i];
      if (e?.from_stage_id === null) {
        expect(e.pipeline_id).not.toBe(prev?.pipeline_id); // a new funnel
      } else {
        expect(e?.from_stage_id).toBe(prev?.to_stage_id);
        expect(e?.from_stage_key).toBe(stages.get(e?.from_stage_id as string)?.key);
      }
      expect(e?.to_stage_key).toBe(stages.get(e?.to_stage_id as string)?.key);
      expect(e?.pipeline_id).toBe(stages.get(e?.to_stage_id as string)?.pipeline_id);
    }
    const last = events[events.length - 1];
    expect(c.current_stage_id).toBe(last?.to_stage_id);
    expect(c.current_stage_entered_at).toBe(last?.created_at);
    const wins = events.filter((e) => stages.get(e.to_stage_id)?.outcome === 'won');
    const losses = events.filter((e) => stages.get(e.to_stage_id)?.outcome === 'lost');
    expect(c.won_at).toBe(wins.at(-1)?.created_at ?? null);
    expect(c.lost_at).toBe(losses.at(-1)?.created_at ?? null);
  }
}

describe('stage history', () => {
  it('seeded and moved contacts: entry has from_stage_id null, events chain, current stage and won_at/lost_at follow them', async () => {
    const { s, ctl } = await started({ contacts: 300 });
    const before = ctl.dump(s.accountId);
    checkHistory(before);
    expect(before.contacts.some((c) => c.won_at !== null)).toBe(true);
    expect(before.contacts.some((c) => c.lost_at !== null)).toBe(true);
    expect(before.contacts.some((c) => c.won_at === null && c.lost_at === null)).toBe(true);

    const ids = before.contacts.filter((c) => c.won_at === null).slice(0, 5).map((c) => c.id);
    const won = ctl.mutate(s.accountId, { op: 'move_contacts', ids, stageKey: 'won' });
    const lost = ctl.mutate(s.accountId, { op: 'move_contacts', count: 10, stageKey: 'lost' });
    ctl.mutate(s.accountId, { op: 'move_contacts', count: 40 });
    // A Sales contact moved to a Partnerships stage enters that funnel.
    const sales = before.pipeline_stages.find((st) => st.key === 'new_lead')?.pipeline_id;
    const salesContact = before.contacts.find((c) => before.pipeline_stages.find((st) => st.id === c.current_stage_id)?.pipeline_id === sales);
    const entry = ctl.mutate(s.accountId, { op: 'move_contacts', ids: [salesContact?.id as string], stageKey: 'intro_call' });
    const after = ctl.dump(s.accountId);
    checkHistory(after);

    const entryEvent = after.stage_events.find((e) => e.id === entry.stageEventIds[0]);
    expect(entryEvent).toMatchObject({ from_stage_id: null, from_stage_key: null, to_stage_key: 'intro_call' });
    for (const id of ids) {
      const c = after.contacts.find((x) => x.id === id);
      expect(Date.parse(c?.won_at as string)).toBeGreaterThanOrEqual(Date.parse(won.from as string));
    }
    expect(won.stageEventIds).toHaveLength(5);
    expect(lost.stageEventIds.length).toBeGreaterThan(0);

    // Stage changes are immutable: every earlier event is still there, unchanged.
    const now = new Map(after.stage_events.map((e) => [e.id, e]));
    for (const e of before.stage_events) expect(now.get(e.id)).toEqual(e);
  });

  it('conversation outcomes: null until set; converted moves the contact to the won stage', async () => {
    const { s, ctl } = await started({ contacts: 80 });
    const before = ctl.dump(s.accountId);
    for (const c of before.conversations) {
      const none = c.outcome_category === null;
      expect(c.outcome_stage_id === null, c.id).toBe(none);
      expect(c.outcome_set_at === null, c.id).toBe(none);
      expect(c.active).toBe(c.closed_at === null);
    }
    const open = before.conversations.find((c) => c.outcome_category === null) ?? before.conversations[0];
    const res = ctl.mutate(s.accountId, { op: 'update_conversations', ids: [open?.id as string], close: true, outcome: 'converted' });
    const after = ctl.dump(s.accountId);
    const conv = after.conversations.find((c) => c.id === open?.id);
    const contact = after.contacts.find((c) => c.id === open?.contact_id);
    const won = after.pipeline_stages.find((st) => st.id === contact?.current_stage_id);
    expect(conv).toMatchObject({ outcome_category: 'converted', active: false, closed_at: res.from, outcome_set_at: res.from, updated_at: res.from });
    expect(won?.outcome).toBe('won');
    expect(conv?.outcome_stage_id).toBe(won?.id);
    expect(contact?.won_at).toBe(res.from);
    expect(contact?.last_activity_at).toBe(res.from);
    checkHistory(after);
  });
});
