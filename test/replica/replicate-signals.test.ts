/**
 * replicate keeps its own SIGTERM/SIGINT handlers installed until its last
 * awaits are done (the writer's and the session's close), and says when it
 * installs and removes them (ReplicateContext.handlesSignals), so that the
 * command line's handler (src/cli/stop-bridge.ts) covers every moment before
 * and after: no signal meets the default action (no summary, no Pipes
 * `closed`). In-process, against the emulator on 127.0.0.1.
 */
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { SyncSession } from '../../src/engine/session.js';
import { replicate } from '../../src/faces/replica/command.js';
import { StderrLogger } from '../../src/process/output.js';
import type { Account } from '../helpers/emulator-runs.js';
import { withEmulatorAccount } from '../helpers/suite.js';

let account: Account;
let dir: string;
withEmulatorAccount('replicate-signals-', { contacts: 12, seed: 5 }, (suite) => ({ account, dir } = suite));

describe('replicate and the stop signals', () => {
  it('still handles them while the session closes, and hands them back only once it has', async () => {
    const told: boolean[] = [];
    let own = false;
    const duringClose: { own: boolean; listeners: number }[] = [];
    const close = SyncSession.prototype.close;
    const spy = vi.spyOn(SyncSession.prototype, 'close').mockImplementation(function (this: SyncSession) {
      duringClose.push({ own, listeners: process.listenerCount('SIGTERM') });
      return close.call(this);
    });
    const before = process.listenerCount('SIGTERM');
    try {
      const config = account.config(dir, { page_size: 5 });
      const code = await replicate(
        {
          logger: new StderrLogger('source-data-read'),
          handlesSignals: (value) => {
            own = value;
            told.push(value);
          },
        },
        config,
        join(dir, 'replica.db'),
      );
      expect(code).toBe(0);
    } finally {
      spy.mockRestore();
    }
    expect(duringClose).toEqual([{ own: true, listeners: before + 1 }]);
    expect(told).toEqual([true, false, true, false]);
    expect(process.listenerCount('SIGTERM')).toBe(before);
  });
});
