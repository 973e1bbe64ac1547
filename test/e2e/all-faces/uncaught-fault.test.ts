/**
 * A fault nothing caught (an error thrown in an event handler: a bug in the
 * connector or in a library it uses), in real runs of `read`, the tap's sync
 * and `replicate` against the emulator. A preload (NODE_OPTIONS --require)
 * throws from a setImmediate once the run is under way: after its second
 * STATE line on stdout, or, for `replicate`, once it says it is connected.
 * Each run exits 70 (a system_error, where Node alone exits 1), tells the
 * fault and its stack on stderr with the key redacted, says system_error in
 * `--summary`, ends stdout with whole lines; the next `replicate` completes.
 * A fault whose message quotes a raw personal value (V8's, for JSON.parse,
 * BigInt or a property set on a string: a library given a record's value)
 * tells neither on stderr nor in the summary what it quotes.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from 'data-read-emulator';
import { ROOT, SOURCE_BIN, TAP_BIN, parseLines, runCli, tempDir, writeJson } from '../../helpers/cli.js';

let emulator: Emulator;
let accountId: string;
let dir: string;
let key: string;
let preload: string;
const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');

const PRELOAD = `'use strict';
let seen = 0;
// FAULT_VALUE: a library's fault that quotes the data it was given, a raw personal value (V8's own messages).
const faults = {
  json: (v) => JSON.parse(v),
  bigint: (v) => BigInt(v),
  property: (v) => { 'use strict'; const s = String(v); s.account = 'x'; },
  lines: (v) => { throw new RangeError('a fault of two lines\\n' + v); },
  thrown: (v) => { throw v; },
};
const fire = () => setImmediate(() => {
  if (process.env.FAULT_VALUE) faults[process.env.FAULT_KIND](process.env.FAULT_VALUE);
  throw new TypeError('injected fault beside ' + process.env.FAULT_SECRET);
});
const stream = process.env.FAULT_ON === 'stdout' ? process.stdout : process.stderr;
const pattern = process.env.FAULT_ON === 'stdout' ? /"type":\\s*"STATE"/ : /Connected to account/;
const after = process.env.FAULT_ON === 'stdout' ? 2 : 1;
const write = stream.write;
stream.write = function (chunk, ...rest) {
  if (pattern.test(String(chunk)) && ++seen === after) fire();
  return write.call(this, chunk, ...rest);
};
`;

beforeAll(async () => {
  emulator = await startEmulator({ host: '127.0.0.1', port: 0, seed: 31, frozenClock: true, limits: { perMinute: 10_000_000, perDay: 100_000_000 } });
  const account = emulator.control.createAccount({ name: 'Fault test' });
  accountId = account.id;
  key = emulator.control.createKey(account.id).key;
  emulator.control.seed(account.id, { contacts: 120 });
  dir = tempDir('fault-');
  preload = join(dir, 'fault.cjs');
  writeFileSync(preload, PRELOAD);
});
afterAll(async () => {
  await emulator?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function faultEnv(on: 'stdout' | 'stderr', value?: { readonly kind: string; readonly value: string }): NodeJS.ProcessEnv {
  return { NODE_OPTIONS: `--require ${preload}`, FAULT_ON: on, FAULT_SECRET: key, ...(value === undefined ? {} : { FAULT_KIND: value.kind, FAULT_VALUE: value.value }) };
}

describe('a fault nothing caught', () => {
  const config = (): string => writeJson(dir, 'config.json', { api_key: key, base_url: emulator.url, page_size: 10 });

  it.each([
    ['read', SOURCE_BIN, (summary: string) => ['read', '--config', config(), '--catalog', CATALOG, '--summary', summary]],
    ['the tap', TAP_BIN, (summary: string) => ['--config', config(), '--summary', summary]],
  ] as const)('%s: exit 70, the fault told on stderr without the key, whole lines on stdout, system_error in the summary', async (_name, bin, argsFor) => {
    const summary = join(dir, `${_name}-summary.json`);
    const run = await runCli(bin, argsFor(summary), { env: faultEnv('stdout') });
    expect(run.code, run.stderr).toBe(70);
    expect(run.stderr).toMatch(/stopped on a fault nothing caught \(a bug, in the connector or in a library it uses\): TypeError: injected fault beside \*+/);
    expect(run.stderr).toMatch(/Stack: at Immediate\./);
    expect(run.stderr).not.toContain(key);
    const lines = parseLines(run.stdout);
    expect(lines.filter((l) => l.type === 'STATE').length).toBeGreaterThanOrEqual(2);
    const text = readFileSync(summary, 'utf8');
    expect(text).not.toContain(key);
    expect(JSON.parse(text)).toMatchObject({ status: 'failed', exit_code: 70, failure_type: 'system_error' });
  });

  it('replicate: exit 70, the summary says system_error, and the next run completes the replica', async () => {
    const db = join(dir, 'replica.db');
    const summary = join(dir, 'replicate-summary.json');
    const run = await runCli(SOURCE_BIN, ['replicate', '--config', config(), '--db', db, '--summary', summary], { env: faultEnv('stderr') });
    expect(run.code, run.stderr).toBe(70);
    expect(run.stderr).toContain('stopped on a fault nothing caught');
    expect(run.stderr).not.toContain(key);
    expect(JSON.parse(readFileSync(summary, 'utf8'))).toMatchObject({ status: 'failed', exit_code: 70, failure_type: 'system_error' });
    const again = await runCli(SOURCE_BIN, ['replicate', '--config', config(), '--db', db]);
    expect(again.code, again.stderr).toBe(0);
    // The same rows as a run that met no fault (the emulator's clock is frozen: nothing changes between runs).
    const clean = await runCli(SOURCE_BIN, ['replicate', '--config', config(), '--db', join(dir, 'clean.db')]);
    expect(clean.code, clean.stderr).toBe(0);
    const rows = (stderr: string): string[] => [...stderr.matchAll(/(\w+) (\d+) rows/g)].map((m) => `${m[1]} ${m[2]}`);
    expect(rows(again.stderr)).toEqual(rows(clean.stderr));
    expect(rows(again.stderr).length).toBe(5);
  });

  it.each(['json', 'bigint', 'property', 'lines', 'thrown'])('a fault quoting a raw personal value (%s): not told on stderr nor in the summary', async (kind) => {
    const contact = emulator.control.dump(accountId).contacts.find((c) => typeof c.email === 'string' && c.email.length >= 8);
    if (contact === undefined) throw new Error('no contact with an e-mail');
    const raw = `${contact.first_name ?? 'O'}'${contact.email as string}`;
    const summary = join(dir, `quoted-${kind}-summary.json`);
    const hashed = writeJson(dir, 'hash-config.json', { api_key: key, base_url: emulator.url, page_size: 10, personal_data: 'hash', hash_key: 'uncaught-fault-hash-key-1f2e3d' });
    const run = await runCli(SOURCE_BIN, ['read', '--config', hashed, '--catalog', CATALOG, '--summary', summary], { env: faultEnv('stdout', { kind, value: raw }) });
    expect(run.code, run.stderr).toBe(70);
    expect(run.stderr).toContain('stopped on a fault nothing caught');
    // A value thrown that is not an Error has no stack.
    if (kind !== 'thrown') expect(run.stderr).toMatch(/Stack: at /);
    // V8 quotes 10 characters of a JSON text it refuses: a name and the start of an e-mail.
    for (const part of [raw, contact.email as string, raw.slice(0, 10)]) {
      expect(run.stderr).not.toContain(part);
      expect(run.stdout).not.toContain(part);
      expect(readFileSync(summary, 'utf8')).not.toContain(part);
    }
  });
});
