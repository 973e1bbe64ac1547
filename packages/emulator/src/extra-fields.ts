/**
 * Fields the emulator serves beyond the resources of the API description, the
 * way a service adds a field between two connector releases: every record of
 * the list carries it (new records as they are made; existing ones when the
 * field is added at run time, without changing their cursor, as a service
 * backfilling a column does), and /v1/openapi.json describes it (unless told
 * not to: a field served but not yet described).
 *
 * Values are a function of the record's id, the same on every call: about one
 * in five is null; integers include values beyond 2^53 and decimals values
 * written with a trailing zero (raw JSON numbers, served digit for digit).
 */
import { z } from 'zod';
import { instant } from 'source-data-read/schemas';
import { ProblemError } from './problem.js';
import { hashSeed } from './prng.js';
import { LIST_NAMES, type ListName } from './records.js';
import { servedFieldNames } from './served-schemas.js';

export const EXTRA_FIELD_TYPES = ['integer', 'number', 'string', 'boolean', 'date-time'] as const;
export type ExtraFieldType = (typeof EXTRA_FIELD_TYPES)[number];

export interface ExtraField {
  readonly list: ListName;
  /** Field name: lower-case letters, digits and underscores, not a field the list has already. */
  readonly name: string;
  readonly type: ExtraFieldType;
  /** Listed in /v1/openapi.json (default true); false: served, but not (yet) described. */
  readonly described?: boolean;
  readonly description?: string;
}

const FIELD_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

const JSON_RAW = JSON as unknown as { rawJSON(text: string): unknown };

/** The value of `field` on the record with this id (raw JSON numbers where a JavaScript number would change them). */
export function extraValue(field: ExtraField, id: string): unknown {
  const h = hashSeed(field.list, field.name, id);
  if (h % 5 === 0) return null;
  const big = h % 5 === 1;
  switch (field.type) {
    case 'integer':
      return big ? JSON_RAW.rawJSON((9007199254740993n + BigInt(h % 100_000)).toString()) : h % 100_000;
    case 'number':
      return big ? JSON_RAW.rawJSON(`${h % 10_000}.50`) : (h % 40_000) / 4;
    case 'string':
      return `${field.name}-${(h % 46_656).toString(36)}`;
    case 'boolean':
      return h % 2 === 0;
    case 'date-time':
      return new Date(Date.UTC(2024, 0, 1) + (h % 31_536_000) * 1000 + (h % 1000)).toISOString();
  }
}

/** The zod schema the description gives the field (nullable: some records have null). */
export function extraFieldSchema(field: ExtraField): z.ZodType {
  const description = field.description ?? `Added by the service after this connector's release (${field.type})`;
  switch (field.type) {
    case 'integer':
      // A 64-bit integer (the description says format int64; values go beyond 2^53).
      return z.number().int().meta({ format: 'int64' }).nullable().meta({ description });
    case 'number':
      return z.number().nullable().meta({ description });
    case 'string':
      return z.string().nullable().meta({ description });
    case 'boolean':
      return z.boolean().nullable().meta({ description });
    case 'date-time':
      return instant(description).nullable();
  }
}

/** The emulator's extra fields, shared by every account. */
export class ExtraFields {
  private readonly fields: ExtraField[] = [];
  /** Bumped on every change (the served description is rebuilt). */
  version = 0;

  constructor(fields: readonly ExtraField[] = []) {
    for (const f of fields) this.add(f);
  }

  /** Add a field (a name the list's records carry already is refused). */
  add(field: ExtraField): void {
    if (!(LIST_NAMES as readonly string[]).includes(field.list)) throw new ProblemError(400, `extra field: unknown list '${String(field.list)}' (lists: ${LIST_NAMES.join(', ')})`);
    if (!FIELD_NAME.test(field.name)) throw new ProblemError(400, `extra field: name '${field.name}' must be lower-case letters, digits and underscores`);
    if (!(EXTRA_FIELD_TYPES as readonly string[]).includes(field.type)) throw new ProblemError(400, `extra field: type must be one of ${EXTRA_FIELD_TYPES.join(', ')}`);
    if (servedFieldNames(field.list).has(field.name) || this.fields.some((f) => f.list === field.list && f.name === field.name)) {
      throw new ProblemError(400, `extra field: ${field.list} has a field '${field.name}' already`);
    }
    this.fields.push({ ...field });
    this.version++;
  }

  forList(list: ListName): readonly ExtraField[] {
    return this.fields.filter((f) => f.list === list);
  }

  /** The fields /v1/openapi.json describes, for a list. */
  describedFor(list: ListName): readonly ExtraField[] {
    return this.forList(list).filter((f) => f.described !== false);
  }

  /** Set the list's extra fields on a record made now; true when a value is a raw JSON number. */
  apply(list: ListName, rec: { readonly id: string }): boolean {
    let raw = false;
    for (const field of this.forList(list)) {
      const value = extraValue(field, rec.id);
      (rec as Record<string, unknown>)[field.name] = value;
      if (typeof value === 'object' && value !== null) raw = true;
    }
    return raw;
  }
}

/** `--extra-field LIST.NAME:TYPE[:undescribed]`, e.g. contacts.lifetime_value:integer. */
export function parseExtraField(spec: string): ExtraField {
  const m = /^([a-z_]+)\.([^:]+):([a-z-]+)(:undescribed)?$/.exec(spec);
  if (m === null) throw new RangeError(`--extra-field ${spec}: expected LIST.NAME:TYPE (e.g. contacts.lifetime_value:integer), optionally :undescribed`);
  const [, list, name, type, undescribed] = m;
  if (!(LIST_NAMES as readonly string[]).includes(list ?? '')) throw new RangeError(`--extra-field ${spec}: unknown list '${list ?? ''}' (lists: ${LIST_NAMES.join(', ')})`);
  if (!(EXTRA_FIELD_TYPES as readonly string[]).includes(type ?? '')) throw new RangeError(`--extra-field ${spec}: type must be one of ${EXTRA_FIELD_TYPES.join(', ')}`);
  if (!FIELD_NAME.test(name ?? '')) throw new RangeError(`--extra-field ${spec}: the name must be lower-case letters, digits and underscores`);
  return { list: list as ListName, name: name as string, type: type as ExtraFieldType, ...(undescribed === undefined ? {} : { described: false }) };
}
