/**
 * Small truths, through the real executables against the emulator: a
 * configured catalog whose cursor_field or primary_key differs from the
 * source's gets one WARN per stream; a failed check does not speak of a sync;
 * replicate refuses a read-only database (file or directory) without leaving
 * -wal/-shm files behind.
 */
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { withEmulatorAccount } from '../../helpers/suite.js';
import { SOURCE_BIN, parseLines, protocolCheck, runCli, writeJson, type CliResult } from '../../helpers/cli.js';
import { replicate, type Account } from '../../helpers/emulator-runs.js';

let account: Account;
let dir: string;

withEmulatorAccount('truths-', { contacts: 40, seed: 61 }, (s) => ({ account, dir } = s), {
  beforeRemove: (d) => {
    chmodSync(d, 0o755);
    for (const entry of readdirSync(d)) chmodSync(join(d, entry), 0o755);
  },
});

describe('Airbyte: the source-defined cursor and primary key', () => {
  it('one WARN per stream whose configured cursor_field or primary_key differs; the source uses its own', async () => {
    const catalog = writeJson(dir, 'keys-catalog.json', {
      streams: [
        { stream: { name: 'contacts', json_schema: {} }, sync_mode: 'incremental', destination_sync_mode: 'append_dedup', cursor_field: ['created_at'], primary_key: [['email']] },
        { stream: { name: 'conversations', json_schema: {} }, sync_mode: 'incremental', destination_sync_mode: 'append_dedup', cursor_field: ['updated_at'], primary_key: [['id']] },
        { stream: { name: 'stage_events', json_schema: {} }, sync_mode: 'full_refresh', destination_sync_mode: 'overwrite', cursor_field: ['to_stage_id'], primary_key: [['contact_id'], ['created_at']] },
        { stream: { name: 'deletions', json_schema: {} }, sync_mode: 'incremental', destination_sync_mode: 'append', cursor_field: [], primary_key: [] },
      ],
    });
    const run = await runCli(SOURCE_BIN, ['read', '--config', account.config(dir), '--catalog', catalog]);
    expect(run.code, run.stdout.slice(-800)).toBe(0);
    expect(protocolCheck('airbyte', run.stdout).errors).toEqual([]);
    const warnings = parseLines(run.stdout).flatMap((m) => (m.type === 'LOG' && (m.log as { level: string }).level === 'WARN' ? [(m.log as { message: string }).message] : []));
    expect(warnings.filter((w) => w.includes('source-defined'))).toEqual([
      'Stream "contacts": the configured catalog asks for cursor_field ["created_at"] and primary_key [["email"]], but this source defines its own and uses them: ' +
        'cursor ["updated_at"], primary key [["id"]] (the state follows updated_at; records are keyed by id). Set the connection to the source-defined cursor and primary key.',
      // A full-refresh stream has no cursor to differ; its primary key still does.
      'Stream "stage_events": the configured catalog asks for primary_key [["contact_id"],["created_at"]], but this source defines its own and uses them: ' +
        'cursor ["created_at"], primary key [["id"]] (the state follows created_at; records are keyed by id). Set the connection to the source-defined cursor and primary key.',
    ]);
    // The records and the state are the source's own: contacts checkpoints on updated_at, every record keeps id.
    const state = parseLines(run.stdout).filter((m) => m.type === 'STATE').map((m) => (m.state as { stream: { stream_descriptor: { name: string }; stream_state: { sync_watermark?: string } } }).stream);
    expect(state.find((s) => s.stream_descriptor.name === 'contacts')?.stream_state.sync_watermark).toBeDefined();
  });
});

describe('check', () => {
  it('a failed check says what is wrong and nothing about a sync or a saved state', async () => {
    const control = account.emulator.control;
    const config = account.config(dir, { max_retries: 1 });
    const cases = [
      { faults: [{ kind: '500' as const, every: 1, paths: ['/v1/me'] }], message: /did not answer \/v1\/me successfully: .*did not succeed in 2 attempts over [\d.]+ m?s \(1 \+ max_retries 1\); last cause: HTTP 500/ },
      { faults: [{ kind: '503' as const, every: 1, paths: ['/v1/me'], retryAfterSeconds: 3600 }], message: /unavailable \(HTTP 503\) and asks to wait until .*longer than max_wait_seconds \(30 s\) allows\./ },
    ];
    for (const { faults, message } of cases) {
      control.setFaults(faults);
      try {
        const run = await runCli(SOURCE_BIN, ['check', '--config', config]);
        expect(run.code).toBe(0);
        // The retries are told in LOG lines before the answer, which comes last.
        const lines = parseLines(run.stdout);
        const m = lines.at(-1) as { connectionStatus: { status: string; message: string } };
        expect(m.connectionStatus.status).toBe('FAILED');
        expect(m.connectionStatus.message).toMatch(message);
        expect(m.connectionStatus.message).not.toMatch(/sync|saved state/i);
        expect(lines.slice(0, -1).map((l) => (l as { log: { message: string } }).log.message).join('\n')).not.toMatch(/sync|saved state/i);
      } finally {
        control.clearFaults();
      }
    }
    const unreachable = await runCli(SOURCE_BIN, ['check', '--config', writeJson(dir, 'down.json', { api_key: account.key, base_url: 'http://127.0.0.1:9', max_retries: 0 })]);
    const [down] = parseLines(unreachable.stdout) as [{ connectionStatus: { status: string; message: string } }];
    expect(down.connectionStatus).toEqual({
      status: 'FAILED',
      message: expect.stringMatching(/^Cannot reach the Data-Read API at http:\/\/127\.0\.0\.1:9: the connection was refused \(ECONNREFUSED\); 1 attempt \(1 \+ max_retries 0\)\. Check base_url and the network\.$/),
    });
    // Said once: no "Cannot reach ...: Could not reach ..." doubling.
    expect(down.connectionStatus.message.match(/Data-Read API/g)).toHaveLength(1);
  });
});

describe('replicate on a read-only database', () => {
  // Root writes through file permissions: as root, the runs go as nobody (uid 65534), for whom the files are read-only.
  const asRoot = process.getuid?.() === 0;
  const NOBODY = 65534;
  /** The uid the runs go as, which the messages name. */
  const runner = asRoot ? NOBODY : (process.getuid?.() ?? -1);

  function replicateAs(config: string, db: string): Promise<CliResult> {
    return runCli(SOURCE_BIN, ['replicate', '--config', config, '--db', db], asRoot ? { uid: NOBODY } : {});
  }

  const sideFiles = (db: string) => ['-wal', '-shm', '-journal'].filter((s) => existsSync(`${db}${s}`));

  it('a read-only file in a writable directory: refused with a clear message, no -wal/-shm left behind', async () => {
    chmodSync(dir, 0o755);
    const config = account.config(dir);
    chmodSync(config, 0o644);
    const rwDir = join(dir, 'rw');
    mkdirSync(rwDir, { mode: 0o755 });
    if (asRoot) chownSync(rwDir, NOBODY, NOBODY); // the directory is the runner's: SQLite could create -wal/-shm there
    const db = join(rwDir, 'readonly.db');
    expect((await replicate(config, db)).code).toBe(0);
    expect(sideFiles(db)).toEqual([]);
    chmodSync(db, 0o444);
    account.mutate({ op: 'update_contacts', count: 2 });
    const run = await replicateAs(config, db);
    expect(run.code).toBe(78);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      new RegExp(
        `ERROR source-data-read: Cannot replicate: Cannot write the replica database "${db}": the file \\(owned by uid \\d+, mode 444\\) ` +
          `is not writable by the user the connector runs as, uid ${runner} \\(EACCES\\)\\. replicate writes into it: make it writable for uid ${runner} `,
      ),
    );
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(sideFiles(db)).toEqual([]);
  });

  it('a read-only directory (the file writable, or not there yet): refused, nothing created', async () => {
    chmodSync(dir, 0o755);
    const roDir = join(dir, 'ro');
    mkdirSync(roDir);
    const config = account.config(dir);
    const db = join(roDir, 'replica.db');
    expect((await replicate(config, db)).code).toBe(0);
    if (asRoot) chownSync(db, NOBODY, NOBODY);
    chmodSync(roDir, asRoot ? 0o755 : 0o555); // root-owned 755: read-only for nobody
    for (const path of [db, join(roDir, 'new.db')]) {
      const run = await replicateAs(config, path);
      expect(run.code, path).toBe(78);
      expect(run.stderr).toMatch(
        new RegExp(
          `Cannot replicate: Cannot write the replica database ".*": its directory ".*ro" \\(owned by uid \\d+, mode [57]55\\) is not writable by the user ` +
            `the connector runs as, uid ${runner} \\(EACCES\\), and SQLite needs to create ".*-wal" and ".*-shm" beside the database\\. Make it writable for uid ${runner} `,
        ),
      );
      expect(sideFiles(path)).toEqual([]);
    }
    expect(existsSync(join(roDir, 'new.db'))).toBe(false);
    chmodSync(roDir, 0o755);
  });
});
