/**
 * Many accounts, Airbyte read: every RECORD of a stream comes before that
 * stream's last STATE (src/engine/accounts.ts, the STATE cadence), however
 * the accounts' reads interleave. The second of two syncs on the emulator's
 * frozen clock reads accounts back to the very states they started from, so
 * the stream's state of every account does not change with their records:
 * - pipeline_stages, read by slow accounts after a STATE of the deletion log:
 *   that STATE wrote none of pipeline_stages before it (only of the streams
 *   tombstones went to), so the stream's STATE at its end follows them all;
 * - contacts with deletions_as_tombstones: its STATE before the log's (the
 *   tombstones of one account), then another account's contacts: the
 *   stream's last STATE still follows them, unlike the one before it.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from 'data-read-emulator';
import { SOURCE_BIN, parseLines, protocolCheckAsync, runCli, tempDir, writeJson } from '../../helpers/cli.js';
import { LIMITS_OUT_OF_REACH, requireBuild } from '../../helpers/emulator-runs.js';

type Message = Record<string, unknown>;

let emulator: Emulator;
let dir: string;
let files = 0;
interface Account {
  readonly name: string;
  readonly id: string;
  readonly key: string;
}
const accounts: Account[] = [];

beforeAll(async () => {
  requireBuild();
  dir = tempDir('many-accounts-last-state-');
  emulator = await startEmulator({ host: '127.0.0.1', port: 0, seed: 23, frozenClock: true, limits: LIMITS_OUT_OF_REACH });
  for (const name of ['acc-1', 'acc-2', 'acc-3']) {
    const account = emulator.control.createAccount({ name: `Tenant ${name}` });
    emulator.control.seed(account.id, { contacts: 20 });
    accounts.push({ name, id: account.id, key: emulator.control.createKey(account.id).key });
  }
});

afterAll(async () => {
  await emulator?.close();
});

beforeEach(() => {
  emulator.control.clearFaults();
});

/** Each stream's RECORDs after its last STATE, by stream (none: every record is covered). */
function recordsAfterLastState(messages: readonly Message[]): Record<string, number> {
  const after: Record<string, number> = {};
  for (const m of messages) {
    if (m.type === 'RECORD') {
      const stream = (m.record as { stream: string }).stream;
      after[stream] = (after[stream] ?? 0) + 1;
    } else if (m.type === 'STATE') {
      after[(m.state as { stream: { stream_descriptor: { name: string } } }).stream.stream_descriptor.name] = 0;
    }
  }
  return Object.fromEntries(Object.entries(after).filter(([, n]) => n > 0));
}

/** Two syncs of every account (`extra` in the config), the second from the first's states, with `faults`. */
async function secondSync(extra: Record<string, unknown>, faults: Parameters<Emulator['control']['setFaults']>[0]): Promise<Message[]> {
  const cfg = writeJson(dir, `config-${++files}.json`, {
    base_url: emulator.url,
    use_service_schema: false,
    max_concurrent_accounts: 3,
    page_size: 50,
    accounts: accounts.map((a) => ({ name: a.name, api_key: a.key })),
    ...extra,
  });
  const discovered = await runCli(SOURCE_BIN, ['discover', '--config', cfg]);
  const catalog = parseLines(discovered.stdout).find((m) => m.type === 'CATALOG')?.catalog as { streams: { name: string; supported_sync_modes: string[] }[] };
  const catalogPath = writeJson(dir, `catalog-${++files}.json`, {
    streams: catalog.streams.map((stream) => ({
      stream,
      sync_mode: stream.supported_sync_modes.includes('incremental') ? 'incremental' : 'full_refresh',
      destination_sync_mode: 'append_dedup',
      primary_key: [['account'], ['id']],
    })),
  });
  const first = await runCli(SOURCE_BIN, ['read', '--config', cfg, '--catalog', catalogPath], { timeoutMs: 60_000 });
  expect(first.code, first.stdout.slice(-1500)).toBe(0);
  const states = parseLines(first.stdout).filter((m) => m.type === 'STATE');
  emulator.control.setFaults(faults);
  const second = await runCli(SOURCE_BIN, ['read', '--config', cfg, '--catalog', catalogPath, '--state', writeJson(dir, `state-${++files}.json`, states)], {
    timeoutMs: 60_000,
  });
  expect(second.code, second.stdout.slice(-1500)).toBe(0);
  expect((await protocolCheckAsync('airbyte', second.stdout)).errors).toEqual([]);
  return parseLines(second.stdout);
}

describe('many accounts, Airbyte read: no RECORD after its stream\'s last STATE', { timeout: 120_000 }, () => {
  it('pipeline_stages read by slow accounts after a STATE of the deletion log', async () => {
    // One account's deletions end the log's read for the face after another's pipeline_stages ended; the two others'
    // pipeline_stages answer last.
    const messages = await secondSync({}, [
      { kind: 'slow', every: 1, times: 2, paths: ['/v1/pipeline_stages'], slowMs: 2500 },
      { kind: 'slow', every: 1, times: 1, paths: ['/v1/deletions'], slowMs: 800 },
    ]);
    // The slow answers came after the log's last STATE.
    const last = (match: (m: Message) => boolean): number => messages.findLastIndex(match);
    const stageRecord = last((m) => m.type === 'RECORD' && (m.record as { stream: string }).stream === 'pipeline_stages');
    expect(stageRecord).toBeGreaterThan(last((m) => m.type === 'STATE' && (m.state as { stream: { stream_descriptor: { name: string } } }).stream.stream_descriptor.name === 'deletions'));
    expect(recordsAfterLastState(messages)).toEqual({});
  });

  it('contacts, a stream tombstones go to: its STATE before the log\'s, then an account\'s contacts read back to the same state', async () => {
    const [first, , last] = accounts as [Account, Account, Account];
    // Changed just before the first sync: the second's reads return them again (the service's 5-minute look-back) and,
    // on the frozen clock, end on the watermark they started from. The first account's deletion makes a tombstone.
    emulator.control.mutate(first.id, { op: 'delete_contacts', count: 1 });
    emulator.control.mutate(last.id, { op: 'update_contacts', count: 1 });
    // One account after the other: the log's STATE, at the last account's end of it, follows the first account's
    // tombstones; the last account reads contacts after it.
    const messages = await secondSync({ deletions_as_tombstones: true, max_concurrent_accounts: 1 }, []);
    expect(recordsAfterLastState(messages)).toEqual({});
    const contacts = messages.filter((m) => m.type === 'RECORD' && (m.record as { stream: string }).stream === 'contacts');
    expect(contacts.map((m) => (m.record as { data: { account: string } }).data.account)).toContain(last.name);
    const states = messages.filter((m) => m.type === 'STATE' && (m.state as { stream: { stream_descriptor: { name: string } } }).stream.stream_descriptor.name === 'contacts');
    expect(states.length).toBeGreaterThan(1);
  });
});
