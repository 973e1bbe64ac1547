/**
 * Values that do not fit their declared type (1.5 or "12" in an integer
 * field, a number in a string field, null where null is not allowed) are
 * passed on as received; a strict destination may reject them, so the user
 * hears it from us: the first value of each kind (field, declared type, what
 * came) per stream and sync, in one WARN when the stream ends. So is a
 * record without its cursor field, which the schema declares required
 * (the service's contract: never absent, never null).
 *
 * Every record is checked, so the schema is read once per stream into data: a
 * map from each declared field to its types as bits. A record costs a map
 * look-up and a `typeof` per field; only a record that does not fit takes the
 * slow path that says why.
 */
import { isRawNumber, type RawNumber } from '../exact-json.js';
import { inertLine } from '../runtime/output.js';
import { builtInSchema, type JsonSchema } from '../schemas/json-schema.js';
import type { StreamDefinition } from '../streams.js';
import type { Data } from './sync-sink.js';

type JsonType = 'null' | 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array';

interface DeclaredField {
  readonly name: string;
  readonly types: readonly JsonType[];
  /** The bits of the types it accepts (a whole number fits "number"). */
  readonly accepts: number;
}

const JSON_TYPES: readonly JsonType[] = ['null', 'string', 'integer', 'number', 'boolean', 'object', 'array'];
const NUMBER_TEXT = /^-?(\d+)(?:\.(\d+))?(?:[eE]([-+]?\d+))?$/;

/** Whether a JSON number's text is a whole number (1.0, 1e3, 9007199254740993 are; 1.5, 1e-1 are not), as JSON Schema's "integer". */
export function isIntegralText(text: string): boolean {
  const m = NUMBER_TEXT.exec(text);
  if (m === null) return false;
  const fraction = m[2] ?? '';
  const digits = `${m[1] ?? ''}${fraction}`.replace(/0+$/, '');
  if (/^0*$/.test(digits)) return true;
  const trailingZeros = `${m[1] ?? ''}${fraction}`.length - digits.length;
  // value = digits × 10^(exponent − fraction length + trailing zeros)
  return Number(m[3] ?? '0') - fraction.length + trailingZeros >= 0;
}

/** The JSON type of a received value, as JSON Schema names it ("integer" for whole numbers). */
export function jsonTypeOf(value: unknown): JsonType {
  if (value === null) return 'null';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  if (isRawNumber(value)) return isIntegralText((value as RawNumber).rawJSON) ? 'integer' : 'number';
  return Array.isArray(value) ? 'array' : 'object';
}

/** JSON types as bits: a field's declared types are one number. */
const BIT: Readonly<Record<JsonType, number>> = { null: 1, string: 2, integer: 4, number: 8, boolean: 16, object: 32, array: 64 };

/** The bit of a received value's type (the common kinds without jsonTypeOf's tests). */
function typeBit(value: unknown): number {
  switch (typeof value) {
    case 'string':
      return BIT.string;
    case 'number':
      return Number.isInteger(value) ? BIT.integer : BIT.number;
    case 'boolean':
      return BIT.boolean;
    default:
      return BIT[jsonTypeOf(value)];
  }
}

function declaredFields(schema: JsonSchema): DeclaredField[] {
  const properties = schema.properties;
  if (typeof properties !== 'object' || properties === null) return [];
  const out: DeclaredField[] = [];
  for (const [name, property] of Object.entries(properties as Record<string, unknown>)) {
    if (typeof property !== 'object' || property === null) continue;
    const declared = (property as { type?: unknown }).type;
    const raw = Array.isArray(declared) ? declared : [declared];
    const types = raw.filter((t): t is JsonType => JSON_TYPES.includes(t as JsonType));
    if (types.length === 0 || types.length !== raw.length) continue;
    const accepts = types.reduce((bits, t) => bits | BIT[t], 0);
    out.push({ name, types, accepts: types.includes('number') ? accepts | BIT.integer : accepts });
  }
  return out;
}

interface Misfit {
  readonly field: string;
  readonly declared: string;
  readonly got: JsonType | 'absent';
  readonly example: string;
  readonly id: string;
  count: number;
}

const describeTypes = (types: readonly JsonType[]): string =>
  types.filter((t) => t !== 'null').join(' or ') + (types.includes('null') ? ' or null' : '');

const GOT: Readonly<Record<JsonType | 'absent', string>> = {
  absent: 'no value',
  null: 'null',
  string: 'a string',
  integer: 'an integer',
  number: 'a number with a fraction',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
};

/**
 * The value shown in the WARN: numbers, booleans, null and short number-like
 * strings as they came; other strings, objects and arrays only by their size
 * (logs are no place for the contents of records: names, e-mails); nothing
 * of a `withheld` field's value (personal data: a phone sent as a number).
 */
function example(value: unknown, withheld: boolean): string {
  if (withheld) return 'its value not shown: personal data';
  if (typeof value === 'string') return /^[-+0-9.eE ]{1,24}$/.test(value) ? JSON.stringify(value) : `a ${value.length}-character string`;
  const count = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;
  if (Array.isArray(value)) return count(value.length, 'item');
  if (typeof value === 'object' && value !== null && !isRawNumber(value)) return count(Object.keys(value).length, 'key');
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

/** The most of a record's id the WARN shows. */
const ID_SHOWN = 80;

/**
 * A record's id as the WARN shows it: the service's text, which goes to a
 * terminal (stderr) as it is, so its control, line-separator and
 * direction characters are escaped (an ESC would run as a terminal command),
 * and a long one is cut.
 */
function shownId(id: string): string {
  const cut = id.length > ID_SHOWN ? `${id.slice(0, ID_SHOWN)}…` : id;
  return inertLine(cut);
}

/** One stream's record check over one sync. */
export class TypeAudit {
  private readonly stream: StreamDefinition;
  private readonly fields: readonly DeclaredField[];
  /** Each declared field's accepted types (DeclaredField.accepts), by name. */
  private readonly accepts: ReadonlyMap<string, number>;
  private readonly misfits = new Map<string, Misfit>();
  private readonly withheld: ReadonlySet<string>;
  /** The stream's cursor field, when the schema declares it: a record must have it. */
  private readonly cursor: string | undefined;

  /**
   * @param schema the record schema the destination was told (default: the stream's built-in schema)
   * @param withheld fields whose values the WARN never quotes (personal data)
   */
  constructor(stream: StreamDefinition, schema: JsonSchema = builtInSchema(stream), withheld: ReadonlySet<string> = new Set()) {
    this.stream = stream;
    this.withheld = withheld;
    this.fields = declaredFields(schema);
    this.accepts = new Map(this.fields.map((f) => [f.name, f.accepts]));
    const cursor = stream.cursorField;
    this.cursor = cursor !== null && this.accepts.has(cursor) ? cursor : undefined;
  }

  /** Check a page of records (as received). */
  check(records: readonly Data[]): void {
    for (const record of records) if (!this.fits(record)) this.explain(record);
  }

  /** Whether every declared field of the record fits (absent fields fit, but for the cursor). */
  private fits(record: Data): boolean {
    if (this.cursor !== undefined && !Object.hasOwn(record, this.cursor)) return false;
    for (const name in record) {
      const accepts = this.accepts.get(name);
      if (accepts !== undefined && (typeBit(record[name]) & accepts) === 0) return false;
    }
    return true;
  }

  private explain(record: Data): void {
    for (const { name, types, accepts } of this.fields) {
      if (!Object.hasOwn(record, name)) {
        if (name === this.cursor) this.note(record, name, types, 'absent', 'absent');
        continue;
      }
      const value = record[name];
      if ((typeBit(value) & accepts) !== 0) continue;
      this.note(record, name, types, jsonTypeOf(value), example(value, this.withheld.has(name)));
    }
  }

  /** Count a misfit of `name`; the first of its kind is the one shown. */
  private note(record: Data, name: string, types: readonly JsonType[], got: JsonType | 'absent', shown: string): void {
    const key = `${name}\u0000${got}`;
    const known = this.misfits.get(key);
    if (known) {
      known.count++;
      return;
    }
    this.misfits.set(key, { field: name, declared: describeTypes(types), got, example: shown, id: shownId(String(record[this.stream.primaryKey])), count: 1 });
  }

  /** The WARN for this stream (undefined when every value fitted). */
  warning(): string | undefined {
    if (this.misfits.size === 0) return undefined;
    const kinds = [...this.misfits.values()].map(
      (m) => `${m.field} is declared ${m.declared} but got ${GOT[m.got]} (${m.example} in record ${m.id}${m.count > 1 ? `, and ${m.count - 1} more` : ''})`,
    );
    return (
      `${this.stream.name}: ${kinds.length === 1 ? 'a value does' : `${kinds.length} kinds of value do`} not fit the declared type; ` +
      `passed on as received (a strict destination may reject them): ${kinds.join('; ')}.`
    );
  }
}
