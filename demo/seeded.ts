/**
 * What the demo says of the account it seeds: what the emulator made, and
 * what the API serves of it, with why the two differ (a read of 2,000 seeded
 * contacts gets 1,940): test contacts, and all that belongs to them, are never
 * served, and the deletion log keeps 90 days of the 120 the seed spreads
 * deletions over.
 */
import type { AccountInfo, SeedResult } from 'data-read-emulator';

const n = (count: number): string => count.toLocaleString('en-US');

/** Two lines: the seed, then what the API serves and why it is less. */
export function seededLines(url: string, account: string, seeded: SeedResult, served: AccountInfo['counts']): string {
  return (
    `Emulator at ${url}: account "${account}" seeded with ${n(seeded.contacts)} contacts, ${n(seeded.conversations)} conversations, ` +
    `${n(seeded.stageEvents)} stage changes and ${n(seeded.deletions)} deletions (${n(seeded.deletedContacts)} contacts deleted in the last 120 days, with their conversations).\n` +
    `The API serves ${n(served.contacts)} contacts, ${n(served.conversations)} conversations, ${n(served.stage_events)} stage changes and ${n(served.deletions)} deletions: ` +
    `the ${n(seeded.testContacts)} test contacts and all that belongs to them are never served, and the deletion log keeps 90 days.`
  );
}
