/** The generated data: shapes (zod schemas of src/schemas), realism, determinism. Seeding speed is a figure of the bench (`npm run bench`, section 7). */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { seededDump } from '../helpers/emulator-data.js';
import { Contact, Conversation, Deletion, Me, PageEnvelope, PipelineStage, Problem, StageEvent } from '../../src/schemas/resources.js';
import { createEmulator, type ContactRecord, type ConversationRecord, type DeletionRecord, type StageEventRecord } from '../../packages/emulator/src/index.js';
import type { Contact as ContactT, Conversation as ConversationT, Deletion as DeletionT, StageEvent as StageEventT } from '../../src/schemas/resources.js';
import { get, readAll, setup } from './helpers.js';

const E164 = /^\+[1-9]\d{9,14}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SOURCES = /^(manual|inbound_(whatsapp|instagram|messenger)|webhook_form|api|hubspot|salesforce|pipedrive|rdstation)$/;

describe('shapes', () => {
  it('record types fit the shared zod types', () => {
    expectTypeOf<ContactRecord>().toExtend<ContactT>();
    expectTypeOf<ConversationRecord>().toExtend<ConversationT>();
    expectTypeOf<StageEventRecord>().toExtend<StageEventT>();
    expectTypeOf<DeletionRecord>().toExtend<DeletionT>();
  });

  it('every record served parses with the schemas of src/schemas/resources.ts', async () => {
    const s = await setup({ contacts: 300 });
    try {
      s.emu.control.mutate(s.accountId, { op: 'delete_contacts', count: 5 });
      const schemas = { '/v1/contacts': Contact, '/v1/conversations': Conversation, '/v1/stage_events': StageEvent, '/v1/deletions': Deletion, '/v1/pipeline_stages': PipelineStage };
      for (const [path, schema] of Object.entries(schemas)) {
        const pages = await readAll(s.emu.url, path, s.key, { limit: 200 });
        for (const page of pages) {
          PageEnvelope.parse(page);
          for (const r of page.data) schema.parse(r);
        }
      }
      Me.parse((await get(s.emu.url, '/v1/me', { key: s.key })).body);
      Problem.parse((await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 0 } })).body);
    } finally {
      await s.emu.close();
    }
  });
});

describe('realism', () => {
  it('fills every field with plausible values', () => {
    const d = seededDump(11, 1500);
    const stages = new Map(d.pipeline_stages.map((st) => [st.id, st]));
    const share = (n: number): number => n / d.contacts.length;
    for (const c of d.contacts) {
      expect(c.id).toMatch(UUID);
      for (const f of ['created_at', 'updated_at', 'current_stage_entered_at'] as const) expect(c[f]).toMatch(ISO);
      expect(c.name).toBe(`${c.first_name} ${c.last_name}`);
      if (c.phone !== null) expect(c.phone).toMatch(E164);
      if (c.email !== null) expect(c.email).toMatch(/^[a-z0-9.]+@[a-z0-9.-]+\.[a-z]{2,}$/);
      expect(c.temperature === null || ['hot', 'warm', 'cold'].includes(c.temperature)).toBe(true);
      if (c.source !== null) expect(c.source).toMatch(SOURCES);
      expect(c.updated_at >= c.created_at).toBe(true);
      expect(c.do_not_contact).toBe(c.do_not_contact_at !== null);
      if (c.qualification_score !== null) expect(c.qualification_score).toBeGreaterThanOrEqual(0);
      if (c.won_at !== null) expect([...stages.values()].some((st) => st.outcome === 'won')).toBe(true);
      if (c.first_origin_kind === 'ad') {
        expect(c.first_origin_ad_id).toMatch(/^\d{18}$/);
        expect(c.first_origin_ctwa_clid).toMatch(/^AR[A-Za-z0-9_-]{78}$/);
        expect(c.first_origin_headline).toBeTruthy();
        expect(c.first_campaign_id).toMatch(UUID);
      } else if (c.first_origin_kind === 'link') {
        expect(c.first_origin_ad_id).toBeNull();
        expect(c.first_origin_ctwa_clid).toBeNull();
        expect(c.first_origin_headline).toBeTruthy();
      } else {
        expect(c.first_origin_kind).toBeNull();
        expect(c.first_origin_at).toBeNull();
      }
      expect(stages.has(c.current_stage_id as string)).toBe(true);
    }
    expect(share(d.contacts.filter((c) => c.phone?.startsWith('+55')).length)).toBeGreaterThan(0.25);
    expect(share(d.contacts.filter((c) => c.phone?.startsWith('+1')).length)).toBeGreaterThan(0.1);
    expect(share(d.contacts.filter((c) => c.won_at !== null).length)).toBeGreaterThan(0.03);
    expect(share(d.contacts.filter((c) => c.first_origin_kind === 'ad').length)).toBeGreaterThan(0.2);
    expect(new Set(d.contacts.map((c) => c.temperature)).size).toBe(4);
    expect(new Set(d.contacts.map((c) => c.source)).size).toBeGreaterThan(8);
    expect(new Set(d.contacts.map((c) => c.name)).size).toBeGreaterThan(d.contacts.length * 0.9);
    expect(new Set(d.contacts.map((c) => c.company_name)).size).toBeGreaterThan(100);
    expect(new Set(d.contacts.map((c) => c.job_title)).size).toBeGreaterThan(100);
    for (const v of d.conversations) {
      expect(v.contact_message_count).toBeGreaterThanOrEqual(1);
      expect(v.first_response_at === null).toBe(v.agent_message_count === 0);
      expect(v.active).toBe(v.closed_at === null);
      if (v.origin_kind === 'ad') expect(v.origin_ctwa_clid).toBeTruthy();
      if (v.outcome_category !== null) expect(stages.has(v.outcome_stage_id as string)).toBe(true);
    }
    expect(d.conversations.some((v) => v.outcome_category === 'converted')).toBe(true);
    expect(d.conversations.some((v) => v.active)).toBe(true);
    expect(new Set(d.deletions.map((x) => x.object_type))).toEqual(new Set(['contact', 'conversation']));
  });
});

describe('people and companies of five countries', () => {
  it('names, e-mail domains, job titles and ad headlines in each country\'s language, from the seeded word lists', () => {
    const d = seededDump(12, 2000);
    const byPrefix = (prefix: string) => d.contacts.filter((c) => c.phone?.startsWith(prefix));
    for (const prefix of ['+55', '+1', '+52', '+44', '+49']) expect(byPrefix(prefix).length, prefix).toBeGreaterThan(50);
    // Mexicans carry two surnames; Brazilians often do.
    expect(byPrefix('+52').every((c) => c.last_name.includes(' '))).toBe(true);
    expect(byPrefix('+55').some((c) => c.last_name.includes(' '))).toBe(true);
    const titles = new Set(d.contacts.map((c) => c.job_title));
    for (const word of [/ de Vendas/, /Sales/, /Vertrieb/, /de Ventas/]) expect([...titles].some((t) => t !== null && word.test(t)), String(word)).toBe(true);
    const domains = new Set(d.contacts.map((c) => c.email?.split('@')[1]));
    for (const tld of ['.com.br', '.com.mx', '.co.uk', '.de']) expect([...domains].some((x) => x?.endsWith(tld)), tld).toBe(true);
    const headlines = new Set(d.conversations.map((v) => v.origin_headline).filter((h) => h !== null));
    expect(headlines.size).toBeGreaterThan(10);
  });
});

describe('determinism', () => {
  it('the same seed and a frozen clock give the same data and keys; another seed other data', () => {
    const make = (seed: number): { dump: string; key: string } => {
      const { control } = createEmulator({ seed, frozenClock: true, clockStart: '2025-02-01T00:00:00Z' });
      const acc = control.createAccount({ name: 'Det' });
      const key = control.createKey(acc.id).key;
      control.seed(acc.id, { contacts: 200 });
      control.mutate(acc.id, { op: 'move_contacts', count: 20 });
      control.mutate(acc.id, { op: 'delete_contacts', count: 3 });
      return { dump: control.dumpJson(acc.id), key };
    };
    const a = make(5);
    const b = make(5);
    expect(a.dump).toBe(b.dump);
    expect(a.key).toBe(b.key);
    expect(make(6).dump).not.toBe(a.dump);
  });
});
