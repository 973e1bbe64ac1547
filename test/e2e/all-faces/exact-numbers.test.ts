/**
 * Values exactly as received, through the real executables of all three
 * faces against the emulator serving numbers JavaScript would change
 * (9007199254740993, 1.50, 1e3, -0, beyond 64 bits), in declared and unknown
 * fields, and values that do not fit their declared type (1.5 and "12" in an
 * integer field): every record comes out digit for digit, and each face
 * writes one WARN naming the misfits.
 */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { beforeAll, describe, expect, it } from 'vitest';
import { withEmulatorAccount } from '../../helpers/suite.js';
import type { Dump } from 'data-read-emulator';
import { isRawNumber, parseExactJson } from '../../../src/exact-json.js';
import { replicaRecords } from '../../../src/replica/records.js';
import { ROOT, SOURCE_BIN, TAP_BIN, protocolCheck, runCli } from '../../helpers/cli.js';
import { replicate, type Account } from '../../helpers/emulator-runs.js';

type Row = Record<string, unknown>;
const LISTS = ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages'] as const;

let account: Account;
let dir: string;
let ids: { big: string; fraction: string; text: string; int64: string; beyond: string };

withEmulatorAccount('exact-', { contacts: 60, seed: 41 }, (s) => ({ account, dir } = s));
beforeAll(async () => {
  const dump = account.dump();
  const [big, fraction, text] = dump.contacts.map((c) => c.id);
  const [int64, beyond] = dump.conversations.map((c) => c.id);
  ids = { big: big as string, fraction: fraction as string, text: text as string, int64: int64 as string, beyond: beyond as string };
  account.mutate({
    op: 'update_contacts',
    ids: [ids.big],
    setJson: {
      qualification_score: '9007199254740993',
      x_account_number: '123456789012345678901234567890',
      x_price: '1.50',
      x_exp: '1e3',
      x_nested: '{"amounts":[0.1000000000000000055511151231257827,18446744073709551617,-0]}',
    },
  });
  account.mutate({ op: 'update_contacts', ids: [ids.fraction], setJson: { qualification_score: '1.5' } });
  account.mutate({ op: 'update_contacts', ids: [ids.text], setJson: { qualification_score: '"12"' } });
  account.mutate({ op: 'update_conversations', ids: [ids.int64], close: false, outcome: false, setJson: { contact_message_count: '9223372036854775807', agent_message_count: '-0' } });
  account.mutate({ op: 'update_conversations', ids: [ids.beyond], close: false, outcome: false, setJson: { contact_message_count: '18446744073709551616' } });
});

/** JSON text with object keys sorted (raw numbers as written), to compare records whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v) || isRawNumber(v)) return v;
    return Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}

/** Every record of the dump, by stream and id, as exact JSON text in the service's key order. */
function expectedText(dump: Dump): Map<string, string> {
  const out = new Map<string, string>();
  for (const list of LISTS) for (const r of dump[list] as unknown as Row[]) out.set(`${list}/${String(r.id)}`, JSON.stringify(r));
  return out;
}

/** The lines of stdout parsed exactly (numbers kept). */
function exactLines(stdout: string): Row[] {
  return stdout.split('\n').filter((l) => l !== '').map((l) => parseExactJson(l) as Row);
}

function expectMisfitWarning(warnings: readonly string[]): void {
  const about = (stream: string) => warnings.filter((w) => w.startsWith(`${stream}: `) && w.includes('not fit the declared type'));
  expect(about('contacts')).toEqual([
    'contacts: 2 kinds of value do not fit the declared type; passed on as received (a strict destination may reject them): ' +
      `qualification_score is declared integer or null but got a number with a fraction (1.5 in record ${ids.fraction}); ` +
      `qualification_score is declared integer or null but got a string ("12" in record ${ids.text}).`,
  ]);
  // 9007199254740993, 2^63 − 1, beyond 2^64 and -0 are integers: they fit.
  for (const stream of ['conversations', 'stage_events', 'deletions', 'pipeline_stages']) expect(about(stream), stream).toEqual([]);
}

describe('values exactly as received', () => {
  it('Airbyte read: every RECORD digit for digit, one WARN for the misfits', async () => {
    const run = await runCli(SOURCE_BIN, ['read', '--config', account.config(dir), '--catalog', join(ROOT, 'catalog', 'configured_catalog.json')]);
    expect(run.code, run.stdout.slice(-1000)).toBe(0);
    expect(protocolCheck('airbyte', run.stdout).errors).toEqual([]);
    const lines = exactLines(run.stdout);
    const got = new Map<string, string>();
    for (const m of lines) {
      if (m.type !== 'RECORD') continue;
      const r = m.record as { stream: string; data: Row };
      got.set(`${r.stream}/${String(r.data.id)}`, JSON.stringify(r.data));
    }
    expect(got).toEqual(expectedText(account.dump()));
    expect(run.stdout).toContain('"qualification_score":9007199254740993,');
    expect(run.stdout).toContain('"x_account_number":123456789012345678901234567890,"x_price":1.50,"x_exp":1e3,"x_nested":{"amounts":[0.1000000000000000055511151231257827,18446744073709551617,-0]}');
    expect(run.stdout).toContain('"contact_message_count":9223372036854775807,"agent_message_count":-0,');
    expectMisfitWarning(lines.flatMap((m) => (m.type === 'LOG' && (m.log as { level: string }).level === 'WARN' ? [(m.log as { message: string }).message] : [])));
  });

  it('Singer tap: every RECORD digit for digit, one WARNING for the misfits', async () => {
    const run = await runCli(TAP_BIN, ['--config', account.config(dir)]);
    expect(run.code, run.stderr.slice(-1000)).toBe(0);
    // The checker validates records against their schema, as a strict target would: it rejects exactly the two misfits warned about.
    expect(protocolCheck('singer', run.stdout).errors).toEqual([
      expect.stringMatching(/contacts: 1\.5 is not of type 'null', 'integer' at qualification_score$/),
      expect.stringMatching(/contacts: "12" is not of type 'null', 'integer' at qualification_score$/),
    ]);
    const got = new Map<string, string>();
    for (const m of exactLines(run.stdout)) if (m.type === 'RECORD') got.set(`${String(m.stream)}/${String((m.record as Row).id)}`, JSON.stringify(m.record));
    expect(got).toEqual(expectedText(account.dump()));
    expect(run.stdout).toContain('"qualification_score":9007199254740993,');
    const warnings = run.stderr.split('\n').flatMap((l) => /^\S+ WARNING tap-data-read: (.*)$/.exec(l)?.slice(1) ?? []);
    expectMisfitWarning(warnings);
  });

  it('replicate: typed columns and _extra keep every digit; the records read back equal the dump; one WARN', async () => {
    const db = join(dir, 'exact.db');
    const run = await replicate(account.config(dir), db);
    expect(run.code, run.stderr.slice(-1000)).toBe(0);
    expectMisfitWarning(run.stderr.split('\n').flatMap((l) => /^\S+ WARN source-data-read: (.*)$/.exec(l)?.slice(1) ?? []));

    const records = replicaRecords(db);
    const dump = account.dump();
    for (const list of LISTS) {
      const byId = new Map((records.get(list) ?? []).map((r) => [String(r.id), canonical(r)]));
      expect(byId, list).toEqual(new Map((dump[list] as unknown as Row[]).map((r) => [String(r.id), canonical(r)])));
    }

    const sql = new DatabaseSync(db, { readOnly: true });
    try {
      const contact = sql.prepare(`SELECT typeof(qualification_score) AS t, qualification_score AS q, _extra -> '$.x_price' AS price, _extra -> '$.x_account_number' AS acct FROM contacts WHERE id = ?`);
      contact.setReadBigInts(true);
      expect(contact.get(ids.big)).toEqual({ t: 'integer', q: 9007199254740993n, price: '1.50', acct: '123456789012345678901234567890' });
      // A misfit keeps its column NULL and its value, as received, in _extra.
      expect(sql.prepare(`SELECT qualification_score AS q, _extra -> '$.qualification_score' AS e FROM contacts WHERE id = ?`).get(ids.fraction)).toEqual({ q: null, e: '1.5' });
      const conv = sql.prepare('SELECT contact_message_count AS c, _extra AS e FROM conversations WHERE id = ?');
      conv.setReadBigInts(true);
      expect(conv.get(ids.int64)).toEqual({ c: 9223372036854775807n, e: '{"agent_message_count":-0}' });
      expect(conv.get(ids.beyond)).toMatchObject({ c: null, e: '{"contact_message_count":18446744073709551616}' });
    } finally {
      sql.close();
    }
  });
});
