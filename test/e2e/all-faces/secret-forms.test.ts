/**
 * An API key holding `"` and `\` (the key's secret part is any run of
 * non-blank characters) leaks in none of the forms it takes in output: as
 * is, JSON-escaped (`\"`, `\\`: how a JSON line or an echoed JSON body
 * carries it), escaped twice (an echoed JSON body inside a JSON line) or
 * URL-encoded. A hostile service on 127.0.0.1 echoes the request (its
 * Authorization header, and all headers as JSON) in its answers; `check`,
 * `read`, the tap's sync and `replicate` run against it, and their stdout,
 * stderr and `--summary` file hold none of those forms, of the key or of
 * its secret part, but say `***` where the service echoed them.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, SOURCE_BIN, TAP_BIN, protocolCheckAsync, runCli, tempDir, writeJson } from '../../helpers/cli.js';

const KEY = 'drk_live_Sec"ret\\Key"\\\\42';
const SECRET = KEY.slice(KEY.indexOf('_live_') + '_live_'.length);

/** Every form a secret can take in output, as a test looks for it. */
function forms(secret: string): string[] {
  const once = JSON.stringify(secret).slice(1, -1);
  const twice = JSON.stringify(once).slice(1, -1);
  return [...new Set([secret, once, twice, encodeURIComponent(secret)])];
}
const LEAKS = [...forms(KEY), ...forms(SECRET)];

/** refused: every request answered 401, echoing; html: /v1/me answers, the lists a 200 HTML page echoing the Authorization header as JSON. */
type Mode = 'refused' | 'html';

/** The hostile service: what it answers depends on the mode the test sets. */
let mode: Mode = 'refused';
function answer(req: IncomingMessage, res: ServerResponse): void {
  const echo = `authorization=${String(req.headers.authorization)} headers=${JSON.stringify(req.headers)}`;
  const problem = (status: number): void => {
    res.writeHead(status, { 'content-type': 'application/problem+json', 'x-request-id': JSON.stringify(req.headers.authorization) });
    res.end(JSON.stringify({ type: 'about:blank', title: `Refused: ${echo}`, status, detail: `You sent ${echo}`, request_id: JSON.stringify(req.headers) }));
  };
  if (mode === 'refused') return problem(401);
  if (req.url?.startsWith('/v1/me') === true) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ account_name: 'Echo account', scopes: ['data:read'], limits: { per_minute: 1000, per_day: 100000 } }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(`<pre>${JSON.stringify({ authorization: req.headers.authorization })}</pre><p>Maintenance.</p>`);
}

let server: Server;
let dir: string;
let config: string;
beforeAll(async () => {
  server = createServer(answer);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  dir = tempDir('secret-forms-');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  config = writeJson(dir, 'config.json', { api_key: KEY, base_url: url, max_retries: 0, use_service_schema: false });
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Where a form of the key appears in `text`, if anywhere. */
function leaks(what: string, text: string): string[] {
  return LEAKS.filter((form) => text.includes(form)).map((form) => `${what}: ${JSON.stringify(form)} at …${text.slice(Math.max(0, text.indexOf(form) - 60), text.indexOf(form))}`);
}

const RUNS: readonly (readonly [string, string, (summary: string) => string[]])[] = [
  ['check', SOURCE_BIN, () => ['check', '--config', config]],
  ['read', SOURCE_BIN, (summary) => ['read', '--config', config, '--catalog', join(ROOT, 'catalog', 'configured_catalog.json'), '--summary', summary]],
  ['the tap', TAP_BIN, (summary) => ['--config', config, '--summary', summary]],
  ['replicate', SOURCE_BIN, (summary) => ['replicate', '--config', config, '--db', join(dir, `replica-${mode}.db`), '--summary', summary]],
];

describe.each(['refused', 'html'] as const)('a key with " and \\ echoed by the service (%s)', (which) => {
  it.each(RUNS.map(([name, bin, args]) => [name, bin, args] as const))('%s: no form of the key in stdout, stderr or the summary', async (name, bin, args) => {
    mode = which;
    const summary = join(dir, `${name.replace(/\W/g, '-')}-${which}.json`);
    const run = await runCli(bin, args(summary));
    // check says FAILED and exits 0, as Airbyte asks; the syncs fail with the status of their failure.
    if (name === 'check') expect(run.code, run.stderr).toBe(0);
    else expect([70, 75, 78], run.stderr).toContain(run.code);
    const summaryText = existsSync(summary) ? readFileSync(summary, 'utf8') : '';
    expect([...leaks('stdout', run.stdout), ...leaks('stderr', run.stderr), ...leaks('summary', summaryText)]).toEqual([]);
    // The service's echo did reach the output, redacted; the protocol lines are still whole JSON.
    expect(`${run.stdout}${run.stderr}`).toContain('***');
    if (name !== 'replicate') expect((await protocolCheckAsync(name === 'the tap' ? 'singer' : 'airbyte', run.stdout)).errors).toEqual([]);
  });
});
