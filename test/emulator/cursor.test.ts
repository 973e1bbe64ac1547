/** Opaque, signed cursors bound to account and list. */
import { beforeAll, describe, expect, it } from 'vitest';
import { withEmulatorSetup } from '../helpers/suite.js';
import { startEmulator, type Emulator } from '../../packages/emulator/src/index.js';
import { asPage, expectProblem, get, type Setup } from './helpers.js';

let s: Setup;
let otherKey: string;
withEmulatorSetup({ contacts: 60 }, (setUp) => (s = setUp));
beforeAll(() => {
  const other = s.emu.control.createAccount({ name: 'Other' });
  otherKey = s.emu.control.createKey(other.id).key;
  s.emu.control.seed(other.id, { contacts: 60 });
});

async function cursorOf(path: string, key: string): Promise<string> {
  const page = asPage(await get(s.emu.url, path, { key, query: { limit: 5 } }));
  expect(page.has_more).toBe(true);
  return page.next_cursor as string;
}

describe('cursors', () => {
  it('are opaque and replayable: the same cursor gives the same page', async () => {
    const cursor = await cursorOf('/v1/contacts', s.key);
    expect(cursor).not.toMatch(/updated_at|contacts/);
    const a = await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 5, cursor } });
    const b = await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 5, cursor } });
    expect(a.text).toBe(b.text);
  });

  it('carry the filter: updated_since sent with a cursor does not change the read', async () => {
    const first = asPage(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 5, updated_since: '2000-01-01' } }));
    const cursor = first.next_cursor as string;
    const a = await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 5, cursor } });
    const b = await get(s.emu.url, '/v1/contacts', { key: s.key, query: { limit: 5, cursor, updated_since: '2999-01-01' } });
    expect(b.text).toBe(a.text);
  });

  it('an altered cursor is 400', async () => {
    const cursor = await cursorOf('/v1/contacts', s.key);
    const [payload, sig] = cursor.split('.') as [string, string];
    const flip = (text: string, i: number): string => text.slice(0, i) + (text[i] === 'A' ? 'B' : 'A') + text.slice(i + 1);
    for (const bad of [flip(payload, 3), `${payload}.${flip(sig, 5)}`, `${payload}.`, payload, 'abc', `${cursor}.x`, `${cursor}x`]) {
      expectProblem(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { cursor: bad } }), 400, /cursor is invalid or was altered/);
    }
    expectProblem(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { cursor: '' } }), 400, /cursor must not be empty/);
  });

  it("another account's cursor is 400", async () => {
    const foreign = await cursorOf('/v1/contacts', otherKey);
    expectProblem(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { cursor: foreign } }), 400, /another account/);
  });

  it("another list's cursor is 400", async () => {
    const contacts = await cursorOf('/v1/contacts', s.key);
    expectProblem(await get(s.emu.url, '/v1/conversations', { key: s.key, query: { cursor: contacts } }), 400, /issued for \/v1\/contacts/);
    const events = await cursorOf('/v1/stage_events', s.key);
    expectProblem(await get(s.emu.url, '/v1/deletions', { key: s.key, query: { cursor: events } }), 400, /issued for/);
  });

  it('a cursor of another emulator (another secret) is 400', async () => {
    const twin: Emulator = await startEmulator({ seed: 7 });
    try {
      const acc = twin.control.createAccount({ name: 'Acme' });
      const { key } = twin.control.createKey(acc.id);
      twin.control.seed(acc.id, { contacts: 30 });
      const cursor = asPage(await get(twin.url, '/v1/contacts', { key, query: { limit: 5 } })).next_cursor as string;
      expectProblem(await get(s.emu.url, '/v1/contacts', { key: s.key, query: { cursor } }), 400, /altered/);
    } finally {
      await twin.close();
    }
  });
});
