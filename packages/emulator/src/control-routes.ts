/**
 * HTTP face of the control interface, under /_control, behind its own bearer
 * token. JSON in, JSON out; errors are problem+json like the API's.
 *
 *   GET    /_control/accounts                      list accounts
 *   POST   /_control/accounts                      create {name?, dataApi?, planAccess?, limits?}
 *   GET    /_control/accounts/{id}                 one account
 *   PATCH  /_control/accounts/{id}                 change {name?, dataApi?, planAccess?, limits?}
 *   GET    /_control/accounts/{id}/keys            its keys
 *   POST   /_control/accounts/{id}/keys            create {scopes?, key?, limits?}
 *   POST   /_control/accounts/{id}/seed            {contacts, testFraction?, deletedFraction?, historyDays?}
 *   POST   /_control/accounts/{id}/mutations       {op, ...} (see mutations.ts)
 *   GET    /_control/accounts/{id}/dump            {contacts, conversations, stage_events, deletions, pipeline_stages}
 *   GET|POST /_control/accounts/{id}/pipeline-stages   the stages served | add {key, name, pipeline_id?, position?, outcome?}
 *   DELETE /_control/accounts/{id}/pipeline-stages/{stageId}   remove a stage -> the stages served
 *   PATCH  /_control/keys/{keyId}                  {scopes?, limits?, revoked?}
 *   POST   /_control/keys/{keyId}/revoke
 *   GET    /_control/clock                         {now}
 *   POST   /_control/clock/advance                 {ms} -> {now}
 *   POST   /_control/clock/rewind                  {ms} -> {now} (the service's clock goes back)
 *   GET|PUT|POST|DELETE /_control/faults           read | replace {faults:[...]} | add one rule | clear
 *   GET|POST /_control/extra-fields                read | add {list, name, type, described?, description?} (extra-fields.ts)
 *   GET|PUT /_control/limits                       emulator defaults
 *   PUT    /_control/latency                       {ms}
 *   GET    /_control/stats                         counters; POST /_control/stats/reset zeroes them
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { EmulatorControl } from './control.js';

type StageInput = Parameters<EmulatorControl['addPipelineStage']>[1];
import type { ExtraField } from './extra-fields.js';
import type { FaultRule } from './faults.js';
import type { LimitOverrides } from './limits.js';
import type { Mutation } from './mutations.js';
import { ProblemError } from './problem.js';
import type { Reply } from './routes.js';
import { JSON_TYPE } from './routes.js';
import type { SeedOptions } from './seed.js';

const MAX_BODY = 1 << 20;

export function checkControlToken(expected: string, authorization: string | undefined): void {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  const given = Buffer.from(m?.[1] ?? '', 'utf8');
  const want = Buffer.from(expected, 'utf8');
  if (given.length !== want.length || !timingSafeEqual(given, want)) {
    throw new ProblemError(401, 'the control interface needs Authorization: Bearer <control token>', { 'WWW-Authenticate': 'Bearer realm="control"' });
  }
}

export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > MAX_BODY) throw new ProblemError(413, 'request body larger than 1 MiB');
    chunks.push(b);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (text === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ProblemError(400, 'request body is not valid JSON');
  }
}

function ok(value: unknown, status = 200): Reply {
  return { status, contentType: JSON_TYPE, body: JSON.stringify(value) };
}

function obj(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new ProblemError(400, 'request body must be a JSON object');
  return body as Record<string, unknown>;
}

function methodNotAllowed(allowed: string): never {
  throw new ProblemError(405, `use ${allowed} on this path`, { Allow: allowed });
}

/** Handle one control request (token already checked). */
export async function handleControl(control: EmulatorControl, method: string, path: string, req: IncomingMessage): Promise<Reply> {
  let parts: string[];
  try {
    parts = path.split('/').filter((p) => p !== '').slice(1).map((p) => decodeURIComponent(p));
  } catch {
    throw new ProblemError(400, 'path is not valid percent-encoding');
  }
  const body = method === 'POST' || method === 'PUT' || method === 'PATCH' ? await readJsonBody(req) : {};
  const [a, b, c, d] = parts;

  if (a === 'accounts') {
    if (b === undefined) {
      if (method === 'GET') return ok(control.listAccounts());
      if (method === 'POST') return ok(control.createAccount(obj(body)), 201);
      return methodNotAllowed('GET, POST');
    }
    if (d === undefined) {
      if (c === undefined) {
        if (method === 'GET') return ok(control.getAccount(b));
        if (method === 'PATCH') return ok(control.updateAccount(b, obj(body)));
        return methodNotAllowed('GET, PATCH');
      }
      if (c === 'keys') {
        if (method === 'GET') return ok(control.listKeys(b));
        if (method === 'POST') return ok(control.createKey(b, obj(body)), 201);
        return methodNotAllowed('GET, POST');
      }
      if (c === 'seed') {
        if (method !== 'POST') return methodNotAllowed('POST');
        return ok(control.seed(b, obj(body) as unknown as SeedOptions));
      }
      if (c === 'mutations') {
        if (method !== 'POST') return methodNotAllowed('POST');
        return ok(control.mutate(b, obj(body) as unknown as Mutation));
      }
      if (c === 'dump') {
        if (method !== 'GET') return methodNotAllowed('GET');
        return { status: 200, contentType: JSON_TYPE, body: control.dumpJson(b) };
      }
      if (c === 'pipeline-stages') {
        if (method === 'GET') return ok(control.pipelineStages(b));
        if (method === 'POST') return ok(control.addPipelineStage(b, obj(body) as unknown as StageInput), 201);
        return methodNotAllowed('GET, POST');
      }
    }
    if (c === 'pipeline-stages' && d !== undefined && parts.length === 4) {
      if (method !== 'DELETE') return methodNotAllowed('DELETE');
      return ok(control.removePipelineStage(b, d));
    }
  }
  if (a === 'keys' && b !== undefined && d === undefined) {
    if (c === undefined) {
      if (method === 'PATCH') return ok(control.updateKey(b, obj(body)));
      return methodNotAllowed('PATCH');
    }
    if (c === 'revoke') {
      if (method !== 'POST') return methodNotAllowed('POST');
      return ok(control.revokeKey(b));
    }
  }
  if (a === 'clock' && c === undefined) {
    if (b === undefined) {
      if (method !== 'GET') return methodNotAllowed('GET');
      return ok({ now: control.now() });
    }
    if (b === 'advance') {
      if (method !== 'POST') return methodNotAllowed('POST');
      const ms = obj(body).ms;
      if (typeof ms !== 'number') throw new ProblemError(400, 'give {"ms": <non-negative integer>}');
      return ok({ now: control.advanceClock(ms) });
    }
    if (b === 'rewind') {
      if (method !== 'POST') return methodNotAllowed('POST');
      const ms = obj(body).ms;
      if (typeof ms !== 'number') throw new ProblemError(400, 'give {"ms": <non-negative integer>}');
      return ok({ now: control.rewindClock(ms) });
    }
  }
  if (a === 'faults' && b === undefined) {
    if (method === 'GET') return ok(control.faults());
    if (method === 'DELETE') return ok(control.clearFaults());
    if (method === 'PUT') {
      const rules = Array.isArray(body) ? body : obj(body).faults;
      if (!Array.isArray(rules)) throw new ProblemError(400, 'give {"faults": [rule, ...]}');
      return ok(control.setFaults(rules as FaultRule[]));
    }
    if (method === 'POST') return ok(control.addFault(obj(body) as unknown as FaultRule));
    return methodNotAllowed('GET, PUT, POST, DELETE');
  }
  if (a === 'extra-fields' && b === undefined) {
    if (method === 'GET') return ok(control.extraFields());
    if (method === 'POST') return ok(control.addExtraField(obj(body) as unknown as ExtraField));
    return methodNotAllowed('GET, POST');
  }
  if (a === 'limits' && b === undefined) {
    if (method === 'GET') return ok(control.defaultLimits());
    if (method === 'PUT') return ok(control.setDefaultLimits(obj(body) as LimitOverrides));
    return methodNotAllowed('GET, PUT');
  }
  if (a === 'latency' && b === undefined) {
    if (method !== 'PUT') return methodNotAllowed('PUT');
    const ms = obj(body).ms;
    if (typeof ms !== 'number') throw new ProblemError(400, 'give {"ms": <non-negative integer>}');
    control.setLatency(ms);
    return ok({ ms });
  }
  if (a === 'stats') {
    if (b === undefined && method === 'GET') return ok(control.stats());
    if (b === 'reset' && c === undefined && method === 'POST') {
      control.resetStats();
      return ok(control.stats());
    }
  }
  throw new ProblemError(404, `no control route ${method} ${path}`);
}
