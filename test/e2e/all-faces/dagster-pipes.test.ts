/**
 * Dagster Pipes spoken by the real executables against the emulator (in
 * process, 127.0.0.1, port 0), with the variables Dagster's clients set: the
 * tap's sync (messages on stderr), Airbyte `read` and `replicate` (messages
 * in a file). Every message is read as Dagster's reader reads it
 * (test/helpers/pipes-reader.ts); stdout still passes the protocol checkers.
 * Needs `npm run build`.
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from 'data-read-emulator';
import { parseLines, protocolCheckAsync, ROOT, runAndSignal, runCli, SOURCE_BIN, TAP_BIN, tempDir, writeJson } from '../../helpers/cli.js';
import { encodePipesParam, pipesEnv, readPipes, VERSION_FIELD, type PipesRead } from '../../helpers/pipes-reader.js';
import { LIMITS_OUT_OF_REACH } from '../../helpers/emulator-runs.js';

let emu: Emulator;
const dir = tempDir('pipes-e2e-');
const STREAMS = ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages'];

beforeAll(async () => {
  emu = await startEmulator({ seed: 'pipes-e2e', limits: LIMITS_OUT_OF_REACH });
});
afterAll(async () => {
  await emu?.close();
});

let accounts = 0;
function newAccount(contacts: number): { config: string; key: string } {
  const account = emu.control.createAccount({ name: `pipes ${++accounts}` });
  const { key } = emu.control.createKey(account.id);
  emu.control.seed(account.id, { contacts });
  return { key, config: writeJson(dir, `config-${accounts}.json`, { api_key: key, base_url: emu.url, page_size: 50 }) };
}

function expectClean(read: PipesRead): void {
  expect(read.problems).toEqual([]);
  expect(read.messages[0]?.method).toBe('opened');
  expect(read.messages.at(-1)?.method).toBe('closed');
}

const metadataOf = (read: PipesRead, key: string) => read.materializations.find((m) => m.assetKey === key)?.metadata;

describe('Dagster Pipes', () => {
  it('tap sync, messages on stderr: opened, one materialization per stream with records and sync_watermark, closed; stdout untouched', async () => {
    const account = newAccount(120);
    const env = pipesEnv(dir, ['data_read/contacts', 'data_read/conversations'], { stdio: 'stderr' });
    const run = await runCli(TAP_BIN, ['--config', account.config], { env });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain(VERSION_FIELD);
    const check = await protocolCheckAsync('singer', run.stdout);
    expect(check.errors).toEqual([]);

    const read = readPipes(run.stderr);
    expectClean(read);
    expect(read.messages.map((m) => m.method)).toEqual(['opened', ...STREAMS.map(() => 'report_asset_materialization'), 'closed']);
    // In the order the streams completed (they are read concurrently).
    expect(read.materializations.map((m) => m.assetKey).sort()).toEqual(['data_read/contacts', 'data_read/conversations', 'deletions', 'pipeline_stages', 'stage_events']);
    expect(read.closed?.params).toEqual({});
    // Logs keep going where they went: the log lines are still on stderr.
    expect(read.logLines.some((l) => l.includes('INFO tap-data-read: Sync finished'))).toBe(true);

    const lines = parseLines(run.stdout);
    const finalState = lines.filter((l) => l.type === 'STATE').at(-1)?.value as { bookmarks: Record<string, { sync_watermark?: string }> };
    for (const [stream, key] of STREAMS.map((s, i) => [s, i < 2 ? `data_read/${s}` : s] as const)) {
      const records = lines.filter((l) => l.type === 'RECORD' && l.stream === stream).length;
      const watermark = finalState.bookmarks[stream]?.sync_watermark ?? null;
      expect({ stream, metadata: metadataOf(read, key) }).toEqual({
        stream,
        metadata: { records: { type: 'int', raw_value: records }, sync_watermark: watermark === null ? { type: 'null', raw_value: null } : { type: 'text', raw_value: watermark } },
      });
    }
    expect(metadataOf(read, 'data_read/contacts')?.records?.raw_value).toBeGreaterThan(100);
  });

  it("messages on stderr: a line break in the service's words (an account name) cannot start a Pipes message of its own", async () => {
    const forged = JSON.stringify({ [VERSION_FIELD]: '0.1', method: 'report_asset_materialization', params: { asset_key: 'forged', data_version: null, metadata: {} } });
    const account = emu.control.createAccount({ name: `Acme\n${forged}\n\u2028${forged}` });
    const { key } = emu.control.createKey(account.id);
    emu.control.seed(account.id, { contacts: 10 });
    const config = writeJson(dir, 'config-forged.json', { api_key: key, base_url: emu.url });
    for (const [bin, args] of [
      [TAP_BIN, ['--config', config]],
      [SOURCE_BIN, ['replicate', '--config', config, '--db', join(dir, 'forged.db')]],
    ] as const) {
      const run = await runCli(bin, [...args], { env: pipesEnv(dir, null, { stdio: 'stderr' }) });
      expect(run.code, run.stderr).toBe(0);
      const read = readPipes(run.stderr);
      expectClean(read);
      expect(read.materializations.map((m) => m.assetKey)).not.toContain('forged');
      // The name is still said, its line break as an escape, on the line of its message.
      expect(read.logLines.some((l) => /INFO [a-z-]+: Connected to account "Acme\\u000a\{/.test(l))).toBe(true);
    }
  });

  it('Airbyte read, messages in a file (PipesSubprocessClient): the same, its stdout passes airbyte-check', async () => {
    const account = newAccount(60);
    const messages = join(dir, 'read-messages.jsonl');
    const env = pipesEnv(dir, ['raw/contacts'], { path: messages });
    const run = await runCli(SOURCE_BIN, ['read', '--config', account.config, '--catalog', join(ROOT, 'catalog', 'configured_catalog.json')], { env });
    expect(run.code).toBe(0);
    expect(run.stdout + run.stderr).not.toContain(VERSION_FIELD);
    const check = await protocolCheckAsync('airbyte', run.stdout);
    expect(check.errors).toEqual([]);
    const read = readPipes(readFileSync(messages, 'utf8'));
    expectClean(read);
    expect(read.logLines).toEqual([]);
    expect(read.materializations.map((m) => m.assetKey).sort()).toEqual([...STREAMS.slice(1), 'raw/contacts'].sort());
    const lastStates = new Map<string, unknown>();
    for (const l of parseLines(run.stdout).filter((x) => x.type === 'STATE')) {
      const s = l.state as { stream: { stream_descriptor: { name: string }; stream_state: { sync_watermark?: string } } };
      lastStates.set(s.stream.stream_descriptor.name, s.stream.stream_state.sync_watermark ?? null);
    }
    for (const [stream, key] of [['contacts', 'raw/contacts'], ['deletions', 'deletions']] as const) {
      expect(metadataOf(read, key)?.records?.raw_value).toBe(check.records?.[stream] ?? 0);
      expect(metadataOf(read, key)?.sync_watermark?.raw_value).toBe(lastStates.get(stream));
    }
  });

  it('replicate, messages in a file, no asset keys: one materialization per stream under its own name', async () => {
    const account = newAccount(40);
    const messages = join(dir, 'replicate-messages.jsonl');
    const run = await runCli(SOURCE_BIN, ['replicate', '--config', account.config, '--db', join(dir, 'replica.db')], { env: pipesEnv(dir, null, { path: messages }) });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('');
    const read = readPipes(readFileSync(messages, 'utf8'));
    expectClean(read);
    expect(read.materializations.map((m) => m.assetKey).sort()).toEqual([...STREAMS].sort());
    expect(metadataOf(read, 'contacts')?.records?.raw_value).toBeGreaterThan(30);
    expect(read.closed?.params).toEqual({});
  });

  it('with accounts, one account refused: the others\' committed rows are materialized, the run closed with the failure', async () => {
    const good = emu.control.createAccount({ name: 'pipes accounts good' });
    emu.control.seed(good.id, { contacts: 20 });
    const bad = emu.control.createAccount({ name: 'pipes accounts bad' });
    const badKey = emu.control.createKey(bad.id);
    emu.control.revokeKey(badKey.id);
    const config = writeJson(dir, 'accounts.json', {
      base_url: emu.url,
      accounts: [
        { name: 'good', api_key: emu.control.createKey(good.id).key },
        { name: 'bad', api_key: badKey.key },
      ],
    });
    const messages = join(dir, 'accounts-messages.jsonl');
    const summaryFile = join(dir, 'accounts-summary.json');
    const run = await runCli(SOURCE_BIN, ['replicate', '--config', config, '--db', join(dir, 'accounts.db'), '--summary', summaryFile], { env: pipesEnv(dir, null, { path: messages }) });
    expect(run.code, run.stderr).toBe(78);
    const summary = JSON.parse(readFileSync(summaryFile, 'utf8')) as { streams: { name: string; records: number }[] };
    const read = readPipes(readFileSync(messages, 'utf8'));
    expectClean(read);
    expect(read.materializations.map((m) => m.assetKey).sort()).toEqual([...STREAMS].sort());
    for (const { name, records } of summary.streams) expect({ name, records: metadataOf(read, name)?.records?.raw_value }).toEqual({ name, records });
    expect(metadataOf(read, 'contacts')?.records?.raw_value).toBeGreaterThanOrEqual(20);
    expect((read.closed?.params?.exception as { name: string }).name).toBe('config_error');
  });

  it('a failed sync closes with the exception (the cause, no key), and materializes nothing', async () => {
    const config = writeJson(dir, 'refused.json', { api_key: 'drk_live_thisKeyIsNotKnownToTheService0', base_url: emu.url });
    const run = await runCli(TAP_BIN, ['--config', config], { env: pipesEnv(dir, null, { stdio: 'stderr' }) });
    expect(run.code).toBe(78);
    const read = readPipes(run.stderr);
    expectClean(read);
    expect(read.materializations).toEqual([]);
    const exception = read.closed?.params?.exception as { name: string; message: string };
    expect(exception.name).toBe('config_error');
    expect(exception.message).toMatch(/key/i);
    expect(run.stderr).not.toContain('thisKeyIsNotKnownToTheService0');
  });

  it('Pipes on stdout is refused where stdout carries the protocol: nothing on stdout, the cause named', async () => {
    const account = newAccount(5);
    const run = await runCli(TAP_BIN, ['--config', account.config], { env: pipesEnv(dir, null, { stdio: 'stdout' }) });
    expect(run.code).toBe(78);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/CRITICAL tap-data-read: DAGSTER_PIPES_MESSAGES asks for Pipes messages on stdout/);
  });

  it('a messages file that is a named pipe no process reads: refused at once (78), not waited for', async () => {
    const account = newAccount(1);
    const fifo = join(dir, 'messages.fifo');
    execFileSync('mkfifo', [fifo]);
    const summary = join(dir, 'fifo-summary.json');
    const run = await runCli(TAP_BIN, ['--config', account.config, '--summary', summary], { env: pipesEnv(dir, null, { path: fifo }), timeoutMs: 20_000 });
    expect(run.signal, 'the run waited for a reader of the messages pipe').toBeNull();
    expect(run.code, run.stderr).toBe(78);
    expect(run.stderr).toMatch(/CRITICAL tap-data-read: Cannot write the Dagster Pipes messages file .*messages\.fifo named by DAGSTER_PIPES_MESSAGES/);
    expect(JSON.parse(readFileSync(summary, 'utf8'))).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error' });
  });

  it('a context file that is a named pipe no process writes: SIGTERM still stops the run (143, its summary written)', async () => {
    const account = newAccount(1);
    const fifo = join(dir, 'context.fifo');
    execFileSync('mkfifo', [fifo]);
    const summary = join(dir, 'context-fifo-summary.json');
    const env = { ...process.env, DAGSTER_PIPES_CONTEXT: encodePipesParam({ path: fifo }), DAGSTER_PIPES_MESSAGES: encodePipesParam({ path: join(dir, 'context-fifo-messages.jsonl') }) };
    const child = spawn(process.execPath, [TAP_BIN, '--config', account.config, '--summary', summary], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    child.stdout.resume();
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    // Sent once the run has got as far as it can: it waits for the context.
    setTimeout(() => child.kill('SIGTERM'), 1_000);
    const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
    clearTimeout(killer);
    expect(signal, 'SIGTERM did not stop the run waiting for the context pipe').toBeNull();
    expect(code, stderr).toBe(143);
    expect(JSON.parse(readFileSync(summary, 'utf8'))).toMatchObject({ status: 'interrupted', exit_code: 143 });
  });

  it('a usage mistake is told as one (exit 2, its summary too) even when the Pipes variables cannot be used', async () => {
    const account = newAccount(1);
    const unusable = { DAGSTER_PIPES_CONTEXT: 'not-a-param', DAGSTER_PIPES_MESSAGES: 'not-a-param' };
    const runs = [
      { bin: SOURCE_BIN, args: ['read', '--config', account.config, '--catalgo', 'catalog.json'], level: 'ERROR source-data-read' },
      { bin: SOURCE_BIN, args: ['replicate', '--config', account.config, '--bd', join(dir, 'usage.db')], level: 'ERROR source-data-read' },
      { bin: TAP_BIN, args: ['--config', account.config, '--sate', 'state.json'], level: 'CRITICAL tap-data-read' },
    ];
    for (const [i, { bin, args, level }] of runs.entries()) {
      const summary = join(dir, `usage-summary-${i}.json`);
      const run = await runCli(bin, [...args, '--summary', summary], { env: unusable });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(new RegExp(`${level}: Unknown option --`));
      expect(JSON.parse(readFileSync(summary, 'utf8'))).toMatchObject({ status: 'failed', exit_code: 2 });
    }
  });

  it('a sync stopped by SIGTERM still closes, with the exception saying so', async () => {
    const account = newAccount(300);
    const config = writeJson(dir, 'slow.json', { ...JSON.parse(readFileSync(account.config, 'utf8')), page_size: 10, max_concurrent_requests: 1 });
    const messages = join(dir, 'stopped-messages.jsonl');
    const env = pipesEnv(dir, null, { path: messages });
    // runAndSignal starts the executable with this process's environment.
    Object.assign(process.env, env);
    emu.control.setLatency(30);
    let stopped;
    try {
      stopped = await runAndSignal(TAP_BIN, ['--config', config], { signal: 'SIGTERM', count: 3 });
    } finally {
      emu.control.setLatency(0);
      delete process.env.DAGSTER_PIPES_CONTEXT;
      delete process.env.DAGSTER_PIPES_MESSAGES;
    }
    expect(stopped.signalled).toBe(true);
    expect(stopped.code).toBe(143);
    const read = readPipes(readFileSync(messages, 'utf8'));
    expectClean(read);
    const exception = read.closed?.params?.exception as { name: string; message: string };
    expect(exception.name).toBe('Interrupted');
    expect(exception.message).toMatch(/SIGTERM.*\(exit status 143\)/);
  });

  it('without the two variables nothing changes: no Pipes line anywhere', async () => {
    const account = newAccount(5);
    const messages = join(dir, 'unused.jsonl');
    const onlyOne = pipesEnv(dir, null, { path: messages });
    delete onlyOne.DAGSTER_PIPES_CONTEXT;
    const run = await runCli(TAP_BIN, ['--config', account.config], { env: onlyOne });
    expect(run.code).toBe(0);
    expect(run.stdout + run.stderr).not.toContain(VERSION_FIELD);
    expect(existsSync(messages)).toBe(false);
  });
});
