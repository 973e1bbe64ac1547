/**
 * What a sync replicates: the streams a Singer catalog (`--catalog`, or the
 * legacy `--properties`) selects, each with its replication method and its
 * selected fields, as Meltano's select and metadata rules write them.
 *
 * Rules (those of singer-python and the Meltano SDK):
 * - a stream is selected by `selected` on its `[]` breadcrumb (or the legacy
 *   `schema.selected`), else by `selected-by-default`;
 * - a field is dropped when its metadata says `selected: false` (or legacy
 *   `selected: false` on the property) or `inclusion: unsupported`; the key,
 *   the replication key and the tombstone column are always kept;
 * - `selected` and `selected-by-default` are JSON booleans (null: not set);
 *   any other value ("false" as a string) is an invalid catalog, never a guess;
 * - `replication-method` FULL_TABLE or INCREMENTAL (default: INCREMENTAL where
 *   the stream supports it); the replication key is the stream's own cursor;
 * - a FULL_TABLE stream is synced with ACTIVATE_VERSION (its target drops the
 *   rows the source no longer has) unless its `[]` metadata sets
 *   `activate-version: false`, for a target that does not understand it.
 */
import { isObject } from '../../exact-json.js';
import { z } from 'zod';
import { ConfigError } from '../../errors.js';
import type { SelectedStream } from '../../engine/sync.js';
import { ACCOUNT_FIELD, type StreamSchemas } from '../../schemas/json-schema.js';
import { STREAMS, findStream, hasTombstones, type StreamDefinition, type SyncMode } from '../../streams.js';
import { SINGER_DELETED_AT, type JsonSchema } from './protocol.js';
import { alwaysKept, keyProperties, propertiesOf, singerSchema } from './schema.js';
import { invalidCatalog } from '../catalog-kind.js';

export interface StreamPlan extends SelectedStream {
  /** The schema sent in SCHEMA: the catalog's, with field selection applied. */
  readonly schema: JsonSchema;
  /** Fields removed from every record (deselected ones). */
  readonly excluded: ReadonlySet<string>;
  /** `bookmark_properties` of SCHEMA: the cursor in incremental mode. */
  readonly bookmarkProperties: readonly string[];
  /** A FULL_TABLE stream synced with table versions and ACTIVATE_VERSION (catalog metadata `activate-version`, default true). */
  readonly activateVersion: boolean;
}

/** The `[]` metadata that switches ACTIVATE_VERSION off for a FULL_TABLE stream (`false`). */
const ACTIVATE_VERSION_METADATA = 'activate-version';

const MetadataEntry = z.looseObject({
  breadcrumb: z.array(z.union([z.string(), z.number()])),
  metadata: z.record(z.string(), z.unknown()),
});

const CatalogEntry = z.looseObject({
  tap_stream_id: z.string().optional(),
  key_properties: z.unknown().optional(),
  stream: z.string().optional(),
  schema: z.record(z.string(), z.unknown()).optional(),
  metadata: z.array(MetadataEntry).optional(),
  replication_method: z.string().nullish(),
  replication_key: z.string().nullish(),
});

const Catalog = z.looseObject({ streams: z.array(CatalogEntry) });

type Entry = z.infer<typeof CatalogEntry>;
type Metadata = ReadonlyMap<string, Record<string, unknown>>;

const crumb = (path: readonly (string | number)[]): string => JSON.stringify(path);

function metadataOf(entry: Entry): Metadata {
  const map = new Map<string, Record<string, unknown>>();
  for (const m of entry.metadata ?? []) map.set(crumb(m.breadcrumb), { ...map.get(crumb(m.breadcrumb)), ...m.metadata });
  return map;
}

/** Where a selection flag was read: the catalog entry's index, and its words for messages ("stream \"contacts\"", its field). */
interface FlagSource {
  readonly index: number;
  readonly label: string;
}

/**
 * A selection flag (`selected`, `selected-by-default`): true, false, or
 * absent (null too). Anything else ("false" as a string, 0) is refused:
 * read as absent it would select what the catalog meant to leave out.
 */
function flag(value: unknown, key: string, from: FlagSource, place: 'metadata' | 'schema'): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'boolean') return value;
  throw new ConfigError(
    `Invalid catalog: ${from.label}: ${place} "${key}" must be true or false (a JSON boolean), not ${JSON.stringify(value)}. ` +
      'Fix the catalog (in Meltano: the select rules or metadata), or run --discover again.',
    { field: `catalog.streams.${from.index}.${place}` },
  );
}

function isStreamSelected(entry: Entry, md: Metadata, from: FlagSource): boolean {
  const top = md.get(crumb([])) ?? {};
  // Every flag is checked, also those a first one overrides: a malformed one is a mistake in the catalog either way.
  const selected = flag(top.selected, 'selected', from, 'metadata');
  const legacy = flag(entry.schema?.selected, 'selected', from, 'schema');
  const byDefault = flag(top['selected-by-default'], 'selected-by-default', from, 'metadata');
  return selected ?? legacy ?? byDefault ?? false;
}

function chooseMode(stream: StreamDefinition, entry: Entry, md: Metadata, warn: (m: string) => void): SyncMode {
  const top = md.get(crumb([])) ?? {};
  const fallback: SyncMode = stream.syncModes.includes('incremental') ? 'incremental' : 'full_refresh';
  const raw = top['replication-method'] ?? entry.replication_method;
  const requested = typeof raw === 'string' ? raw.toUpperCase() : undefined;
  let mode = fallback;
  if (requested === 'FULL_TABLE') mode = 'full_refresh';
  else if (requested === 'INCREMENTAL') {
    if (!stream.syncModes.includes('incremental')) {
      warn(`Stream "${stream.name}" supports FULL_TABLE replication only; replication-method INCREMENTAL is ignored.`);
    }
  } else if (raw !== undefined && raw !== null) {
    // Not a string either (5, ["INCREMENTAL"]): said like an unknown method, not passed over.
    warn(`Stream "${stream.name}": replication-method ${JSON.stringify(raw)} is not supported (use INCREMENTAL or FULL_TABLE); using ${fallback === 'incremental' ? 'INCREMENTAL' : 'FULL_TABLE'}.`);
  }
  // Any mode: a key the stream cannot replicate on is said, as the docs promise, also where FULL_TABLE reads no key.
  const key = top['replication-key'] ?? entry.replication_key;
  if (key !== undefined && key !== null && key !== stream.cursorField) {
    warn(
      stream.cursorField === null
        ? `Stream "${stream.name}" has no cursor: it is read whole at every sync (FULL_TABLE); replication-key ${JSON.stringify(key)} is ignored.`
        : `Stream "${stream.name}" replicates on its own cursor "${stream.cursorField}"; replication-key ${JSON.stringify(key)} is ignored.`,
    );
  }
  return mode;
}

function isFieldDropped(name: string, property: unknown, md: Metadata, stream: FlagSource): boolean {
  const m = md.get(crumb(['properties', name])) ?? {};
  const from = { index: stream.index, label: `${stream.label}, field ${JSON.stringify(name)}` };
  const selected = flag(m.selected, 'selected', from, 'metadata');
  const legacy = isObject(property) ? flag(property.selected, 'selected', from, 'schema') : undefined;
  const byDefault = flag(m['selected-by-default'], 'selected-by-default', from, 'metadata');
  if (m.inclusion === 'unsupported') return true;
  return (selected ?? legacy ?? byDefault) === false;
}

/** A property schema without the legacy selection keys that old catalogs put there. */
function cleanProperty(property: unknown): unknown {
  if (!isObject(property)) return property;
  const { selected: _s, inclusion: _i, ...rest } = property;
  return rest;
}

/**
 * Whether a catalog entry was discovered with `accounts`: its key starts with
 * the tap's `account` field ([account, id]), in key_properties or in the
 * `[]` metadata's table-key-properties.
 */
function discoveredWithAccounts(entry: Entry | undefined, md: Metadata): boolean {
  const keys = [entry?.key_properties, md.get(crumb([]))?.['table-key-properties']];
  return keys.some((k) => Array.isArray(k) && k[0] === ACCOUNT_FIELD && k.length > 1);
}

/**
 * The WARN for a catalog that asks for another key (Meltano: the
 * `table-key-properties` metadata, which SDK taps honour): the tap keys every
 * record by its own, so that upserts on it stay right; undefined when the
 * catalog asks for none or for that one.
 */
function ownKeyWarning(stream: StreamDefinition, entry: Entry, md: Metadata, manyAccounts: boolean): string | undefined {
  const own = keyProperties(stream, manyAccounts);
  const isKey = (k: unknown): k is string[] => Array.isArray(k) && k.length > 0 && k.every((v) => typeof v === 'string');
  // The key of the config's other form (a catalog discovered with or without accounts) is no request: the tap adapts to it.
  const expected = [own, keyProperties(stream, !manyAccounts)].map((k) => JSON.stringify(k));
  const asked = [md.get(crumb([]))?.['table-key-properties'], entry.key_properties].find((k) => isKey(k) && !expected.includes(JSON.stringify(k)));
  if (!isKey(asked)) return undefined;
  return (
    `Stream "${stream.name}": the catalog asks for key ${JSON.stringify(asked)}, but the tap keys every record by its own, ${JSON.stringify(own)}, ` +
    'which SCHEMA sends as key_properties; table-key-properties is ignored. Remove it from the catalog (Meltano: the metadata rules).'
  );
}

function planStream(
  stream: StreamDefinition,
  entry: Entry | undefined,
  index: number,
  md: Metadata,
  tombstones: boolean,
  warn: (m: string) => void,
  known?: JsonSchema,
  manyAccounts = false,
): StreamPlan {
  const generated = singerSchema(stream, tombstones, known, manyAccounts);
  const base = entry?.schema && isObject(entry.schema.properties) ? entry.schema : generated;
  const kept = alwaysKept(stream, tombstones, manyAccounts);
  const generatedProps = propertiesOf(generated);
  const properties: JsonSchema = {};
  const excluded = new Set<string>();
  // A catalog discovered with `accounts`, used with one api_key: its `account` field is the tap's own, which no record
  // now carries. Declared (and required), it would make every record invalid for the targets that validate.
  const staleAccount = !manyAccounts && entry !== undefined && discoveredWithAccounts(entry, md) && ACCOUNT_FIELD in propertiesOf(base);
  if (staleAccount) {
    warn(
      `Stream "${stream.name}": the catalog was discovered with accounts (key [${ACCOUNT_FIELD}, ${stream.primaryKey}]), but the config has one api_key: ` +
        `records carry no "${ACCOUNT_FIELD}" field and are keyed by ${stream.primaryKey} alone, so the field is left out of the SCHEMA. ` +
        'Run --discover again (Meltano: meltano run --refresh-catalog) to refresh the catalog.',
    );
  }
  if (entry !== undefined && !staleAccount) {
    const keyWarning = ownKeyWarning(stream, entry, md, manyAccounts);
    if (keyWarning) warn(keyWarning);
  }
  for (const [name, property] of Object.entries(propertiesOf(base))) {
    if (name === SINGER_DELETED_AT && !hasTombstones(stream, tombstones)) continue;
    if (name === ACCOUNT_FIELD && staleAccount) continue;
    // The flags of a field always kept are checked too: a malformed one is a mistake in the catalog either way.
    const dropped = isFieldDropped(name, property, md, { index, label: `stream ${JSON.stringify(stream.name)}` });
    if (dropped && !kept.has(name)) excluded.add(name);
    else properties[name] = cleanProperty(property);
  }
  // A field the catalog leaves out but its schema does not have (a typo, `emial`): nothing can drop it, and the records carry what they carry.
  const declared = propertiesOf(base);
  for (const m of entry?.metadata ?? []) {
    const [where, name, ...deeper] = m.breadcrumb;
    if (where !== 'properties' || typeof name !== 'string' || deeper.length > 0 || name in declared) continue;
    if (m.metadata.selected === false || m.metadata.inclusion === 'unsupported') {
      warn(`Stream "${stream.name}": the catalog leaves out field ${JSON.stringify(name)}, which the stream's schema does not have; nothing is dropped for it. Check the field's name (Meltano: the select rules).`);
    }
  }
  // The key, the cursor and the tombstone column are declared even if an edited catalog lost them.
  for (const name of kept) if (!(name in properties) && name in generatedProps) properties[name] = generatedProps[name];
  const { selected: _selected, ...rest } = base;
  const required = Array.isArray(base.required) ? base.required.filter((r) => typeof r === 'string' && r in properties) : undefined;
  const schema: JsonSchema = { ...rest, type: 'object', properties, ...(required ? { required } : {}) };
  const mode = entry ? chooseMode(stream, entry, md, warn) : stream.syncModes.includes('incremental') ? 'incremental' : 'full_refresh';
  const bookmarkProperties = mode === 'incremental' && stream.cursorField ? [stream.cursorField] : [];
  const activate = md.get(crumb([]))?.[ACTIVATE_VERSION_METADATA];
  if (activate !== undefined && typeof activate !== 'boolean') {
    warn(`Stream "${stream.name}": metadata ${ACTIVATE_VERSION_METADATA} must be true or false, not ${JSON.stringify(activate)}; using true.`);
  }
  const activateVersion = mode === 'full_refresh' && activate !== false;
  return { stream, mode, schema, excluded, bookmarkProperties, activateVersion };
}

/** No catalog: every stream, in its default mode, every field (the Singer convention), with its schema from `schemas` (built in where none). */
export function planAll(tombstones: boolean, schemas?: StreamSchemas, manyAccounts = false): StreamPlan[] {
  return STREAMS.map((s) => planStream(s, undefined, -1, new Map(), tombstones, () => undefined, schemas?.get(s.name), manyAccounts));
}

/** The streams a catalog selects, in catalog order. */
export function planFromCatalog(input: unknown, tombstones: boolean, warn: (message: string) => void, manyAccounts = false): StreamPlan[] {
  // Parsed once a run: zod's compiled fast path (`new Function`) would cost more to build than it saves.
  const parsed = Catalog.safeParse(input, { jitless: true });
  if (!parsed.success) throw invalidCatalog('catalog', parsed.error.issues, 'Expected a Singer catalog {"streams": [{"tap_stream_id": ..., "schema": {...}, "metadata": [...]}]}, as --discover writes it.');
  const plans: StreamPlan[] = [];
  const seen = new Set<string>();
  for (const [index, entry] of parsed.data.streams.entries()) {
    const name = entry.tap_stream_id ?? entry.stream;
    if (name === undefined) throw new ConfigError(`Invalid catalog: streams.${index} has neither tap_stream_id nor stream.`, { field: `catalog.streams.${index}` });
    const md = metadataOf(entry);
    if (!isStreamSelected(entry, md, { index, label: `stream ${JSON.stringify(name)}` })) continue;
    const stream = findStream(name);
    if (!stream) {
      throw new ConfigError(
        `The catalog selects stream "${name}", which this tap does not have. Known streams: ${STREAMS.map((s) => s.name).join(', ')}. ` +
          'Run --discover again to refresh the catalog.',
        { field: `catalog.streams.${index}` },
      );
    }
    if (seen.has(name)) throw new ConfigError(`The catalog selects stream "${name}" twice.`, { field: `catalog.streams.${index}` });
    seen.add(name);
    plans.push(planStream(stream, entry, index, md, tombstones, warn, undefined, manyAccounts));
  }
  return plans;
}
