/**
 * The tap's --state as users pass it, through the real executables against
 * the emulator: what `meltano state get` prints (Meltano's wrapper), a whole
 * run's output, Airbyte's state in each of its forms, {} and a file that is
 * no state at all. Each refusal is a CRITICAL line and exit 78 before any
 * request, nothing on stdout; the way out it names works as written. Needs
 * `npm run build`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from 'data-read-emulator';
import { ROOT, SOURCE_BIN, TAP_BIN, parseLines, protocolCheck, runCli, tempDir, writeJson, type CliResult } from '../../helpers/cli.js';
import { runShell } from '../../helpers/readme.js';
import { LIMITS_OUT_OF_REACH } from '../../helpers/emulator-runs.js';

const dir = tempDir('tap-state-e2e-');
let emu: Emulator;
let key: string;
let config: string;
let catalog: string;
/** The first run's output (every contact, no state), as a file. */
let firstRun: string;
/** The value of the first run's last STATE. */
let lastValue: Record<string, unknown>;
/** Contacts the account has after the changes, and the number a run from the first run's state reads. */
let total: number;
let resumed: number;

const contactsOf = (stdout: string): number => parseLines(stdout).filter((l) => l.type === 'RECORD' && l.stream === 'contacts').length;

async function tap(state: string): Promise<CliResult> {
  return runCli(TAP_BIN, ['--config', config, '--catalog', catalog, '--state', state]);
}

/** A sync that worked: exit 0, output that passes the Singer checker; its contacts. */
function synced(run: CliResult): number {
  expect(run.stderr).not.toContain('CRITICAL');
  expect(run.code).toBe(0);
  expect(protocolCheck('singer', run.stdout).errors).toEqual([]);
  return contactsOf(run.stdout);
}

/** A refusal: exit 78, nothing on stdout, one CRITICAL line; its message. */
function refused(run: CliResult): string {
  expect(run.code).toBe(78);
  expect(run.stdout).toBe('');
  const critical = run.stderr.split('\n').filter((l) => l.includes(' CRITICAL '));
  expect(critical).toHaveLength(1);
  expect(run.stderr).not.toContain(key);
  return (critical[0] as string).replace(/^.* CRITICAL tap-data-read: /, '');
}

/** What Python's json.dumps writes (", " and ": " between items), as `meltano state get` prints a state. */
function pythonDumps(value: unknown): string {
  return JSON.stringify(value, null, 1).replace(/([[{])\n\s*/g, '$1').replace(/\n\s*([\]}])/g, '$1').replace(/,\n\s*/g, ', ');
}

beforeAll(async () => {
  emu = await startEmulator({ seed: 'tap-state-input', limits: LIMITS_OUT_OF_REACH });
  const account = emu.control.createAccount({ name: 'tap state input' });
  key = emu.control.createKey(account.id).key;
  emu.control.seed(account.id, { contacts: 150 });
  config = writeJson(dir, 'config.json', { api_key: key, base_url: emu.url, page_size: 50 });
  catalog = writeJson(dir, 'catalog.json', { streams: [{ tap_stream_id: 'contacts', schema: {}, metadata: [{ breadcrumb: [], metadata: { selected: true } }] }] });

  const first = await runCli(TAP_BIN, ['--config', config, '--catalog', catalog]);
  synced(first);
  firstRun = writeJson(dir, 'run-1.jsonl', first.stdout);
  lastValue = parseLines(first.stdout).filter((l) => l.type === 'STATE').at(-1)?.value as Record<string, unknown>;
  expect(lastValue).toMatchObject({ bookmarks: { contacts: { sync_watermark: expect.any(String) } } });

  // An hour on, a few contacts change: a run from the first run's state reads those (and the service's 5-minute look-back).
  emu.control.advanceClock(3_600_000);
  emu.control.mutate(account.id, { op: 'update_contacts', count: 4 });
  total = emu.control.dump(account.id).contacts.length;
  resumed = synced(await tap(writeJson(dir, 'value.json', lastValue)));
  expect(resumed).toBeGreaterThanOrEqual(4);
  expect(resumed).toBeLessThan(total);
});

afterAll(async () => {
  await emu?.close();
});

describe('tap-data-read --state, as users pass it', () => {
  it("Meltano's {\"singer_state\": {...}}, as `meltano state get` prints it: the state it wraps", async () => {
    const printed = pythonDumps({ singer_state: lastValue });
    expect(printed).toMatch(/^\{"singer_state": \{"bookmarks": \{"contacts": \{"sync_watermark": "/);
    const run = await tap(writeJson(dir, 'meltano-state.json', `${printed}\n`));
    expect(synced(run)).toBe(resumed);
    // The first STATE goes on from the wrapped bookmarks.
    const first = parseLines(run.stdout).find((l) => l.type === 'STATE')?.value as { bookmarks: Record<string, unknown> };
    expect(Object.keys(first.bookmarks)).toEqual(['contacts']);
  });

  it("a whole run's output: refused, naming the last STATE's line and a command that keeps it; that command works", async () => {
    const lines = readFileSync(firstRun, 'utf8').split('\n');
    const lastState = lines.findLastIndex((l) => l.startsWith('{"type":"STATE"')) + 1;
    const message = refused(await tap(firstRun));
    expect(message).not.toMatch(/not valid JSON|position/);
    expect(message).toMatch(new RegExp(`^Invalid state: the file "${firstRun}" holds the output of a whole tap run \\(\\d+ lines: 1 SCHEMA, \\d+ RECORD, \\d+ STATE\\), not one state\\. `));
    expect(message).toContain(`The tap resumes from the last STATE, whose bookmarks hold every stream's: line ${lastState}. `);
    const command = /Keep only that line and pass the new file: `([^`]+)`, then --state (\S+)\./.exec(message);
    expect(command?.[1]).toBe(`sed -n ${lastState}p ${firstRun} > state.json`);
    expect(message).toContain(`From a run's output, \`grep '^{"type":"STATE"' OUTPUT | tail -n 1 > state.json\` does the same.`);
    const kept = await runShell(command?.[1] as string, { cwd: dir });
    expect(kept.code).toBe(0);
    expect(synced(await tap(join(dir, command?.[2] as string)))).toBe(resumed);
  });

  it('every STATE line of a run (grep without tail): refused, naming the last one', async () => {
    const states = readFileSync(firstRun, 'utf8').split('\n').filter((l) => l.startsWith('{"type":"STATE"'));
    expect(states.length).toBeGreaterThan(1);
    const message = refused(await tap(writeJson(dir, 'states.jsonl', `${states.join('\n')}\n`)));
    expect(message).toMatch(new RegExp(`holds ${states.length} states, one a line, not one state\\. .*: line ${states.length}\\. .*\`sed -n ${states.length}p \\S+states\\.jsonl > state\\.json\`, then --state state\\.json\\.$`));
  });

  describe("Airbyte's state: refused as Airbyte's, saying what the tap keeps", () => {
    let readOutput: string;
    beforeAll(async () => {
      const configured = JSON.parse(readFileSync(join(ROOT, 'catalog', 'configured_catalog.json'), 'utf8')) as { streams: { stream: { name: string } }[] };
      const contactsOnly = writeJson(dir, 'configured.json', { streams: configured.streams.filter((s) => s.stream.name === 'contacts') });
      const read = await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', contactsOnly]);
      expect(read.code).toBe(0);
      readOutput = read.stdout;
    });
    const stateLines = (): string[] => readOutput.split('\n').filter((l) => l.startsWith('{"type":"STATE"'));
    const tapKeeps =
      /: Airbyte state, which source-data-read read takes, not the tap\. The tap keeps its own state, the value of its last STATE message: \{"bookmarks": \{"<stream>": \{"sync_watermark": \.\.\.\}\}, "currently_syncing": null\}\. Each stream_state of Airbyte is that stream's bookmark as it is: /;

    it.each([
      ['its STATE lines (grep of a read\'s output)', () => `${stateLines().join('\n')}\n`, (n: number) => `holds ${n} Airbyte STATE lines (as read writes them)`],
      ["a read's whole output", () => readOutput, () => 'holds the output of source-data-read read ('],
      ['one STATE line', () => `${stateLines().at(-1)}\n`, () => 'holds an Airbyte STATE message'],
      ['the array Airbyte passes', () => JSON.stringify(stateLines().map((l) => (JSON.parse(l) as { state: unknown }).state)), () => 'holds a JSON array of Airbyte per-stream states'],
    ])('%s', async (_name, text, given) => {
      const message = refused(await tap(writeJson(dir, `airbyte-${Math.random()}.json`, text())));
      expect(message).toContain(given(stateLines().length));
      expect(message).toMatch(tapKeeps);
      expect(message).not.toMatch(/not valid JSON|position/);
    });
  });

  it('{} is no state (every contact again); a file that is no state is refused with its keys, not taken as {}', async () => {
    expect(synced(await tap(writeJson(dir, 'empty.json', '{}\n')))).toBe(total);
    const message = refused(await tap(config));
    expect(message).toBe(
      `Invalid state: the file holds an object with the keys "api_key", "base_url", "page_size", without "bookmarks": not the tap's state. ` +
        'Expected the value of the last STATE message of a tap run, {"bookmarks": {"<stream>": {"sync_watermark": ...}}, "currently_syncing": ...} ' +
        '(or that STATE line whole), Meltano\'s {"singer_state": {...}} as `meltano state get` prints it, or {} for no state.',
    );
  });
});
