/**
 * Dagster Pipes protocol 0.1 (src/pipes/): parameters as Dagster's Python
 * encodes them, the context loaders, the channels (stdout refused where it
 * carries a protocol), the messages as Dagster's reader takes them, asset keys.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { assetKeyFor, assetKeyParts } from '../../src/pipes/asset-key.js';
import { openChannel } from '../../src/pipes/channel.js';
import { loadContext } from '../../src/pipes/context.js';
import { decodeParam, encodeParam, PipesSetupError } from '../../src/pipes/params.js';
import { PipesSession } from '../../src/pipes/session.js';
import { PipesReport } from '../../src/pipes/report.js';
import { RunRecorder } from '../../src/report/run-report.js';
import { ConnectorError } from '../../src/errors.js';
import { tempDir } from '../helpers/cli.js';
import { encodePipesParam, pipesEnv, readPipes } from '../helpers/pipes-reader.js';

const dir = tempDir('pipes-unit-');

function collector(): { write: (t: string) => void; text: () => string } {
  const parts: string[] = [];
  return { write: (t) => void parts.push(t), text: () => parts.join('') };
}

describe('parameters', () => {
  it("decodes what Python's base64(zlib(json)) makes, and Python decodes what it encodes", async () => {
    const value = { path: '/tmp/ctx ü.json', n: 1 };
    const py = spawnSync('python3', ['-c', 'import base64,json,sys,zlib; print(base64.b64encode(zlib.compress(json.dumps(json.loads(sys.argv[1])).encode())).decode())', JSON.stringify(value)], {
      encoding: 'utf8',
    });
    expect(py.status).toBe(0);
    expect(decodeParam('X', py.stdout.trim())).toEqual(value);
    const back = spawnSync('python3', ['-c', 'import base64,json,sys,zlib; print(json.dumps(json.loads(zlib.decompress(base64.b64decode(sys.argv[1])))))', encodeParam(value)], {
      encoding: 'utf8',
    });
    expect(JSON.parse(back.stdout)).toEqual(value);
  });

  it('refuses a value that is not base64 of zlib of a JSON object, naming the variable', async () => {
    expect(() => decodeParam('DAGSTER_PIPES_CONTEXT', 'not base64 zlib')).toThrow(/DAGSTER_PIPES_CONTEXT is not a Dagster Pipes parameter/);
    expect(() => decodeParam('DAGSTER_PIPES_MESSAGES', encodeParam([1]))).toThrow(/an array/);
  });
});

describe('context', () => {
  it('loads the file of `path` and the object of `data`', async () => {
    const path = join(dir, 'ctx.json');
    writeFileSync(path, JSON.stringify({ asset_keys: ['a/contacts'], run_id: 'r' }));
    expect((await loadContext({ path })).asset_keys).toEqual(['a/contacts']);
    expect((await loadContext({ data: { asset_keys: null } })).asset_keys).toBeNull();
  });

  it('says which file cannot be read, and what to do', async () => {
    await expect(loadContext({ path: join(dir, 'missing.json') })).rejects.toThrow(/Cannot read the Pipes context file .*missing\.json.*ENOENT.*run the command from Dagster/);
    await expect(loadContext({ data: { asset_keys: [1] } })).rejects.toThrow(PipesSetupError);
  });
});

describe('channels', () => {
  const targets = (stdoutFree: boolean) => ({ stderr: collector(), stdout: collector(), stdoutFree });

  it('stdio stderr: one whole line per message on stderr', async () => {
    const t = targets(false);
    openChannel({ stdio: 'stderr' }, t).write({ a: 1 });
    expect(t.stderr.text()).toBe('{"a":1}\n');
    expect(t.stdout.text()).toBe('');
  });

  it('stdout is refused where it carries a protocol, allowed where it is free', async () => {
    expect(() => openChannel({ stdio: 'stdout' }, targets(false))).toThrow(/stdout carries its protocol messages only.*"stdio": "stderr"/);
    const free = targets(true);
    openChannel({ stdio: 'stdout' }, free).write({ b: 2 });
    expect(free.stdout.text()).toBe('{"b":2}\n');
  });

  it('buffered_stdio writes everything at close; path appends lines to the file', async () => {
    const t = targets(false);
    const buffered = openChannel({ buffered_stdio: 'stderr' }, t);
    buffered.write({ x: 1 });
    buffered.write({ x: 2 });
    expect(t.stderr.text()).toBe('');
    buffered.close();
    expect(t.stderr.text()).toBe('{"x":1}\n{"x":2}\n');
    const path = join(dir, 'messages.jsonl');
    const file = openChannel({ path }, t);
    file.write({ y: 1 });
    file.write({ y: 2 });
    expect(readFileSync(path, 'utf8')).toBe('{"y":1}\n{"y":2}\n');
  });

  it('a messages file that cannot be written: refused at `opened`, said once on stderr later', async () => {
    const t = targets(false);
    const missing = openChannel({ path: join(dir, 'no-such-folder', 'messages') }, t);
    expect(() => missing.write({ a: 1 })).toThrow(/Cannot write the Dagster Pipes messages file .*no-such-folder.*ENOENT/);
    const path = join(dir, 'becomes-a-folder');
    const file = openChannel({ path }, t);
    file.write({ a: 1 });
    rmSync(path);
    mkdirSync(path);
    file.write({ a: 2 });
    file.write({ a: 3 });
    expect(t.stderr.text().match(/WARN dagster-pipes: Cannot write/g)).toHaveLength(1);
  });

  it('names the keys it got when none is a channel it writes', async () => {
    expect(() => openChannel({ bucket: 'b' }, targets(false))).toThrow(/names no channel this connector writes \(keys: bucket\)/);
  });
});

describe('asset keys', () => {
  it('parses escaped keys as Dagster does', async () => {
    expect(assetKeyParts('raw/data_read/contacts')).toEqual(['raw', 'data_read', 'contacts']);
    expect(assetKeyParts('a\\/b/c')).toEqual(['a/b', 'c']);
  });

  it("is the context's key whose last part is the stream, else the stream's name", async () => {
    expect(assetKeyFor('contacts', ['raw/conversations', 'raw/contacts'])).toBe('raw/contacts');
    expect(assetKeyFor('deletions', ['raw/contacts'])).toBe('deletions');
    expect(assetKeyFor('contacts', null)).toBe('contacts');
  });
});

describe('PipesSession', () => {
  it('needs both variables; without them there is no session', async () => {
    const t = { stderr: collector(), stdout: collector(), stdoutFree: false };
    expect(await PipesSession.fromEnv({}, t)).toBeUndefined();
    expect(await PipesSession.fromEnv({ DAGSTER_PIPES_MESSAGES: encodePipesParam({ stdio: 'stderr' }) }, t)).toBeUndefined();
    expect(t.stderr.text()).toBe('');
  });

  it('writes opened, one materialization per stream, closed: as Dagster reads them', async () => {
    const t = { stderr: collector(), stdout: collector(), stdoutFree: false };
    const pipes = await PipesSession.fromEnv(pipesEnv(dir, ['raw/contacts'], { stdio: 'stderr' }), t);
    expect(pipes).toBeDefined();
    pipes?.materialized({ stream: 'contacts', records: 12, syncWatermark: '2024-05-01T00:00:00.000Z' });
    pipes?.materialized({ stream: 'contacts', records: 13, syncWatermark: null });
    pipes?.materialized({ stream: 'pipeline_stages', records: 3, syncWatermark: null });
    pipes?.close();
    pipes?.close();
    const read = readPipes(t.stderr.text());
    expect(read.problems).toEqual([]);
    expect(read.messages.map((m) => m.method)).toEqual(['opened', 'report_asset_materialization', 'report_asset_materialization', 'closed']);
    expect(read.materializations).toEqual([
      { assetKey: 'raw/contacts', metadata: { records: { type: 'int', raw_value: 12 }, sync_watermark: { type: 'text', raw_value: '2024-05-01T00:00:00.000Z' } } },
      { assetKey: 'pipeline_stages', metadata: { records: { type: 'int', raw_value: 3 }, sync_watermark: { type: 'null', raw_value: null } } },
    ]);
    expect(read.closed?.params).toEqual({});
  });

  it('closes with the exception of a failure, and at exit when the command could not', async () => {
    const t = { stderr: collector(), stdout: collector(), stdoutFree: false };
    const failed = await PipesSession.fromEnv(pipesEnv(dir, null, { stdio: 'stderr' }), t);
    failed?.close({ name: 'config_error', message: 'The API key was refused.' });
    const exits = new EventEmitter();
    const t2 = { stderr: collector(), stdout: collector(), stdoutFree: false };
    const killed = await PipesSession.fromEnv(pipesEnv(dir, null, { stdio: 'stderr' }), t2);
    killed?.closeAtExit(exits as unknown as NodeJS.Process);
    exits.emit('exit', 143);
    for (const [text, name] of [
      [t.stderr.text(), 'config_error'],
      [t2.stderr.text(), 'SIGTERM'],
    ] as const) {
      const read = readPipes(text);
      expect(read.problems).toEqual([]);
      expect((read.closed?.params?.exception as { name: string }).name).toBe(name);
    }
  });
});

describe('PipesReport (fed by the run report)', () => {
  const session = async (keys: readonly string[] | null) => {
    const t = { stderr: collector(), stdout: collector(), stdoutFree: false };
    const pipes = await PipesSession.fromEnv(pipesEnv(dir, keys, { stdio: 'stderr' }), t);
    if (pipes === undefined) throw new Error('no session');
    return { pipes, text: () => t.stderr.text() };
  };

  it('read and the tap: a materialization as each stream completes (not for one that failed); closed at the end', async () => {
    const { pipes, text } = await session(['raw/contacts']);
    const recorder = new RunRecorder('read', { version: 'test' });
    const report = new PipesReport(pipes, recorder, 'read');
    recorder.plan([{ name: 'contacts' }, { name: 'deletions' }]);
    recorder.records('contacts', 7);
    recorder.state('contacts', { sync_watermark: '2024-05-01T00:00:00.000Z' });
    recorder.streamEnded('contacts', 'complete');
    expect(readPipes(text()).materializations.map((m) => m.assetKey)).toEqual(['raw/contacts']);
    recorder.streamEnded('deletions', 'incomplete', new ConnectorError('transient_error', 'The service did not answer.'));
    report.finish(recorder.finish(75));
    const read = readPipes(text());
    expect(read.problems).toEqual([]);
    expect(read.materializations).toEqual([
      { assetKey: 'raw/contacts', metadata: { records: { type: 'int', raw_value: 7 }, sync_watermark: { type: 'text', raw_value: '2024-05-01T00:00:00.000Z' } } },
    ]);
    expect(read.closed?.params?.exception).toMatchObject({ name: 'transient_error', message: 'The service did not answer. (exit status 75)' });
  });

  it('replicate: every completed stream once, from the final summary (a stream read twice is told once, as it ended)', async () => {
    const { pipes, text } = await session(null);
    const recorder = new RunRecorder('replicate', { version: 'test' });
    const report = new PipesReport(pipes, recorder, 'replicate');
    recorder.plan([{ name: 'contacts' }]);
    recorder.state('contacts', { sync_watermark: '2024-05-01T00:00:00.000Z' });
    recorder.streamEnded('contacts', 'complete');
    recorder.state('contacts', { sync_watermark: '2024-05-02T00:00:00.000Z' });
    recorder.streamEnded('contacts', 'complete');
    recorder.written('contacts', 12);
    expect(readPipes(text()).materializations).toEqual([]);
    report.finish(recorder.finish(0));
    const read = readPipes(text());
    expect(read.problems).toEqual([]);
    expect(read.materializations).toEqual([
      { assetKey: 'contacts', metadata: { records: { type: 'int', raw_value: 12 }, sync_watermark: { type: 'text', raw_value: '2024-05-02T00:00:00.000Z' } } },
    ]);
    expect(read.closed?.params).toEqual({});
  });

  it('a run stopped by a signal closes with the exception saying so', async () => {
    const { pipes, text } = await session(null);
    const recorder = new RunRecorder('sync', { version: 'test' });
    const report = new PipesReport(pipes, recorder, 'sync');
    recorder.interrupted('SIGTERM');
    report.finish(recorder.finish(143));
    const read = readPipes(text());
    expect(read.problems).toEqual([]);
    expect(read.closed?.params?.exception).toMatchObject({ name: 'Interrupted' });
    expect((read.closed?.params?.exception as { message: string }).message).toMatch(/SIGTERM.*\(exit status 143\)/);
  });
});
