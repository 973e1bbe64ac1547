/**
 * Secrets: a hostile service that echoes the request (its Authorization
 * header included) in every place an answer can carry text: problem details,
 * extra fields, request-id headers, HTML pages, bodies that are not JSON,
 * redirects, envelope fields. `check` and `read` run against each with a
 * canary key; the key must appear in no byte of stdout or stderr. (Every other
 * run of the suite is searched for its canary too: see harness.ts, leakWatch.)
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Lab, airbyteCheck, canaryKey, errorTraces, inPool, runConnector, secretsOf } from './harness.js';

type Answer = (req: IncomingMessage, res: ServerResponse, echo: string, key: string) => void;

function problem(res: ServerResponse, status: number, echo: string, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}): void {
  res.writeHead(status, { 'content-type': 'application/problem+json', ...headers });
  res.end(JSON.stringify({ type: 'about:blank', title: `Error for ${echo}`, status, detail: `You sent ${echo}`, request_id: echo.slice(0, 200), ...extra }));
}

const page = (fields: Record<string, unknown>): string => JSON.stringify({ data: [], next_cursor: null, has_more: false, sync_watermark: '2024-01-01T00:00:00.000Z', ...fields });

export const ECHO_CASES: readonly (readonly [string, Answer])[] = [
  ['401 whose title and detail echo the request', (_q, r, e) => problem(r, 401, e)],
  ['403 with extra fields holding the headers', (q, r, e) => problem(r, 403, e, {}, { headers: q.headers, message: e })],
  ['400 echoing the key', (_q, r, e) => problem(r, 400, e)],
  ['404 echoing the key', (_q, r, e) => problem(r, 404, e)],
  ['500 echoing the key until retries run out', (_q, r, e) => problem(r, 500, e)],
  ['503 with a Retry-After beyond max_wait, echoing', (_q, r, e) => problem(r, 503, e, { 'retry-after': '3600' })],
  ['429 with a day-long Retry-After, echoing', (_q, r, e) => problem(r, 429, e, { 'retry-after': '86400' })],
  ['a request-id header holding the key', (_q, r, _e, k) => problem(r, 500, 'x', { 'x-request-id': `rid-${k}` })],
  ['key in JSON escapes (\\u0063...)', (_q, r, _e, k) => {
    r.writeHead(401, { 'content-type': 'application/problem+json' });
    const escaped = [...k].map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
    r.end(`{"type":"about:blank","title":"Unauthorized","status":401,"detail":"bad key ${escaped}","request_id":"r"}`);
  }],
  ['a 200 HTML page echoing the request', (_q, r, e) => {
    r.writeHead(200, { 'content-type': 'text/html' });
    r.end(`<html><body><pre>${e}</pre></body></html>`);
  }],
  ['a 200 body that is the key alone', (_q, r, _e, k) => {
    r.writeHead(200, { 'content-type': 'application/json' });
    r.end(k);
  }],
  ['a 200 envelope whose watermark is the key', (_q, r, _e, k) => {
    r.writeHead(200, { 'content-type': 'application/json' });
    r.end(page({ sync_watermark: k }));
  }],
  ['a 200 envelope whose has_more is the Authorization header', (q, r) => {
    r.writeHead(200, { 'content-type': 'application/json' });
    r.end(page({ has_more: q.headers.authorization }));
  }],
  ['a 200 /v1/me whose account name is the key', (q, r, e, k) => {
    if (q.url?.startsWith('/v1/me') === true) {
      r.writeHead(200, { 'content-type': 'application/json' });
      r.end(JSON.stringify({ account_name: k, scopes: [e], limits: { per_minute: 10, per_day: 100 } }));
    } else problem(r, 400, e);
  }],
  ['a redirect whose Location holds the key', (_q, r, _e, k) => {
    r.writeHead(302, { location: `https://evil.example/${k}`, 'content-type': 'text/plain' });
    r.end(`moved: ${k}`);
  }],
  ['a truncated body echoing the key', (_q, r, e) => {
    r.writeHead(200, { 'content-type': 'application/json', 'content-length': '100000' });
    r.write(`{"data":[{"id":"${e}`, () => r.destroy());
  }],
];

export interface SecretsResult {
  readonly cases: number;
  readonly runs: number;
  /** Runs that ended in an error message (as they must: the service is hostile). */
  readonly failedCleanly: number;
  readonly problems: string[];
}

async function echoServer(answer: Answer, key: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const echo = `${req.method ?? ''} ${req.url ?? ''} authorization=${String(req.headers.authorization)} all=${JSON.stringify(req.headers)}`;
    answer(req, res, echo, key);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

export async function runSecrets(parallel: number): Promise<SecretsResult> {
  const lab = await Lab.start({ seed: 9 });
  const problems: string[] = [];
  let runs = 0;
  let failedCleanly = 0;
  try {
    const catalog = lab.catalog(['contacts']);
    await inPool(ECHO_CASES, parallel, async ([name, answer]) => {
      const key = canaryKey();
      const server = await echoServer(answer, key);
      try {
        const config = lab.file('config.json', { api_key: key, base_url: server.url, max_retries: 1, max_wait_seconds: 1, request_timeout_seconds: 2 });
        const secrets = secretsOf(key);
        const check = await runConnector(['check', '--config', config], { secrets, label: `secrets: ${name} (check)` });
        const read = await runConnector(['read', '--config', config, '--catalog', catalog], { secrets, label: `secrets: ${name} (read)` });
        runs += 2;
        problems.push(...(await airbyteCheck(check.stdout, `secrets: ${name} (check)`)), ...(await airbyteCheck(read.stdout, `secrets: ${name} (read)`)));
        const status = check.messages.find((m) => m.type === 'CONNECTION_STATUS')?.connectionStatus as { status?: string; message?: string } | undefined;
        const readError = errorTraces(read.messages)[0];
        const meOk = name.includes('/v1/me');
        if (check.code === 0 && status !== undefined && (status.status === 'FAILED' || meOk) && (status.message ?? '') !== '') failedCleanly += 1;
        else problems.push(`secrets: ${name}: check: exit ${String(check.code)}, ${JSON.stringify(status)}`);
        if ([70, 75, 78].includes(read.code ?? 0) && readError !== undefined && readError.message !== '') failedCleanly += 1;
        else problems.push(`secrets: ${name}: read: exit ${String(read.code)}, no error trace`);
      } finally {
        await server.close();
      }
    });
  } finally {
    await lab.close();
  }
  return { cases: ECHO_CASES.length, runs, failedCleanly, problems };
}
