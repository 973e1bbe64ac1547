import { describe, expect, it } from 'vitest';
import { ConfigError, ConnectorError } from '../../src/errors.js';
import { stoppedLine } from '../../src/replica/command.js';

describe("the last line of a replicate run an error stopped", () => {
  it('gives the advice to run again once: not again after a store message that gives it', () => {
    // What the PostgreSQL store says of a connection lost mid-run (stores/postgres/faults.ts).
    const lost = new ConnectorError(
      'transient_error',
      'The connection to the PostgreSQL database postgresql://loader:***@db:5432/analytics was lost while writing to it (Connection terminated). Nothing of the unfinished transaction was kept; run again later, it resumes from the last commit.',
    );
    expect(stoppedLine(lost)).toBe(`Replication stopped: ${lost.message}`);
    const plain = new ConnectorError('system_error', 'The service sent a page that is not JSON.');
    expect(stoppedLine(plain)).toBe('Replication stopped: The service sent a page that is not JSON. Run replicate again to continue from the last commit.');
    expect(stoppedLine(new ConfigError('bad'))).toBe('Cannot replicate: bad');
  });
});
