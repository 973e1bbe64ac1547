/**
 * engine/accounts.ts and the per-account state shape of engine/state.ts (connector contract, "Many accounts");
 * the records of a run of many accounts, against nock.
 */
import nock from 'nock';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseUserConfig } from '../../src/config/config.js';
import { AccountsRun, STATE_CADENCE, accountStates } from '../../src/engine/accounts.js';
import { checkAccounts } from '../../src/engine/connect.js';
import type { SessionRequest } from '../../src/engine/session.js';
import { buildOpenApiDocument } from '../../packages/emulator/src/openapi.js';
import { parseStreamState, type StreamState } from '../../src/engine/state.js';
import { ConfigError } from '../../src/errors.js';
import { builtInSchema, recordJsonSchema, type JsonSchema } from '../../src/schemas/json-schema.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';
import type { Data } from '../../src/engine/sync-sink.js';
import { thrown } from '../helpers/thrown.js';
import { RecordingSink } from '../helpers/recording-sink.js';
import { ROOT, parseLines } from '../helpers/cli.js';
import { planAll } from '../../src/protocols/singer/selection.js';
import { SingerSink } from '../../src/protocols/singer/sink.js';
import { LineWriter, StderrLogger } from '../../src/runtime/output.js';
import { requireBuild } from '../helpers/emulator-runs.js';
import { JSON_HEADERS, resetNock } from '../client/helpers.js';

const W = '2026-01-01T00:00:00.000Z';
const entries = [{ name: 'acme', api_key: 'a_live_1' }, { name: 'globex', api_key: 'g_live_2' }];

describe('the state of many accounts', () => {
  it('holds one state of one account per entry, each validated as such', () => {
    const state = parseStreamState('contacts', {
      accounts: { acme: { sync_watermark: W, account: { name: 'Acme', base_url: 'https://x' } }, globex: { resume: { cursor: 'c', sync_watermark: W } }, gone: {} },
    });
    expect(state).toEqual({ accounts: { acme: { sync_watermark: W, account: { name: 'Acme', base_url: 'https://x' } }, globex: { resume: { cursor: 'c', sync_watermark: W } }, gone: {} } });
  });

  it.each([
    [{ accounts: [] }, /"accounts" must be an object keyed by the names/],
    [{ accounts: {}, sync_watermark: W }, /holds both "accounts" and "sync_watermark"/],
    [{ accounts: { acme: { accounts: {} } } }, /the state of account "acme" holds "accounts" again/],
    [{ accounts: { acme: { sync_watermark: 'yesterday' } } }, /Invalid state for stream "contacts" of account "acme": sync_watermark must be an ISO 8601/],
  ])('refuses %j', (input, message) => {
    expect(() => parseStreamState('contacts', input)).toThrow(message);
  });

  it('reads one carrying records_written (written only) as if it were not there', () => {
    expect(parseStreamState('contacts', { accounts: { acme: { sync_watermark: W } }, records_written: 12 })).toEqual({ accounts: { acme: { sync_watermark: W } } });
  });

  it('keeps the state of an entry named __proto__ (the names\' pattern allows it) as an own field', () => {
    const saved = JSON.parse(`{"accounts": {"__proto__": {"sync_watermark": "${W}"}, "acme": {}}}`) as unknown;
    const state = parseStreamState('contacts', saved);
    expect(Object.keys(state.accounts ?? {})).toEqual(['__proto__', 'acme']);
    expect(JSON.parse(JSON.stringify(state))).toEqual(saved);
    const entries = [{ name: '__proto__', api_key: 'drk_live_aaaaaaaaaaaa' }, { name: 'acme', api_key: 'drk_live_bbbbbbbbbbbb' }];
    expect(accountStates(new Map([['contacts', state]]), entries).get('contacts')?.get('__proto__')).toEqual({ sync_watermark: W });
  });

  it('accountStates: the states by stream and entry; empty states skipped; a state of one account refused, with the shape to use', () => {
    const states = new Map([
      ['contacts', { accounts: { acme: { sync_watermark: W } } }],
      ['deletions', {}],
    ]);
    const byStream = accountStates(states, entries);
    expect([...byStream.keys()]).toEqual(['contacts']);
    expect(byStream.get('contacts')?.get('acme')).toEqual({ sync_watermark: W });
    const error = thrown(() => accountStates(new Map([['contacts', { sync_watermark: W, account: { name: 'Acme' } }]]), entries));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/The state of stream "contacts" is the state of one account \(of account "Acme"\).*\{"accounts": \{"acme": \{"sync_watermark": \.\.\.\}\}\}/);
  });
});

/** The runs against nock below: every request answered by nock, none leaves the machine. */
const origin = 'http://127.0.0.1:9';
const contacts = findStream('contacts') as StreamDefinition;
function againstNock(): void {
  beforeAll(() => nock.disableNetConnect());
  afterEach(() => resetNock());
  afterAll(() => nock.enableNetConnect());
}

describe('records of many accounts, against nock', () => {
  againstNock();
  const ACME = { name: 'acme', api_key: 'drk_live_acmeacme0123456789' };

  /**
   * A run of contacts for `entries`, each key's /v1/me answering Acme and its one page holding `data`; `selection`
   * as a face gives it, `extra` config settings. The recording sink, after checking the run ended without error.
   */
  async function run(
    entries: readonly object[],
    data: readonly object[],
    selection: { fields?: Set<string>; excluded?: Set<string> } = {},
    extra: Record<string, unknown> = {},
    states: Map<string, StreamState> = new Map(),
  ): Promise<RecordingSink> {
    nock(origin).get('/v1/me').times(entries.length).reply(200, { account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 600, per_day: 100000 } }, JSON_HEADERS);
    const page = { data, next_cursor: null, has_more: false, sync_watermark: W };
    nock(origin).get('/v1/contacts').query(true).times(entries.length).reply(200, page, JSON_HEADERS);
    const { config } = parseUserConfig({ accounts: entries, base_url: origin, use_service_schema: false, max_concurrent_accounts: 1, ...extra }, { addSecret: () => undefined }, {});
    const sink = new RecordingSink();
    const result = await new AccountsRun(config).run({ streams: [{ stream: contacts, mode: 'incremental', ...selection }], states }, sink);
    expect(result.error).toBeUndefined();
    return sink;
  }
  const warnings = (sink: RecordingSink): string[] => sink.events.flatMap((e) => (e.kind === 'log' && e.level === 'WARN' ? [e.message] : []));

  it("keep a field `account` the service sent, as service_account, and say so: the entry's name takes `account`", async () => {
    const sink = await run([ACME], [{ id: 'c1', updated_at: W, account: 'svc-7' }, { id: 'c2', updated_at: W }]);
    expect(sink.recordsOf('contacts')).toEqual([
      { id: 'c1', updated_at: W, account: 'acme', service_account: 'svc-7' },
      { id: 'c2', updated_at: W, account: 'acme' },
    ]);
    expect(warnings(sink)).toEqual([expect.stringMatching(/contacts: the service sent a field "account" of its own.*kept as "service_account"/)]);
  });

  it('sums the run up in one line: records per stream, the accounts and those that failed, the requests', async () => {
    const globex = { name: 'globex', api_key: 'drk_live_globex0123456789abc' };
    const me = { account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 600, per_day: 100000 } };
    nock(origin).get('/v1/me').matchHeader('authorization', `Bearer ${ACME.api_key}`).reply(200, me, JSON_HEADERS);
    nock(origin).get('/v1/me').matchHeader('authorization', `Bearer ${globex.api_key}`).reply(401, { title: 'Unauthorized', status: 401 }, { 'content-type': 'application/problem+json' });
    nock(origin).get('/v1/contacts').query(true).reply(200, { data: [{ id: 'c1', updated_at: W }], next_cursor: null, has_more: false, sync_watermark: W }, JSON_HEADERS);
    const { config } = parseUserConfig({ accounts: [ACME, globex], base_url: origin, use_service_schema: false, max_concurrent_accounts: 1 }, { addSecret: () => undefined }, {});
    const accounts = new AccountsRun(config);
    await accounts.run({ streams: [{ stream: contacts, mode: 'incremental' }], states: new Map() }, new RecordingSink());
    expect(accounts.summary()).toBe('records: contacts 1; accounts: 2 (1 failed: globex); requests: 3, retries: 0, rate-limit waits: 0');
  });

  it("hands a sink per account (replicate's) each checkpoint with that account's state alone, not every account's", async () => {
    const globex = { name: 'globex', api_key: 'drk_live_globex0123456789abc' };
    nock(origin).get('/v1/me').times(2).reply(200, { account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 600, per_day: 100000 } }, JSON_HEADERS);
    nock(origin).get('/v1/contacts').query(true).times(2).reply(200, { data: [{ id: 'c1', updated_at: W }], next_cursor: null, has_more: false, sync_watermark: W }, JSON_HEADERS);
    const { config } = parseUserConfig({ accounts: [ACME, globex], base_url: origin, use_service_schema: false, max_concurrent_accounts: 2 }, { addSecret: () => undefined }, {});
    const sinks = new Map([ACME.name, globex.name].map((name) => [name, new RecordingSink()]));
    // An entry no longer in the config: its state is carried in the face's states, in no account's checkpoint.
    const states = new Map<string, StreamState>([['contacts', { accounts: { gone: { sync_watermark: W } } }]]);
    const result = await new AccountsRun(config).run({ streams: [{ stream: contacts, mode: 'incremental' }], states }, new RecordingSink(), undefined, {
      sinkFor: (entry) => sinks.get(entry.name) as RecordingSink,
    });
    expect(result.error).toBeUndefined();
    for (const [name, sink] of sinks) {
      const held = sink.events.flatMap((e) => (e.kind === 'state' ? [Object.keys(e.state.accounts ?? {})] : []));
      expect(held.length, name).toBeGreaterThan(0);
      for (const keys of held) expect(keys, name).toEqual([name]);
    }
  });

  it('two entries reading an account of the same name are both read, with one WARN naming both entries and the account', async () => {
    // Two keys of one account would read it twice.
    const sink = await run([ACME, { name: 'acme-again', api_key: 'drk_live_acmeagain0123456789' }], [{ id: 'c1', updated_at: W }]);
    expect(sink.recordsOf('contacts')).toHaveLength(2);
    expect(warnings(sink)).toEqual([expect.stringMatching(/^Account "acme-again": entries "acme" and "acme-again" read an account of the same name, "Acme".*Keep one entry/)]);
  });

  it('an entry reading the account a state names under an entry no longer in the config (renamed): read, one WARN naming both entries', async () => {
    const bound = (name: string): StreamState => ({ sync_watermark: W, account: { name, base_url: origin } });
    const states = new Map([['contacts', { accounts: { 'acme-old': bound('Acme'), globex: bound('Globex') } }]]);
    const sink = await run([ACME], [{ id: 'c1', updated_at: W }], {}, {}, states);
    expect(sink.recordsOf('contacts')).toHaveLength(1);
    expect(warnings(sink)).toEqual([
      expect.stringMatching(
        /^Account "acme": it reads an account of the same name, "Acme" at http:\/\/127\.0\.0\.1:9, as entry "acme-old", which is no longer in the config .*the rows and state of "acme-old" stay.*Rename the entry back to "acme-old"/,
      ),
    ]);
    expect(JSON.stringify(sink.events)).not.toContain(ACME.api_key);
  });

  it('lets the session of an account that failed go: the run keeps its error, not its client', () => {
    // A run of 1,000 accounts that all fail (a key revoked everywhere, the service gone) must not hold 1,000 clients.
    // In a process of its own (the built code, a server that refuses every key): what the garbage collector may free
    // does not depend on what other test files left in this worker.
    requireBuild();
    const dist = (path: string): string => JSON.stringify(pathToFileURL(join(ROOT, 'dist', path)).href);
    const script = `
      import { createServer } from 'node:http';
      const { AccountsRun } = await import(${dist('engine/accounts.js')});
      const { SyncSession } = await import(${dist('engine/session.js')});
      const { parseUserConfig } = await import(${dist('config/config.js')});
      const { findStream } = await import(${dist('streams.js')});
      const server = createServer((req, res) => {
        res.writeHead(401, { 'content-type': 'application/problem+json' });
        res.end(JSON.stringify({ title: 'Unauthorized', status: 401, detail: 'invalid key' }));
      });
      await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
      const sessions = [];
      const open = SyncSession.open;
      SyncSession.open = async (...args) => {
        const session = await open.apply(SyncSession, args);
        sessions.push(new WeakRef(session));
        return session;
      };
      const entries = [1, 2, 3].map((n) => ({ name: 'a' + n, api_key: 'drk_live_account' + n + '0123456789abcdef' }));
      const { config } = parseUserConfig({ accounts: entries, base_url: 'http://127.0.0.1:' + server.address().port, use_service_schema: false, max_concurrent_accounts: 1 }, { addSecret: () => undefined }, {});
      const run = new AccountsRun(config);
      const quiet = new Proxy({}, { get: () => () => undefined });
      const result = await run.run({ streams: [{ stream: findStream('contacts'), mode: 'incremental' }], states: new Map() }, quiet);
      server.close();
      // Twice, a turn apart: a WeakRef's target is kept until the job that made it ends.
      globalThis.gc();
      await new Promise((resolve) => setImmediate(resolve));
      globalThis.gc();
      console.log(JSON.stringify({ opened: sessions.length, alive: sessions.filter((s) => s.deref() !== undefined).length, failed: result.failures.map((f) => f.account) }));
    `;
    const child = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(child.stderr).toBe('');
    expect(JSON.parse(child.stdout)).toEqual({ opened: 3, alive: 0, failed: ['a1', 'a2', 'a3'] });
  });

  describe('a field `account` the service sent is moved to service_account before selection and treatments', () => {
    const sent = [{ id: 'c1', updated_at: W, account: 'ana.souza@example.com' }];

    it('left out of an Airbyte configured stream: not emitted', async () => {
      expect((await run([ACME], sent, { fields: new Set(['account', 'id', 'updated_at']) })).recordsOf('contacts')).toEqual([{ id: 'c1', updated_at: W, account: 'acme' }]);
    });

    it('deselected in a Singer catalog: not emitted', async () => {
      expect((await run([ACME], sent, { excluded: new Set(['service_account']) })).recordsOf('contacts')).toEqual([{ id: 'c1', updated_at: W, account: 'acme' }]);
    });

    it('dropped or hashed by field_treatments: its value never emitted', async () => {
      const drop = [{ stream: 'contacts', field: 'service_account', treatment: 'drop' }];
      expect((await run([ACME], sent, {}, { field_treatments: drop })).recordsOf('contacts')).toEqual([{ id: 'c1', updated_at: W, account: 'acme' }]);
      const hash = [{ stream: 'contacts', field: 'service_account', treatment: 'hash' }];
      const [hashed] = (await run([ACME], sent, {}, { field_treatments: hash, hash_key: 'a-long-enough-hash-key-0123456789' })).recordsOf('contacts') as Record<string, unknown>[];
      expect(hashed?.account).toBe('acme');
      expect(typeof hashed?.service_account).toBe('string');
      expect(JSON.stringify(hashed)).not.toContain('ana.souza');
    });
  });
});

describe('a 404 of one account on a base_url other accounts read', () => {
  againstNock();
  const keys = { acme: 'drk_live_acmeacme0123456789', globex: 'drk_live_globexglobex0123456' };
  const page = { data: [{ id: 'c1', updated_at: W }], next_cursor: null, has_more: false, sync_watermark: W };
  const me = (name: string): object => ({ account_name: name, scopes: ['data:read'], limits: { per_minute: 600, per_day: 100000 } });
  const notFound = { type: 'about:blank', title: 'Not Found', status: 404, detail: 'no such path' };

  /** The contacts of `names` (in that order), the keys of `missing` answering 404: the run's error and summaries. */
  async function run(names: readonly (keyof typeof keys)[], missing: readonly (keyof typeof keys)[], streams: readonly StreamDefinition[] = [contacts]) {
    for (const name of names) {
      const auth = { reqheaders: { authorization: `Bearer ${keys[name]}` } };
      nock(origin, auth).get('/v1/me').reply(200, me(name), JSON_HEADERS);
      for (const stream of streams) {
        const path = stream.name === 'contacts' ? '/v1/contacts' : `/v1/${stream.name}`;
        const scope = nock(origin, auth).get(path).query(true);
        if (missing.includes(name) && stream === contacts) scope.reply(404, notFound, { 'content-type': 'application/problem+json' });
        else scope.reply(200, page, JSON_HEADERS);
      }
    }
    const entries = names.map((name) => ({ name, api_key: keys[name] }));
    const { config } = parseUserConfig({ accounts: entries, base_url: origin, use_service_schema: false, max_concurrent_accounts: 1 }, { addSecret: () => undefined }, {});
    const accountsRun = new AccountsRun(config);
    const result = await accountsRun.run({ streams: streams.map((stream) => ({ stream, mode: 'incremental' as const })), states: new Map() }, new RecordingSink());
    return { error: result.error?.message ?? '', summary: accountsRun.accountSummaries().find((a) => a.name === 'globex')?.message ?? '' };
  }

  it("another account read the stream: the path exists, the account's access or plan is the likely cause, not base_url", async () => {
    // The account that meets the 404 first: the advice is the run's end's, when every account is known.
    const { error, summary } = await run(['globex', 'acme'], ['globex']);
    for (const text of [error, summary]) {
      expect(text).toMatch(/contacts: The Data-Read API has no \/v1\/contacts\S* \(HTTP 404\)\. The path exists at this base_url: account "acme" read contacts from it in this run\. This account's access is the likely cause/);
      expect(text).not.toContain('Check base_url');
    }
  });

  it('another account read another stream only: base_url likely right, the access or plan the likely cause', async () => {
    const stages = findStream('stage_events') as StreamDefinition;
    const { error } = await run(['globex', 'acme'], ['globex', 'acme'], [contacts, stages]);
    expect(error).toMatch(/account "globex": contacts: .*\(HTTP 404\)\. Account "acme" was read from this base_url in this run, so base_url is likely right/);
    expect(error).not.toContain('Check base_url');
  });

  it('no other account read anything from the base_url: the advice to check base_url stays', async () => {
    const { error } = await run(['globex'], ['globex']);
    expect(error).toMatch(/contacts: The Data-Read API has no \/v1\/contacts\S* \(HTTP 404\)\. Check base_url: it must be the address before \/v1/);
  });
});

describe('the STATE cadence of many accounts (a face without a sink per account)', () => {
  againstNock();
  // K accounts, each PAGES pages of SIZE contacts, read two at a time: their pages interleave.
  const K = 3;
  const PAGES = 4;
  const SIZE = 5;
  const names = Array.from({ length: K }, (_, i) => `acct-${i}`);

  /** A sync of contacts of every account; `during` is told each records event with the run (to ask it things mid-run). */
  async function sync(cadence?: { records: number; checkpoints: number }, during?: (run: AccountsRun, sink: RecordingSink) => void): Promise<RecordingSink> {
    nock(origin).get('/v1/me').times(K).reply(200, { account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 600, per_day: 100000 } }, JSON_HEADERS);
    nock(origin)
      .get('/v1/contacts')
      .query(true)
      // Each account's first read, then its read of what changed after its watermark (nothing).
      .times(K * (PAGES + 1))
      .reply((req: Request) => {
        if (new URL(req.url).searchParams.get('updated_since') === W) return [200, { data: [], next_cursor: null, has_more: false, sync_watermark: W }, JSON_HEADERS];
        const cursor = new URL(req.url).searchParams.get('cursor');
        const page = cursor === null ? 0 : Number(cursor.slice(1));
        const last = page === PAGES - 1;
        const data = Array.from({ length: SIZE }, (_, i) => ({ id: `c${page}-${i}`, updated_at: W }));
        return [200, { data, next_cursor: last ? null : `p${page + 1}`, has_more: !last, sync_watermark: W }, JSON_HEADERS];
      });
    return runAccounts({ streams: [{ stream: contacts, mode: 'incremental' }], states: new Map() }, cadence, during);
  }

  /** A run of every account over `request`; `during` as sync's. */
  async function runAccounts(request: SessionRequest, cadence?: { records: number; checkpoints: number }, during?: (run: AccountsRun, sink: RecordingSink) => void): Promise<RecordingSink> {
    const entries = names.map((name, i) => ({ name, api_key: `drk_live_cadence${i}0123456789` }));
    const { config } = parseUserConfig({ accounts: entries, base_url: origin, use_service_schema: false, max_concurrent_accounts: 2 }, { addSecret: () => undefined }, {});
    const accounts = new AccountsRun(config);
    const sink = new (class extends RecordingSink {
      override records(stream: StreamDefinition, batch: readonly Data[]): void {
        super.records(stream, batch);
        during?.(accounts, this);
      }
    })();
    const result = await accounts.run(request, sink, undefined, {}, cadence);
    expect(result.error).toBeUndefined();
    return sink;
  }

  /** Each STATE covers every record of each account before its position: the pages before its resume cursor, or all of them. */
  function expectCovering(sink: RecordingSink): void {
    const seen = new Map<string, number>();
    for (const e of sink.events) {
      if (e.kind === 'records') for (const r of e.records) seen.set(String(r.account), (seen.get(String(r.account)) ?? 0) + 1);
      if (e.kind !== 'state') continue;
      for (const [name, own] of Object.entries(e.state.accounts ?? {})) {
        const pages = own.resume === undefined ? PAGES : Number(own.resume.cursor.slice(1));
        expect(seen.get(name) ?? 0, `${name} in ${JSON.stringify(e.state)}`).toBeGreaterThanOrEqual(pages * SIZE);
      }
    }
  }

  const lastOf = (sink: RecordingSink): string => sink.events.filter((e) => e.kind === 'state' || e.kind === 'records' || e.kind === 'complete').map((e) => e.kind).join(',');

  it('by default, far fewer records than the cadence: one STATE, at the stream\'s end, after every record and before COMPLETE', async () => {
    const sink = await sync();
    const records = K * PAGES * SIZE;
    expect(sink.recordsOf('contacts')).toHaveLength(records);
    // Bounded by the stream's end and the cadence, not by the pages (K * PAGES checkpoints).
    const bound = 1 + Math.floor(records / STATE_CADENCE.records) + Math.floor((K * PAGES) / STATE_CADENCE.checkpoints);
    expect(sink.statesOf('contacts').length).toBeLessThanOrEqual(bound);
    expect(lastOf(sink)).toMatch(/records,state,complete$/);
    const final = sink.statesOf('contacts').at(-1);
    expect(Object.keys(final?.accounts ?? {})).toEqual(names);
    for (const name of names) expect(final?.accounts?.[name]).toMatchObject({ sync_watermark: W });
    expectCovering(sink);
  });

  it('a STATE once the records since the last one reach the cadence, each covering what went before', async () => {
    const sink = await sync({ records: 12, checkpoints: 1_000 });
    const states = sink.statesOf('contacts');
    // Pages of 5: a STATE at the checkpoint of every third page (15 records), and the stream's end.
    expect(states.length).toBeLessThanOrEqual(1 + (K * PAGES * SIZE) / 12);
    expect(states.length).toBeGreaterThan(1);
    let since = 0;
    for (const e of sink.events) {
      if (e.kind === 'records') since += e.records.length;
      if (e.kind === 'state') since = 0;
      // No run of records beyond the cadence plus the pages in flight of the accounts read at once (two of 5).
      expect(since).toBeLessThanOrEqual(12 + 2 * SIZE);
    }
    expectCovering(sink);
  });

  it('a STATE once the checkpoints since the last one reach the cadence', async () => {
    const sink = await sync({ records: 1_000_000, checkpoints: 5 });
    expect(sink.statesOf('contacts')).toHaveLength(Math.floor((K * PAGES) / 5) + 1);
    expectCovering(sink);
  });

  it('accounts read back to the states they started from (a watermark that did not move): a STATE after their records, unlike the one before', async () => {
    nock(origin).get('/v1/me').times(K).reply(200, { account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 600, per_day: 100000 } }, JSON_HEADERS);
    nock(origin).get('/v1/pipeline_stages').query(true).times(K).reply(200, { data: [{ id: 's1' }], next_cursor: null, has_more: false, sync_watermark: W }, JSON_HEADERS);
    const stages = findStream('pipeline_stages') as StreamDefinition;
    const own = { sync_watermark: W, account: { name: 'Acme', base_url: origin } };
    // A STATE at each account's checkpoint: the first is the state the run started from, and so is every one after it.
    const sink = await runAccounts(
      { streams: [{ stream: stages, mode: 'full_refresh' }], states: new Map([[stages.name, { accounts: Object.fromEntries(names.map((n) => [n, own])) }]]) },
      { records: 1_000_000, checkpoints: 1 },
    );
    expect(lastOf(sink)).toMatch(/records,state,complete$/);
    const states = sink.statesOf(stages.name);
    expect(states.length).toBeGreaterThan(1);
    for (const state of states) expect(state.accounts).toEqual(Object.fromEntries(names.map((n) => [n, own])));
    // The first is the state read; the others say how many records of the stream went before them.
    expect(states[0]?.records_written).toBeUndefined();
    expect(states.at(-1)?.records_written).toBe(K);
  });

  it('unsentStates (the last words of a signal): the checkpoints not written yet, covering the records so far; then written no more', async () => {
    const taken: { state: unknown; records: number }[] = [];
    const sink = await sync(undefined, (run, s) => {
      if (s.recordsOf('contacts').length !== 2 * PAGES * SIZE) return;
      for (const [stream, state] of run.unsentStates()) taken.push({ state: { stream: stream.name, ...state }, records: s.recordsOf('contacts').length });
      expect(run.unsentStates()).toEqual([]);
    });
    expect(taken).toHaveLength(1);
    const state = taken[0]?.state as { accounts: Record<string, { resume?: { cursor: string } }> };
    // Each account's position is one its records reached before (the page just written is not checkpointed yet).
    const pages = Object.values(state.accounts).reduce((n, own) => n + (own.resume === undefined ? PAGES : Number(own.resume.cursor.slice(1))), 0);
    expect(pages * SIZE).toBeLessThanOrEqual(2 * PAGES * SIZE);
    expect(pages).toBeGreaterThan(0);
    expectCovering(sink);
  });
});

describe('the schema of many accounts', () => {
  it("declares `account` as the entry's name, and a field `account` the service describes as service_account", () => {
    const contacts = findStream('contacts') as StreamDefinition;
    const base = structuredClone(builtInSchema(contacts));
    (base.properties as Record<string, JsonSchema>).account = { type: ['null', 'integer'], description: 'the service own' };
    const schema = recordJsonSchema(contacts, { base, accountField: true });
    const properties = schema.properties as Record<string, JsonSchema>;
    expect(Object.keys(properties)[0]).toBe('account');
    expect(properties.account).toMatchObject({ type: 'string' });
    expect(properties.service_account).toEqual({ type: ['null', 'integer'], description: 'the service own' });
    expect(schema.required).toEqual(['account', 'id', 'updated_at']);
  });
});

describe('the service down for the accounts of a run (service-outage.ts)', () => {
  againstNock();
  const ME = { account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 600, per_day: 100000 } };
  const names = ['a1', 'a2', 'a3', 'a4', 'a5'];
  const keyOf = (name: string): string => `drk_live_${name}outage0123456789`;
  /** What each account's requests meet: its /v1/me, then its contacts. */
  type Meets = 'refused' | '503' | '401' | 'ok' | 'contacts 500';
  const scopeOf = (name: string): nock.Scope => nock(origin, { reqheaders: { authorization: `Bearer ${keyOf(name)}` } });

  /** A run of contacts, one account at a time (max_retries 0): what each account met, and how the run ended. */
  async function run(
    meets: Record<string, Meets>,
    concurrency = 1,
    late = new Set<string>(),
    meDelays: Record<string, number> = {},
  ): Promise<{ result: Awaited<ReturnType<AccountsRun['run']>>; sink: RecordingSink }> {
    for (const [name, meet] of Object.entries(meets)) {
      const me = scopeOf(name).get('/v1/me').delay(meDelays[name] ?? 0);
      if (meet === 'refused') me.replyWithError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }));
      else if (meet === '503') me.reply(503, { title: 'Service unavailable', status: 503 }, { 'content-type': 'application/problem+json', 'retry-after': '0' });
      else if (meet === '401') me.reply(401, { title: 'Unauthorized', status: 401 }, { 'content-type': 'application/problem+json' });
      else me.reply(200, ME, JSON_HEADERS);
      if (meet === 'ok') scopeOf(name).get('/v1/contacts').query(true).delay(late.has(name) ? 300 : 0).reply(200, { data: [{ id: `${name}-1`, updated_at: W }], next_cursor: null, has_more: false, sync_watermark: W }, JSON_HEADERS);
      if (meet === 'contacts 500') scopeOf(name).get('/v1/contacts').query(true).reply(500, { title: 'Internal error', status: 500 }, { 'content-type': 'application/problem+json' });
    }
    const entries = Object.keys(meets).map((name) => ({ name, api_key: keyOf(name) }));
    const { config } = parseUserConfig(
      { accounts: entries, base_url: origin, use_service_schema: false, max_concurrent_accounts: concurrency, max_retries: 0 },
      { addSecret: () => undefined },
      {},
    );
    const sink = new RecordingSink();
    const result = await new AccountsRun(config).run({ streams: [{ stream: contacts, mode: 'incremental' }], states: new Map() }, sink);
    return { result, sink };
  }
  const statuses = (result: Awaited<ReturnType<AccountsRun['run']>>): Record<string, string> => Object.fromEntries(result.accounts.map((a) => [a.name, a.status]));

  it('the service unreachable for two accounts in a row: the accounts not started are not tried, each a transient_error saying why', async () => {
    const { result, sink } = await run(Object.fromEntries(names.map((n) => [n, 'refused'])));
    expect(statuses(result)).toEqual({ a1: 'failed', a2: 'failed', a3: 'not_tried', a4: 'not_tried', a5: 'not_tried' });
    // The accounts not tried sent nothing: their interceptors are left.
    expect(nock.pendingMocks()).toHaveLength(3);
    const untried = result.accounts.find((a) => a.name === 'a3');
    expect(untried?.failure_type).toBe('transient_error');
    expect(untried?.message).toBe(
      'Not tried: accounts "a1" and "a2" found the Data-Read API at http://127.0.0.1:9 unavailable and no account was read since. Its state is unchanged; the next run reads it.',
    );
    expect(result.error?.failureType).toBe('transient_error');
    expect(result.error?.message).toMatch(
      /^2 of 5 accounts failed and 3 were not tried: account "a1": Cannot reach the Data-Read API at http:\/\/127\.0\.0\.1:9: the connection was refused.*; account "a2": Cannot reach .*; accounts "a3", "a4" and "a5" not tried \(accounts "a1" and "a2" found the Data-Read API at http:\/\/127\.0\.0\.1:9 unavailable and no account was read since\): their states are unchanged, the next run reads them\.$/,
    );
    const warns = sink.events.flatMap((e) => (e.kind === 'log' && e.level === 'WARN' && /not tried/.test(e.message) ? [e.message] : []));
    expect(warns).toEqual(['The 3 accounts not started yet are not tried this run: accounts "a1" and "a2" found the Data-Read API at http://127.0.0.1:9 unavailable and no account was read since. Their states are unchanged; the next run reads them.']);
    // The face hears the stream stopped, once, after every account ended it.
    expect(sink.events.filter((e) => e.kind === 'stopped').map((e) => e.stream)).toEqual(['contacts']);
    expect(sink.statesOf('contacts')).toEqual([]);
  });

  it('four accounts at once finding the service down one after the other: one WARN says what becomes of the accounts not started', async () => {
    // Each account ending adds a witness; the WARN, said once the second did, is not said again for the third and the fourth.
    // a1 and a2 find it at once, a3 and a4 later, while the probes of the accounts after them (each answered 503) go on.
    const ten = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8', 'a9', 'a10'];
    const delays = { a3: 100, a4: 200, a5: 150, a6: 150, a7: 150, a8: 300, a9: 300, a10: 300 };
    const { result, sink } = await run(Object.fromEntries(ten.map((n) => [n, '503'])), 4, new Set(), delays);
    expect(statuses(result)).toEqual(Object.fromEntries(ten.map((n, i) => [n, i < 4 ? 'failed' : 'not_tried'])));
    const warns = sink.events.flatMap((e) => (e.kind === 'log' && e.level === 'WARN' && /not started yet/.test(e.message) ? [e.message] : []));
    expect(warns).toEqual([expect.stringMatching(/^The \d accounts not started yet are each probed first: accounts "a\d"/)]);
    nock.cleanAll();
  });

  it("two accounts whose own /v1/me answers 503 past the retries: the next is probed, answered, and it and the others are read", async () => {
    const { result, sink } = await run({ a1: '503', a2: '503', a3: 'ok', a4: 'ok' });
    expect(statuses(result)).toEqual({ a1: 'failed', a2: 'failed', a3: 'succeeded', a4: 'succeeded' });
    // a3's probe was its one /v1/me: every interceptor used, none asked twice.
    expect(nock.pendingMocks()).toEqual([]);
    expect(sink.recordsOf('contacts').map((r) => r.account)).toEqual(['a3', 'a4']);
    expect(result.error?.failureType).toBe('transient_error');
    expect(result.error?.message).toMatch(/^2 of 4 accounts failed \(the other 2 were read and their states saved\)/);
    const logs = sink.events.flatMap((e) => (e.kind === 'log' ? [e.message] : []));
    expect(logs).toContain('Account "a3": the Data-Read API answered its /v1/me after accounts "a1" and "a2" found it unavailable: it and the accounts after it are read as usual.');
    expect(logs.filter((m) => /probed first/.test(m))).toEqual([expect.stringMatching(/^The 2 accounts not started yet are each probed first: accounts "a1" and "a2" found the Data-Read API at http:\/\/127\.0\.0\.1:9 unavailable/)]);
  });

  it('two accounts at once with 503s on their own /v1/me: the accounts after them are probed two at a time and read', async () => {
    const { result } = await run({ a1: '503', a2: '503', a3: 'ok', a4: 'ok', a5: 'ok' }, 2);
    expect(statuses(result)).toEqual({ a1: 'failed', a2: 'failed', a3: 'succeeded', a4: 'succeeded', a5: 'succeeded' });
    expect(nock.pendingMocks()).toEqual([]);
  });

  it('the service answering 503 to every /v1/me: each account after the first two is probed once and not tried; one answered is read', async () => {
    const { result } = await run({ a1: '503', a2: '503', a3: '503', a4: '503', a5: 'ok' });
    expect(statuses(result)).toEqual({ a1: 'failed', a2: 'failed', a3: 'not_tried', a4: 'not_tried', a5: 'succeeded' });
    expect(nock.pendingMocks()).toEqual([]);
    expect(result.accounts.find((a) => a.name === 'a3')).toMatchObject({
      failure_type: 'transient_error',
      message:
        'Not tried: accounts "a1" and "a2" found the Data-Read API at http://127.0.0.1:9 unavailable and no account was read since; ' +
        'one request of its own to /v1/me, without retries, failed too (HTTP 503). Its state is unchanged; the next run reads it.',
    });
  });

  it('two accounts with 503s, then a probe that cannot connect: the accounts after it are not probed', async () => {
    const { result } = await run({ a1: '503', a2: '503', a3: 'refused', a4: 'ok', a5: 'ok' });
    expect(statuses(result)).toEqual({ a1: 'failed', a2: 'failed', a3: 'not_tried', a4: 'not_tried', a5: 'not_tried' });
    // a4 and a5 sent nothing.
    expect(nock.pendingMocks()).toHaveLength(4);
    expect(result.accounts.find((a) => a.name === 'a4')?.message).toBe(
      'Not tried: accounts "a1", "a2" and 1 more found the Data-Read API at http://127.0.0.1:9 unavailable and no account was read since. Its state is unchanged; the next run reads it.',
    );
  });

  it('two accounts at once: the first to find it down waits for the other, still trying to get in; then those not started are not tried', async () => {
    const { result } = await run(Object.fromEntries(names.map((n) => [n, 'refused'])), 2);
    expect(statuses(result)).toEqual({ a1: 'failed', a2: 'failed', a3: 'not_tried', a4: 'not_tried', a5: 'not_tried' });
  });

  it('one account of two failing: the error says the other one was read, in the singular', async () => {
    const { result } = await run({ a1: '401', a2: 'ok' });
    expect(statuses(result)).toEqual({ a1: 'failed', a2: 'succeeded' });
    expect(result.error?.message).toMatch(/^1 of 2 accounts failed \(the other one was read and its state saved\): account "a1": /);
  });
  it('two accounts at once: no wait while the other one got in (the service answered it)', async () => {
    // a2's page comes late: a3, started as soon as a1 found the service down, is read before it.
    const { result, sink } = await run({ a1: 'refused', a2: 'ok', a3: 'ok' }, 2, new Set(['a2']));
    expect(statuses(result)).toEqual({ a1: 'failed', a2: 'succeeded', a3: 'succeeded' });
    expect(sink.recordsOf('contacts').map((r) => r.account)).toEqual(['a3', 'a2']);
  });

  it.each<[string, Record<string, Meets>]>([
    ['keys refused (401) in a row', { a1: '401', a2: '401', a3: 'ok', a4: 'ok' }],
    ['a 500 of accounts that got in (their /v1/me answered): a fault of their data may be theirs', { a1: 'contacts 500', a2: 'contacts 500', a3: 'ok', a4: 'ok' }],
    ['one unreachable, then one read: the count starts again', { a1: 'refused', a2: 'ok', a3: 'refused', a4: 'ok' }],
    ['one unreachable, then a key refused (the service answered it): the count starts again', { a1: 'refused', a2: '401', a3: 'refused', a4: 'ok' }],
  ])('never stop the others: %s', async (_, meets) => {
    const { result, sink } = await run(meets);
    expect(Object.values(statuses(result))).not.toContain('not_tried');
    for (const [name, meet] of Object.entries(meets)) expect(statuses(result)[name]).toBe(meet === 'ok' ? 'succeeded' : 'failed');
    expect(nock.pendingMocks()).toEqual([]);
    expect(sink.recordsOf('contacts').map((r) => r.account)).toEqual(Object.keys(meets).filter((n) => meets[n] === 'ok'));
  });
});

describe('a FULL_TABLE stream that one account does not offer (404), in the Singer tap', () => {
  againstNock();
  const keys = { acme: 'drk_live_acmeacme0123456789', globex: 'drk_live_globexglobex0123456' };
  const me = (name: string): object => ({ account_name: name, scopes: ['data:read'], limits: { per_minute: 600, per_day: 100000 } });
  const notFound = { type: 'about:blank', title: 'Not Found', status: 404, detail: 'no such path' };

  it("activates no version: the rows of the account that skipped it keep theirs in the target, as with one account", async () => {
    for (const [name, key] of Object.entries(keys)) {
      const auth = { reqheaders: { authorization: `Bearer ${key}` } };
      nock(origin, auth).get('/v1/me').reply(200, me(name), JSON_HEADERS);
      const scope = nock(origin, auth).get('/v1/pipeline_stages').query(true);
      if (name === 'globex') scope.reply(404, notFound, { 'content-type': 'application/problem+json' });
      else scope.reply(200, { data: [{ id: 's1', name: 'Lead' }], next_cursor: null, has_more: false, sync_watermark: W }, JSON_HEADERS);
    }
    const entries = Object.entries(keys).map(([name, api_key]) => ({ name, api_key }));
    const { config } = parseUserConfig({ accounts: entries, base_url: origin, use_service_schema: false, max_concurrent_accounts: 1 }, { addSecret: () => undefined }, {});
    const plans = planAll(false, undefined, true).filter((p) => p.stream.name === 'pipeline_stages');
    expect(plans[0]?.activateVersion).toBe(true);
    // A later sync: both accounts read the stream before (their rows in the target carry an older version).
    const states = new Map([['pipeline_stages', parseStreamState('pipeline_stages', { accounts: { acme: {}, globex: {} } })]]);
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (b: Buffer) => chunks.push(b));
    const logger = new StderrLogger('test');
    const logged = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const sink = new SingerSink(new LineWriter(out), logger, plans, states, 1_790_000_000_000, entries.map((e) => e.name));
      const result = await new AccountsRun(config).run({ streams: plans, states }, sink);
      await sink.finish();
      expect(result.error).toBeUndefined();
    } finally {
      logged.mockRestore();
    }
    const lines = parseLines(Buffer.concat(chunks).toString('utf8'));
    expect(lines.filter((m) => m.type === 'RECORD').map((m) => (m.record as Data).account)).toEqual(['acme']);
    expect(lines.filter((m) => m.type === 'ACTIVATE_VERSION')).toEqual([]);
  });
});

describe("check of accounts whose service describes a field `account` of its own, against nock", () => {
  againstNock();

  it('takes a treatment of service_account, where that field goes (only a field described by neither name is refused)', async () => {
    const doc = buildOpenApiDocument({ extraFields: (list) => (list === 'contacts' ? [{ list, name: 'account', type: 'string' }] : []) });
    const me = { account_name: 'Acme', scopes: ['data:read'], limits: { per_minute: 600, per_day: 100000 } };
    const check = async (field: string) => {
      nock(origin).get('/v1/me').reply(200, me, JSON_HEADERS);
      nock(origin).get('/v1/contacts').query({ limit: '1' }).reply(200, { data: [], next_cursor: null, has_more: false, sync_watermark: '2026-01-01T00:00:00Z' }, JSON_HEADERS);
      nock(origin).get('/v1/openapi.json').reply(200, doc, JSON_HEADERS);
      const accounts = [{ name: 'acme', api_key: 'drk_live_acmeacme0123456789' }];
      const { config } = parseUserConfig({ accounts, base_url: origin, field_treatments: [{ stream: 'contacts', field, treatment: 'drop' }] }, { addSecret: () => undefined }, {});
      return checkAccounts(config);
    };
    const ok = await check('service_account');
    expect(ok.message).not.toMatch(/has no field/);
    expect(ok.ok).toBe(true);
    const typo = await check('service_acount');
    expect(typo).toMatchObject({ ok: false, message: expect.stringMatching(/contacts has no field "service_acount"/) });
  });
});
