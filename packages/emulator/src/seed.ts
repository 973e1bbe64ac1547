/**
 * Seeding: N contacts with a past (conversations, stage histories), a share of
 * test-environment contacts, and a share of contacts deleted in the last 120
 * days (their deletion records, and their stage events, which stay).
 *
 * Seeded times lie in the past (up to `historyDays` before the clock's now),
 * so seed an account before reading it; later arrivals belong to the
 * create_contacts mutation, which stamps them with the current time.
 */
import type { VirtualClock } from './clock.js';
import { Prng } from './prng.js';
import type { AccountData } from './store.js';

const DAY = 86_400_000;

export interface SeedOptions {
  /** Contacts to create (live ones, test ones included). */
  readonly contacts: number;
  /** Share of test-environment contacts (never served); default 0.03. */
  readonly testFraction?: number;
  /** Share of extra contacts that were deleted in the last 120 days; default 0.02. */
  readonly deletedFraction?: number;
  /** Span of the invented past, days; default 365. */
  readonly historyDays?: number;
}

export interface SeedResult {
  contacts: number;
  testContacts: number;
  conversations: number;
  stageEvents: number;
  deletedContacts: number;
  deletions: number;
}

export function seedAccount(data: AccountData, clock: VirtualClock, seed: number, options: SeedOptions): SeedResult {
  const p = Prng.derive(seed, 'seed', data.ordinal, data.seedCalls++);
  const end = clock.now();
  const span = Math.max(1, Math.round((options.historyDays ?? 365) * DAY));
  const testFraction = options.testFraction ?? 0.03;
  const deletedFraction = options.deletedFraction ?? 0.02;
  const result: SeedResult = { contacts: 0, testContacts: 0, conversations: 0, stageEvents: 0, deletedContacts: 0, deletions: 0 };
  // A few bulk imports: contacts sharing one creation instant (ties in the keyset order).
  const imports = Array.from({ length: 10 }, () => end - p.int(span));
  let latest = Number.NEGATIVE_INFINITY;

  for (let i = 0; i < options.contacts; i++) {
    const created = p.chance(0.05) ? p.pick(imports) : end - 1 - p.int(span);
    const hidden = p.chance(testFraction);
    const g = data.gen.history(p, created, end);
    data.addContact(g, hidden, true);
    if (g.contact.t > latest) latest = g.contact.t;
    result.contacts++;
    if (hidden) result.testContacts++;
    result.conversations += g.conversations.length;
    result.stageEvents += g.events.length;
  }

  const deleted = Math.round(options.contacts * deletedFraction);
  for (let i = 0; i < deleted; i++) {
    const deletedAt = end - p.int(120 * DAY);
    const created = deletedAt - 1 - p.int(Math.min(span, 180 * DAY));
    const hidden = p.chance(testFraction);
    const g = data.gen.history(p, created, deletedAt - 1);
    for (const e of g.events) data.addStageEvent(e, hidden, true);
    for (const c of g.conversations) data.addDeletion(p, 'conversation', c.rec.id, deletedAt, hidden, true);
    data.addDeletion(p, 'contact', g.contact.rec.id, deletedAt, hidden, true);
    result.deletedContacts++;
    result.stageEvents += g.events.length;
    result.deletions += g.conversations.length + 1;
    if (deletedAt > latest) latest = deletedAt;
  }
  if (latest > Number.NEGATIVE_INFINITY) clock.observe(latest);
  return result;
}
