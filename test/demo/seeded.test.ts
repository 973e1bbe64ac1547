/**
 * The demo's first lines (demo/seeded.ts) explain why a full read gets fewer
 * records than the account was seeded with (2,000 contacts, 1,940 read): they
 * give what the API serves, and the two causes, which account for the whole
 * difference in contacts.
 */
import { describe, expect, it } from 'vitest';
import { createEmulator } from 'data-read-emulator';
import { seededLines } from '../../demo/seeded.js';

describe('seededLines', () => {
  it("the demo's account: what was seeded, what the API serves, and why", () => {
    const { control } = createEmulator({ seed: 2026 });
    const account = control.createAccount({ name: 'Acme Demo' });
    const seeded = control.seed(account.id, { contacts: 2000 });
    const served = control.getAccount(account.id).counts;
    const dump = control.dump(account.id);
    // What the API serves is what a full read gets.
    expect([served.contacts, served.conversations, served.stage_events, served.deletions]).toEqual([
      dump.contacts.length, dump.conversations.length, dump.stage_events.length, dump.deletions.length,
    ]);
    // Test contacts are the only contacts not served.
    expect(served.contacts).toBe(seeded.contacts - seeded.testContacts);
    expect(served.deletions).toBeLessThan(seeded.deletions);
    const text = seededLines('http://127.0.0.1:1234', 'Acme Demo', seeded, served);
    const [first, second] = text.split('\n');
    expect(first).toBe(
      `Emulator at http://127.0.0.1:1234: account "Acme Demo" seeded with 2,000 contacts, ${seeded.conversations.toLocaleString('en-US')} conversations, ` +
        `${seeded.stageEvents.toLocaleString('en-US')} stage changes and ${seeded.deletions} deletions (${seeded.deletedContacts} contacts deleted in the last 120 days, with their conversations).`,
    );
    expect(second).toBe(
      `The API serves ${served.contacts.toLocaleString('en-US')} contacts, ${served.conversations.toLocaleString('en-US')} conversations, ` +
        `${served.stage_events.toLocaleString('en-US')} stage changes and ${served.deletions} deletions: ` +
        `the ${seeded.testContacts} test contacts and all that belongs to them are never served, and the deletion log keeps 90 days.`,
    );
  });
});
