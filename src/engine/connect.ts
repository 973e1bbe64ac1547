/**
 * From a validated config to a client, the connection check (`check`, with
 * its schema drift line), and the fetching of the service's description for
 * the stream schemas (merged by service-schemas.ts, which fetches nothing).
 */
import { createClient } from '../client/client.js';
import { ApiError } from '../client/api-error.js';
import { serviceSaid } from '../client/problem.js';
import type { ClientOptions, DataReadApi } from '../client/types.js';
import { entryConfig, futureStartDate, type AccountConfig, type AccountEntry, type Config } from '../config/config.js';
import { ConfigError, toConnectorError, type ConnectorError, type FailureType } from '../errors.js';
import { unknownTreatedFields, unknownTreatedFieldsMessage } from '../personal-data/treatments.js';
import { STREAMS, type StreamDefinition } from '../streams.js';
import { mostActionable } from '../runtime/exit-status.js';
import { USER_AGENT } from '../runtime/version.js';
import type { LoadedSchemas } from './service-schemas.js';

type ClientHooks = Pick<ClientOptions, 'onWait' | 'onLog' | 'signal'>;

/**
 * The key of a config that reads one account. A config with `accounts` is
 * read one entry at a time (accounts.ts gives each its own config); a client
 * asked for the whole config is refused here.
 */
function singleKey(config: Config): string {
  if (config.api_key !== undefined) return config.api_key;
  throw new ConfigError(
    'This command reads one account: give its api_key. A config with "accounts" is read one entry at a time, each with its own key.',
    { field: 'accounts' },
  );
}

export function clientFromConfig(config: Config, hooks: ClientHooks = {}, overrides: Partial<ClientOptions> = {}): DataReadApi {
  return createClient({
    baseUrl: config.base_url,
    apiKey: singleKey(config),
    userAgent: USER_AGENT,
    timeoutMs: config.request_timeout_seconds * 1000,
    maxRetries: config.max_retries,
    maxWaitSeconds: config.max_wait_seconds,
    maxConcurrent: config.max_concurrent_requests,
    proxyUrl: config.proxy_url,
    caCertificate: config.ca_certificate,
    // An entry of `accounts` (entryConfig): its errors name the entry's api_key, not a top-level one.
    ...((config as Partial<AccountConfig>).keySetting === undefined ? {} : { keySetting: (config as AccountConfig).keySetting }),
    ...hooks,
    ...overrides,
  });
}

export interface CheckResult {
  readonly ok: boolean;
  readonly message: string;
  /** Why it failed, as a failure type (the exit status of a sync that stops on it). */
  readonly failureType?: FailureType;
  /** The account the key belongs to (/v1/me's account_name), once the key works. */
  readonly account?: string;
  /** The error that made it fail, when one did (its detail for logs). */
  readonly error?: ConnectorError;
}

/** A check's answer, and its one line on schema drift (when the key works). */
interface ConnectionCheck extends CheckResult {
  readonly drift?: { readonly level: 'INFO' | 'WARN'; readonly message: string };
}

/** Retries of one request of check and discover at most, whatever max_retries says (it is for syncs). */
const INTERACTIVE_MAX_RETRIES = 2;

/**
 * The client options of short, interactive requests (check, discover): few
 * retries and short waits, so a command answers in seconds, no word of a
 * sync's saved state in its errors (there is none), one connection.
 */
export function interactivePatience(config: Config): Partial<ClientOptions> {
  const maxRetries = Math.min(config.max_retries, INTERACTIVE_MAX_RETRIES);
  // One connection: their requests go one after the other, and the second reuses the first's connection (one TLS handshake, one proxy tunnel).
  return {
    maxRetries,
    // Their errors say which limit counted: "3 attempts (1 + 2 retries, the most check and discover make; max_retries 8 applies to syncs)".
    ...(maxRetries < config.max_retries
      ? { retryLimit: `${maxRetries} retries, the most check and discover make; max_retries ${config.max_retries} applies to syncs` }
      : {}),
    maxWaitSeconds: Math.min(config.max_wait_seconds, 30),
    retryMaxMs: 5000,
    stopNote: '',
    maxConcurrent: 1,
  };
}

/** `work` with a client of `config` with interactive patience, closed once it is done. */
async function withInteractiveClient<T>(config: Config, hooks: ClientHooks, work: (client: DataReadApi) => Promise<T>): Promise<T> {
  const client = clientFromConfig(config, hooks, interactivePatience(config));
  try {
    return await work(client);
  } finally {
    await client.close();
  }
}

/**
 * GET /v1/me with the given client: the key works and carries data:read. The
 * message names the account, or says in plain words what is wrong.
 */
export async function verifyAccount(client: DataReadApi, config: Config): Promise<CheckResult> {
  try {
    const me = await client.me();
    if (!me.scopes.includes('data:read')) {
      return {
        ok: false,
        failureType: 'config_error',
        message:
          `The API key of account "${me.account_name}" lacks the data:read scope (it has: ${me.scopes.join(', ') || 'none'}). ` +
          `Create a key with data:read in Data-Read and update ${(config as Partial<AccountConfig>).keySetting ?? 'api_key'}.`,
      };
    }
    return {
      ok: true,
      account: me.account_name,
      message: `Connected to account "${me.account_name}" (limits: ${me.limits.per_minute} requests/minute, ${me.limits.per_day} requests/day).`,
    };
  } catch (err) {
    const error = toConnectorError(err);
    // An unreachable service: the client's message names the address already ("Cannot reach the Data-Read API at ...").
    if (error instanceof ApiError && error.code === 'retries_exhausted') {
      return { ok: false, failureType: error.failureType, message: `The Data-Read API at ${config.base_url} did not answer /v1/me successfully: ${error.message}`, error };
    }
    return { ok: false, failureType: error.failureType, message: error.message, error };
  }
}

/**
 * verifyAccount, then one record of the first stream the service must serve
 * (`GET /v1/contacts?limit=1`): a service may answer /v1/me for a key whose
 * account or plan does not include the data (HTTP 403 on the lists), which
 * the first sync would meet otherwise.
 */
async function verifyReading(client: DataReadApi, config: Config): Promise<CheckResult> {
  const verified = await verifyAccount(client, config);
  if (!verified.ok) return verified;
  const stream = STREAMS.find((s) => !s.optional) as StreamDefinition;
  try {
    await client.list(stream.path, { limit: 1 });
    return verified;
  } catch (err) {
    const error = toConnectorError(err);
    const message = `The key works for account "${verified.account ?? '?'}" (/v1/me), but reading its data failed (${stream.path}): ${error.message}`;
    return { ok: false, failureType: error.failureType, message, error };
  }
}

/**
 * The `check` command: a check must answer fast, so it retries little and
 * waits at most 30 s for a rate limit (interactivePatience). Once /v1/me
 * says the key works and a list serves it one record (verifyReading), it
 * reads the service's description on the same
 * connection for the drift line: which fields the service describes that the
 * built-in schemas lack, and the other way round.
 */
export async function checkConnection(config: Config, hooks: ClientHooks = {}): Promise<ConnectionCheck> {
  // There is no state in a check: a start_date more than a day ahead would be used by the first sync.
  const future = futureStartDate(config.start_date);
  if (future) return { ok: false, message: future };
  return withInteractiveClient(config, hooks, async (client): Promise<ConnectionCheck> => {
    const result = await verifyReading(client, config);
    if (!result.ok) return result;
    const { drift, invalid } = await describeForCheck(client, config);
    return invalid === undefined ? { ...result, drift } : { ok: false, message: invalid, drift };
  });
}

/**
 * The service's description as a check reads it (after the key was
 * verified): the drift line, and `invalid` when the config treats a field
 * the service does not describe either (the config's mistake).
 */
async function describeForCheck(client: DataReadApi, config: Config): Promise<{ drift: NonNullable<ConnectionCheck['drift']>; invalid?: string }> {
  const { driftNote } = await import('./service-schemas.js');
  let unknownFields: string | undefined;
  const drift = await describeStreams(client).then(
    (loaded) => {
      // Fields only the service describes may be treated: a field it does not describe either is a mistake.
      if (loaded.source === 'service') unknownFields = unknownTreatedFields(config, loaded.schemas);
      return driftNote(loaded, !config.use_service_schema);
    },
    // A key refused for the description alone: the drift is what cannot be told.
    (err: unknown) => ({ level: 'WARN' as const, message: `Schema drift unknown: the service's description cannot be read. ${toConnectorError(err).message}` }),
  );
  if (unknownFields === undefined) return { drift };
  return { drift, invalid: unknownTreatedFieldsMessage(unknownFields) };
}

const isRefusedKey = (error: unknown): boolean => error instanceof ApiError && (error.code === 'unauthorized' || error.code === 'forbidden');

/**
 * Why the description could not be had, as the end of a sentence. Rethrows
 * what the user must fix for every request of the run, not the description
 * alone: a rejected key (401, 403), a proxy or CA setting that cannot be
 * used, an untrusted certificate, a proxy that refuses the connector. A 401
 * or 403 of the description is the key's only when /v1/me refuses it too
 * (one request more): the service may keep its description from a key that
 * reads the data (another scope, a gateway of its own), and the data is
 * then read with the built-in schemas.
 */
async function fetchFailure(client: DataReadApi, err: unknown, where: string): Promise<string> {
  const error = toConnectorError(err);
  if (error instanceof ApiError && isRefusedKey(error)) {
    const keyWorks = await client.me().then(
      () => true,
      () => false,
    );
    if (!keyWorks) throw error;
    const { title, detail, request_id: requestId } = error.problem ?? {};
    const info = { title: title || undefined, detail: detail || undefined, requestId: requestId || undefined };
    return `${where} answered HTTP ${error.status ?? '401 or 403'} though /v1/me takes the key: the service does not show its description to this key.${serviceSaid(info)}`;
  }
  if (error.failureType === 'config_error' && error.runWide) throw error;
  if (error instanceof ApiError && error.code === 'not_found') return `${where} answered HTTP 404 (the service does not serve its description there).`;
  return error.message;
}

/**
 * Read the service's description with `client` (one request with its auth,
 * pacing and retries) and merge it into the built-in schemas. The
 * description is never a reason to fail: only what stops every request of
 * the run for the user to fix (a rejected key, an unusable proxy or CA
 * setting, an untrusted certificate) throws.
 */
export async function describeStreams(client: DataReadApi, streams: readonly StreamDefinition[] = STREAMS): Promise<LoadedSchemas> {
  const { fallbackSchemas, mergeDescription, WHERE } = await import('./service-schemas.js');
  let doc: unknown;
  try {
    doc = await client.description();
  } catch (err) {
    return fallbackSchemas(streams, await fetchFailure(client, err, WHERE));
  }
  return mergeDescription(doc, streams);
}

/** The schemas to declare with this config, read with `client`: pinned (no request) or from the service (one request). */
export async function schemasWith(client: DataReadApi, config: Config, streams: readonly StreamDefinition[] = STREAMS): Promise<LoadedSchemas> {
  if (!config.use_service_schema) return (await import('./service-schemas.js')).pinnedSchemas(streams);
  return describeStreams(client, streams);
}

/**
 * The schemas to declare with this config: pinned (no request) or from the
 * service (one request, on a client of its own with interactive patience).
 */
export async function loadStreamSchemas(config: Config, hooks: ClientHooks = {}, streams: readonly StreamDefinition[] = STREAMS): Promise<LoadedSchemas> {
  if (!config.use_service_schema) return (await import('./service-schemas.js')).pinnedSchemas(streams);
  return withInteractiveClient(config, hooks, (client) => schemasWith(client, config, streams));
}

/** Run `work` on every item, at most `limit` at a time; the results in the items' order. */
async function pooled<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}

/**
 * `check` of a config with `accounts`: every key checked (/v1/me, with the
 * interactive patience, max_concurrent_accounts at a time), each failing one
 * named with why; the schema drift line from the first account that works.
 */
export async function checkAccounts(config: Config, hooks: ClientHooks = {}): Promise<ConnectionCheck> {
  const entries = config.accounts ?? [];
  const future = futureStartDate(config.start_date);
  if (future) return { ok: false, message: future };
  const results = await pooled(entries, config.max_concurrent_accounts, async (entry) => {
    const one = entryConfig(config, entry);
    return withInteractiveClient(one, hooks, (client) => verifyReading(client, one));
  });
  const failed = entries.flatMap((entry, i) => (results[i]?.ok === true ? [] : [{ entry, result: results[i] as CheckResult }]));
  const firstOk = entries.findIndex((_, i) => results[i]?.ok === true);
  let drift: ConnectionCheck['drift'];
  if (firstOk >= 0) {
    // The description and the treated fields once, with the first key that works (already verified above).
    const one = entryConfig(config, entries[firstOk] as AccountEntry);
    // Judged with the whole config: with accounts, a field `account` the service describes is treated as service_account.
    const described = await withInteractiveClient(one, hooks, (client) => describeForCheck(client, config));
    drift = described.drift;
    // A treatment of a field the service does not describe either: the config's mistake, whichever account.
    if (described.invalid !== undefined) return { ok: false, message: described.invalid, drift };
  }
  if (failed.length > 0) {
    const type = mostActionable(failed.map((f) => f.result.failureType ?? 'system_error'));
    return {
      ok: false,
      ...(type ? { failureType: type } : {}),
      message:
        `${failed.length} of ${entries.length} accounts failed the check` +
        (failed.length < entries.length ? ` (the other ${entries.length - failed.length} connected)` : '') +
        `: ${failed.map((f) => `account "${f.entry.name}": ${f.result.message}`).join('; ')}`,
      ...(drift ? { drift } : {}),
    };
  }
  const names = entries.map((entry, i) => `"${entry.name}" (account "${results[i]?.account ?? '?'}")`);
  return { ok: true, message: `Connected to ${entries.length === 1 ? 'the one account listed' : `all ${entries.length} accounts`}: ${names.join(', ')}.`, ...(drift ? { drift } : {}) };
}

/**
 * The schemas to declare with a config with `accounts`: pinned (no request),
 * or the service's description read once, with the first account whose key
 * the service takes (a refused key: the next one is tried).
 */
export async function loadAccountsSchemas(config: Config, hooks: ClientHooks = {}, streams: readonly StreamDefinition[] = STREAMS): Promise<LoadedSchemas> {
  const entries = config.accounts ?? [];
  const refused: string[] = [];
  for (const entry of entries) {
    try {
      return await loadStreamSchemas(entryConfig(config, entry), hooks, streams);
    } catch (err) {
      const error = toConnectorError(err);
      if (!isRefusedKey(error)) throw error;
      refused.push(`"${entry.name}": ${error.message}`);
    }
  }
  throw new ConfigError(`No account of the config could read the service's description; every key was refused: ${refused.join('; ')}`, { field: 'accounts' });
}
