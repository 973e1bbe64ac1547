/**
 * The personal-data treatments a replica was built with, kept in the file
 * (`_replica_personal_data`: one row, the treatments as JSON, with a
 * fingerprint of the hash key, never the key). A run with other treatments is
 * refused before anything in the file changes: rows written under the old
 * ones would otherwise sit beside new ones unnoticed (raw e-mails beside
 * tokens, or tokens of two keys that never join).
 *
 * The fingerprint is scrypt of the key with a random salt, stored with its
 * parameters (`$scrypt$ln=14,r=8,p=2$salt$hash`, base64): slow to compute on
 * purpose, so that someone holding the file cannot test guesses of the key
 * quickly. A run computes it once (about 60-90 ms). Files written before it
 * hold a 64-bit HMAC of a fixed label under the key: still checked that way,
 * and replaced by the scrypt form in the transaction of the run's first save.
 */
import { createHmac, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import type { DatabaseSync } from 'node:sqlite';
import { ConfigError } from '../errors.js';
import type { TreatmentPlan } from '../personal-data/treatments.js';
import { peekReadOnly, tableExists, writtenBefore } from './database.js';

const TREATMENTS_TABLE = '_replica_personal_data';
/** The entry of the treatments' JSON that holds the key's fingerprint. */
const KEY_ENTRY = '(hash_key)';

/** scrypt's cost for a new fingerprint: N = 2^14 (16 MiB), r = 8, p = 2. */
const SCRYPT = { ln: 14, r: 8, p: 2 } as const;
const SALT_BYTES = 16;
const HASH_BYTES = 32;
/** The most a stored fingerprint may ask for (a file is input: it must not make a run spend minutes or gigabytes). */
const SCRYPT_MAX = { ln: 20, r: 32, p: 16 } as const;
/** The label whose HMAC under the key was the fingerprint before the scrypt form (its first 16 hex digits). */
const OLD_LABEL = 'source-data-read hash_key fingerprint';
const OLD_FORM = /^[0-9a-f]{16}$/;
const SCRYPT_FORM = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

function scrypt(key: string, salt: Buffer, { ln, r, p }: { ln: number; r: number; p: number }, length: number): Buffer {
  const N = 2 ** ln;
  return scryptSync(key, salt, length, { N, r, p, maxmem: 256 * N * r + 1024 * 1024 });
}

/**
 * The run's hash_key as the replica checks it: each stored fingerprint is
 * verified once, and a new one derived once, whatever asks again.
 */
export class HashKeyCheck {
  readonly #key: string;
  readonly #verdicts = new Map<string, boolean | undefined>();
  #fingerprint: string | undefined;

  constructor(key: string) {
    this.#key = key;
  }

  /** A new fingerprint of the key: scrypt with a random salt, its parameters written with it. */
  fingerprint(): string {
    if (this.#fingerprint === undefined) {
      const salt = randomBytes(SALT_BYTES);
      const hash = scrypt(this.#key, salt, SCRYPT, HASH_BYTES);
      const b64 = (b: Buffer): string => b.toString('base64').replace(/=+$/, '');
      this.#fingerprint = `$scrypt$ln=${SCRYPT.ln},r=${SCRYPT.r},p=${SCRYPT.p}$${b64(salt)}$${b64(hash)}`;
    }
    return this.#fingerprint;
  }

  /** Whether `stored` is a fingerprint of this key; undefined when it is in no form this version reads. */
  matches(stored: string): boolean | undefined {
    if (!this.#verdicts.has(stored)) this.#verdicts.set(stored, this.#verify(stored));
    return this.#verdicts.get(stored);
  }

  #verify(stored: string): boolean | undefined {
    if (OLD_FORM.test(stored)) {
      const old = createHmac('sha256', this.#key).update(OLD_LABEL).digest('hex').slice(0, 16);
      return timingSafeEqual(Buffer.from(old), Buffer.from(stored));
    }
    const m = SCRYPT_FORM.exec(stored);
    if (m === null) return undefined;
    const [ln, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
    const expected = Buffer.from(m[5] ?? '', 'base64');
    if (ln < 1 || ln > SCRYPT_MAX.ln || r < 1 || r > SCRYPT_MAX.r || p < 1 || p > SCRYPT_MAX.p || expected.length < 16) return undefined;
    return timingSafeEqual(scrypt(this.#key, Buffer.from(m[4] ?? '', 'base64'), { ln, r, p }, expected.length), expected);
  }
}

/** Whether a stored fingerprint is in the old form (the 64-bit HMAC), which the next save replaces. */
function isOldFingerprint(stored: string | undefined): stored is string {
  return stored !== undefined && OLD_FORM.test(stored);
}

/**
 * The treatments as a replica remembers them: `{"stream.field": "treatment"}`
 * sorted (the key's fingerprint is added when they are recorded).
 */
function treatmentRecord(plan: TreatmentPlan): Record<string, string> {
  const entries: [string, string][] = [];
  for (const [stream, { fields }] of plan) for (const f of fields) entries.push([`${stream}.${f.field}`, f.treatment]);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries);
}

/** What this run's treatments and key are: `key` when something is hashed (the config then has one). */
export interface RunTreatments {
  readonly record: Readonly<Record<string, string>>;
  readonly key: HashKeyCheck | undefined;
}

/** This run's treatments under `plan`; the key is checked only when something is hashed. */
export function runTreatments(plan: TreatmentPlan, hashKey: string | undefined): RunTreatments {
  const record = treatmentRecord(plan);
  const hashing = Object.values(record).includes('hash');
  return { record, key: hashing && hashKey !== undefined ? new HashKeyCheck(hashKey) : undefined };
}

/** The treatments as a replica records them: the record, with a new fingerprint of the key when something is hashed. */
export function recordedForm(treatments: RunTreatments): Record<string, string> {
  const { key } = treatments;
  return key === undefined ? { ...treatments.record } : { ...treatments.record, [KEY_ENTRY]: key.fingerprint() };
}

/** What differs between the treatments a replica was built with and those of this run, in words; empty when none. */
export function treatmentDifferences(stored: Readonly<Record<string, string>>, now: RunTreatments): string[] {
  const out: string[] = [];
  for (const name of new Set([...Object.keys(stored), ...Object.keys(now.record)])) {
    if (name === KEY_ENTRY) continue;
    const was = stored[name] ?? 'keep';
    const is = now.record[name] ?? 'keep';
    if (was !== is) out.push(`${name}: ${was} then, ${is} now`);
  }
  const fingerprint = stored[KEY_ENTRY];
  if (fingerprint === undefined) {
    if (now.key !== undefined) out.push('hash_key: none used then, one now');
  } else if (now.key === undefined) {
    out.push('hash_key: one used then, none now');
  } else {
    const matches = now.key.matches(fingerprint);
    if (matches === undefined) out.push("hash_key (the file's fingerprint of its key is in a form this version cannot check)");
    else if (!matches) out.push('hash_key (another key: its tokens would not join the stored ones)');
  }
  return out;
}

/** The treatments row as stored: its JSON text and what it holds. */
interface StoredRow {
  readonly text: string;
  readonly treatments: Record<string, string>;
}

function storedRow(db: DatabaseSync): StoredRow | undefined {
  if (!tableExists(db, TREATMENTS_TABLE)) return undefined;
  const row = db.prepare(`SELECT treatments FROM ${TREATMENTS_TABLE} WHERE id = 1`).get();
  if (row === undefined) return undefined;
  const text = String(row.treatments);
  const parsed: unknown = JSON.parse(text);
  return typeof parsed === 'object' && parsed !== null ? { text, treatments: parsed as Record<string, string> } : undefined;
}

/** The treatments stored in the file; undefined for a new file; `{}` (all kept) for one written before they were recorded. */
function storedTreatments(db: DatabaseSync): Record<string, string> | undefined {
  const row = storedRow(db);
  if (row !== undefined) return row.treatments;
  return writtenBefore(db) ? {} : undefined;
}

/**
 * Refuse a file built with other treatments: a ConfigError naming the change.
 * The file is read on a read-only connection, before anything opens it for
 * writing, so a refused file is left byte for byte as it was.
 */
export function refuseOtherTreatments(path: string, treatments: RunTreatments): void {
  refuseIfOther(fileWords(path), peekReadOnly(path, storedTreatments), treatments);
}

/** How a refusal names the store (`The store X`) and where else to replicate (`another store (...)`). */
type TreatmentWords = { readonly subject: string; readonly elsewhere: string };

/** The refusal of a store whose `stored` treatments differ from this run's (none when they are the same, or the store is new): every store's. */
export function refuseIfOther(words: TreatmentWords, stored: Readonly<Record<string, string>> | undefined, treatments: RunTreatments): void {
  if (stored === undefined) return;
  const differences = treatmentDifferences(stored, treatments);
  if (differences.length === 0) return;
  throw new ConfigError(
    `${words.subject} was built with other personal-data treatments than this config's (${differences.join('; ')}). ` +
      'Its rows would mix values treated both ways. Nothing was changed in it. ' +
      `Restore the treatments it was built with, or replicate into ${words.elsewhere}.`,
    { field: 'field_treatments' },
  );
}

/** The SQLite file as the refusal names it, and where else to replicate. */
const fileWords = (path: string): TreatmentWords => ({ subject: `The replica "${path}"`, elsewhere: 'a new file (--db with another path, or delete this one to start over)' });

/**
 * Record the treatments a file is written with, under the writer lock. Read
 * again there: another run may have written the file since
 * refuseOtherTreatments looked (a lock taken over from it), and treatments
 * once recorded are never replaced. Returns what the next save writes in its
 * transaction, if anything: a fingerprint of the old form replaced by the
 * scrypt form (the rest of the record as it was).
 */
export function recordTreatments(db: DatabaseSync, path: string, treatments: RunTreatments): (() => void) | undefined {
  const stored = storedRow(db);
  refuseIfOther(fileWords(path), stored?.treatments ?? storedTreatments(db), treatments);
  db.exec(`CREATE TABLE IF NOT EXISTS ${TREATMENTS_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), treatments TEXT NOT NULL)`);
  const { key } = treatments;
  if (stored === undefined) {
    // Written when new only: an ordinary run adds no page to the WAL.
    db.prepare(`INSERT INTO ${TREATMENTS_TABLE} (id, treatments) VALUES (1, ?) ON CONFLICT (id) DO NOTHING`).run(JSON.stringify(recordedForm(treatments)));
    return undefined;
  }
  if (key === undefined || !isOldFingerprint(stored.treatments[KEY_ENTRY])) return undefined;
  const upgraded = JSON.stringify({ ...stored.treatments, [KEY_ENTRY]: key.fingerprint() });
  // Only over the row as it was read: run again by a second writer, or after another run upgraded it, it changes nothing.
  const update = db.prepare(`UPDATE ${TREATMENTS_TABLE} SET treatments = ? WHERE id = 1 AND treatments = ?`);
  return () => {
    update.run(upgraded, stored.text);
  };
}
