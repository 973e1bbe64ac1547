/**
 * Exit statuses and `--summary FILE` from real runs of `read`, the tap's sync
 * and `replicate` against the emulator: success (0), a revoked key (78), a
 * service that cannot be reached (a closed port: 75), SIGTERM (143). Each
 * run's summary is valid against schemas/run-summary.json, fits 4 KiB,
 * carries no secret, and its records and watermarks are those of the output.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, closeSync, existsSync, lstatSync, mkdirSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from 'data-read-emulator';
import type { RunSummary } from '../../../src/report/run-report.js';
import { replicaStates } from '../../../src/replica/records.js';
import { ROOT, SOURCE_BIN, TAP_BIN, parseLines, runAndSignal, runCli, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';

const validate = (() => {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats.default(ajv);
  return ajv.compile(JSON.parse(readFileSync(join(ROOT, 'schemas', 'run-summary.json'), 'utf8')) as object);
})();

let emulator: Emulator;
let dir: string;
let key: string;
let revokedKey: string;
const CATALOG = join(ROOT, 'catalog', 'configured_catalog.json');

beforeAll(async () => {
  emulator = await startEmulator({ host: '127.0.0.1', port: 0, seed: 21, frozenClock: true, limits: { perMinute: 10_000_000, perDay: 100_000_000 } });
  const control = emulator.control;
  const account = control.createAccount({ name: 'Summary test' });
  key = control.createKey(account.id).key;
  const revoked = control.createKey(account.id);
  control.revokeKey(revoked.id);
  revokedKey = revoked.key;
  control.seed(account.id, { contacts: 120 });
  dir = tempDir('summary-');
});
afterAll(async () => {
  await emulator?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type Face = 'read' | 'tap' | 'replicate';
const FACES: readonly Face[] = ['read', 'tap', 'replicate'];

function config(name: string, extra: Record<string, unknown> = {}): string {
  return writeJson(dir, `config-${name}.json`, { api_key: key, base_url: emulator.url, page_size: 20, ...extra });
}

function args(face: Face, configPath: string, summary: string, db: string): [string, string[]] {
  if (face === 'read') return [SOURCE_BIN, ['read', '--config', configPath, '--catalog', CATALOG, '--summary', summary]];
  if (face === 'tap') return [TAP_BIN, ['--config', configPath, '--summary', summary]];
  return [SOURCE_BIN, ['replicate', '--config', configPath, '--db', db, '--summary', summary]];
}

/** The summary file, checked against the shipped JSON Schema, its size and the secrets. */
function summaryOf(path: string): RunSummary {
  const text = readFileSync(path, 'utf8');
  expect(Buffer.byteLength(text)).toBeLessThanOrEqual(4096);
  expect(text).not.toContain(key);
  expect(text).not.toContain(revokedKey);
  const value = JSON.parse(text) as unknown;
  expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
  return value as RunSummary;
}

/** Per stream: the RECORD lines of the output, and the sync_watermark of its last STATE. */
function outputFigures(face: Face, stdout: string): Map<string, { records: number; watermark: string | null }> {
  const out = new Map<string, { records: number; watermark: string | null }>();
  const entry = (name: string) => out.get(name) ?? out.set(name, { records: 0, watermark: null }).get(name)!;
  for (const m of parseLines(stdout)) {
    if (face === 'read' && m.type === 'RECORD') entry((m.record as { stream: string }).stream).records++;
    if (face === 'read' && m.type === 'STATE') {
      const s = (m.state as { stream: { stream_descriptor: { name: string }; stream_state: { sync_watermark?: string } } }).stream;
      entry(s.stream_descriptor.name).watermark = s.stream_state.sync_watermark ?? entry(s.stream_descriptor.name).watermark;
    }
    if (face === 'tap' && m.type === 'RECORD') entry(m.stream as string).records++;
    if (face === 'tap' && m.type === 'STATE') {
      for (const [name, b] of Object.entries((m.value as { bookmarks: Record<string, { sync_watermark?: string }> }).bookmarks)) {
        if (b.sync_watermark !== undefined) entry(name).watermark = b.sync_watermark;
      }
    }
  }
  return out;
}

function tableCounts(db: string): Map<string, number> {
  const check = new DatabaseSync(db, { readOnly: true });
  try {
    const counts = new Map<string, number>();
    for (const name of ['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages']) {
      counts.set(name, Number(check.prepare(`SELECT count(*) AS n FROM ${name}`).get()?.n));
    }
    return counts;
  } finally {
    check.close();
  }
}

describe.each(FACES)('%s: exit status and --summary', (face) => {
  it('success: 0; every stream complete, its records and watermark those of the output', async () => {
    const summary = join(dir, `${face}-ok.json`);
    const db = join(dir, `${face}-ok.db`);
    const [bin, argv] = args(face, config(`${face}-ok`), summary, db);
    const run = await runCli(bin, argv);
    expect(run.code, run.stderr.slice(-800)).toBe(0);
    const s = summaryOf(summary);
    expect(s).toMatchObject({ summary_version: 1, command: face === 'tap' ? 'sync' : face, status: 'succeeded', exit_code: 0, failure_type: null, message: null });
    expect(s.streams.map((x) => x.status)).toEqual(['complete', 'complete', 'complete', 'complete', 'complete']);
    expect(s.requests).toBeGreaterThan(5);
    expect(Date.parse(s.finished_at)).toBeGreaterThanOrEqual(Date.parse(s.started_at));
    if (face === 'replicate') {
      const rows = tableCounts(db);
      for (const x of s.streams) expect(x.records, x.name).toBe(rows.get(x.name));
    } else {
      const figures = outputFigures(face, run.stdout);
      for (const x of s.streams) {
        expect(x.records, x.name).toBe(figures.get(x.name)?.records ?? 0);
        expect(x.sync_watermark_before, x.name).toBeNull();
        if (x.name !== 'pipeline_stages') expect(x.sync_watermark_after, x.name).toBe(figures.get(x.name)?.watermark);
      }
    }
  });

  it('a revoked key: 78 (config_error), every stream skipped, the key nowhere', async () => {
    const summary = join(dir, `${face}-revoked.json`);
    const [bin, argv] = args(face, config(`${face}-revoked`, { api_key: revokedKey }), summary, join(dir, `${face}-revoked.db`));
    const run = await runCli(bin, argv);
    expect(run.code, run.stderr.slice(-800)).toBe(78);
    const s = summaryOf(summary);
    expect(s).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error' });
    expect(s.message).toMatch(/HTTP 401/);
    expect(s.streams.map((x) => x.name).sort()).toEqual(['contacts', 'conversations', 'deletions', 'pipeline_stages', 'stage_events']);
    for (const x of s.streams) expect(x).toMatchObject({ status: 'skipped', records: 0 });
  });

  it('a service that cannot be reached (a closed port): 75 (transient_error), the summary written before any answer', async () => {
    const summary = join(dir, `${face}-down.json`);
    const [bin, argv] = args(face, config(`${face}-down`, { base_url: 'http://127.0.0.1:9', max_retries: 0 }), summary, join(dir, `${face}-down.db`));
    const run = await runCli(bin, argv);
    expect(run.code, run.stderr.slice(-800)).toBe(75);
    const s = summaryOf(summary);
    expect(s).toMatchObject({ status: 'failed', exit_code: 75, failure_type: 'transient_error', rate_limit_waits: 0 });
    expect(s.requests).toBeGreaterThanOrEqual(1);
    expect(s.message).toMatch(/Cannot reach the Data-Read API at http:\/\/127\.0\.0\.1:9/);
  });

  it('SIGTERM mid-run: 143, status interrupted, what was done so far', async () => {
    const summary = join(dir, `${face}-term.json`);
    const db = join(dir, `${face}-term.db`);
    const [bin, argv] = args(face, config(`${face}-term`, { page_size: 5, max_concurrent_requests: 1 }), summary, db);
    emulator.control.setLatency(40);
    let run: CliResult & { signalled: boolean };
    try {
      if (face === 'replicate') {
        // stdout stays empty: stop it once its first rows are committed (the polling ends with the run).
        let ended = false;
        const committed = async (): Promise<void> => {
          while (!ended) {
            try {
              const check = new DatabaseSync(db, { readOnly: true });
              try {
                if (Number(check.prepare('SELECT count(*) AS n FROM _replica_state').get()?.n) > 0) return;
              } finally {
                check.close();
              }
            } catch {
              // not created yet
            }
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        };
        try {
          run = await runAndSignal(bin, argv, { signal: 'SIGTERM', trigger: committed() });
        } finally {
          ended = true;
        }
      } else {
        run = await runAndSignal(bin, argv, { signal: 'SIGTERM', count: 2 });
      }
    } finally {
      emulator.control.setLatency(0);
    }
    expect(run.signalled).toBe(true);
    expect(run.code, run.stderr.slice(-800)).toBe(143);
    const s = summaryOf(summary);
    expect(s).toMatchObject({ status: 'interrupted', exit_code: 143, failure_type: null });
    expect(s.message).toContain('SIGTERM');
    expect(s.streams.some((x) => x.status === 'incomplete' || x.status === 'complete')).toBe(true);
    if (face !== 'replicate') {
      // Exactly what went out before the stop: a page the connector had not written when stopped is not counted.
      const figures = outputFigures(face, run.stdout);
      for (const x of s.streams) expect(x.records, x.name).toBe(figures.get(x.name)?.records ?? 0);
    }
  });
});

describe('read with deletions as tombstones', () => {
  /** Tombstones per stream in a read's output (records whose _ab_cdc_deleted_at is set). */
  const emitted = (stdout: string): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const m of parseLines(stdout)) {
      const record = m.record as { stream: string; data: Record<string, unknown> } | undefined;
      if (m.type === 'RECORD' && record && record.data._ab_cdc_deleted_at != null) out[record.stream] = (out[record.stream] ?? 0) + 1;
    }
    return out;
  };
  it.each([false, true])('the summary counts the tombstones the output holds (accounts: %s)', async (many) => {
    const name = `tombstones-${many ? 'accounts' : 'key'}`;
    const summary = join(dir, `${name}-summary.json`);
    // JSON drops an undefined api_key: the config of many accounts has none.
    const cfg = config(name, { deletions_as_tombstones: true, ...(many ? { api_key: undefined, accounts: [{ name: 'acme', api_key: key }] } : {}) });
    const run = await runCli(SOURCE_BIN, ['read', '--config', cfg, '--catalog', CATALOG, '--summary', summary]);
    expect(run.code, run.stderr.slice(-800)).toBe(0);
    const counts = emitted(run.stdout);
    expect(Object.values(counts).reduce((n, c) => n + c, 0)).toBeGreaterThan(0);
    const s = summaryOf(summary);
    expect(Object.fromEntries(s.streams.filter((x) => x.tombstones > 0).map((x) => [x.name, x.tombstones]))).toEqual(counts);
  });
});

describe('--summary on other commands', () => {
  it('is a usage mistake (exit 2) outside read, replicate and the tap sync', async () => {
    const run = await runCli(SOURCE_BIN, ['discover', '--config', config('discover'), '--summary', join(dir, 'x.json')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--summary is an option of read and replicate');
    const tap = await runCli(TAP_BIN, ['--config', config('discover'), '--discover', '--summary', join(dir, 'x.json')]);
    expect(tap.code).toBe(2);
  });

  it("is refused (exit 2) when it names read's or the tap's stdout, which carries the protocol; replicate's stdout takes it", async () => {
    for (const [bin, args] of [
      [SOURCE_BIN, ['read', '--config', config('summary-stdout'), '--catalog', CATALOG]],
      [TAP_BIN, ['--config', config('summary-stdout')]],
    ] as const) {
      const run = await runCli(bin, [...args, '--summary', '/dev/stdout']);
      expect(run.code, run.stderr.slice(-800)).toBe(2);
      expect(run.stderr).toContain("--summary /dev/stdout is this command's stdout, which carries its protocol messages");
      expect(run.stdout).toBe('');
    }
    const replicate = await runCli(SOURCE_BIN, ['replicate', '--config', config('summary-stdout'), '--db', join(dir, 'summary-stdout.db'), '--summary', '/dev/stdout']);
    expect(replicate.code, replicate.stderr.slice(-800)).toBe(0);
    expect(JSON.parse(replicate.stdout)).toMatchObject({ command: 'replicate', status: 'succeeded', exit_code: 0 });
  });

  it('a usage mistake of read still writes the summary (exit 2)', async () => {
    const summary = join(dir, 'usage.json');
    const run = await runCli(SOURCE_BIN, ['read', '--summary', summary, '--catalog', CATALOG]);
    expect(run.code).toBe(2);
    expect(summaryOf(summary)).toMatchObject({ status: 'failed', exit_code: 2, message: 'read needs --config FILE', streams: [] });
  });

  it('an option nothing takes still writes the summary of read, replicate and the tap (exit 2)', async () => {
    const cases: [string, string[], string][] = [
      [SOURCE_BIN, ['read'], 'read'],
      [SOURCE_BIN, ['replicate'], 'replicate'],
      [TAP_BIN, ['--config', 'config.json'], 'sync'],
    ];
    for (const [bin, args, command] of cases) {
      const summary = join(dir, `usage-option-${command}.json`);
      const run = await runCli(bin, [...args, '--summary', summary, '--bogus']);
      expect(run.code, run.stderr).toBe(2);
      expect(summaryOf(summary)).toMatchObject({ command, status: 'failed', exit_code: 2, failure_type: 'config_error', streams: [] });
      expect(summaryOf(summary).message).toMatch(/Unknown option --bogus/);
    }
  });
});

describe('--summary naming stderr', () => {
  it("is added to the log stderr goes to, after the run's own lines (the log file is not emptied)", () => {
    // Not /dev/stderr by name: a writer that renamed a file over the path (the fault this guards against) would replace
    // the machine's /dev/stderr link when the tests run as root. /dev/fd/2 is the same file to the connector, and no file
    // can be renamed into /proc.
    for (const name of ['/dev/fd/2', '/proc/self/fd/2']) {
      const down = config('stderr-down', { base_url: 'http://127.0.0.1:9', max_retries: 0 });
      const log = join(dir, 'tap-stderr.log');
      const fd = openSync(log, 'w');
      const run = spawnSync(process.execPath, [TAP_BIN, '--config', down, '--summary', name], { stdio: ['ignore', 'ignore', fd] });
      closeSync(fd);
      const text = readFileSync(log, 'utf8');
      expect(run.status, text).toBe(75);
      const lines = text.trimEnd().split('\n');
      expect(lines.slice(0, -1).some((line) => / CRITICAL tap-data-read: Cannot reach the Data-Read API/.test(line)), text).toBe(true);
      expect(JSON.parse(lines.at(-1)!), name).toMatchObject({ command: 'sync', exit_code: 75, failure_type: 'transient_error' });
    }
  });

  it('a read-only log (mode 0444, open for writing before): added to as well, not refused as a file the summary would replace', () => {
    const down = config('stderr-read-only', { base_url: 'http://127.0.0.1:9', max_retries: 0 });
    const log = join(dir, 'tap-stderr-read-only.log');
    const fd = openSync(log, 'a');
    chmodSync(log, 0o444);
    const run = spawnSync(process.execPath, [TAP_BIN, '--config', down, '--summary', '/dev/fd/2'], { stdio: ['ignore', 'ignore', fd] });
    closeSync(fd);
    const text = readFileSync(log, 'utf8');
    expect(run.status, text).toBe(75);
    expect(text).not.toContain('is a read-only file');
    expect(JSON.parse(text.trimEnd().split('\n').at(-1)!)).toMatchObject({ command: 'sync', exit_code: 75, failure_type: 'transient_error' });
  });
});

describe('--summary naming a symbolic link', () => {
  it('writes the file the link names, and the link stays a link', async () => {
    mkdirSync(join(dir, 'shared'));
    const target = join(dir, 'shared', 'summary.json');
    writeFileSync(target, '{"previous": true}\n');
    const link = join(dir, 'summary-link.json');
    symlinkSync(target, link);
    const run = await runCli(TAP_BIN, ['--config', config('link-down', { base_url: 'http://127.0.0.1:9', max_retries: 0 }), '--summary', link]);
    expect(run.code, run.stderr.slice(-800)).toBe(75);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(summaryOf(target)).toMatchObject({ command: 'sync', exit_code: 75, failure_type: 'transient_error' });
  });
});

describe('--summary naming a read-only file', () => {
  it('is refused (78) before the run does anything, naming the file and its mode; the file is kept as it was', async () => {
    const ro = join(dir, 'read-only');
    mkdirSync(ro);
    for (const face of FACES) {
      const summary = join(ro, `${face}.json`);
      writeFileSync(summary, '{"kept": true}\n');
      chmodSync(summary, 0o444);
      const db = join(ro, `${face}.db`);
      const [bin, argv] = args(face, config(`read-only-${face}`), summary, db);
      const run = await runCli(bin, argv);
      expect(run.code, run.stderr.slice(-800)).toBe(78);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(`--summary "${summary}" is a read-only file (mode 0444)`);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(readFileSync(summary, 'utf8')).toBe('{"kept": true}\n');
      expect(lstatSync(summary).mode & 0o777).toBe(0o444);
      expect(existsSync(db)).toBe(false);
    }
  });
});

/** A folder mounted read-only onto itself (root with the right to mount: CI's container), or undefined where it cannot be. */
function readOnlyMount(folder: string): (() => void) | undefined {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return undefined;
  if (spawnSync('mount', ['--bind', folder, folder]).status !== 0) return undefined;
  const unmount = (): void => void spawnSync('umount', [folder]);
  if (spawnSync('mount', ['-o', 'remount,ro,bind', folder]).status !== 0) {
    unmount();
    return undefined;
  }
  return unmount;
}

describe('--summary naming a writable file on a read-only file system', () => {
  it('is not refused as a read-only file: the run goes on, and its end says the summary cannot be written', async (ctx) => {
    const folder = join(dir, 'read-only-mount');
    mkdirSync(folder);
    const summary = join(folder, 'summary.json');
    writeFileSync(summary, '{"kept": true}\n');
    const unmount = readOnlyMount(folder);
    if (unmount === undefined) return ctx.skip();
    try {
      const run = await runCli(TAP_BIN, ['--config', config('read-only-mount'), '--summary', summary]);
      expect(run.code, run.stderr.slice(-800)).toBe(0);
      expect(run.stderr).not.toContain('is a read-only file');
      expect(run.stderr).toContain(`Cannot write the run summary to "${summary}": the file system is read-only.`);
      expect(readFileSync(summary, 'utf8')).toBe('{"kept": true}\n');
    } finally {
      unmount();
    }
  });
});

describe('a stdout on a full disk (cron: `read > out.jsonl`)', () => {
  /** Runs `bin` with stdout on /dev/full, where every write fails with ENOSPC: exit status and stderr. */
  async function intoFullDisk(bin: string, args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
    const fd = openSync('/dev/full', 'w');
    try {
      const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', fd, 'pipe'] });
      const err: Buffer[] = [];
      child.stderr?.on('data', (b: Buffer) => err.push(b));
      const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
      return { code, stderr: Buffer.concat(err).toString('utf8') };
    } finally {
      closeSync(fd);
    }
  }

  const FULL = /stdout could not be written \(ENOSPC: no space is left on the device it goes to\); stopped\. Run it again once there is room/;

  it.skipIf(!existsSync('/dev/full'))('read and the tap: 75 (run again once there is room), said as a full disk, not as a bug nor a reader gone', async () => {
    for (const [bin, name, level] of [
      [SOURCE_BIN, 'read', 'ERROR'],
      [TAP_BIN, 'tap', 'CRITICAL'],
    ] as const) {
      const summary = join(dir, `${name}-full-disk.json`);
      const runArgs = name === 'read' ? ['read', '--config', config(`${name}-full`), '--catalog', CATALOG, '--summary', summary] : ['--config', config(`${name}-full`), '--summary', summary];
      const run = await intoFullDisk(bin, runArgs);
      expect(run.code, run.stderr.slice(-800)).toBe(75);
      expect(run.stderr).toMatch(new RegExp(`${level} [a-z-]+: ${FULL.source}`));
      expect(run.stderr).not.toMatch(/Unexpected error|reader went away/);
      expect(summaryOf(summary)).toMatchObject({ status: 'failed', exit_code: 75, failure_type: 'transient_error' });
    }
  });
});

describe('a reader of stdout that goes away', () => {
  /** Runs `bin` with a stdout whose reader goes away before the first byte, or after the first bytes: exit status and stderr. */
  async function intoClosedPipe(bin: string, args: readonly string[], when: 'at once' | 'after the first bytes' = 'at once'): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    if (when === 'at once') child.stdout.destroy();
    else child.stdout.once('data', () => child.stdout.destroy());
    const err: Buffer[] = [];
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    return { code, stderr: Buffer.concat(err).toString('utf8') };
  }

  it('the tap: 75 (run again later) with one clear CRITICAL line, and a transient_error summary', async () => {
    const summary = join(dir, 'tap-closed.json');
    const run = await intoClosedPipe(TAP_BIN, ['--config', config('tap-closed', { page_size: 5 }), '--summary', summary], 'after the first bytes');
    expect(run.code, run.stderr.slice(-800)).toBe(75);
    expect(run.stderr).toMatch(/CRITICAL tap-data-read: stdout was closed before the command ended \(EPIPE: its reader went away\); stopped\. Run it again/);
    // Each stream meets the closed pipe: none calls it a fault of the connector, the run's end says it once.
    expect(run.stderr.match(/ CRITICAL /g), run.stderr.slice(-800)).toHaveLength(1);
    expect(run.stderr).not.toMatch(/Unexpected error/);
    expect(summaryOf(summary)).toMatchObject({ status: 'failed', exit_code: 75, failure_type: 'transient_error' });
  });

  it('read: 75 with one ERROR line and a transient_error summary, even when the command had written its last line', async () => {
    const summary = join(dir, 'read-closed.json');
    const run = await intoClosedPipe(SOURCE_BIN, ['read', '--config', config('read-closed'), '--catalog', CATALOG, '--summary', summary]);
    expect(run.code, run.stderr.slice(-800)).toBe(75);
    expect(run.stderr.match(/ERROR source-data-read: stdout was closed before the command ended \((EPIPE|ERR_STREAM_DESTROYED): its reader went away\)/g)).toHaveLength(1);
    expect(summaryOf(summary)).toMatchObject({ status: 'failed', exit_code: 75, failure_type: 'transient_error' });
  });

  // A run's own failure whose ERROR trace its reader never took: told on stderr, and the exit status is the failure's.
  const REFUSED = /Invalid config: page_size must be an integer from 1 to 200 \(got the number -4\)/;

  it('read and discover given a refused config: 78 (config_error), the reason on stderr, not a retry', async () => {
    const refused = config('refused-closed', { page_size: -4 });
    const summary = join(dir, 'read-refused-closed.json');
    const read = await intoClosedPipe(SOURCE_BIN, ['read', '--config', refused, '--catalog', CATALOG, '--summary', summary]);
    expect(read.code, read.stderr).toBe(78);
    expect(read.stderr).toMatch(new RegExp(`ERROR source-data-read: ${REFUSED.source}`));
    expect(summaryOf(summary)).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error' });
    const discover = await intoClosedPipe(SOURCE_BIN, ['discover', '--config', refused]);
    expect(discover.code, discover.stderr).toBe(78);
    expect(discover.stderr).toMatch(new RegExp(`ERROR source-data-read: ${REFUSED.source}`));
  });

  it('read with a revoked key: 78, the refusal on stderr', async () => {
    const summary = join(dir, 'read-revoked-closed.json');
    const run = await intoClosedPipe(SOURCE_BIN, ['read', '--config', config('revoked-closed', { api_key: revokedKey }), '--catalog', CATALOG, '--summary', summary]);
    expect(run.code, run.stderr).toBe(78);
    expect(run.stderr).toMatch(/ERROR source-data-read: .*HTTP 401/);
    expect(run.stderr).not.toContain(revokedKey);
    expect(summaryOf(summary)).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error' });
  });

  it('read that failed transiently: 75, with its own reason on stderr', async () => {
    const run = await intoClosedPipe(SOURCE_BIN, ['read', '--config', config('down-closed', { base_url: 'http://127.0.0.1:9', max_retries: 0 }), '--catalog', CATALOG]);
    expect(run.code, run.stderr).toBe(75);
    expect(run.stderr).toMatch(/ERROR source-data-read: Cannot reach the Data-Read API at http:\/\/127\.0\.0\.1:9/);
  });

  it("the tap's --discover and sync given a refused config: 78, the reason on stderr", async () => {
    const refused = config('tap-refused-closed', { page_size: -4 });
    for (const argv of [['--config', refused, '--discover'], ['--config', refused]]) {
      const run = await intoClosedPipe(TAP_BIN, argv);
      expect(run.code, run.stderr).toBe(78);
      expect(run.stderr).toMatch(new RegExp(`CRITICAL tap-data-read: ${REFUSED.source}`));
    }
  });

  it("the tap's sync with a revoked key: 78, the refusal on stderr; one that found the service down: 75, its reason on stderr", async () => {
    const summary = join(dir, 'tap-revoked-closed.json');
    const revoked = await intoClosedPipe(TAP_BIN, ['--config', config('tap-revoked-closed', { api_key: revokedKey }), '--summary', summary]);
    expect(revoked.code, revoked.stderr).toBe(78);
    expect(revoked.stderr).toMatch(/CRITICAL tap-data-read: .*HTTP 401/);
    expect(revoked.stderr).not.toContain(revokedKey);
    expect(summaryOf(summary)).toMatchObject({ status: 'failed', exit_code: 78, failure_type: 'config_error' });
    const down = await intoClosedPipe(TAP_BIN, ['--config', config('tap-down-closed', { base_url: 'http://127.0.0.1:9', max_retries: 0 })]);
    expect(down.code, down.stderr).toBe(75);
    expect(down.stderr).toMatch(/CRITICAL tap-data-read: Cannot reach the Data-Read API at http:\/\/127\.0\.0\.1:9/);
  });

  it("spec and the tap's --about, whose one write is lost: 75, not a success nor an internal error", async () => {
    const spec = await intoClosedPipe(SOURCE_BIN, ['spec']);
    expect(spec.code, spec.stderr).toBe(75);
    expect(spec.stderr).toMatch(/stdout was closed before the command ended/);
    const about = await intoClosedPipe(TAP_BIN, ['--about']);
    expect(about.code, about.stderr).toBe(75);
    expect(about.stderr).toMatch(/CRITICAL tap-data-read: stdout was closed before the command ended/);
  });
});

describe('a reader of stderr that goes away', () => {
  /** Runs `bin` with a stderr whose reader goes away after its first bytes: exit status and stdout. */
  async function withClosedStderr(bin: string, args: readonly string[]): Promise<{ code: number | null; stdout: string; closed: boolean }> {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let closed = false;
    child.stderr.once('data', () => {
      closed = true;
      child.stderr.destroy();
    });
    const out: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    return { code, stdout: Buffer.concat(out).toString('utf8'), closed };
  }

  it('the tap: the run goes on, its own status (0), its last STATE and its summary', async () => {
    const summary = join(dir, 'tap-stderr-closed.json');
    const run = await withClosedStderr(TAP_BIN, ['--config', config('tap-stderr-closed', { page_size: 5 }), '--summary', summary]);
    expect(run.closed).toBe(true);
    expect(run.code).toBe(0);
    const messages = parseLines(run.stdout);
    expect(messages.at(-1)?.type).toBe('STATE');
    const s = summaryOf(summary);
    expect(s).toMatchObject({ status: 'succeeded', exit_code: 0, failure_type: null });
    const figures = outputFigures('tap', run.stdout);
    for (const x of s.streams) expect(x.records, x.name).toBe(figures.get(x.name)?.records ?? 0);
    expect(figures.get('contacts')?.records).toBeGreaterThan(100);
  });

  it('replicate: the run goes on, its own status (0), every row committed and its summary', async () => {
    const summary = join(dir, 'replicate-stderr-closed.json');
    const db = join(dir, 'replicate-stderr-closed.db');
    const run = await withClosedStderr(SOURCE_BIN, ['replicate', '--config', config('replicate-stderr-closed', { page_size: 5 }), '--db', db, '--summary', summary]);
    expect(run.closed).toBe(true);
    expect(run.code).toBe(0);
    const s = summaryOf(summary);
    expect(s).toMatchObject({ command: 'replicate', status: 'succeeded', exit_code: 0 });
    expect(tableCounts(db).get('contacts')).toBe(s.streams.find((x) => x.name === 'contacts')?.records);
    expect(tableCounts(db).get('contacts')).toBeGreaterThan(100);
  });
});

describe('replicate after a pause longer than the service keeps deletions', () => {
  it("the healed streams' watermark before is the one the replica had saved, not null", { timeout: 120_000 }, async () => {
    const db = join(dir, 'replicate-heal.db');
    const configPath = config('replicate-heal');
    const first = await runCli(SOURCE_BIN, ['replicate', '--config', configPath, '--db', db]);
    expect(first.code, first.stderr.slice(-800)).toBe(0);
    const saved = replicaStates(db);
    // Past the deletion log's retention on the emulator's clock: contacts and conversations are read in full first.
    emulator.control.advanceClock(105 * 86_400_000);
    const summary = join(dir, 'replicate-heal.json');
    const healed = await runCli(SOURCE_BIN, ['replicate', '--config', configPath, '--db', db, '--summary', summary]);
    expect(healed.code, healed.stderr.slice(-800)).toBe(0);
    expect(healed.stderr).toMatch(/is 105 days old on the service's clock/);
    const s = summaryOf(summary);
    for (const name of ['contacts', 'conversations', 'deletions', 'stage_events']) {
      const before = saved.get(name)?.sync_watermark;
      expect(before, name).toMatch(/^\d{4}-/);
      expect(s.streams.find((x) => x.name === name)?.sync_watermark_before, name).toBe(before);
    }
  });
});
