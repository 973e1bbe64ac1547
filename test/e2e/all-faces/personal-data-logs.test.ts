/**
 * A personal field whose value does not fit its declared type (a phone sent
 * as a JSON number). Kept, it goes on as received and the type check's WARN
 * names the field and the record, never the value. Hashed, the record
 * carries the token of the number's digits, which fits the declared string:
 * no WARN, and the number appears nowhere.
 */
import { createHmac } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { SOURCE_BIN, parseLines, runCli, writeJson } from '../../helpers/cli.js';
import type { Account } from '../../helpers/emulator-runs.js';
import { withEmulatorAccount } from '../../helpers/suite.js';

const HASH_KEY = 'e2e-personal-logs-key-0123456789';
const PHONE_DIGITS = '5511987654321';

let account: Account;
let dir: string;
let id: string;

withEmulatorAccount('personal-logs-', { contacts: 12, seed: 53 }, (suite) => ({ account, dir } = suite));
beforeAll(() => {
  id = String(account.dump().contacts[0]?.id);
  account.mutate({ op: 'update_contacts', ids: [id], setJson: { phone: PHONE_DIGITS } });
});

const catalog = (): string =>
  writeJson(dir, 'catalog.json', {
    streams: [{ stream: { name: 'contacts', json_schema: {}, supported_sync_modes: ['full_refresh', 'incremental'] }, sync_mode: 'full_refresh', destination_sync_mode: 'overwrite' }],
  });

/** One read of the contacts with `extra` in the config: exit status, messages, stdout and stderr. */
async function read(name: string, extra: Record<string, unknown>): Promise<{ code: number | null; stdout: string; stderr: string; messages: Record<string, unknown>[] }> {
  const config = writeJson(dir, `config-${name}.json`, { api_key: account.key, base_url: account.emulator.url, ...extra });
  const run = await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', catalog()]);
  return { ...run, messages: parseLines(run.stdout) };
}

const typeWarnings = (messages: readonly Record<string, unknown>[]): string[] =>
  messages.flatMap((m) => (m.type === 'LOG' && /not fit the declared type/.test((m.log as { message: string }).message) ? [(m.log as { message: string }).message] : []));

const phoneOf = (messages: readonly Record<string, unknown>[]): unknown =>
  (messages.find((m) => m.type === 'RECORD' && (m.record as { data: { id: string } }).data.id === id)?.record as { data: { phone?: unknown } }).data.phone;

describe('a personal value of the wrong type', () => {
  it('kept: passed on as received; the WARN names phone and the record, not the number', async () => {
    const run = await read('keep', {});
    expect(run.code, run.stderr.slice(-800)).toBe(0);
    const warnings = typeWarnings(run.messages);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`phone is declared string or null but got an integer (its value not shown: personal data in record ${id})`);
    expect(phoneOf(run.messages)).toBe(Number(PHONE_DIGITS));
    const notRecords = run.stdout.split('\n').filter((l) => !l.includes('"type":"RECORD"'));
    expect([...notRecords, run.stderr].join('\n')).not.toContain(PHONE_DIGITS);
  });

  it('hashed: the token of its digits, which fits the declared type; the number nowhere', async () => {
    const run = await read('hash', { personal_data: 'hash', hash_key: HASH_KEY });
    expect(run.code, run.stderr.slice(-800)).toBe(0);
    expect(typeWarnings(run.messages)).toEqual([]);
    expect(phoneOf(run.messages)).toBe(createHmac('sha256', HASH_KEY).update(PHONE_DIGITS).digest('hex'));
    expect(run.stdout + run.stderr).not.toContain(PHONE_DIGITS);
  });
});
