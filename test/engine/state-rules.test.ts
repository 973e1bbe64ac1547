/** The state rules as data: where a read starts, what a checkpoint inside a read holds, what a complete read saves. */
import { describe, expect, it } from 'vitest';
import { StateRules } from '../../src/engine/state-rules.js';

const W0 = '2026-02-01T10:00:00.000Z';
const W1 = '2026-03-01T10:00:00.000Z';
const CONTACTS = { name: 'contacts', cursorField: 'updated_at' };

describe('StateRules', () => {
  it('starts from the resume cursor, else the complete watermark, else start_date', () => {
    expect(new StateRules(CONTACTS, { sync_watermark: W0, resume: { cursor: 'c2', sync_watermark: W1 } }, '2020-01-01').start()).toEqual({ cursor: 'c2', watermark: W1 });
    expect(new StateRules(CONTACTS, { sync_watermark: W0 }, '2020-01-01').start()).toEqual({ updatedSince: W0 });
    expect(new StateRules(CONTACTS, {}, '2020-01-01').start()).toEqual({ updatedSince: '2020-01-01' });
    expect(new StateRules(CONTACTS, {}, undefined).start()).toEqual({ updatedSince: undefined });
  });

  it('keeps the complete watermark in checkpoints inside a read', () => {
    expect(new StateRules(CONTACTS, { sync_watermark: W0 }, undefined).midRead('c4', W1)).toEqual({ sync_watermark: W0, resume: { cursor: 'c4', sync_watermark: W1 } });
    expect(new StateRules(CONTACTS, {}, undefined).midRead('c4', W1)).toEqual({ resume: { cursor: 'c4', sync_watermark: W1 } });
  });

  it('saves the watermark a complete read reported, an earlier one with a WARN naming both', () => {
    expect(new StateRules(CONTACTS, { sync_watermark: W0 }, undefined).complete(W1)).toEqual({ state: { sync_watermark: W1 } });
    const back = new StateRules(CONTACTS, { sync_watermark: W1 }, undefined).complete(W0);
    expect(back.state).toEqual({ sync_watermark: W0 });
    expect(back.warning).toContain(`reported sync_watermark ${W0}, earlier than the saved ${W1}`);
    // A stream without a cursor is read in full every time: nothing to warn of.
    expect(new StateRules({ name: 'pipeline_stages', cursorField: null }, { sync_watermark: W1 }, undefined).complete(W0)).toEqual({ state: { sync_watermark: W0 } });
  });

  it('gives a stream without a cursor no time filter, start_date or not', () => {
    expect(new StateRules({ name: 'pipeline_stages', cursorField: null }, {}, '2020-01-01').start()).toEqual({ updatedSince: undefined });
  });

  it('restarts a rejected resume from the last complete watermark, and says so', () => {
    const restart = new StateRules(CONTACTS, { sync_watermark: W0, resume: { cursor: 'bad', sync_watermark: W1 } }, '2020-01-01').restart('HTTP 400');
    expect(restart.start).toEqual({ updatedSince: W0 });
    expect(restart.warning).toContain(`the last complete watermark ${W0}`);
  });
});
