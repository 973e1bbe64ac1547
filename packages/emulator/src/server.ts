/**
 * The emulator's HTTP server (node:http): the API under /v1, the control
 * interface under /_control. Order of checks on /v1: route (404), method (405),
 * key (401), limits (429), fault injection, account and scope (403),
 * parameters (400), handler. Every response carries RateLimit-* and X-Request-Id.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { EmulatorControl } from './control.js';
import { checkControlToken, handleControl } from './control-routes.js';
import { CONTRACT_FAULTS, faultRateHeaders, type FaultRule } from './faults.js';
import { anonymousHeaders, resolveLimits, type Limits, type RateHeaders } from './limits.js';
import { buildOpenApiDocument } from './openapi.js';
import { ProblemError, PROBLEM_CONTENT_TYPE, problemDocument } from './problem.js';
import { authenticate, authorize, handleApi, HTML_BODY, JSON_TYPE, matchRoute, NOT_JSON_BODY, type Reply } from './routes.js';
import { EmulatorState, type EmulatorOptions } from './state.js';

export type { EmulatorOptions } from './state.js';

export interface Emulator {
  /** Base URL of the API (before /v1), e.g. http://127.0.0.1:43123 (https:// with the tls option). */
  readonly url: string;
  /** Base URL of the control interface: url + /_control. */
  readonly controlUrl: string;
  readonly controlToken: string;
  readonly host: string;
  readonly port: number;
  /** The control interface, in process. */
  readonly control: EmulatorControl;
  readonly server: Server;
  close(): Promise<void>;
}

const CONTRACT: ReadonlySet<string> = new Set(CONTRACT_FAULTS);

function problemReply(err: unknown, requestId: string): Reply {
  const e = err instanceof ProblemError
    ? err
    : new ProblemError(500, `unexpected error in the emulator: ${err instanceof Error ? err.message : String(err)}`);
  if (!(err instanceof ProblemError)) process.stderr.write(`emulator: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return {
    status: e.status,
    contentType: PROBLEM_CONTENT_TYPE,
    body: JSON.stringify(problemDocument(e.status, e.detail, requestId)),
    headers: e.headers,
  };
}

function hasCursorParam(search: string): boolean {
  return search !== '' && new URLSearchParams(search).has('cursor');
}

function rateLimitDetail(reason: string | null): string {
  switch (reason) {
    case 'per_day': return 'daily request limit of this API key reached';
    case 'concurrency': return 'too many simultaneous requests for this API key';
    default: return 'per-minute request limit of this API key reached';
  }
}

/** The request listener of an emulator; exported for embedding in another server. */
export function createRequestListener(state: EmulatorState, control: EmulatorControl): {
  listener: (req: IncomingMessage, res: ServerResponse) => void;
  cancelTimers: () => void;
} {
  let openapi: { readonly version: number; readonly body: string } | null = null;
  const timers = new Set<NodeJS.Timeout>();
  const sleep = (ms: number): Promise<void> => new Promise((resolve) => {
    const t = setTimeout(() => {
      timers.delete(t);
      resolve();
    }, ms);
    timers.add(t);
  });

  function write(res: ServerResponse, reply: Reply, requestId: string, rate: RateHeaders | null, truncate: boolean): void {
    const body = typeof reply.body === 'string' ? Buffer.from(reply.body, 'utf8') : reply.body;
    const headers: Record<string, string | number> = {
      'Content-Type': reply.contentType,
      'Content-Length': body.length,
      'X-Request-Id': requestId,
      'Cache-Control': 'no-store',
    };
    if (rate !== null) {
      headers['RateLimit-Limit'] = rate.limit;
      headers['RateLimit-Remaining'] = rate.remaining;
      headers['RateLimit-Reset'] = rate.reset;
    }
    for (const [k, v] of Object.entries(reply.headers ?? {})) headers[k] = v;
    res.writeHead(reply.status, headers);
    if (truncate) {
      res.write(body.subarray(0, body.length >> 1), () => res.destroy());
      return;
    }
    res.end(body);
  }

  async function controlRequest(req: IncomingMessage, res: ServerResponse, path: string, requestId: string): Promise<void> {
    let reply: Reply;
    try {
      checkControlToken(state.controlToken, req.headers.authorization);
      reply = await handleControl(control, req.method ?? 'GET', path, req);
    } catch (err) {
      reply = problemReply(err, requestId);
    }
    if (!res.destroyed) write(res, reply, requestId, null, false);
  }

  async function apiRequest(req: IncomingMessage, res: ServerResponse, path: string, search: string, requestId: string): Promise<void> {
    state.stats.received();
    const route = matchRoute(path);
    const statPath = route?.template ?? path;
    let limits: Limits = state.effectiveDefaults();
    let keyId: string | null = null;
    let refusal: RateHeaders | null = null;
    let fault: FaultRule | null = null;
    let reply: Reply;
    try {
      if (route === null) throw new ProblemError(404, `no such path: ${path}`);
      if (req.method !== 'GET') throw new ProblemError(405, `only GET is supported (got ${req.method ?? '?'})`, { Allow: 'GET' });
      if (route.kind === 'openapi') {
        if (search !== '') throw new ProblemError(400, 'this operation takes no query parameters');
        const fields = state.extraFields;
        if (openapi?.version !== fields.version) {
          openapi = { version: fields.version, body: JSON.stringify(buildOpenApiDocument({ serverUrl: state.url, extraFields: (list) => fields.describedFor(list) })) };
        }
        reply = { status: 200, contentType: JSON_TYPE, body: openapi.body };
      } else {
        const key = authenticate(state, req.headers.authorization);
        const account = state.registry.accounts.get(key.accountId);
        if (account === undefined) throw new ProblemError(401, 'invalid API key');
        limits = resolveLimits(state.defaultLimits, account.settings.limits, key.limits);
        const admission = state.limiter.admit(key.id, limits, state.clock.now());
        if (!admission.ok) {
          refusal = admission.headers;
          throw new ProblemError(429, rateLimitDetail(admission.reason), { 'Retry-After': String(admission.retryAfter) });
        }
        const id = key.id;
        keyId = id;
        state.stats.begin(id);
        res.once('close', () => {
          state.limiter.release(id);
          state.stats.end(id);
        });
        fault = state.faults.pick({ path, route: route.template, isList: route.kind === 'list', hasCursor: route.kind === 'list' && hasCursorParam(search) });
        const retryAfter = { 'Retry-After': String(fault?.retryAfterSeconds ?? 1) };
        switch (fault?.kind) {
          case '500':
            state.faults.record('500');
            throw new ProblemError(500, 'internal error (injected fault)');
          case '503':
            state.faults.record('503');
            throw new ProblemError(503, 'service temporarily unavailable (injected fault)', retryAfter);
          case '429':
            state.faults.record('429');
            throw new ProblemError(429, 'too many requests (injected fault)', retryAfter);
          case 'reset':
            state.faults.record('reset');
            state.stats.responded(statPath, 'reset');
            req.socket.destroy();
            return;
          case 'not_json':
            state.faults.record('not_json');
            reply = { status: 200, contentType: JSON_TYPE, body: NOT_JSON_BODY };
            break;
          case 'html':
            state.faults.record('html');
            reply = { status: 200, contentType: 'text/html; charset=utf-8', body: HTML_BODY };
            break;
          default:
            authorize(account, key, route);
            reply = handleApi({ state, account, key, search, fault: fault !== null && CONTRACT.has(fault.kind) ? fault : null }, route);
        }
      }
    } catch (err) {
      reply = problemReply(err, requestId);
    }

    let delay = state.latencyMs;
    if (fault?.kind === 'slow') {
      state.faults.record('slow');
      delay += fault.slowMs ?? 2000;
    }
    if (delay > 0) await sleep(delay);
    if (res.destroyed) {
      state.stats.responded(statPath, 'reset');
      return;
    }
    const own = keyId !== null ? state.limiter.peek(keyId, limits, state.clock.now()) : (refusal ?? anonymousHeaders(limits));
    const rate = faultRateHeaders(fault, own);
    const truncate = fault?.kind === 'truncated';
    if (truncate) state.faults.record('truncated');
    write(res, reply, requestId, rate, truncate);
    state.stats.responded(statPath, reply.status);
  }

  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    const requestId = state.nextRequestId();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const search = q < 0 ? '' : url.slice(q + 1);
    const work = path === '/_control' || path.startsWith('/_control/')
      ? controlRequest(req, res, path, requestId)
      : apiRequest(req, res, path, search, requestId);
    work.catch((err: unknown) => {
      process.stderr.write(`emulator: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      if (!res.headersSent) write(res, problemReply(err, requestId), requestId, null, false);
      else res.destroy();
    });
  };
  return {
    listener,
    cancelTimers: () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}

/** Create an emulator (state + control API) without listening. */
export function createEmulator(options: EmulatorOptions = {}): { state: EmulatorState; control: EmulatorControl } {
  const state = new EmulatorState(options);
  return { state, control: new EmulatorControl(state) };
}

/** Start an emulator on host:port (default 127.0.0.1, a free port). */
export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const { state, control } = createEmulator(options);
  const { listener, cancelTimers } = createRequestListener(state, control);
  const server: Server = options.tls === undefined
    ? createServer({ keepAlive: true }, listener)
    : createHttpsServer({ keepAlive: true, cert: options.tls.cert, key: options.tls.key }, listener);
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `${options.tls === undefined ? 'http' : 'https'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  state.url = url;
  let closing: Promise<void> | null = null;
  return {
    url,
    controlUrl: `${url}/_control`,
    controlToken: state.controlToken,
    host,
    port,
    control,
    server,
    close(): Promise<void> {
      closing ??= new Promise<void>((resolve) => {
        cancelTimers();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
