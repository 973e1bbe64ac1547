/**
 * Bad input from the user: config, catalog and state files that are wrong in
 * every usual way. Each must give one clear message naming the field and what
 * is expected: `check` answers CONNECTION_STATUS FAILED (exit 0), `read` one
 * TRACE ERROR config_error (exit 78), and no stack trace reaches stdout.
 *
 * A state for a stream the catalog does not select is the one exception: the
 * connector's choice is a WARN log and the state is ignored (Airbyte passes
 * the states of deselected streams), and the sync goes on.
 *
 * These cases add to those in test/e2e/airbyte/without-service.test.ts (missing api_key,
 * page_size 0, plain http to a remote host, a config that is not JSON, an
 * unknown stream, an unsupported sync mode, a state that is not JSON, an empty
 * state file, a watermark that is not a date, a missing config file), which
 * are not repeated here.
 */
import { FULL_CATALOG, Lab, airbyteCheck, canaryKey, errorTraces, inPool, logs, runConnector, type ConnectorRun } from './harness.js';

type Json = unknown;

export interface BadInputCase {
  readonly name: string;
  readonly kind: 'config' | 'catalog' | 'state';
  /** Replaces keys of a valid config (undefined values remove the key); a non-object replaces the whole config (a string: the file's text). */
  readonly config?: Record<string, Json> | Json;
  /** Catalog content (a string is written as is). */
  readonly catalog?: Json;
  /** State content (a string is written as is). */
  readonly state?: Json;
  /** The message must match: it names the field and what is expected. */
  readonly message: RegExp;
  /** Not a config_error: the run goes on after a WARN matching `message`. */
  readonly warnOnly?: boolean;
}

const s = (stream: string, stream_state: Json): Json => ({ type: 'STREAM', stream: { stream_descriptor: { name: stream }, stream_state } });
const FUTURE = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
const catalogOf = (...entries: Json[]): Json => ({ streams: entries });
const entry = (name: string, sync_mode: string): Json => ({ stream: { name, json_schema: {} }, sync_mode, destination_sync_mode: 'append' });

export const BAD_INPUT_CASES: readonly BadInputCase[] = [
  // --- config: missing or mistyped keys ---
  { name: 'api_key a number', kind: 'config', config: { api_key: 12345 }, message: /api_key must be a string/ },
  { name: 'api_key without _live_', kind: 'config', config: { api_key: 'sk_test_$SECRET' }, message: /api_key must look like <prefix>_live_<secret>/ },
  { name: 'api_key empty (a cleared form field: not set)', kind: 'config', config: { api_key: '' }, message: /api_key is required/ },
  { name: 'base_url missing', kind: 'config', config: { base_url: undefined }, message: /base_url is required/ },
  { name: 'base_url a number', kind: 'config', config: { base_url: 443 }, message: /base_url must be a string/ },
  { name: 'api_key and base_url swapped', kind: 'config', config: { api_key: 'https://api.example.com', base_url: '$KEY' }, message: /base_url holds what looks like an API key.*swapped/ },
  { name: 'base_url not a URL', kind: 'config', config: { base_url: 'api.example.com' }, message: /base_url must be a URL such as https:\/\/api\.example\.com/ },
  { name: 'base_url ftp://', kind: 'config', config: { base_url: 'ftp://api.example.com' }, message: /base_url must start with https:\/\// },
  { name: 'base_url plain http to a private address', kind: 'config', config: { base_url: 'http://10.1.2.3:8080' }, message: /base_url must use https:\/\/ for a remote host/ },
  { name: 'base_url ending in /v1', kind: 'config', config: { base_url: 'https://api.example.com/v1' }, message: /base_url is the address before \/v1/ },
  { name: 'base_url with credentials', kind: 'config', config: { base_url: 'https://user:$SECRET@api.example.com' }, message: /base_url must not contain a query, fragment or credentials/ },
  { name: 'page_size 201', kind: 'config', config: { page_size: 201 }, message: /page_size must be an integer from 1 to 200/ },
  { name: 'page_size a string', kind: 'config', config: { page_size: '50' }, message: /page_size must be an integer from 1 to 200/ },
  { name: 'page_size 2.5', kind: 'config', config: { page_size: 2.5 }, message: /page_size must be an integer from 1 to 200/ },
  { name: 'max_concurrent_requests 0', kind: 'config', config: { max_concurrent_requests: 0 }, message: /max_concurrent_requests must be an integer from 1 to 16/ },
  { name: 'max_concurrent_requests 17', kind: 'config', config: { max_concurrent_requests: 17 }, message: /max_concurrent_requests must be an integer from 1 to 16/ },
  { name: 'request_timeout_seconds 0', kind: 'config', config: { request_timeout_seconds: 0 }, message: /request_timeout_seconds must be an integer from 1 to 600/ },
  { name: 'max_retries -1', kind: 'config', config: { max_retries: -1 }, message: /max_retries must be an integer from 0 to 50/ },
  { name: 'max_wait_seconds null', kind: 'config', config: { max_wait_seconds: null }, message: /max_wait_seconds must be an integer from 1 to 86400/ },
  { name: 'deletions_as_tombstones "yes"', kind: 'config', config: { deletions_as_tombstones: 'yes' }, message: /deletions_as_tombstones must be true or false/ },
  { name: 'start_date in the future', kind: 'config', config: { start_date: FUTURE }, message: /start_date is in the future/ },
  { name: 'start_date unparsable', kind: 'config', config: { start_date: 'last monday' }, message: /start_date must be YYYY-MM-DD or an ISO 8601 date-time with zone/ },
  { name: 'start_date February 30', kind: 'config', config: { start_date: '2024-02-30' }, message: /start_date must be YYYY-MM-DD or an ISO 8601 date-time with zone/ },
  { name: 'start_date without a zone', kind: 'config', config: { start_date: '2024-01-01T00:00:00' }, message: /start_date must be YYYY-MM-DD or an ISO 8601 date-time with zone/ },
  { name: 'start_date a number', kind: 'config', config: { start_date: 20240101 }, message: /start_date must be a string/ },
  { name: 'config an array', kind: 'config', config: ['api_key', 'base_url'], message: /config must be a JSON object with at least api_key and base_url/ },
  { name: 'config misspelled api_key', kind: 'config', config: { api_key: undefined, apikey: 'x_live_y' }, message: /api_key is required.*"apikey"/ },
  {
    name: 'config gives a key twice (JSON would keep the last)',
    kind: 'config',
    config: '{\n"api_key": "$KEY",\n"base_url": "$BASE_URL",\n"page_size": 50,\n"page_size": 500\n}',
    message: /config file .* gives "page_size" twice \(again on line 5\); only one would be read/,
  },
  { name: 'page_size 1e400 (too large to be read)', kind: 'config', config: '{"api_key": "$KEY", "base_url": "$BASE_URL", "page_size": 1e400}', message: /page_size must be an integer from 1 to 200 \(got a number too large to be read\)/ },
  // --- catalog ---
  { name: 'catalog without streams', kind: 'catalog', catalog: { stream: [] }, message: /Invalid configured catalog: streams: .*Expected \{"streams": \[/ },
  { name: 'catalog streams not a list', kind: 'catalog', catalog: { streams: { name: 'contacts' } }, message: /Invalid configured catalog: streams: .*Expected \{"streams": \[/ },
  { name: 'catalog entry without sync_mode', kind: 'catalog', catalog: { streams: [{ stream: { name: 'contacts', json_schema: {} } }] }, message: /streams\.0\.sync_mode/ },
  { name: 'catalog entry without stream name', kind: 'catalog', catalog: { streams: [{ stream: { json_schema: {} }, sync_mode: 'incremental' }] }, message: /streams\.0\.stream\.name/ },
  { name: 'catalog sync_mode "cdc"', kind: 'catalog', catalog: catalogOf(entry('contacts', 'cdc')), message: /Stream "contacts" does not support sync_mode "cdc"; supported: full_refresh, incremental/ },
  { name: 'catalog lists a stream twice', kind: 'catalog', catalog: catalogOf(entry('contacts', 'incremental'), entry('contacts', 'full_refresh')), message: /lists stream "contacts" twice/ },
  { name: 'catalog selects no stream', kind: 'catalog', catalog: { streams: [] }, message: /selects no stream/ },
  { name: 'catalog not JSON', kind: 'catalog', catalog: '{"streams": [', message: /catalog file .* is not valid JSON/ },
  // --- state ---
  { name: 'state for a stream not in the catalog', kind: 'state', catalog: catalogOf(entry('pipeline_stages', 'full_refresh')), state: [s('deletions', { sync_watermark: '2024-01-01T00:00:00.000Z' })], message: /state holds stream "deletions", which the catalog does not select; it is ignored/, warnOnly: true },
  { name: 'state for a stream the source does not have', kind: 'state', catalog: catalogOf(entry('pipeline_stages', 'full_refresh')), state: [s('tickets', { sync_watermark: '2024-01-01T00:00:00.000Z' })], message: /state holds stream "tickets", which this source does not have; it is ignored/, warnOnly: true },
  { name: 'state a number', kind: 'state', state: 42, message: /Invalid state: the file holds a number, not STATE messages\. Expected the state Airbyte passes, a JSON array of per-stream states/ },
  { name: 'state a bare stream_state (no envelope)', kind: 'state', state: { sync_watermark: '2024-01-01T00:00:00.000Z' }, message: /Invalid state: the file holds an object with the keys "sync_watermark", not STATE messages\. Expected .*a single STATE message .*or the STATE lines of a read's output/ },
  { name: 'state a whole read output (RECORD lines)', kind: 'state', state: '{"type":"RECORD","record":{"stream":"contacts","data":{},"emitted_at":1}}\n{"type":"STATE","state":{"type":"STREAM","stream":{"stream_descriptor":{"name":"contacts"},"stream_state":{}}}}\n', message: /Invalid state: line 1 is a RECORD message, not a STATE\. Keep only the STATE lines of a read's output: grep/ },
  { name: 'state lines with a broken line', kind: 'state', state: '{"type":"STATE","state":{"type":"STREAM","stream":{"stream_descriptor":{"name":"contacts"},"stream_state":{}}}}\n{"type":"STA\n', message: /state file .* is neither one JSON document nor JSON lines: line 2 is not valid JSON/ },
  { name: 'state of type GLOBAL', kind: 'state', state: [{ type: 'GLOBAL', global: { stream_states: [] } }], message: /Invalid state: item 0 is not a per-stream state/ },
  { name: 'state without stream_descriptor', kind: 'state', state: [{ type: 'STREAM', stream: { stream_state: {} } }], message: /Invalid state: item 0 has no stream_descriptor\.name/ },
  { name: 'state watermark a number', kind: 'state', state: [s('contacts', { sync_watermark: 1717171717 })], message: /Invalid state for stream "contacts": sync_watermark must be an ISO 8601 date-time with zone/ },
  { name: 'state watermark without a zone', kind: 'state', state: [s('contacts', { sync_watermark: '2024-01-01T00:00:00' })], message: /Invalid state for stream "contacts": sync_watermark must be an ISO 8601 date-time with zone/ },
  { name: 'state resume cursor empty', kind: 'state', state: [s('contacts', { resume: { cursor: '', sync_watermark: '2024-01-01T00:00:00.000Z' } })], message: /Invalid state for stream "contacts": resume\.cursor must be a non-empty cursor string/ },
  {
    // Longer than any address a server takes (Node answers 431, nginx 414): read again from the watermark, as for a cursor the service rejects.
    name: 'state resume cursor too long to send',
    kind: 'state',
    catalog: catalogOf(entry('contacts', 'incremental')),
    state: [s('contacts', { sync_watermark: '2024-01-01T00:00:00.000Z', resume: { cursor: 'A'.repeat(100_000), sync_watermark: '2024-01-01T00:00:00.000Z' } })],
    message: /contacts: the service rejected the saved resume cursor \(The Data-Read API refused GET \/v1\/contacts as too long \(HTTP 431\).*restarting the read from the last complete watermark/,
    warnOnly: true,
  },
  { name: 'state resume without its watermark', kind: 'state', state: [s('contacts', { resume: { cursor: 'abc' } })], message: /Invalid state for stream "contacts": resume\.sync_watermark must be an ISO 8601 date-time with zone/ },
  { name: 'state a legacy object', kind: 'state', state: { contacts: { sync_watermark: '2024-01-01T00:00:00.000Z' } }, message: /Invalid state: the file holds an object with the keys "contacts", not STATE messages\. Expected/ },
  { name: 'state a STATE message with a string stream_state', kind: 'state', state: { type: 'STATE', state: s('contacts', 'x') }, message: /Invalid state for stream "contacts": .*object/ },
  { name: 'state file missing', kind: 'state', state: undefined, message: /Cannot read the state file .*: no such file/ },
];

export interface BadInputResult {
  readonly name: string;
  readonly kind: string;
  /** check's message (config cases), read's message. */
  readonly checkMessage: string | undefined;
  readonly readMessage: string;
  readonly problems: string[];
}

function stackOnStdout(run: ConnectorRun): boolean {
  return /^\s+at .+\(.+:\d+:\d+\)$/m.test(run.stdout) || run.stdout.includes('"stack_trace"');
}

/** Runs `check` (config cases) and `read` for every case; `baseUrl` answers nothing but must be valid (loopback). */
export async function runBadInput(cases: readonly BadInputCase[], parallel: number): Promise<BadInputResult[]> {
  const lab = await Lab.start({ seed: 5 });
  try {
    const acc = lab.account({ contacts: 20 });
    const valid = { api_key: acc.key, base_url: lab.emu.url, max_retries: 0 };
    return await inPool(cases, parallel, async (c) => {
      const problems: string[] = [];
      const label = `bad input: ${c.name}`;
      // The account's canary key, and a second canary where a case puts a secret in the wrong place.
      const secret = `CANARY${canaryKey().slice(-16)}`;
      const secrets = [...acc.secrets, secret];
      let config: Json;
      // A config given as text (a file no object can write: a key twice, 1e400) names the account's key and address as $KEY and $BASE_URL.
      if (typeof c.config === 'string') config = c.config.replaceAll('$KEY', acc.key).replaceAll('$BASE_URL', valid.base_url);
      else if (c.config !== undefined && (typeof c.config !== 'object' || c.config === null || Array.isArray(c.config))) config = c.config;
      else {
        const merged: Record<string, Json> = { ...valid, ...(c.config as Record<string, Json> | undefined) };
        // Secrets the user put in the wrong place must not be echoed either.
        for (const [k, v] of Object.entries(merged)) if (typeof v === 'string') merged[k] = v.replaceAll('$SECRET', secret).replaceAll('$KEY', acc.key);
        for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
        config = merged;
      }
      const configPath = lab.file('config.json', config);
      const catalogPath = c.catalog === undefined ? FULL_CATALOG : lab.file('catalog.json', c.catalog);
      const args = ['read', '--config', configPath, '--catalog', catalogPath];
      if (c.kind === 'state') args.push('--state', c.state === undefined ? `${lab.dir}/no-such-state.json` : lab.file('state.json', c.state));

      let checkMessage: string | undefined;
      if (c.kind === 'config') {
        const check = await runConnector(['check', '--config', configPath], { secrets, label: `${label} (check)` });
        const statuses = check.messages.filter((m) => m.type === 'CONNECTION_STATUS');
        const status = statuses[0]?.connectionStatus as { status?: string; message?: string } | undefined;
        checkMessage = status?.message;
        if (check.code !== 0 || check.messages.length !== 1 || status?.status !== 'FAILED') {
          problems.push(`${label}: check: exit ${String(check.code)}, ${check.messages.length} messages, status ${String(status?.status)}`);
        }
        if (checkMessage === undefined || !c.message.test(checkMessage)) problems.push(`${label}: check says: ${String(checkMessage)}`);
        if (stackOnStdout(check) || check.badLines.length > 0) problems.push(`${label}: check: a stack trace or a stray line on stdout`);
      }

      const read = await runConnector(args, { secrets, label: `${label} (read)` });
      const errors = errorTraces(read.messages);
      let readMessage = '';
      if (c.warnOnly === true) {
        const warnings = logs(read.messages, 'WARN').filter((w) => c.message.test(w));
        readMessage = warnings[0] ?? '';
        if (warnings.length !== 1) problems.push(`${label}: ${warnings.length} warnings match (one expected): ${logs(read.messages, 'WARN').join(' | ')}`);
        if (read.code !== 0 || errors.length > 0) problems.push(`${label}: read: exit ${String(read.code)}: ${errors.map((e) => e.message).join(' | ')}`);
      } else {
        const e = errors[0];
        readMessage = e?.message ?? '';
        if (read.code !== 78 || errors.length !== 1 || e === undefined) problems.push(`${label}: read: exit ${String(read.code)} with ${errors.length} error traces (one expected)`);
        else {
          if (e.failureType !== 'config_error') problems.push(`${label}: read: ${e.failureType}, not config_error`);
          if (!c.message.test(e.message)) problems.push(`${label}: read says: ${e.message}`);
        }
        if (read.messages.some((m) => m.type === 'RECORD' || m.type === 'STATE')) problems.push(`${label}: read emitted records or states`);
      }
      if (stackOnStdout(read) || read.badLines.length > 0) problems.push(`${label}: read: a stack trace or a stray line on stdout`);
      problems.push(...(await airbyteCheck(read.stdout, `${label} (read)`)));
      return { name: c.name, kind: c.kind, checkMessage, readMessage, problems };
    });
  } finally {
    await lab.close();
  }
}
