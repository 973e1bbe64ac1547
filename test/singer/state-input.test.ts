import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { parseSingerState } from '../../src/faces/singer/state-input.js';
import { thrown } from '../helpers/thrown.js';

const W = '2026-03-01T10:00:00.000Z';

describe('--state', () => {
  it('reads the bookmarks of a STATE value, including resume cursors', () => {
    const states = parseSingerState(
      { bookmarks: { contacts: { sync_watermark: W }, deletions: { sync_watermark: W, resume: { cursor: 'c1', sync_watermark: W } } }, currently_syncing: 'deletions' },
      () => undefined,
    );
    expect(Object.fromEntries(states)).toEqual({
      contacts: { sync_watermark: W },
      deletions: { sync_watermark: W, resume: { cursor: 'c1', sync_watermark: W } },
    });
  });

  it('accepts a whole STATE message and an empty object', () => {
    expect(parseSingerState({ type: 'STATE', value: { bookmarks: { contacts: { sync_watermark: W } } } }, () => undefined).get('contacts')).toEqual({ sync_watermark: W });
    expect(parseSingerState({}, () => undefined).size).toBe(0);
  });

  it('drops bookmarks of unknown streams with a warning', () => {
    const warnings: string[] = [];
    const states = parseSingerState({ bookmarks: { invoices: { x: 1 }, contacts: {} } }, (m) => warnings.push(m));
    expect([...states.keys()]).toEqual(['contacts']);
    expect(warnings[0]).toContain('"invoices"');
  });

  it('rejects a bad bookmark, naming the stream and the field', () => {
    expect(() => parseSingerState({ bookmarks: { contacts: { sync_watermark: 'yesterday' } } }, () => undefined)).toThrow(ConfigError);
    expect(thrown(() => parseSingerState({ bookmarks: { contacts: { sync_watermark: 'yesterday' } } }, () => undefined))).toMatchObject({ fields: ['state.contacts.sync_watermark'] });
    expect(thrown(() => parseSingerState({ bookmarks: [] }, () => undefined))).toMatchObject({ fields: ['state.bookmarks'] });
    expect(() => parseSingerState({ bookmarks: { contacts: { sync_watermark: 'yesterday' } } }, () => undefined)).toThrow(/"contacts": sync_watermark/);
    expect(() => parseSingerState([], () => undefined)).toThrow(/expected a JSON object/);
    expect(() => parseSingerState({ bookmarks: [] }, () => undefined)).toThrow(/"bookmarks" must be an object/);
  });
});

