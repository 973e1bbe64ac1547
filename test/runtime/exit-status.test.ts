/** The exit statuses (sysexits.h) by failure type, and where users read them: both --help texts, the README and docs/orchestrators.md. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HELP } from '../../src/cli/source.js';
import { TAP_HELP } from '../../src/cli/tap.js';
import { exitStatusFor, exitStatusForAll, exitStatusHelp, mostActionable } from '../../src/runtime/exit-status.js';
import { ROOT } from '../helpers/cli.js';

describe('exit statuses', () => {
  it('one per failure type: 78 config_error, 75 transient_error, 70 system_error', () => {
    expect(exitStatusFor('config_error')).toBe(78);
    expect(exitStatusFor('transient_error')).toBe(75);
    expect(exitStatusFor('system_error')).toBe(70);
  });

  it('streams failing differently: the most actionable wins (78, then 70, then 75); none failed: 0', () => {
    expect(exitStatusForAll(['transient_error', 'config_error', 'system_error'])).toBe(78);
    expect(exitStatusForAll(['transient_error', 'system_error'])).toBe(70);
    expect(exitStatusForAll(['transient_error'])).toBe(75);
    expect(exitStatusForAll([])).toBe(0);
  });

  it('both --help texts list them, and the docs page has the table', () => {
    for (const [help, replica] of [[HELP, true], [TAP_HELP, false]] as const) {
      expect(help).toContain(exitStatusHelp(replica));
      expect(help).not.toMatch(/\b1 after/);
      for (const code of ['0', '2', '78', '75', '70', '130']) expect(help).toMatch(new RegExp(`^  ${code} `, 'm'));
    }
    const page = readFileSync(join(ROOT, 'docs', 'orchestrators.md'), 'utf8');
    for (const code of ['0', '2', '78', '75', '70', '130 / 143']) expect(page).toContain(`| ${code} |`);
  });

  it("the tap, which writes no replica, does not speak of the replica's lock; source-data-read does", () => {
    expect(TAP_HELP).not.toMatch(/replica|lock/i);
    expect(HELP).toContain('the replica locked by a live run');
  });

  it('the README lists them too', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8').replace(/\s+/g, ' ');
    for (const said of ['0 success', '2 a usage mistake', '78 a config error', '75 run again later', '70 a service or connector fault', '130/143 interrupted']) {
      expect(readme).toContain(said);
    }
  });
});

describe('mostActionable', () => {
  it('puts config_error before transient_error before system_error', () => {
    expect(mostActionable(['system_error', 'transient_error'])).toBe('transient_error');
    expect(mostActionable(['system_error', 'config_error', 'transient_error'])).toBe('config_error');
    expect(mostActionable(['system_error'])).toBe('system_error');
    expect(mostActionable([])).toBeUndefined();
  });
});
