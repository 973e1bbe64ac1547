/** The emulator as a server: cursors, tenancy, the control token, the address it binds. */
import { describe, expect, it } from 'vitest';
import { runEmulatorSecurity } from '../../reliability/emulator-security.js';

describe('emulator security', () => {
  it('every check passes', async () => {
    const checks = await runEmulatorSecurity();
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks.length).toBeGreaterThanOrEqual(15);
  });
});
