/**
 * The connector's config: one zod schema that validates user input, generates
 * the Airbyte SPEC's connectionSpecification and the Singer --about settings.
 */
import { z } from 'zod';
import { parseCaCertificates } from '../network/ca-certificates.js';
import { ConfigError, messageOf, redact } from '../errors.js';
import { proxySecrets } from '../network/proxy-env.js';
import { parseProxyUrl } from '../network/proxy-url.js';
import { closestName } from './suggest.js';
import { PERSONAL_DATA_CHOICES, TREATMENTS, hashKeyWarning, treatmentProblems } from '../personal-data/treatments.js';
import { STREAMS } from '../streams.js';
import { parseInstant, readInstant } from '../time.js';

const STREAM_NAMES = STREAMS.map((s) => s.name) as [string, ...string[]];

/** How far ahead of now a start_date may be: a user ahead of UTC types today's date, up to a day ahead of UTC. */
const START_DATE_LEEWAY_MS = 24 * 3600 * 1000;

/**
 * Why start_date cannot be used now (more than a day ahead: nothing would be
 * read, and the watermark would skip ahead); undefined when it can.
 */
export function futureStartDate(startDate: string | undefined, now = Date.now()): string | undefined {
  if (startDate === undefined) return undefined;
  const ms = parseInstant(startDate);
  if (!(ms > now + START_DATE_LEEWAY_MS)) return undefined;
  return (
    `start_date is in the future (${startDate}, more than a day ahead of now, ${new Date(now).toISOString()}); nothing would be read. ` +
    'Give a date up to today (a date up to a day ahead is accepted, for time zones ahead of UTC), or none for the full history.'
  );
}

function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The error of a required string: "is required" when absent, "must be a string" when mistyped. */
function requiredString(field: string, what: string): (issue: { readonly input?: unknown }) => string {
  return (issue) => (issue.input === undefined ? `${field} is required: ${what}` : `${field} must be a string: ${what}`);
}

/** The shape of an API key: a value like this is a secret wherever the user put it. */
const KEY_SHAPE = /^\S+?_live_\S+$/;

/**
 * An optional text setting left empty is not set: Airbyte's form sends ""
 * for a field the user cleared. Its SPEC must take "" then (no minLength, a
 * pattern that matches "").
 */
const emptyIsNone = (value: string): string | undefined => (value === '' ? undefined : value);

const API_KEY_MESSAGE = 'api_key must look like <prefix>_live_<secret> (an account API key from Data-Read)';
const API_KEY_META = {
  title: 'API key',
  description: 'Account API key with the data:read scope, in the form <prefix>_live_<secret>. Kept secret: it is never printed.',
  // The format in words, which Airbyte's form shows beside the field (the regex alone is no hint to a person).
  pattern_descriptor: '<prefix>_live_<secret>',
  airbyte_secret: true,
  order: 0,
};

/** An api_key of the given shape. */
const keyOfShape = (shape: RegExp) =>
  z.string({ error: requiredString('api_key', 'the account API key, <prefix>_live_<secret>') }).trim().regex(shape, { error: API_KEY_MESSAGE }).meta(API_KEY_META);
/** The key of an entry of `accounts`: always given. */
const apiKey = keyOfShape(KEY_SHAPE);
/** The config's own api_key: optional (accounts instead), so empty is not set and the config's check asks for it. */
const topApiKey = keyOfShape(new RegExp(`^(?:${KEY_SHAPE.source.slice(1, -1)})?$`)).transform(emptyIsNone);

/**
 * An address as a message may quote it: what comes before its last "@" (a
 * user and password, whatever characters the password holds) shown as `***`.
 */
const withoutUserinfo = (value: string): string => value.replace(/^((?:[A-Za-z][A-Za-z0-9+.-]*:)?\/\/)?.*@/s, (_, scheme?: string) => `${scheme ?? ''}***@`);

const baseUrl = z
  .string({ error: requiredString('base_url', 'the address before /v1, e.g. https://api.example.com') })
  .trim()
  .superRefine((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({
        code: 'custom',
        message: KEY_SHAPE.test(value)
          ? 'base_url holds what looks like an API key (<prefix>_live_<secret>), not an address (are api_key and base_url swapped?)'
          : `base_url must be a URL such as https://api.example.com (got "${withoutUserinfo(value)}")`,
      });
      return;
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      ctx.addIssue({ code: 'custom', message: `base_url must start with https:// (got "${url.protocol}")` });
    } else if (url.protocol === 'http:' && !isLoopback(url.hostname)) {
      ctx.addIssue({
        code: 'custom',
        message: `base_url must use https:// for a remote host; plain http:// is only allowed for loopback (got ${url.host})`,
      });
    }
    if (url.search || url.hash || url.username || url.password) {
      ctx.addIssue({ code: 'custom', message: 'base_url must not contain a query, fragment or credentials' });
    }
    if (/\/v1\/?$/.test(url.pathname)) {
      ctx.addIssue({ code: 'custom', message: 'base_url is the address before /v1: drop the trailing /v1' });
    }
  })
  .meta({
    title: 'Base URL',
    description: 'Address of the Data-Read API before /v1. https:// is required unless the host is loopback.',
    examples: ['https://api.example.com'],
    order: 1,
  });

const startDate = z
  .string({ error: 'start_date must be a string: YYYY-MM-DD or an ISO 8601 date-time with zone' })
  .trim()
  .superRefine((value, ctx) => {
    if (value === '') return; // none (below)
    const reading = readInstant(value);
    if ('problem' in reading) {
      ctx.addIssue({
        code: 'custom',
        message:
          `start_date must be YYYY-MM-DD or an ISO 8601 date-time with zone such as 2024-01-01T00:00:00Z, 2024-01-01T00:00:00+02:00 or +0200 (got "${value}")` +
          (reading.problem === undefined ? '' : `: ${reading.problem}`),
      });
    }
    // A date in the future is refused where it would be used (check, and a sync whose streams have no state): see futureStartDate.
  })
  .meta({
    title: 'Start date',
    description: 'Only data changed from this date on is read on the first sync of each stream. Leave empty for the full history.',
    examples: ['2024-01-01', '2024-01-01T00:00:00Z'],
    order: 2,
  })
  // Empty is none, as the description says.
  .transform(emptyIsNone);

/** Airbyte's UI annotations of a setting: its title, its description and its place in the form. */
const ui = (title: string, description: string, order: number) => ({ title, description, order });

const boundedInt = (name: string, min: number, max: number, fallback: number) => {
  const error = `${name} must be an integer from ${min} to ${max}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error }).default(fallback);
};

/** A check that throws an Error whose message says what is wrong, as a zod refinement. */
const checkedBy = (check: (value: string) => unknown) => (value: string, ctx: z.RefinementCtx) => {
  if (value.trim() === '') return;
  try {
    check(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: messageOf(err).replace(/\.$/, '') });
  }
};

const proxyUrl = z
  .string({ error: 'proxy_url must be a string: http://[user:password@]host:port' })
  .trim()
  .superRefine(checkedBy((value) => parseProxyUrl(value, 'proxy_url')))
  .meta({
    title: 'Proxy URL',
    description:
      'HTTP proxy for every request, http://[user:password@]host:port (https:// for a proxy spoken to over TLS). ' +
      'When set it wins over HTTPS_PROXY, HTTP_PROXY and NO_PROXY, which are honoured otherwise. Kept secret: its credentials are never printed.',
    airbyte_secret: true,
    order: 9,
  })
  .transform(emptyIsNone);

const caCertificate = z
  .string({ error: 'ca_certificate must be a string: PEM text' })
  .superRefine(checkedBy(parseCaCertificates))
  .meta({
    title: 'CA certificate',
    description:
      'PEM certificate(s) of a private certificate authority that signed the certificate of the API or of an https:// proxy ' +
      '(-----BEGIN CERTIFICATE----- ...), trusted in addition to the default ones.',
    multiline: true,
    order: 10,
  })
  // Blank PEM text is none too (a form's multiline field may keep a line break).
  .transform((value) => (value.trim() === '' ? undefined : value));

const personalData = z
  .enum(PERSONAL_DATA_CHOICES, { error: `personal_data must be one of ${PERSONAL_DATA_CHOICES.join(', ')}` })
  .default('keep')
  .meta(ui(
    'Personal data',
    'What happens to the fields that identify a person (contacts name, first_name, last_name, email, phone and the ad click ids): ' +
      'keep them as received, hash them (HMAC-SHA-256 under hash_key, still joinable) or drop them. Done before anything leaves the connector.',
    12,
  ));

const fieldTreatment = z.object({
  stream: z
    .enum(STREAM_NAMES, { error: (issue) => `stream ${JSON.stringify(issue.input)} is not a stream of this source; streams: ${STREAM_NAMES.join(', ')}` })
    .meta({ title: 'Stream', description: 'The stream of the field, e.g. contacts.', order: 0 }),
  field: z.string({ error: 'field must be a field name' }).meta({ title: 'Field', description: 'A top-level field of that stream, e.g. email.', order: 1 }),
  treatment: z
    .enum(TREATMENTS, { error: `treatment must be one of ${TREATMENTS.join(', ')}` })
    .meta({
      title: 'Treatment',
      description: 'keep, drop, hash (HMAC-SHA-256 under hash_key), sha256 (plain, guessable: for ad platforms\' customer matching) or email_domain (the part after the last @).',
      order: 2,
    }),
});

const fieldTreatments = z
  .array(fieldTreatment, { error: 'field_treatments must be a list of {stream, field, treatment}' })
  .default([])
  .meta(ui('Field treatments', 'Per-field overrides of personal_data, for any field of any stream: {stream, field, treatment}.', 13));

/** The shortest hash_key accepted: a short key could be found by trying keys against a known address. */
const HASH_KEY_MIN_LENGTH = 16;

const hashKey = z
  .string({ error: 'hash_key must be a string' })
  // Empty, or at least HASH_KEY_MIN_LENGTH characters: a pattern, so that the SPEC says both (a minLength would refuse a cleared field).
  // The message never quotes the key.
  .regex(new RegExp(`^(?:[\\s\\S]{${HASH_KEY_MIN_LENGTH},})?$`), { error: `hash_key is too short: give at least ${HASH_KEY_MIN_LENGTH} characters (a long random secret, e.g. from \`openssl rand -hex 32\`)` })
  .meta({
    title: 'Hash key',
    description:
      'Secret key of the hash treatment (HMAC-SHA-256). The same key gives the same tokens in every run and face; changing it changes every token (a full refresh). Kept secret: it is never printed.',
    pattern_descriptor: `at least ${HASH_KEY_MIN_LENGTH} characters`,
    airbyte_secret: true,
    order: 14,
  })
  .transform(emptyIsNone);

const accountRenamedFrom = z
  .string({ error: 'account_renamed_from must be a string: the former name of the account, as its state or replica names it' })
  .trim()
  .meta(ui(
    'Account renamed from',
    'Only after the account was renamed in Data-Read: its former name, as the saved state or replica names it. A state or replica of that name is then taken as this account\'s, ' +
      'and what the run saves names the new one. A state or replica of any other account is refused (exit 78).',
    15,
  ))
  .transform(emptyIsNone);

/** The most entries `accounts` takes. */
const MAX_ACCOUNTS = 1000;
const ACCOUNT_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

const accountEntry = z
  .object(
    {
      name: z
        .string({ error: 'name must be a string: the label of the account, 1 to 64 characters of A-Z a-z 0-9 _ . -' })
        .regex(ACCOUNT_NAME, { error: 'name must be 1 to 64 characters of A-Z a-z 0-9 _ . - (the label every record of the account carries in its account field)' })
        .meta({
          title: 'Name',
          description: 'Your label of the account (1 to 64 characters of A-Z a-z 0-9 _ . -): every record of the account carries it in its account field.',
          pattern_descriptor: '1 to 64 characters of A-Z a-z 0-9 _ . -',
          order: 0,
        }),
      api_key: apiKey.meta({
        title: 'API key',
        description: 'The account\'s API key with the data:read scope, <prefix>_live_<secret>. Kept secret: it is never printed.',
        pattern_descriptor: '<prefix>_live_<secret>',
        airbyte_secret: true,
        order: 1,
      }),
      account_renamed_from: accountRenamedFrom
        .meta({
          title: 'Account renamed from',
          description: 'Only after this account was renamed in Data-Read: its former name, as the saved state names it (see account_renamed_from).',
          order: 2,
        })
        .optional(),
    },
    { error: 'each entry of accounts must be an object {"name": ..., "api_key": ...}' },
  )
  .meta({ title: 'Account' });

const accounts = z
  .array(accountEntry, { error: 'accounts must be a list of {"name", "api_key"} objects' })
  .min(1, { error: 'accounts must hold at least one {"name", "api_key"} entry' })
  .max(MAX_ACCOUNTS, { error: `accounts holds at most ${MAX_ACCOUNTS} entries` })
  .superRefine((entries, ctx) => {
    const seen = new Map<string, number>();
    const keys = new Map<string, number>();
    for (const [index, entry] of entries.entries()) {
      const first = seen.get(entry.name);
      if (first !== undefined) ctx.addIssue({ code: 'custom', message: `name "${entry.name}" is given twice (entries ${first} and ${index}); names must be unique`, path: [index, 'name'] });
      else seen.set(entry.name, index);
      // The same key twice would read one account twice, under two names (the message never quotes the key).
      const sameKey = keys.get(entry.api_key);
      if (sameKey !== undefined) {
        ctx.addIssue({ code: 'custom', message: `entries ${sameKey} and ${index} give the same api_key: each entry is one account, with its own key`, path: [index, 'api_key'] });
      } else keys.set(entry.api_key, index);
    }
  })
  .meta(ui(
    'Accounts',
    'Many accounts in one run, instead of api_key: each {name, api_key} (the keys are kept secret: never printed). Every record carries its account\'s name in the field account; ' +
      'the primary key of every stream becomes [account, id]. base_url and every other setting apply to all.',
    16,
  ));

export const ConfigSchema = z.object({
  // Optional only because accounts may replace it: always_show keeps it out of the "Optional fields" Airbyte's form folds away.
  api_key: topApiKey.optional().meta({ always_show: true }),
  base_url: baseUrl,
  start_date: startDate.optional(),
  page_size: boundedInt('page_size', 1, 200, 200).meta(ui('Page size', 'Records per request (1 to 200). 200 makes the fewest requests.', 3)),
  max_concurrent_requests: boundedInt('max_concurrent_requests', 1, 16, 2).meta(ui('Maximum concurrent requests', 'Requests in flight at once, across all streams (1 to 16). Stay under the key\'s simultaneous-request limit.', 4)),
  request_timeout_seconds: boundedInt('request_timeout_seconds', 1, 600, 60).meta(ui('Request timeout (seconds)', 'A request that takes longer is retried.', 5)),
  max_retries: boundedInt('max_retries', 0, 50, 8).meta(ui('Maximum retries', 'Retries of one request on rate limits, server errors and network faults before the sync stops with a resumable state.', 6)),
  max_wait_seconds: boundedInt('max_wait_seconds', 1, 86_400, 900).meta(ui('Maximum wait (seconds)', 'Longest single wait accepted for a rate limit. A longer one (the daily quota) stops the sync with a resumable state.', 7)),
  deletions_as_tombstones: z
    .boolean({ error: 'deletions_as_tombstones must be true or false' })
    .default(false)
    .meta(ui('Deletions as tombstones', 'Also emit each deleted contact or conversation into its own stream with _ab_cdc_deleted_at (Airbyte) or _sdc_deleted_at (Singer) set, so destinations that deduplicate on id delete the row.', 8)),
  proxy_url: proxyUrl.optional(),
  ca_certificate: caCertificate.optional(),
  use_service_schema: z
    .boolean({ error: 'use_service_schema must be true or false' })
    .default(true)
    .meta(ui(
      'Use the service\'s schema',
      'Merge the stream schemas with the service\'s own description (/v1/openapi.json) at discovery, so fields the service adds are declared and typed without a connector release. ' +
        'False pins the schemas built into this release (for example while a destination migration is pending).',
      11,
    )),
  personal_data: personalData,
  field_treatments: fieldTreatments,
  hash_key: hashKey.optional(),
  account_renamed_from: accountRenamedFrom.optional(),
  accounts: accounts.optional(),
  max_concurrent_accounts: boundedInt('max_concurrent_accounts', 1, 64, 4).meta(ui(
    'Maximum concurrent accounts',
    'With accounts: how many accounts are read at the same time (1 to 64). Each key is paced on its own rate budget, under max_concurrent_requests.',
    17,
  )),
}).superRefine((config, ctx) => {
  if (config.api_key !== undefined && config.accounts !== undefined) {
    ctx.addIssue({ code: 'custom', message: 'give either api_key (one account) or accounts (many accounts), not both', path: ['accounts'] });
  } else if (config.api_key === undefined && config.accounts === undefined) {
    ctx.addIssue({ code: 'custom', message: 'api_key is required: the account API key, <prefix>_live_<secret> (or accounts, a list of {"name", "api_key"}, for many accounts)', path: ['api_key'] });
  }
  if (config.accounts !== undefined && config.account_renamed_from !== undefined) {
    ctx.addIssue({ code: 'custom', message: 'account_renamed_from applies to one account: with accounts, give it inside the entry of the renamed account', path: ['account_renamed_from'] });
  }
  for (const message of treatmentProblems(config)) ctx.addIssue({ code: 'custom', message, path: [message.startsWith('field_treatments') ? 'field_treatments' : 'hash_key'] });
});

export type Config = z.infer<typeof ConfigSchema>;

/** One entry of `accounts`. */
export type AccountEntry = NonNullable<Config['accounts']>[number];

/**
 * A config that reads one account: `api_key` given (a config with `api_key`,
 * or one entry of `accounts`, whose `keySetting` names where its key is set:
 * the entry's api_key, and `entry` its name).
 */
export type AccountConfig = Config & { readonly api_key: string; readonly keySetting?: string; readonly entry?: string };

/**
 * The config of one entry of `accounts`: its key and its account_renamed_from,
 * every other setting shared; no `accounts` list.
 */
export function entryConfig(config: Config, entry: AccountEntry): AccountConfig {
  const { accounts: _accounts, account_renamed_from: _renamed, ...shared } = config;
  return {
    ...shared,
    api_key: entry.api_key,
    keySetting: `the api_key of the accounts entry "${entry.name}"`,
    entry: entry.name,
    ...(entry.account_renamed_from === undefined ? {} : { account_renamed_from: entry.account_renamed_from }),
  };
}

const KNOWN_KEYS = new Set(Object.keys(ConfigSchema.shape));

/** The secrets a config holds: no message may print them. */
function configSecrets(given: Readonly<Record<string, unknown>>): string[] {
  const entries: unknown[] = Array.isArray(given.accounts) ? given.accounts : [];
  const entryKeys = entries.map((entry) => (typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>).api_key : undefined));
  return [given.api_key, given.hash_key, ...entryKeys].flatMap((value) => (typeof value === 'string' ? [value, value.trim()] : []));
}

export interface ParsedConfig {
  readonly config: Config;
  /** Keys the connector does not know; ignored with a warning. */
  readonly unknownKeys: readonly string[];
  /** What a face logs as a warning before it starts (the unknown keys, a hash_key that looks easy to guess). */
  readonly warnings: readonly string[];
}

/** The top-level settings whose value is a secret, as a message names each for the user to enter it again. */
const SECRET_SETTINGS: Readonly<Record<string, string>> = { api_key: 'the API key', hash_key: 'the hash key', proxy_url: 'the proxy URL' };

/** Keys whose value is a secret (each entry of accounts holds one): a message may name the type of their value, never the value. */
const SECRET_KEYS: ReadonlySet<string> = new Set([...Object.keys(SECRET_SETTINGS), 'accounts']);

/** The JSON type of a value, with its article: "a string", "an array", "null". */
function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

/** The value at `path` of `input`, or undefined where there is none. */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** Issues about the value given (its type, its range, a choice), whose messages do not quote it. */
const VALUE_ISSUES: ReadonlySet<string> = new Set(['invalid_type', 'too_small', 'too_big', 'invalid_value', 'not_multiple_of']);

/** Whether `message` holds `text` as a word of its own: not 0 within "from 1 to 200". */
function quotes(message: string, text: string): boolean {
  for (let at = message.indexOf(text); at !== -1; at = message.indexOf(text, at + 1)) {
    const before = message.slice(Math.max(0, at - 1), at);
    const after = message.slice(at + text.length, at + text.length + 2);
    // Not within a word or a number (-2, 1.5, 200), and ended by the end of a sentence or a space, not by more digits.
    if (!/[\w.-]$/.test(before) && !/^(\w|\.\d)/.test(after)) return true;
  }
  return false;
}

/**
 * `message` with what was given, when the issue is about the value and the
 * message does not quote it: ` (got the string "200")`, ` (got the number
 * 2.5)`, ` (got null)`, ` (got an object)`; for a secret key, only the type
 * of a wrong-typed value (` (got a number)`), never the value.
 */
function withGiven(message: string, issue: { readonly code: string; readonly path: readonly PropertyKey[] }, input: unknown): string {
  if (!VALUE_ISSUES.has(issue.code)) return message;
  const value = valueAt(input, issue.path);
  if (value === undefined) return message;
  const type = jsonType(value);
  if (SECRET_KEYS.has(String(issue.path[0]))) return issue.code === 'invalid_type' ? `${message} (got ${type})` : message;
  if (value === null) return `${message} (got null)`;
  // JSON.parse reads 1e400 as Infinity, which JSON.stringify would write as null.
  if (typeof value === 'number' && !Number.isFinite(value)) return `${message} (got a number too large to be read)`;
  const text = JSON.stringify(value);
  if (quotes(message, text)) return message;
  if (typeof value === 'object') return text.length <= 60 ? `${message} (got ${type}: ${text})` : `${message} (got ${type})`;
  return `${message} (got ${type.replace(/^an? /, 'the ')} ${text.length <= 60 ? text : `${text.slice(0, 59)}…`})`;
}

/** `text` (naming the unknown `key`), with the key likely meant where there is one. */
function withMeant(text: string, key: string): string {
  const meant = closestName(key, KNOWN_KEYS);
  return meant === undefined ? text : `${text} (did you mean ${meant}?)`;
}

/** The one warning every command gives for keys it does not know. */
function unknownKeysWarning(keys: readonly string[]): string {
  return `Unknown config keys ignored: ${keys.map((key) => withMeant(key, key)).join(', ')}.`;
}

/** The keys each entry of a list setting takes; z.object drops any other, which the warning below then names. */
const ENTRY_KEYS: Readonly<Record<string, { readonly keys: readonly string[]; readonly hint: string }>> = {
  accounts: {
    keys: ['name', 'api_key', 'account_renamed_from'],
    hint: 'an entry of accounts takes name, api_key and account_renamed_from; every other setting is shared by all accounts, at the top level',
  },
  field_treatments: { keys: ['stream', 'field', 'treatment'], hint: 'an entry of field_treatments takes stream, field and treatment' },
};

/** The warning for keys inside entries of accounts or field_treatments that the connector does not know, or undefined. */
function unknownEntryKeysWarning(input: object): string | undefined {
  const parts: string[] = [];
  for (const [setting, { keys, hint }] of Object.entries(ENTRY_KEYS)) {
    const entries = (input as Record<string, unknown>)[setting];
    if (!Array.isArray(entries)) continue;
    const found = entries.flatMap((entry: unknown, index) =>
      typeof entry === 'object' && entry !== null ? Object.keys(entry).filter((key) => !keys.includes(key)).map((key) => `${setting}[${index}].${key}`) : [],
    );
    if (found.length > 0) parts.push(`${found.join(', ')} (${hint})`);
  }
  return parts.length === 0 ? undefined : `Unknown config keys ignored: ${parts.join('; ')}.`;
}

/** The personal-data settings, shared by all accounts: in an entry of accounts they would be ignored, and what they name left the connector. */
const TREATMENT_KEYS = ['personal_data', 'field_treatments', 'hash_key'];

/** Problems for personal-data settings given inside entries of accounts (refused, not ignored with a warning). */
function misplacedTreatments(input: object): string[] {
  const entries = (input as Record<string, unknown>).accounts;
  if (!Array.isArray(entries)) return [];
  return entries.flatMap((entry: unknown, index) =>
    typeof entry === 'object' && entry !== null
      ? TREATMENT_KEYS.filter((key) => Object.hasOwn(entry, key)).map(
          (key) => `accounts[${index}].${key}: personal-data settings are shared by all accounts; set ${key} at the top level (an entry of accounts takes name, api_key and account_renamed_from)`,
        )
      : [],
  );
}

/** What Airbyte shows in place of a saved secret (its UI can send it back, e.g. testing an edited source). */
const AIRBYTE_SECRET_MASK = /^\*+$/;

/**
 * Problems for secrets holding Airbyte's mask instead of their value: read as
 * a value, it would be refused for its form (a key "too short") or taken for
 * a proxy's host name, naming anything but the cause.
 */
function maskedSecrets(input: object): { field: string; message: string }[] {
  const given = input as Record<string, unknown>;
  const masked = (value: unknown): value is string => typeof value === 'string' && AIRBYTE_SECRET_MASK.test(value.trim());
  // The mask is not quoted: it is also taken as a secret (parseUserConfig), and a message would show it as ***.
  const problem = (field: string, what: string) => ({
    field,
    message: `${field} holds only asterisks, the mask Airbyte shows in place of a saved secret, not the secret itself: enter ${what} again in the source's settings`,
  });
  const top = Object.entries(SECRET_SETTINGS).flatMap(([key, what]) => (masked(given[key]) ? [problem(key, what)] : []));
  const entries = Array.isArray(given.accounts) ? (given.accounts as unknown[]) : [];
  const inEntries = entries.flatMap((entry, index) => {
    const key = typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>).api_key : undefined;
    return masked(key) ? [problem(`accounts.${index}.api_key`, 'the API key of this entry')] : [];
  });
  return [...top, ...inEntries];
}

/** Validate a config object; throws ConfigError naming every bad field and what is expected. */
export function parseConfig(input: unknown): ParsedConfig {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ConfigError('The config must be a JSON object with at least api_key and base_url.', { field: 'config' });
  }
  const masked = maskedSecrets(input);
  if (masked.length > 0) {
    throw new ConfigError(`Invalid config: ${masked.map((m) => m.message).join('; ')}.`, { field: masked.map((m) => m.field) });
  }
  // Parsed once a run: zod's compiled fast path (`new Function`) would cost more to build than it saves.
  const result = ConfigSchema.safeParse(input, { jitless: true });
  const unknownKeys = Object.keys(input).filter((key) => !KNOWN_KEYS.has(key));
  const misplaced = misplacedTreatments(input);
  if (result.success && misplaced.length > 0) {
    throw new ConfigError(`Invalid config: ${misplaced.join('; ')}.`, { field: 'accounts' });
  }
  if (!result.success) {
    const fields = [...new Set(result.error.issues.map((issue) => issue.path.join('.') || 'config'))];
    // A value of the wrong type is that one problem: zod still runs a list's length checks on a string ("at most 1000 entries").
    const wrongType = new Set(result.error.issues.filter((issue) => issue.code === 'invalid_type').map((issue) => issue.path.join('.')));
    const issues = result.error.issues.filter((issue) => issue.code === 'invalid_type' || !wrongType.has(issue.path.join('.')));
    // A set: two checks of one value (an integer, in range) can fail with one message, told once.
    const problems = [
      ...new Set(
        issues.map((issue) => {
          const field = issue.path.join('.') || 'config';
          const message = withGiven(issue.message, issue, input);
          return message.startsWith(field) ? message : `${field}: ${message}`;
        }),
      ),
      ...misplaced,
    ];
    // A required key reported missing next to a key the connector does not know is most often a misspelling.
    if (unknownKeys.length > 0) problems.push(`keys this connector does not know (misspelled?): ${unknownKeys.map((k) => withMeant(JSON.stringify(k), k)).join(', ')}`);
    // Messages quote some values; one that looks like a key (in the wrong field) is never quoted.
    const keyLike = Object.values(input).filter((v): v is string => typeof v === 'string' && KEY_SHAPE.test(v.trim()));
    const secrets = [...keyLike.flatMap((v) => [v, v.trim()]), ...configSecrets(input as Record<string, unknown>)];
    throw new ConfigError(redact(`Invalid config: ${problems.join('; ')}.`, secrets), { field: fields });
  }
  const keyWarning = hashKeyWarning(result.data);
  const entryWarning = unknownEntryKeysWarning(input);
  const warnings = [
    ...(unknownKeys.length > 0 ? [unknownKeysWarning(unknownKeys)] : []),
    ...(entryWarning === undefined ? [] : [entryWarning]),
    ...(keyWarning === undefined ? [] : [keyWarning]),
  ];
  return { config: result.data, unknownKeys, warnings };
}

/**
 * Validate a config a user gave, after handing its api_key (if it has one, even an invalid
 * config) and the credentials of its proxy_url and of the proxy variables of `env` to
 * `secrets`, so that no later message can print them.
 */
export function parseUserConfig(
  input: unknown,
  secrets: { addSecret(secret: string): void },
  env: Readonly<Record<string, string | undefined>> = process.env,
): ParsedConfig {
  const given = typeof input === 'object' && input !== null ? (input as Record<string, unknown>) : {};
  for (const secret of configSecrets(given)) secrets.addSecret(secret);
  for (const secret of proxySecrets(given.proxy_url, env)) secrets.addSecret(secret);
  return parseConfig(input);
}

/** The draft-07 JSON Schema of the config, with Airbyte's UI annotations. */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(ConfigSchema, { target: 'draft-07', io: 'input' }) as Record<string, unknown>;
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'Data-Read Source Spec',
    type: 'object',
    required: schema.required,
    additionalProperties: true,
    properties: schema.properties,
  };
}
