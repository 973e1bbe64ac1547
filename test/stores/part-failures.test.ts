/** What the stores keep of a part (a stream of one account) whose checkpoint could not be written, and of its accounts' states. */
import { describe, expect, it } from 'vitest';
import { PartFailures, joinSavedStates, splitJoinedStates } from '../../src/stores/checkpoint.js';

describe('PartFailures', () => {
  it("stops an account's part alone, and a stream's failure every part of it", () => {
    const failures = new PartFailures();
    failures.add('contacts', 'acme', 'a trigger refused it');
    expect(failures.of('contacts', 'acme')).toBe('a trigger refused it');
    expect(failures.of('contacts', 'globex')).toBeUndefined();
    failures.add('deletions', undefined, 'the store refused the state row');
    expect(failures.of('deletions', 'globex')).toBe('the store refused the state row');
  });
});

describe("the state rows of a store of many accounts (one per stream and account)", () => {
  it("joins each stream's accounts as one state of many accounts, and keeps a stream's own row as it is", () => {
    const joined = joinSavedStates([
      ['contacts/a', '{"sync_watermark":"1"}'],
      ['contacts/__proto__', '{"sync_watermark":"2"}'],
      ['deletions', '{"sync_watermark":"3"}'],
    ]);
    expect([...joined.keys()]).toEqual(['deletions', 'contacts']);
    // An entry named __proto__ (a valid entry name) is an own field, as JSON.parse makes it.
    expect(joined.get('contacts')).toBe('{"accounts":{"a":{"sync_watermark":"1"},"__proto__":{"sync_watermark":"2"}}}');
    expect(Object.keys(JSON.parse(joined.get('contacts') ?? '{}').accounts)).toEqual(['a', '__proto__']);
  });

  it("splits an earlier version's one row per stream into its accounts' rows, leaving any other row alone", () => {
    const rows: [string, string][] = [
      ['contacts', '{"accounts":{"a":{"sync_watermark":"1"},"__proto__":{"sync_watermark":"2"}}}'],
      ['deletions', '{"sync_watermark":"3"}'],
      ['stage_events', 'not json'],
      ['conversations/a', '{"accounts":{"x":{}}}'],
    ];
    expect(splitJoinedStates(rows)).toEqual([
      {
        key: 'contacts',
        accounts: [
          ['contacts/a', '{"sync_watermark":"1"}'],
          ['contacts/__proto__', '{"sync_watermark":"2"}'],
        ],
      },
    ]);
    // Split then joined: the state as it was.
    expect(joinSavedStates(splitJoinedStates(rows)[0]?.accounts ?? []).get('contacts')).toBe(rows[0]?.[1]);
  });
});
