/**
 * Dates the way users type them, through the real executables against the
 * emulator: a start_date up to a day ahead (users ahead of UTC) is accepted,
 * more than a day ahead is refused unless every stream that would use it has
 * state, ±HHMM offsets work, and dates the service cannot take are refused
 * when the config is validated (check FAILED, read config_error), never
 * halfway through a read.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withEmulatorAccount } from '../../helpers/suite.js';
import { ROOT, SOURCE_BIN, TAP_BIN, connectionStatusOf, parseLines, protocolCheck, runCli, writeJson, type CliResult } from '../../helpers/cli.js';
import { replicate, type Account } from '../../helpers/emulator-runs.js';

const HOUR = 3_600_000;
const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');
let account: Account;
let dir: string;
let n = 0;

withEmulatorAccount('dates-', { contacts: 150, seed: 51 }, (s) => ({ account, dir } = s));

const config = (start_date: string): string =>
  writeJson(dir, `config-${n++}.json`, { api_key: account.key, base_url: account.emulator.url, start_date, page_size: 200 });

/** An instant written with a ±HHMM offset (ISO 8601 basic form), e.g. 2026-11-22T07:30:00+1000. */
function withOffset(ms: number, offsetHours: number): string {
  const local = new Date(ms + offsetHours * HOUR).toISOString().slice(0, 19);
  const sign = offsetHours < 0 ? '-' : '+';
  return `${local}${sign}${String(Math.abs(offsetHours)).padStart(2, '0')}00`;
}

async function check(startDate: string): Promise<{ status: string; message: string }> {
  const run = await runCli(SOURCE_BIN, ['check', '--config', config(startDate)]);
  expect(run.code).toBe(0);
  return connectionStatusOf(run.stdout);
}

function errorsOf(run: CliResult): { failure_type: string; message: string }[] {
  return parseLines(run.stdout).flatMap((m) =>
    m.type === 'TRACE' && (m.trace as { type: string }).type === 'ERROR' ? [(m.trace as { error: { failure_type: string; message: string } }).error] : [],
  );
}

const read = (configPath: string, state?: unknown, catalog = CATALOG): Promise<CliResult> =>
  runCli(SOURCE_BIN, ['read', '--config', configPath, '--catalog', catalog, ...(state === undefined ? [] : ['--state', writeJson(dir, `state-${n++}.json`, state)])]);

describe('start_date', () => {
  it('a date up to a day ahead passes check (users ahead of UTC); more than a day ahead fails it', async () => {
    const now = Date.now();
    expect((await check(new Date(now + 24 * HOUR).toISOString().slice(0, 10))).status).toBe('SUCCEEDED'); // tomorrow's date: < 24 h ahead
    expect((await check(withOffset(now + 20 * HOUR, 10))).status).toBe('SUCCEEDED');
    const far = new Date(now + 3 * 24 * HOUR).toISOString().slice(0, 10);
    expect(await check(far)).toEqual({ status: 'FAILED', message: expect.stringMatching(new RegExp(`^start_date is in the future \\(${far}, more than a day ahead of now`)) });
  });

  it('read: more than a day ahead is a config_error without state, and not used (nor refused) when every stream that would use it has state', async () => {
    const far = config(new Date(Date.now() + 3 * 24 * HOUR).toISOString().slice(0, 10));
    const refused = await read(far);
    expect(refused.code).toBe(78);
    expect(errorsOf(refused)).toEqual([{ failure_type: 'config_error', message: expect.stringMatching(/^start_date is in the future .*It would be used by: contacts, conversations, stage_events, deletions\.\)$/) }]);
    expect(parseLines(refused.stdout).some((m) => m.type === 'RECORD')).toBe(false);

    // A first sync without start_date, then the far date with that state: every incremental stream has state.
    const first = await read(writeJson(dir, `plain-${n++}.json`, { api_key: account.key, base_url: account.emulator.url }));
    expect(first.code).toBe(0);
    const states = parseLines(first.stdout).filter((m) => m.type === 'STATE').map((m) => m.state);
    account.mutate({ op: 'update_contacts', count: 4 });
    const later = await read(far, states);
    expect(later.code, later.stdout.slice(-800)).toBe(0);
    expect(protocolCheck('airbyte', later.stdout).errors).toEqual([]);
    expect(parseLines(later.stdout).filter((m) => m.type === 'RECORD' && (m.record as { stream: string }).stream === 'contacts').length).toBeGreaterThanOrEqual(4);
  });

  it('a ±HHMM offset is read as the instant it names and sent in the service form; pipeline_stages (no time filter) is read in full', async () => {
    const dump = account.dump();
    const instants = dump.contacts.map((c) => Date.parse(c.updated_at)).sort((a, b) => a - b);
    const middle = instants[Math.floor(instants.length / 2)] as number;
    account.emulator.control.resetStats();
    const run = await read(config(withOffset(middle, -3)));
    expect(run.code, run.stdout.slice(-800)).toBe(0);
    const contacts = parseLines(run.stdout).filter((m) => m.type === 'RECORD' && (m.record as { stream: string }).stream === 'contacts');
    const expected = account.dump().contacts.filter((c) => Date.parse(c.updated_at) >= middle - 5 * 60_000);
    expect(contacts.length).toBe(expected.length);
    expect(contacts.length).toBeLessThan(dump.contacts.length);
    expect(parseLines(run.stdout).filter((m) => m.type === 'RECORD' && (m.record as { stream: string }).stream === 'pipeline_stages').length).toBe(dump.pipeline_stages.length);
    expect(account.emulator.control.stats().byStatus['400'] ?? 0).toBe(0);
  });

  it.each([
    ['0000-01-01', /year 0000 does not exist/],
    ['2024-02-30T10:00:00Z', /February 2024 has no day 30/],
    ['2024-13-01', /there is no month 13/],
    ['2024-06-01T25:00:00+0200', /25:00:00 is not a time of day/],
  ])('%s: check FAILED and read config_error, naming the cause; nothing is requested', async (startDate, cause) => {
    const status = await check(startDate);
    expect(status.status).toBe('FAILED');
    expect(status.message).toMatch(cause);
    account.emulator.control.resetStats();
    const run = await read(config(startDate));
    expect(run.code).toBe(78);
    expect(errorsOf(run)).toEqual([{ failure_type: 'config_error', message: expect.stringMatching(cause) }]);
    expect(account.emulator.control.stats().total).toBe(0);
  });

  it('the Singer tap and replicate follow the same rules', async () => {
    const farDate = new Date(Date.now() + 3 * 24 * HOUR).toISOString().slice(0, 10);
    const far = config(farDate);
    const tap = await runCli(TAP_BIN, ['--config', far]);
    expect(tap.code).toBe(78);
    expect(tap.stderr).toMatch(/CRITICAL tap-data-read: start_date is in the future/);
    const zero = await runCli(TAP_BIN, ['--config', config('0000-01-01')]);
    expect(zero.code).toBe(78);
    expect(zero.stderr).toMatch(/CRITICAL tap-data-read: Invalid config: start_date must be YYYY-MM-DD .*year 0000 does not exist/);
    // With bookmarks for every incremental stream, the far date is not used.
    const full = await runCli(TAP_BIN, ['--config', config(withOffset(Date.now() - 400 * 24 * HOUR, 5))]);
    expect(full.code, full.stderr.slice(-500)).toBe(0);
    const lastState = parseLines(full.stdout).filter((m) => m.type === 'STATE').at(-1)?.value;
    const again = await runCli(TAP_BIN, ['--config', far, '--state', writeJson(dir, `tap-state-${n++}.json`, lastState)]);
    expect(again.code, again.stderr.slice(-500)).toBe(0);

    const db = join(dir, 'dates.db');
    const refused = await replicate(far, db);
    expect(refused.code).toBe(78);
    expect(refused.stderr).toMatch(/ERROR source-data-read: Cannot replicate: start_date is in the future/);
    expect((await replicate(config('2020-01-01T00:00:00+0000'), db)).code).toBe(0);
    const continued = await replicate(far, db);
    expect(continued.code, continued.stderr.slice(-500)).toBe(0);
  });
});
