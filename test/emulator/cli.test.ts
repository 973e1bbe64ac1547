/** The emulator CLI: help, options, the start line (and --ready-file), serving until stopped. */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HELP, main, parseArgs, parseFault } from '../../packages/emulator/src/cli.js';
import { makeTestCa } from '../helpers/certificates.js';
import { tempDir } from '../helpers/cli.js';
import { get } from './helpers.js';

interface Sink {
  write(text: string): boolean;
  text: () => string;
  /** Resolves with the text once it holds a whole line. */
  firstLine: () => Promise<string>;
}

function sink(): Sink {
  let out = '';
  let wake: (() => void) | undefined;
  const lineDone = new Promise<void>((resolve) => (wake = resolve));
  return {
    write: (t: string) => {
      out += t;
      if (out.includes('\n')) wake?.();
      return true;
    },
    text: () => out,
    firstLine: async () => {
      await lineDone;
      return out.slice(0, out.indexOf('\n') + 1);
    },
  };
}

describe('emulator CLI', () => {
  it('--help prints the usage and exits 0', async () => {
    const out = sink();
    expect(await main(['--help'], { stdout: out })).toBe(0);
    expect(out.text()).toBe(HELP);
    expect(HELP).toMatch(/--per-minute/);
    expect(HELP).toMatch(/--fault/);
  });

  it('refuses bad options with exit code 2', async () => {
    for (const argv of [['--bogus', '1'], ['--port'], ['--per-minute', 'lots'], ['--fault', 'meteor:0.1'], ['--fault', '500:2'], ['stray'], ['--tls-cert', 'api.crt']]) {
      const err = sink();
      expect(await main(argv, { stderr: err, stdout: sink() }), argv.join(' ')).toBe(2);
      expect(err.text()).toMatch(/^data-read-emulator: /);
    }
  });

  it('parses fault specs', () => {
    expect(parseFault('503:0.25')).toEqual({ kind: '503', probability: 0.25 });
    expect(parseFault('reset:every=5:/v1/contacts,/v1/deletions:times=2')).toEqual({ kind: 'reset', every: 5, paths: ['/v1/contacts', '/v1/deletions'], times: 2 });
    expect(parseFault('slow:1:slow_ms=3000')).toEqual({ kind: 'slow', probability: 1, slowMs: 3000 });
    expect(parseFault('429:every=1:retry_after=7')).toEqual({ kind: '429', every: 1, retryAfterSeconds: 7 });
    expect(parseFault('429:0.05:retry_after=1:remaining=0:reset=1')).toEqual({ kind: '429', probability: 0.05, retryAfterSeconds: 1, rateLimitRemaining: 0, rateLimitReset: 1 });
    expect(parseArgs(['--window-ms=500', '--concurrency', '3']).limits).toEqual({ windowMs: 500, concurrency: 3 });
  });

  it('starts, prints one JSON line, serves the default account until stopped', async () => {
    const out = sink();
    const stop = new AbortController();
    const running = main([
      '--port', '0', '--seed', '3', '--contacts', '25', '--per-minute', '50', '--per-day', '900',
      '--control-token', 'tok', '--fault', '503:every=2:/v1/deletions',
    ], { stdout: out, signal: stop.signal });
    await out.firstLine();
    const lines = out.text().split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    const info = JSON.parse(lines[0] as string) as { url: string; control_url: string; control_token: string; api_key: string };
    expect(info.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(info.control_url).toBe(`${info.url}/_control`);
    expect(info.control_token).toBe('tok');
    expect(info.api_key).toMatch(/^drk_live_/);
    expect((await get(info.url, '/v1/me', { key: info.api_key })).body).toEqual({
      account_name: 'Default account', scopes: ['data:read'], limits: { per_minute: 50, per_day: 900 },
    });
    const contacts = await get(info.url, '/v1/contacts', { key: info.api_key, query: { limit: 200 } });
    expect((contacts.body as { data: unknown[] }).data.length).toBeGreaterThan(15);
    expect((await get(info.url, '/v1/deletions', { key: info.api_key })).status).toBe(200);
    expect((await get(info.url, '/v1/deletions', { key: info.api_key })).status).toBe(503);
    stop.abort();
    expect(await running).toBe(0);
    await expect(get(info.url, '/v1/me', { key: info.api_key })).rejects.toThrow();
  });

  it('--ready-file: the same line, written whole once serving, owner-only, removed when stopped', async () => {
    const dir = tempDir('sdr-ready-');
    const file = join(dir, 'emulator.json');
    const out = sink();
    const stop = new AbortController();
    const running = main(['--port', '0', '--contacts', '40', '--ready-file', file], { stdout: out, signal: stop.signal });
    expect(existsSync(file)).toBe(false); // seeding first: nothing to wait for yet
    const line = await out.firstLine();
    expect(readFileSync(file, 'utf8')).toBe(line);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['emulator.json']); // no temporary file left
    const info = JSON.parse(line) as { url: string; api_key: string };
    expect((await get(info.url, '/v1/me', { key: info.api_key })).status).toBe(200);
    stop.abort();
    expect(await running).toBe(0);
    expect(existsSync(file)).toBe(false);
  });

  it('--ready-file in a folder that does not exist: exit 1 naming the file, the emulator stopped', async () => {
    const err = sink();
    const file = join(tempDir('sdr-ready-'), 'no', 'such', 'emulator.json');
    expect(await main(['--port', '0', '--ready-file', file], { stdout: sink(), stderr: err })).toBe(1);
    expect(err.text()).toMatch(new RegExp(`^data-read-emulator: cannot write --ready-file "${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}": ENOENT`));
  });

  it('--tls-cert and --tls-key: serves HTTPS with that certificate; an unreadable file cannot start it', async () => {
    const ca = makeTestCa();
    const out = sink();
    const stop = new AbortController();
    const running = main(['--tls-cert', join(ca.dir, 'server.crt'), '--tls-key', join(ca.dir, 'server.key')], { stdout: out, signal: stop.signal });
    const info = JSON.parse(await out.firstLine()) as { url: string; api_key: string };
    expect(info.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(`${info.url}/v1/me`, { ca: ca.caCert, headers: { authorization: `Bearer ${info.api_key}` } }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
      req.end();
    });
    expect(JSON.parse(body)).toMatchObject({ account_name: 'Default account' });
    stop.abort();
    expect(await running).toBe(0);
    const err = sink();
    expect(await main(['--tls-cert', join(ca.dir, 'missing.crt'), '--tls-key', join(ca.dir, 'server.key')], { stdout: sink(), stderr: err })).toBe(1);
    expect(err.text()).toMatch(/^data-read-emulator: cannot start: .*missing\.crt/);
  });
});
