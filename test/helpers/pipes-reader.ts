/**
 * The orchestrator's side of Dagster Pipes, for tests: parameters encoded as
 * Dagster encodes them, a context file, and a reader that takes the messages
 * out of a stream (or a file) as Dagster's does: a line that parses as a JSON
 * object with `__dagster_pipes_version` is a message, any other line is a log
 * line. Every message is checked as Dagster's message handler would take it
 * (method known, params with exactly the handler's keywords, metadata values
 * {raw_value, type} of a known type, `opened` first, `closed` last, one
 * materialization per asset key) and each problem is listed.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';

export const VERSION_FIELD = '__dagster_pipes_version';

/** base64(zlib(JSON)), as Dagster's encode_param. */
export function encodePipesParam(value: unknown): string {
  return deflateSync(Buffer.from(JSON.stringify(value), 'utf8')).toString('base64');
}

/** The two variables for a run whose context is a file in `dir` and whose messages go to `messages`. */
export function pipesEnv(dir: string, assetKeys: readonly string[] | null, messages: Record<string, unknown>): NodeJS.ProcessEnv {
  const contextPath = join(dir, `pipes-context-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(contextPath, JSON.stringify({ asset_keys: assetKeys, run_id: 'test-run', job_name: null, retry_number: 0, extras: {} }));
  return { DAGSTER_PIPES_CONTEXT: encodePipesParam({ path: contextPath }), DAGSTER_PIPES_MESSAGES: encodePipesParam(messages) };
}

export interface PipesMessage {
  readonly method: string;
  readonly params: Record<string, unknown> | null;
}

export interface Materialization {
  readonly assetKey: string;
  readonly metadata: Record<string, { raw_value: unknown; type: string }>;
}

export interface PipesRead {
  readonly messages: PipesMessage[];
  /** Lines that are not Pipes messages (forwarded as logs by Dagster). */
  readonly logLines: string[];
  readonly materializations: Materialization[];
  readonly closed: PipesMessage | undefined;
  readonly problems: string[];
}

const METADATA_TYPES = new Set(['__infer__', 'text', 'url', 'path', 'notebook', 'json', 'md', 'float', 'int', 'bool', 'dagster_run', 'asset', 'null', 'table', 'table_schema', 'table_column_lineage', 'timestamp']);
const HANDLER_KEYWORDS: Record<string, readonly string[]> = {
  opened: ['extras'],
  report_asset_materialization: ['asset_key', 'data_version', 'metadata'],
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function checkException(exception: unknown, problems: string[]): void {
  if (!isObject(exception)) return void problems.push('closed: exception is not an object');
  const keys = Object.keys(exception).sort().join(',');
  if (keys !== 'cause,context,message,name,stack') problems.push(`closed: exception keys ${keys}`);
  if (typeof exception.message !== 'string' || exception.message === '') problems.push('closed: exception without a message');
  if (!Array.isArray(exception.stack)) problems.push('closed: exception stack is not a list');
}

/** Read a stream's text (stderr, or the messages file) as Dagster's reader does. */
export function readPipes(text: string): PipesRead {
  const messages: PipesMessage[] = [];
  const logLines: string[] = [];
  const problems: string[] = [];
  const materializations: Materialization[] = [];
  const keys = new Set<string>();
  let closed: PipesMessage | undefined;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      logLines.push(line);
      continue;
    }
    if (!isObject(parsed) || !(VERSION_FIELD in parsed)) {
      logLines.push(line);
      continue;
    }
    const { method, params } = parsed;
    if (parsed[VERSION_FIELD] !== '0.1') problems.push(`version ${String(parsed[VERSION_FIELD])}`);
    if (Object.keys(parsed).sort().join(',') !== `${VERSION_FIELD},method,params`) problems.push(`message keys: ${Object.keys(parsed).join(',')}`);
    if (typeof method !== 'string') {
      problems.push('a message without a method');
      continue;
    }
    if (params !== null && !isObject(params)) problems.push(`${method}: params is not an object`);
    const message: PipesMessage = { method, params: isObject(params) ? params : null };
    if (closed) problems.push(`${method} after closed`);
    if (messages.length === 0 && method !== 'opened') problems.push(`the first message is ${method}, not opened`);
    messages.push(message);
    const expected = HANDLER_KEYWORDS[method];
    if (expected && Object.keys(message.params ?? {}).sort().join(',') !== expected.join(',')) {
      problems.push(`${method}: params ${Object.keys(message.params ?? {}).join(',')}; the handler takes ${expected.join(',')}`);
    }
    if (method === 'report_asset_materialization') {
      const p = message.params ?? {};
      if (typeof p.asset_key !== 'string' || p.asset_key === '') problems.push('materialization without an asset_key string');
      else if (keys.has(p.asset_key)) problems.push(`${p.asset_key} materialized twice`);
      else keys.add(p.asset_key);
      if (p.data_version !== null && typeof p.data_version !== 'string') problems.push('data_version is neither null nor a string');
      const metadata = p.metadata;
      if (metadata !== null && !isObject(metadata)) problems.push('metadata is not an object');
      for (const [name, value] of Object.entries(isObject(metadata) ? metadata : {})) {
        if (!isObject(value) || Object.keys(value).sort().join(',') !== 'raw_value,type') problems.push(`metadata ${name} is not {raw_value, type}`);
        else if (typeof value.type !== 'string' || !METADATA_TYPES.has(value.type)) problems.push(`metadata ${name} has type ${String(value.type)}`);
        else if (value.type === 'int' && !Number.isInteger(value.raw_value)) problems.push(`metadata ${name}: int of ${String(value.raw_value)}`);
        else if (value.type === 'text' && typeof value.raw_value !== 'string') problems.push(`metadata ${name}: text of ${String(value.raw_value)}`);
        else if (value.type === 'null' && value.raw_value !== null) problems.push(`metadata ${name}: null of ${String(value.raw_value)}`);
      }
      materializations.push({ assetKey: String(p.asset_key), metadata: (isObject(metadata) ? metadata : {}) as Materialization['metadata'] });
    } else if (method === 'closed') {
      closed = message;
      const p = message.params ?? {};
      const extra = Object.keys(p).filter((k) => k !== 'exception');
      if (extra.length > 0) problems.push(`closed: unknown params ${extra.join(',')}`);
      if ('exception' in p) checkException(p.exception, problems);
    } else if (method !== 'opened' && method !== 'log') {
      problems.push(`unknown method ${method}`);
    }
  }
  if (messages.length > 0 && closed === undefined) problems.push('no closed message');
  return { messages, logLines, materializations, closed, problems };
}
