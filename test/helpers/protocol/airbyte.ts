/**
 * The Airbyte protocol checker: a source's stdout, line by line, against the
 * official protocol schema (test/fixtures/airbyte-protocol/, validated with
 * ajv), plus the rules the schema cannot say:
 * - the payload that `type` names is present (RECORD -> record, TRACE ERROR ->
 *   trace.error, STATE STREAM -> state.stream, ...);
 * - STATE is per stream (type STREAM, a stream_descriptor) with sourceStats,
 *   and its stream_state has the connector's shape (stream-state.ts), the
 *   account it belongs to included;
 * - per stream, STREAM_STATUS goes STARTED, RUNNING..., then one COMPLETE or
 *   INCOMPLETE, a COMPLETE after a RUNNING; every RECORD of a stream
 *   (tombstones included) after its RUNNING and before its final status;
 * - no STATE of a stream equal to that stream's previous STATE with RECORDs
 *   of the stream between them (the protocol's State Principles: the
 *   platform tells states apart by their hash, and a repeat breaks its
 *   per-state record counts);
 * - every line is one JSON object, none empty.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';
import { ROOT } from '../../../scripts/root.js';
import { streamStateProblems } from './stream-state.js';
import { type CheckSummary, increment, isObject, linesOf, summarize } from './summary.js';

export const AIRBYTE_SCHEMA_PATH = join(ROOT, 'test', 'fixtures', 'airbyte-protocol', 'airbyte_protocol.yaml');

/** The field that carries each message type's payload. */
const MESSAGE_PAYLOAD: Record<string, string> = {
  RECORD: 'record',
  STATE: 'state',
  LOG: 'log',
  SPEC: 'spec',
  CONNECTION_STATUS: 'connectionStatus',
  CATALOG: 'catalog',
  TRACE: 'trace',
  CONTROL: 'control',
  DESTINATION_CATALOG: 'destination_catalog',
};
const TRACE_PAYLOAD: Record<string, string> = { ERROR: 'error', ESTIMATE: 'estimate', STREAM_STATUS: 'stream_status', ANALYTICS: 'analytics' };
const STATE_PAYLOAD: Record<string, string> = { STREAM: 'stream', GLOBAL: 'global' };
const FINAL = new Set(['COMPLETE', 'INCOMPLETE']);

// ajv-formats is CommonJS: under nodenext its default import is the module object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

let validator: ValidateFunction | undefined;

/** The validator of one AirbyteMessage, compiled once from the verbatim upstream YAML. */
function airbyteMessageValidator(): ValidateFunction {
  if (validator !== undefined) return validator;
  const schema = parse(readFileSync(AIRBYTE_SCHEMA_PATH, 'utf8')) as Record<string, unknown>;
  const ajv = new Ajv({ strict: true, allErrors: true });
  addFormats(ajv);
  // Upstream's own keywords (a top-level version, Java type hints): no validation meaning.
  ajv.addKeyword('version');
  ajv.addKeyword('existingJavaType');
  ajv.addSchema(schema, 'airbyte');
  const compiled = ajv.getSchema('airbyte#/definitions/AirbyteMessage');
  if (compiled === undefined) throw new Error(`${AIRBYTE_SCHEMA_PATH} has no definitions/AirbyteMessage`);
  validator = compiled;
  return validator;
}

function payloadProblems(message: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const need = (owner: Record<string, unknown>, field: string, what: string): void => {
    if (owner[field] === undefined) problems.push(`${what} without its "${field}"`);
  };
  const type = typeof message.type === 'string' ? message.type : '';
  const field = MESSAGE_PAYLOAD[type];
  if (field !== undefined) need(message, field, type);
  const { trace, state } = message;
  if (type === 'TRACE' && isObject(trace) && typeof trace.type === 'string') {
    const traceField = TRACE_PAYLOAD[trace.type];
    if (traceField !== undefined) need(trace, traceField, `TRACE ${trace.type}`);
  }
  if (type === 'STATE' && isObject(state) && typeof state.type === 'string') {
    const stateField = STATE_PAYLOAD[state.type];
    if (stateField !== undefined) need(state, stateField, `STATE ${state.type}`);
  }
  return problems;
}

/** Check a source's whole stdout (spec, check, discover or read). */
export function checkAirbyte(stdout: string): CheckSummary {
  const validate = airbyteMessageValidator();
  const errors: string[] = [];
  const messages: Record<string, number> = {};
  const records: Record<string, number> = {};
  const statuses = new Map<string, string[]>();
  const lastState: Record<string, unknown> = {};
  /** Per stream: its last STATE (canonical JSON, line) and the RECORDs of the stream since. */
  const sinceState = new Map<string, { state: string; line: number; records: number }>();
  for (const { n, text } of linesOf(stdout)) {
    if (text.trim() === '') {
      errors.push(`line ${n}: empty line on stdout`);
      continue;
    }
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      errors.push(`line ${n}: not JSON: ${JSON.stringify(text.slice(0, 120))}`);
      continue;
    }
    if (!isObject(message)) {
      errors.push(`line ${n}: not a JSON object`);
      continue;
    }
    if (!validate(message)) {
      for (const e of validate.errors ?? []) errors.push(`line ${n}: ${e.message ?? 'invalid'} at ${e.instancePath || '/'}`);
    }
    for (const problem of payloadProblems(message)) errors.push(`line ${n}: ${problem}`);
    const type = String(message.type);
    increment(messages, type);
    if (type === 'RECORD' && isObject(message.record)) {
      const stream = String(message.record.stream);
      increment(records, stream);
      const since = sinceState.get(stream);
      if (since !== undefined) since.records++;
      const sequence = statuses.get(stream);
      if (sequence === undefined) errors.push(`line ${n}: RECORD for "${stream}" before its STREAM_STATUS STARTED`);
      else if (FINAL.has(sequence.at(-1) ?? '')) errors.push(`line ${n}: RECORD for "${stream}" after its final STREAM_STATUS ${sequence.at(-1)}`);
      // The protocol's order: STARTED, RUNNING (the stream has read its first message), then records.
      else if (!sequence.includes('RUNNING')) errors.push(`line ${n}: RECORD for "${stream}" before its STREAM_STATUS RUNNING`);
    } else if (type === 'STATE' && isObject(message.state)) {
      const state = message.state;
      if (state.type !== 'STREAM') errors.push(`line ${n}: STATE type ${JSON.stringify(state.type)}, expected STREAM`);
      else if (isObject(state.stream)) {
        const descriptor = state.stream.stream_descriptor;
        const name = isObject(descriptor) ? String(descriptor.name) : 'undefined';
        lastState[name] = state.stream.stream_state;
        const canonical = canonicalJson(state.stream.stream_state);
        const previous = sinceState.get(name);
        if (previous !== undefined && previous.state === canonical && previous.records > 0) {
          errors.push(`line ${n}: STATE of "${name}" identical to its STATE of line ${previous.line}, with ${previous.records} RECORD(s) of "${name}" between them`);
        }
        sinceState.set(name, { state: canonical, line: n, records: 0 });
        errors.push(...streamStateProblems(`line ${n}: STATE of "${name}"`, state.stream.stream_state, { accountRequired: true }));
      }
      if (!('sourceStats' in state)) errors.push(`line ${n}: STATE without sourceStats`);
    } else if (type === 'TRACE' && isObject(message.trace) && message.trace.type === 'STREAM_STATUS' && isObject(message.trace.stream_status)) {
      const status = message.trace.stream_status;
      const name = isObject(status.stream_descriptor) ? String(status.stream_descriptor.name) : 'undefined';
      statuses.set(name, [...(statuses.get(name) ?? []), String(status.status)]);
    }
  }
  for (const [stream, sequence] of statuses) errors.push(...statusOrderProblems(stream, sequence));
  const finalStatus = Object.fromEntries([...statuses].map(([stream, sequence]) => [stream, sequence.at(-1) ?? '']));
  return summarize(errors, { messages, records, final_status: finalStatus, last_state: lastState });
}

/** JSON text with every object's keys sorted: two states the same but for key order are the same state. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    isObject(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
  );
}

function statusOrderProblems(stream: string, sequence: readonly string[]): string[] {
  const problems: string[] = [];
  const first = sequence[0];
  const last = sequence.at(-1) ?? '';
  if (first !== 'STARTED') problems.push(`${stream}: first status ${first}, expected STARTED`);
  if (!FINAL.has(last)) problems.push(`${stream}: last status ${last}, expected COMPLETE or INCOMPLETE`);
  if (last === 'COMPLETE' && !sequence.includes('RUNNING')) problems.push(`${stream}: COMPLETE without RUNNING`);
  if (sequence.filter((s) => FINAL.has(s)).length > 1) problems.push(`${stream}: more than one final status`);
  if (sequence.slice(1).includes('STARTED')) problems.push(`${stream}: STARTED more than once`);
  return problems;
}
