/**
 * `npm run demo`: the main job, with no account needed. Starts the emulator
 * (the data-read-emulator workspace package) on 127.0.0.1, seeds an account, runs the real executables (check,
 * discover, a full read), changes and deletes records, runs an incremental
 * read from the saved state, then builds a SQLite replica and prints a short
 * summary. Raw protocol output is kept in demo-output/.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { dayOfActivity, startEmulator, type Emulator } from 'data-read-emulator';
import { ROOT } from '../scripts/root.js';
import { PROXY_VARIABLES } from '../src/network/proxy-env.js';
import { replicaRecords } from '../src/replica/records.js';
import { replicaSummary } from './dashboard.js';
import { seededLines } from './seeded.js';

const OUT = join(ROOT, 'demo-output');
const SOURCE = join(ROOT, 'bin', 'source-data-read');
const CONTACTS = Number(process.env.DEMO_CONTACTS ?? 2000);
/** The emulator is on this machine's loopback: a proxy of the environment (http_proxy, ...) could not reach it. */
const ENV = Object.fromEntries(Object.entries(process.env).filter(([name]) => !(PROXY_VARIABLES as readonly string[]).includes(name)));

type Message = Record<string, unknown> & { type: string };

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

function run(args: readonly string[]): Promise<Run> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SOURCE, ...args], { env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), ms: performance.now() - started }),
    );
  });
}

const lines = (stdout: string): Message[] => stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Message);

/** Record counts per stream, last state per stream, and log lines of one read. */
function digest(messages: readonly Message[]) {
  const records = new Map<string, number>();
  const states = new Map<string, { sync_watermark?: string }>();
  let deletions = 0;
  for (const m of messages) {
    if (m.type === 'RECORD') {
      const r = m.record as { stream: string };
      records.set(r.stream, (records.get(r.stream) ?? 0) + 1);
      if (r.stream === 'deletions') deletions++;
    } else if (m.type === 'STATE') {
      const s = (m.state as { stream: { stream_descriptor: { name: string }; stream_state: { sync_watermark?: string } } }).stream;
      states.set(s.stream_descriptor.name, s.stream_state);
    }
  }
  return { records, states, deletions };
}

function save(name: string, content: string): string {
  const path = join(OUT, name);
  writeFileSync(path, content);
  return relative(ROOT, path);
}

function requestsSince(emu: Emulator, before: number): number {
  return emu.control.stats().total - before;
}

function fail(step: string, result: Run): never {
  process.stderr.write(`demo: ${step} failed (exit ${result.code})\n${result.stdout.slice(-2000)}\n${result.stderr.slice(-2000)}\n`);
  process.exit(1);
}

const say = (text = ''): void => void process.stdout.write(`${text}\n`);

async function main(): Promise<void> {
  const t0 = performance.now();
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const emu = await startEmulator({ host: '127.0.0.1', port: 0, seed: 2026 });
  try {
    const account = emu.control.createAccount({ name: 'Acme Demo' });
    const seeded = emu.control.seed(account.id, { contacts: CONTACTS });
    const key = emu.control.createKey(account.id).key;
    const config = save('config.json', JSON.stringify({ api_key: key, base_url: emu.url }, null, 2));
    const catalog = relative(ROOT, join(ROOT, 'catalog', 'configured_catalog.json'));
    say(seededLines(emu.url, 'Acme Demo', seeded, emu.control.getAccount(account.id).counts));

    const check = await run(['check', '--config', join(ROOT, config)]);
    save('check.jsonl', check.stdout);
    // check says one line on schema drift before its CONNECTION_STATUS; discover one on the schemas before its CATALOG.
    const status = (lines(check.stdout).find((m) => m.type === 'CONNECTION_STATUS')?.connectionStatus ?? {}) as { status?: string; message?: string };
    if (status.status !== 'SUCCEEDED') fail('check', check);
    say(`check     ${status.status}: ${status.message}`);

    const discover = await run(['discover', '--config', join(ROOT, config)]);
    save('discover.jsonl', discover.stdout);
    const discovered = lines(discover.stdout);
    const streams = ((discovered.find((m) => m.type === 'CATALOG')?.catalog ?? { streams: [] }) as { streams: { name: string }[] }).streams;
    if (discover.code !== 0) fail('discover', discover);
    const added = /fields added: (.*)\.$/.exec(String((discovered.find((m) => m.type === 'LOG')?.log as { message?: string } | undefined)?.message ?? ''))?.[1];
    say(`discover  ${streams.length} streams: ${streams.map((s) => s.name).join(', ')}${added === undefined ? '' : ` (from the service's description: ${added})`}`);

    let mark = emu.control.stats().total;
    const full = await run(['read', '--config', join(ROOT, config), '--catalog', join(ROOT, catalog)]);
    const fullFile = save('full-read.jsonl', full.stdout);
    if (full.code !== 0) fail('full read', full);
    const fullDigest = digest(lines(full.stdout));
    const fullRequests = requestsSince(emu, mark);

    const stateFile = save(
      'state.json',
      JSON.stringify([...fullDigest.states].map(([name, stream_state]) => ({ type: 'STREAM', stream: { stream_descriptor: { name }, stream_state } })), null, 2),
    );

    // A day of activity: edits, stage moves, outcomes, new contacts, deletions.
    emu.control.advanceClock(3_600_000);
    for (const m of dayOfActivity()) emu.control.mutate(account.id, m);
    emu.control.advanceClock(60_000);

    mark = emu.control.stats().total;
    const inc = await run(['read', '--config', join(ROOT, config), '--catalog', join(ROOT, catalog), '--state', join(ROOT, stateFile)]);
    const incFile = save('incremental-read.jsonl', inc.stdout);
    if (inc.code !== 0) fail('incremental read', inc);
    const incDigest = digest(lines(inc.stdout));
    const incRequests = requestsSince(emu, mark);

    say();
    say('stream            full read   incremental   watermark before -> after');
    for (const s of streams) {
      const before = fullDigest.states.get(s.name)?.sync_watermark ?? '-';
      const after = incDigest.states.get(s.name)?.sync_watermark ?? '-';
      say(`${s.name.padEnd(16)} ${String(fullDigest.records.get(s.name) ?? 0).padStart(10)} ${String(incDigest.records.get(s.name) ?? 0).padStart(13)}   ${before} -> ${after}`);
    }
    say(`requests         ${String(fullRequests).padStart(10)} ${String(incRequests).padStart(13)}`);
    say(`time (s)         ${(full.ms / 1000).toFixed(2).padStart(10)} ${(inc.ms / 1000).toFixed(2).padStart(13)}`);
    say(`deletions seen: ${fullDigest.deletions} in the full read, ${incDigest.deletions} in the incremental read`);

    // The same engine into a local SQLite replica, then a dashboard from SQL.
    const db = join(OUT, 'replica.db');
    const replicate = await run(['replicate', '--config', join(ROOT, config), '--db', db]);
    if (replicate.code !== 0) fail('replicate', replicate);
    const summary = replicaSummary(db);
    const dump = emu.control.dump(account.id);
    const rows = replicaRecords(db);
    const equal = (['contacts', 'conversations', 'stage_events', 'deletions'] as const).every(
      (name) => JSON.stringify(rows.get(name) ?? []) === JSON.stringify(dump[name]),
    );
    say();
    say(`replica   ${relative(ROOT, db)} in ${(replicate.ms / 1000).toFixed(2)} s: ${summary.contacts.total} contacts, ${summary.conversations.total} conversations, ${summary.deletions} deletions; equals the emulator's dataset: ${equal ? 'yes' : 'NO'}`);
    say(`          contacts by temperature: ${summary.contacts.byTemperature.map((t) => `${t.value ?? 'none'} ${t.count}`).join(', ')}`);
    say(`          contacts by stage: ${summary.contacts.byStage.map((s) => `${s.name ?? s.value ?? 'none'} ${s.count}`).join(', ')}`);
    const median = summary.conversations.medianFirstResponseSeconds;
    say(`          conversations won ${summary.conversations.won}, lost ${summary.conversations.lost}; median first response ${median === null ? 'n/a' : `${(median / 60).toFixed(1)} min`}`);
    say();
    say(`Raw protocol output: ${fullFile}, ${incFile} (state: ${stateFile}). Done in ${((performance.now() - t0) / 1000).toFixed(1)} s.`);
    if (!equal) process.exitCode = 1;
  } finally {
    await emu.close();
  }
}

await main();
