/** What the stores keep of a part (a stream of one account) whose checkpoint could not be written. */
import { describe, expect, it } from 'vitest';
import { PartFailures, keepSavedStates } from '../../src/stores/checkpoint.js';

describe('PartFailures', () => {
  it("stops an account's part alone, and a stream's failure every part of it", () => {
    const failures = new PartFailures();
    failures.add('contacts', 'acme', 'a trigger refused it');
    expect(failures.of('contacts', 'acme')).toBe('a trigger refused it');
    expect(failures.of('contacts', 'globex')).toBeUndefined();
    expect([...(failures.accountsOf('contacts') ?? [])]).toEqual(['acme']);
    failures.add('deletions', undefined, 'the store refused the state row');
    expect(failures.of('deletions', 'globex')).toBe('the store refused the state row');
    expect(failures.accountsOf('deletions')).toBeUndefined();
  });
});

describe('keepSavedStates', () => {
  const state = (accounts: Record<string, unknown>): string => JSON.stringify({ accounts });

  it("keeps a failed account's state as last saved, or leaves it out when none was saved", () => {
    const next = state({ a: { w: 2 }, b: { w: 2 }, c: { w: 2 } });
    const saved = state({ a: { w: 1 }, b: { w: 1 } });
    expect(JSON.parse(keepSavedStates(next, saved, new Set(['b', 'c'])))).toEqual({ accounts: { a: { w: 2 }, b: { w: 1 } } });
    expect(JSON.parse(keepSavedStates(next, undefined, new Set(['a'])))).toEqual({ accounts: { b: { w: 2 }, c: { w: 2 } } });
  });

  it('keeps the state of an entry named __proto__ (a valid entry name) as an own field', () => {
    const next = '{"accounts":{"b":{"w":2}}}';
    const saved = '{"accounts":{"__proto__":{"w":1}}}';
    expect(keepSavedStates(next, saved, new Set(['__proto__']))).toBe('{"accounts":{"b":{"w":2},"__proto__":{"w":1}}}');
  });
});
