/**
 * Errors that cross module boundaries. Every error the connector reports is a
 * ConnectorError: it carries the Airbyte failure type and a message a user can
 * act on. Messages never contain the API key (see `redact`).
 */
export type FailureType = 'config_error' | 'transient_error' | 'system_error';

export class ConnectorError extends Error {
  readonly failureType: FailureType;
  /** Detail for logs and TRACE internal_message; never shown as the main message. */
  readonly internal: string | undefined;
  /**
   * The failure is the whole run's, not one stream's (the key was refused,
   * the service cannot be reached, its quota is used up): every stream meets
   * it, so it stops them all and is said once, not once per stream.
   */
  readonly runWide: boolean;
  constructor(failureType: FailureType, message: string, options: { internal?: string; cause?: unknown; runWide?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ConnectorError';
    this.failureType = failureType;
    this.internal = options.internal;
    this.runWide = options.runWide === true;
  }
}

/**
 * Invalid config, catalog or state given by the user. `fields` names what the
 * error is about, as data: config keys (`page_size`), paths into a catalog or
 * state (`catalog.streams.0.sync_mode`, `state.contacts.resume.cursor`), the
 * input file (`config`, `catalog`, `state`, `db`) or a command-line flag
 * (`--format`); empty when no one field is to blame.
 */
export class ConfigError extends ConnectorError {
  readonly fields: readonly string[];
  constructor(message: string, options: { field?: string | readonly string[]; internal?: string; cause?: unknown; runWide?: boolean } = {}) {
    super('config_error', message, options);
    this.name = 'ConfigError';
    const field = options.field;
    this.fields = field === undefined ? [] : typeof field === 'string' ? [field] : [...field];
  }

  /** The (first) field the error is about. */
  get field(): string | undefined {
    return this.fields[0];
  }
}

/**
 * The service broke its own contract: a 2xx body that is not the documented
 * JSON (after retries), a page envelope or account document of the wrong
 * shape, a watermark that changes within a read, a cursor loop, a record
 * without its key. Always a system_error: neither the user nor a retry can fix it.
 */
export class ContractError extends ConnectorError {
  /** The HTTP status of the answer that broke it, when it was an answer. */
  readonly status: number | undefined;
  constructor(message: string, options: { status?: number; internal?: string; cause?: unknown } = {}) {
    super('system_error', `The Data-Read service broke its API contract: ${message}`, options);
    this.name = 'ContractError';
    this.status = options.status;
  }
}

/** What a thrown value says: an Error's message, anything else as text. */
export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * What an error the connector did not expect says, for stderr and the
 * summary: its name (and Node's code), and its message up to its first quote
 * or line break. A library's message may quote the data it was given, a
 * record's value before any treatment (V8's: `Unexpected token 'A', "Ana
 * Souza"... is not valid JSON`, `Cannot create property 'x' on string
 * 'ana@example.com'`; a driver's: `invalid input syntax for type integer:
 * "..."`), and BigInt's without quotes. The connector's own errors
 * (ConnectorError) are said whole; anything thrown that is not an Error, by
 * its type alone. The cut goes back to the start of the word holding the
 * quote, so that a secret that holds one (a password in a URL) is not left
 * in part where the outputs' redaction would no longer know it; secrets are
 * also redacted first where the caller knows them (`scrub`).
 */
export function faultWords(err: unknown, scrub: (text: string) => string = (text) => text): string {
  if (!(err instanceof Error)) return `a ${err === null ? 'null' : typeof err} thrown, not an Error (its value is not shown: it may be data)`;
  const code = (err as { code?: unknown }).code;
  const name = `${err.name}${typeof code === 'string' && code !== '' ? ` [${code}]` : ''}`;
  const message = scrub(err.message);
  if (err instanceof ConnectorError) return `${name}: ${message}`;
  if (/^Cannot convert [\s\S]* to a BigInt$/.test(message)) return `${name}: Cannot convert a text to a BigInt (not shown: it may be data)`;
  const quote = /['"`\n\r]/.exec(message);
  if (quote === null) return `${name}: ${message}`;
  const cut = message.slice(0, quote.index).search(/\S*$/);
  return `${name}: ${message.slice(0, cut).trimEnd()} ... (the rest not shown: it may quote data)`;
}

/** What a database's words show in place of the value they quoted (withoutQuotedValues). */
const VALUE_NOT_SHOWN = '(the value is not shown: it may be personal data)';

/**
 * A database's words about a value it refused, without the value, for a
 * message: what lies from the first quote to the last (PostgreSQL's `invalid
 * input syntax for type bigint: "+55 11 ..."`, DuckDB's `Could not convert
 * string '...' to INT64 when casting from source column phone`, `Duplicate
 * key "email: ..."`; a value holding quotes lies between them too), a number
 * after `with value`, and the row of DuckDB's `Original Line:` are replaced;
 * the words around them (the type, the column) stay. A record's value is
 * personal data whatever `personal_data` says of it: a log line never
 * quotes one.
 */
export function withoutQuotedValues(text: string): string {
  const unquoted = text.replace(/^(Original Line:).*$/gm, `$1 ${VALUE_NOT_SHOWN}`).replace(/\bwith value \S+/g, `with value ${VALUE_NOT_SHOWN}`);
  // A single quote between two letters is an apostrophe of the words (`can't`), unless it lies between two quotes.
  const quotes = [...unquoted.matchAll(/"|(?<![\p{L}\p{N}])'|'(?![\p{L}\p{N}])/gu)].map((m) => m.index);
  const [first, last] = [quotes[0], quotes.at(-1)];
  if (first === undefined || last === undefined) return unquoted;
  return `${unquoted.slice(0, first)}${VALUE_NOT_SHOWN}${last > first ? unquoted.slice(last + 1) : ''}`;
}

/** Wrap anything thrown into a ConnectorError (unexpected errors are system errors, said as faultWords says them). */
export function toConnectorError(err: unknown): ConnectorError {
  if (err instanceof ConnectorError) return err;
  return new ConnectorError('system_error', `Unexpected error in the connector: ${faultWords(err)}`, { cause: err });
}

/**
 * The forms a secret takes in output: as is; JSON-escaped (`"` as `\"`, `\`
 * as `\\`: in a JSON line, or a JSON body a message quotes), and escaped
 * twice (such a body quoted in a JSON line); URL-encoded (a proxy's
 * credentials in an address). Longest first, so that no shorter form leaves
 * a piece of a longer one behind.
 */
export function secretForms(secret: string): string[] {
  const once = JSON.stringify(secret).slice(1, -1);
  const twice = JSON.stringify(once).slice(1, -1);
  let encoded = secret;
  try {
    encoded = encodeURIComponent(secret);
  } catch {
    // a lone surrogate cannot be URL-encoded, nor sent in one
  }
  return [...new Set([secret, once, twice, encoded])].sort((a, b) => b.length - a.length);
}

/** `text` with the password of a URL in it (`scheme://user:PASSWORD@`, `password=...`) as `***`: what a message may quote of a URL it could not read. */
export function maskUrlPassword(text: string): string {
  // Up to the last `@`, and all that follows `password=`: a password typed with an unencoded `/`, `?`, `#`, `@` or `&` is masked whole.
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/?#]*:).*@/i, '$1***@').replace(/([?&]password=).*/i, '$1***');
}

/** Secrets shorter than this are left alone by redaction (they would blot out ordinary words); no form of a longer one is shorter. */
const MIN_SECRET_LENGTH = 4;

/**
 * Redaction of a set of secrets, for the many texts a run says (every log
 * line, every message): the forms of every secret (secretForms) are worked
 * out once, longest first, and indexed by their first characters, so that a
 * text holding none of them (most) is passed over in one scan, however many
 * secrets there are (a config of many `accounts` holds a key each). In a
 * text that holds one, each form is replaced in turn, longest first.
 */
export class Redactor {
  /** Every form of every secret, longest first. */
  readonly #forms: readonly string[];
  /** The forms by their first MIN_SECRET_LENGTH characters. */
  readonly #byHead = new Map<string, string[]>();

  constructor(secrets: readonly string[]) {
    this.#forms = secrets.filter((secret) => secret.length >= MIN_SECRET_LENGTH).flatMap(secretForms).sort((a, b) => b.length - a.length);
    for (const form of new Set(this.#forms)) {
      const head = form.slice(0, MIN_SECRET_LENGTH);
      const forms = this.#byHead.get(head);
      if (forms === undefined) this.#byHead.set(head, [form]);
      else forms.push(form);
    }
  }

  redact(text: string): string {
    if (!this.#holdsAForm(text)) return text;
    let out = text;
    for (const form of this.#forms) {
      if (out.includes(form)) out = out.split(form).join('***');
    }
    return out;
  }

  /** Whether any form of any secret occurs in `text`. */
  #holdsAForm(text: string): boolean {
    for (let at = 0; at + MIN_SECRET_LENGTH <= text.length; at++) {
      const forms = this.#byHead.get(text.slice(at, at + MIN_SECRET_LENGTH));
      if (forms !== undefined && forms.some((form) => text.startsWith(form, at))) return true;
    }
    return false;
  }
}

/**
 * Replace every occurrence of each secret in `text` with `***`, in every form
 * it can take there (secretForms). Secrets under 4 characters are left alone
 * (they would blot out ordinary words). For one text; a Redactor for many.
 */
export function redact(text: string, secrets: readonly string[]): string {
  return new Redactor(secrets).redact(text);
}

/** "a", "a and b", "a, b and c". */
export function andList(items: readonly string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}
