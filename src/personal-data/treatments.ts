/**
 * Personal data treated before it leaves the connector. The streams table
 * marks the fields that identify a person (and how their values normalize:
 * e-mail, phone, text); the config says what happens to them
 * (`personal_data`: keep, hash or drop) and to any other field
 * (`field_treatments`). This module turns that into a plan per stream, treats
 * records in place (the engine does it once, before any face sees a record),
 * and says what a treated field looks like in a schema.
 *
 * - `hash`: lower-case hex HMAC-SHA-256 under `hash_key` of the normalized value.
 * - `sha256`: plain SHA-256 hex of the normalized value (guessable: documented).
 * - `email_domain`: the part after the last `@`, lower-case.
 * - `drop`: the field is removed.
 * null stays null. A stream without treatments costs nothing: no plan, no pass.
 * The hashes are node:crypto's (OpenSSL).
 */
import { createHash, createHmac, createSecretKey } from 'node:crypto';
import { ConfigError } from '../errors.js';
import { isObject, isRawNumber } from '../exact-json.js';
import { ACCOUNT_FIELD, SERVICE_ACCOUNT_FIELD, withServiceAccount } from '../schemas/json-schema.js';
import { STREAMS, findStream, type PersonalKind, type StreamDefinition } from '../streams.js';

export const TREATMENTS = ['keep', 'drop', 'hash', 'sha256', 'email_domain'] as const;
export type Treatment = (typeof TREATMENTS)[number];
export const PERSONAL_DATA_CHOICES = ['keep', 'hash', 'drop'] as const;
type PersonalDataChoice = (typeof PERSONAL_DATA_CHOICES)[number];

interface FieldTreatment {
  readonly stream: string;
  readonly field: string;
  readonly treatment: Treatment;
}

/** The config keys this module reads. */
export interface TreatmentConfig {
  readonly personal_data: PersonalDataChoice;
  readonly field_treatments: readonly FieldTreatment[];
  readonly hash_key?: string | undefined;
  /** Many accounts: the service's own field `account` is served as service_account. */
  readonly accounts?: readonly unknown[] | undefined;
}

/** One treated field of a stream. */
interface TreatedField {
  readonly field: string;
  readonly treatment: Exclude<Treatment, 'keep'>;
  /** How its values are normalized before hashing. */
  readonly kind: PersonalKind;
}

/** The treatments of one stream (never empty). */
interface StreamTreatments {
  readonly fields: readonly TreatedField[];
}

/** Treatments per stream name; streams without any are absent. */
export type TreatmentPlan = ReadonlyMap<string, StreamTreatments>;

// ---------------------------------------------------------------- values

const E164_LIKE = /^\+?[0-9]*$/;

/** The value hashed for a field of this kind: e-mail trimmed and lower-case; phone `+` and digits; text trimmed, NFC. */
export function normalize(value: string, kind: PersonalKind): string {
  switch (kind) {
    case 'email':
      return value.trim().toLowerCase();
    case 'phone':
      // Most phones come in E.164 already: a test is cheaper than a replace that changes nothing.
      return E164_LIKE.test(value) ? value : value.replace(/[^+0-9]/g, '');
    case 'text':
      return value.trim().normalize('NFC');
  }
}

/** HMAC-SHA-256 under `key` (a string as UTF-8): the lower-case hex MAC of a message (a string as UTF-8). */
export function hmacSha256(key: string | Uint8Array): (message: string | Uint8Array) => string {
  // A KeyObject made once: the key is not encoded again for every value.
  const secret = createSecretKey(typeof key === 'string' ? Buffer.from(key, 'utf8') : key);
  return (message) => createHmac('sha256', secret).update(message).digest('hex');
}

/** Plain SHA-256 of a string's UTF-8 bytes, lower-case hex. */
export function sha256Hex(message: string): string {
  return createHash('sha256').update(message).digest('hex');
}

/**
 * A domain name (labels of letters, marks, digits, `-` and `_`, any script,
 * a final dot allowed; the last label not of digits alone, RFC 3696
 * section 2: `ana@5511987654321` holds a phone, `ana@192.0.2.1` an address)
 * or an address literal (`[192.0.2.1]`, `[ipv6:...]`).
 */
const DOMAIN = /^(?:(?:[\p{L}\p{M}\p{N}_-]+\.)*(?!\p{N}+\.?$)[\p{L}\p{M}\p{N}_-]+\.?|\[(?:ipv6:)?[0-9a-f:.]+\])$/u;

/**
 * The part after the last `@`, lower-case and trimmed; null when there is no
 * `@` or what follows it is not a domain name: the value was more than an
 * address (`Ana <ana@x.com> +55 11 ...`), and keeping its tail would keep
 * what the treatment is there to remove.
 */
export function emailDomain(value: string): string | null {
  const at = value.lastIndexOf('@');
  if (at < 0) return null;
  const domain = value.slice(at + 1).trim().toLowerCase();
  return DOMAIN.test(domain) ? domain : null;
}

/** A non-string value as text to hash (numbers as written, objects as JSON). */
function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (isRawNumber(value)) return value.rawJSON;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value) ?? '';
}

/** A treated field whose values change (not dropped). */
type ChangingField = TreatedField & { readonly treatment: Exclude<Treatment, 'keep' | 'drop'> };

/** What a field's value (never null) becomes. */
type ValueTreatment = (value: unknown) => string | null;

/** How one field's values are treated; `mac`: the HMAC under hash_key (for `hash`). */
function valueTreatment(field: ChangingField, mac: ((message: string) => string) | undefined): ValueTreatment {
  const { kind } = field;
  switch (field.treatment) {
    case 'hash': {
      if (mac === undefined) throw new Error('the hash treatment needs hash_key');
      return (value) => mac(normalize(asText(value), kind));
    }
    case 'sha256':
      return (value) => sha256Hex(normalize(asText(value), kind));
    case 'email_domain':
      // Only a string is an address: the JSON text of an object or array would keep its other members after the last @.
      return (value) => (typeof value === 'string' ? emailDomain(value) : null);
  }
}

// ---------------------------------------------------------------- plan

/** Every stream's treatments under this config (personal_data for the marked fields, then the overrides). */
export function treatmentPlan(config: TreatmentConfig, streams: readonly StreamDefinition[] = STREAMS): TreatmentPlan {
  const plan = new Map<string, StreamTreatments>();
  for (const stream of streams) {
    const chosen = new Map<string, Treatment>();
    if (config.personal_data !== 'keep') for (const field of Object.keys(stream.personal)) chosen.set(field, config.personal_data);
    for (const t of config.field_treatments) if (t.stream === stream.name) chosen.set(t.field, t.treatment);
    const fields: TreatedField[] = [];
    // The kind for normalization: as the streams table marks the field, else text.
    for (const [field, treatment] of chosen) if (treatment !== 'keep') fields.push({ field, treatment, kind: stream.personal[field] ?? 'text' });
    if (fields.length > 0) plan.set(stream.name, { fields });
  }
  return plan;
}

/**
 * The fields of a stream whose values no log line may quote: those the
 * streams table marks personal (whatever personal_data says) and any the
 * config treats.
 */
export function withheldFields(stream: StreamDefinition, config: TreatmentConfig): ReadonlySet<string> {
  const treated = treatmentPlan(config, [stream]).get(stream.name)?.fields.map((f) => f.field) ?? [];
  return new Set([...Object.keys(stream.personal), ...treated]);
}

/**
 * Fields no treatment may touch and no field selection removes: the key, the
 * cursor, the tombstone columns, and what the deletion log's tombstones are
 * made of (each with why).
 */
export function untreatable(stream: StreamDefinition): Map<string, string> {
  const out = new Map<string, string>([[stream.primaryKey, `the primary key of ${stream.name}`]]);
  if (stream.cursorField) out.set(stream.cursorField, `the cursor of ${stream.name}`);
  if (stream.tombstoneObjectType !== null) {
    out.set('_ab_cdc_deleted_at', `a tombstone column of ${stream.name}`);
    out.set('_sdc_deleted_at', `a tombstone column of ${stream.name}`);
  }
  if (stream.deletionLog) {
    const which = `one of the fields of ${stream.name} that say which record a deletion removes`;
    out.set(stream.deletionLog.objectTypeField, which);
    out.set(stream.deletionLog.objectIdField, which);
  }
  return out;
}

/** Whether a config hashes anything (then it needs hash_key). */
function hashes(config: { readonly personal_data: string; readonly field_treatments: readonly FieldTreatment[] }): boolean {
  return config.personal_data === 'hash' || config.field_treatments.some((t) => t.treatment === 'hash');
}

/**
 * What is wrong with the treatments of a config, each as a sentence naming
 * the entry (`field_treatments[i]`) and what is allowed; empty when nothing.
 * A field the built-in schemas lack is not judged here (the service may
 * describe it): see unknownTreatedFields.
 */
export function treatmentProblems(config: {
  readonly personal_data: string;
  readonly field_treatments: readonly FieldTreatment[];
  readonly hash_key?: string | undefined;
  readonly accounts?: readonly unknown[] | undefined;
}): string[] {
  const problems: string[] = [];
  const names = STREAMS.map((s) => s.name).join(', ');
  const seen = new Map<string, number>();
  for (const [i, t] of config.field_treatments.entries()) {
    const entry = `field_treatments[${i}] (${JSON.stringify(t.stream)}.${JSON.stringify(t.field)})`;
    const stream = findStream(t.stream);
    if (!stream) {
      problems.push(`${entry} names stream ${JSON.stringify(t.stream)}, which this source does not have; streams: ${names}`);
      continue;
    }
    const why = untreatable(stream).get(t.field);
    if (why !== undefined) {
      problems.push(`${entry}: ${t.field} cannot be treated (it is ${why}); treat other fields`);
      continue;
    }
    // With accounts, `account` is the entry's name (first in the key), and the service's own field moved to service_account
    // before any treatment: a treatment naming `account` would treat nothing, and the value it was meant for go out untreated.
    if (config.accounts !== undefined && t.field === ACCOUNT_FIELD) {
      problems.push(
        `${entry}: with accounts, ${ACCOUNT_FIELD} is the entry's name, first in the primary key of ${stream.name}, and cannot be treated; ` +
          `a field "${ACCOUNT_FIELD}" the service sends is kept as ${SERVICE_ACCOUNT_FIELD}: name ${SERVICE_ACCOUNT_FIELD} to treat it`,
      );
      continue;
    }
    const key = `${t.stream}\u0000${t.field}`;
    const first = seen.get(key);
    if (first !== undefined) problems.push(`${entry} repeats field_treatments[${first}]; give each field one treatment`);
    else seen.set(key, i);
  }
  if (hashes(config) && (config.hash_key === undefined || config.hash_key === '')) {
    // The way out named is one the key at fault takes: personal_data has no sha256, a field's treatment has.
    const [who, otherwise] =
      config.personal_data === 'hash'
        ? ['personal_data is hash', 'or set personal_data to drop, or treat the fields sha256 (guessable) in field_treatments']
        : [`field_treatments[${config.field_treatments.findIndex((t) => t.treatment === 'hash')}] is hash`, 'or make its treatment sha256 (guessable) or drop'];
    problems.push(`${who} but hash_key is not set: give hash_key (a long random secret, kept for as long as the tokens must join), ${otherwise}`);
  }
  return problems;
}

/** The bits a hash_key should hold at the least, even if random (`openssl rand -hex 32` gives 256). */
const STRONG_KEY_BITS = 128;
/** Words people put in keys, and runs of digits or letters in order. */
const COMMON_PARTS = /passw|secret|qwerty|azerty|letmein|admin|welcome|changeme|default|example|sample|test|dummy|012345|123456|234567|345678|456789|abcdef/i;

/**
 * Whether a key is words (lower-case, capitalized or upper-case, run
 * together or apart) with at most digits and signs after them, as people
 * make keys: random letters seldom keep to one of those cases per word.
 */
function wordLike(key: string): boolean {
  const words = key.replace(/^[^0-9a-zA-Z]+/, '').replace(/[^a-zA-Z]+$/, '').split(/[^0-9a-zA-Z]+/);
  return words.every((word) => /^(?:[a-z]*(?:[A-Z][a-z]+)*|[A-Z]+)$/.test(word) && word !== '');
}

/**
 * Why a hash_key looks easy to guess (a reason in general words, never
 * quoting the key), or undefined: too short for the characters it draws
 * from, few distinct characters, only digits, a word with a number, or a
 * common word or run of characters.
 */
export function weakKeyReason(key: string): string | undefined {
  const chars = [...key];
  const pool = (/[0-9]/.test(key) ? 10 : 0) + (/[a-z]/.test(key) ? 26 : 0) + (/[A-Z]/.test(key) ? 26 : 0) + (/[^0-9a-zA-Z]/.test(key) ? 33 : 0);
  // Hex digits of one case: 16 possible characters, whatever the classes say.
  const alphabet = /^[0-9a-f]+$|^[0-9A-F]+$/.test(key) ? 16 : pool;
  if (/^[0-9]*$/.test(key)) return 'only digits';
  if (new Set(chars).size < 8) return 'few distinct characters';
  if (chars.length * Math.log2(alphabet) < STRONG_KEY_BITS) return 'too short for the characters it is made of';
  if (wordLike(key)) return 'a word or words with at most a number';
  if (COMMON_PARTS.test(key)) return 'a common word or a run of characters in order';
  return undefined;
}

/** The warning for a config whose hash treatment uses a key that looks easy to guess; undefined otherwise. */
export function hashKeyWarning(config: TreatmentConfig): string | undefined {
  const reason = hashes(config) && config.hash_key !== undefined ? weakKeyReason(config.hash_key) : undefined;
  if (reason === undefined) return undefined;
  return (
    `hash_key looks easy to guess (${reason}): whoever holds hashed values can test guesses of it against known e-mails or phones. ` +
    'Use a long random secret, for example the 64 characters of `openssl rand -hex 32`; a new key changes every token (a full refresh).'
  );
}

/** The fields of a record schema. */
function propertyNames(schema: unknown): Set<string> {
  const props = typeof schema === 'object' && schema !== null ? (schema as { properties?: unknown }).properties : undefined;
  return new Set(typeof props === 'object' && props !== null ? Object.keys(props) : []);
}

/**
 * The field_treatments entries naming a field that none of `schemas` declares
 * (the built-in ones merged with the service's description), as one message;
 * undefined when every field is known.
 */
export function unknownTreatedFields(config: TreatmentConfig, schemas: ReadonlyMap<string, unknown>): string | undefined {
  const unknown: string[] = [];
  for (const [i, t] of config.field_treatments.entries()) {
    const given = schemas.get(t.stream);
    // With accounts, a field `account` the service describes is served (and treated) as service_account.
    const schema = config.accounts !== undefined && isObject(given) ? withServiceAccount(given) : given;
    if (schema === undefined) continue;
    const fields = propertyNames(schema);
    if (!fields.has(t.field)) unknown.push(`field_treatments[${i}]: ${t.stream} has no field ${JSON.stringify(t.field)} (its fields: ${[...fields].join(', ')})`);
  }
  return unknown.length === 0 ? undefined : `${unknown.join('; ')}.`;
}

/** A field name as compared for a likely slip: Unicode NFC, lower case. */
const looseName = (name: string): string => name.normalize('NFC').toLowerCase();

/**
 * The field_treatments entries naming a field the stream lacks but has in
 * another case or Unicode form (`Email` for `email`), as one message: records
 * carry the field as the stream has it, so such an entry would treat nothing
 * and let the values out as received, wherever the schemas come from.
 */
function miswrittenTreatedFields(config: TreatmentConfig, schemas: ReadonlyMap<string, unknown>): string | undefined {
  const found: string[] = [];
  for (const [i, t] of config.field_treatments.entries()) {
    const fields = propertyNames(schemas.get(t.stream));
    if (fields.has(t.field)) continue;
    const meant = [...fields].find((f) => looseName(f) === looseName(t.field));
    if (meant !== undefined) found.push(`field_treatments[${i}]: ${t.stream} has no field ${JSON.stringify(t.field)} but has ${JSON.stringify(meant)}`);
  }
  return found.length === 0 ? undefined : `${found.join('; ')}.`;
}

// ---------------------------------------------------------------- records

/** Treats one page of a stream's records in place. */
export type RecordTreater = (records: readonly Record<string, unknown>[]) => void;

/** A field whose values a treater changes, and how. */
interface FieldOperation {
  readonly name: string;
  readonly treat: ValueTreatment;
}

/**
 * The treater of a stream's records (by its `treatments`), or undefined when it has nothing to do.
 * The stream's operations are made once; each record is then treated field
 * by field and its dropped fields removed. (The face's field selection ran
 * before it: a field it removed is not treated.)
 */
export function recordTreater(treatments: StreamTreatments | undefined, hashKey: string | undefined): RecordTreater | undefined {
  const fields = treatments?.fields ?? [];
  if (fields.length === 0) return undefined;
  const changed = fields.filter((f): f is ChangingField => f.treatment !== 'drop');
  const dropped = fields.filter((f) => f.treatment === 'drop').map((f) => f.field);
  const mac = hashKey !== undefined && changed.some((f) => f.treatment === 'hash') ? hmacSha256(hashKey) : undefined;
  const operations: readonly FieldOperation[] = changed.map((f) => ({ name: f.field, treat: valueTreatment(f, mac) }));
  return (records) => {
    for (const record of records) {
      for (const { name, treat } of operations) {
        const value = record[name];
        if (value !== null && value !== undefined) record[name] = treat(value);
      }
      for (const name of dropped) delete record[name];
    }
  };
}

// ---------------------------------------------------------------- schemas

const METHOD: Readonly<Record<'hash' | 'sha256', string>> = {
  hash: 'HMAC-SHA-256 under the configured hash_key',
  sha256: 'plain SHA-256 (guessable from a list of known values)',
};

const NORMALIZATION: Readonly<Record<PersonalKind, string>> = {
  email: 'the e-mail trimmed and lower-cased',
  phone: 'the phone reduced to + and digits',
  text: 'the text trimmed, Unicode NFC',
};

type Schema = { [key: string]: unknown };

/** The property schema of a treated field (undefined: dropped). */
function treatedProperty(field: TreatedField, original: unknown): Schema | undefined {
  const was = typeof original === 'object' && original !== null ? (original as Schema) : {};
  const what = typeof was.description === 'string' ? `${was.description.replace(/\.$/, '')}: ` : '';
  switch (field.treatment) {
    case 'drop':
      return undefined;
    case 'email_domain':
      return { type: ['null', 'string'], description: `${what}only the domain (the part after the last @, lower-case)` };
    case 'hash':
    case 'sha256':
      return {
        type: ['null', 'string'],
        minLength: 64,
        maxLength: 64,
        pattern: '^[0-9a-f]{64}$',
        description: `${what}lower-case hex ${METHOD[field.treatment]} of ${NORMALIZATION[field.kind]}; null stays null`,
      };
  }
}

/**
 * A record schema as the treatments make it: dropped fields gone, treated ones
 * described (a hashed field: a string of 64 hex characters, the method and
 * normalization named). The schema given is not changed.
 */
export function treatSchema<S extends Schema>(schema: S, treatments: StreamTreatments | undefined): S {
  if (treatments === undefined) return schema;
  const props = schema.properties;
  if (typeof props !== 'object' || props === null) return schema;
  const properties: Schema = { ...(props as Schema) };
  for (const field of treatments.fields) {
    if (!(field.field in properties) && field.treatment !== 'drop') continue;
    const treated = treatedProperty(field, properties[field.field]);
    if (treated === undefined) delete properties[field.field];
    else properties[field.field] = treated;
  }
  const required = Array.isArray(schema.required) ? (schema.required as unknown[]).filter((r) => typeof r === 'string' && r in properties) : undefined;
  return { ...schema, properties, ...(required ? { required } : {}) };
}

/** Every schema of `schemas` treated by `plan` (the same map when the plan is empty). */
function treatSchemas<S extends Schema>(schemas: ReadonlyMap<string, S>, plan: TreatmentPlan): ReadonlyMap<string, S> {
  if (plan.size === 0) return schemas;
  return new Map([...schemas].map(([name, schema]) => [name, treatSchema(schema, plan.get(name))]));
}

// ---------------------------------------------------------------- what a command declares

/**
 * The config_error for treatments naming fields the service does not
 * describe: a misspelling most often, or a field the service sends without
 * describing it, which only the built-in schemas let be treated (removing the
 * entry would let it out as received).
 */
export function unknownTreatedFieldsMessage(unknown: string): string {
  return (
    `Invalid config: ${unknown} Name a field the stream has (a top-level field), or remove the entry; ` +
    'to treat a field the service sends without describing it, set use_service_schema to false (the treatment then applies wherever records carry the field).'
  );
}

/**
 * The schemas a command declares under this config's treatments. When
 * `described` (the schemas hold the service's description: every field the
 * service has), a field_treatments entry naming a field none declares is a
 * ConfigError; otherwise (built-in schemas only) it may be a field the
 * service added: `warn` is told, and the treatment applies if records carry it.
 */
export function treatedSchemasFor<S extends Schema>(
  config: TreatmentConfig,
  schemas: ReadonlyMap<string, S>,
  described: boolean,
  warn: (message: string) => void,
): ReadonlyMap<string, S> {
  // With accounts, treatments name the service's `account` as the records carry it: service_account.
  const served = config.accounts === undefined ? schemas : new Map([...schemas].map(([name, schema]) => [name, withServiceAccount(schema) as S]));
  const unknown = unknownTreatedFields(config, served);
  if (unknown !== undefined) {
    const miswritten = miswrittenTreatedFields(config, served);
    if (miswritten !== undefined) throw new ConfigError(`Invalid config: ${miswritten} Write the field as the stream has it.`, { field: 'field_treatments' });
    if (described) {
      throw new ConfigError(unknownTreatedFieldsMessage(unknown), { field: 'field_treatments' });
    }
    warn(`field_treatments names fields the built-in schemas lack (the service's description was not read): ${unknown} Each is treated if records carry it.`);
  }
  return treatSchemas(served, treatmentPlan(config));
}
