/**
 * Which catalog a user handed over: an Airbyte configured catalog (what
 * `source-data-read read` needs), an Airbyte discovered catalog (what
 * `discover` prints, bare or still inside its CATALOG message), or a Singer
 * catalog (what `tap-data-read --discover` writes and `tap-data-read` needs).
 * Given the other face's catalog, each face says which one it got, which one
 * it needs and how to make it, instead of failing on the first field that
 * does not fit.
 */
import { isObject } from '../exact-json.js';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../errors.js';
import { packageFile } from '../runtime/package-file.js';

/** The refusal of a `what` catalog that does not take its schema: its first issue, where (field catalog.<path>), then `expected`. */
export function invalidCatalog(what: string, issues: readonly { readonly path: readonly PropertyKey[]; readonly message: string }[], expected: string): ConfigError {
  const issue = issues[0];
  const field = issue && issue.path.length > 0 ? `catalog.${issue.path.join('.')}` : 'catalog';
  return new ConfigError(`Invalid ${what}: ${issue ? `${issue.path.join('.') || 'catalog'}: ${issue.message}` : 'unreadable'}. ${expected}`, { field });
}

type CatalogKind = 'airbyte-configured' | 'airbyte-discovered' | 'airbyte-catalog-message' | 'singer' | 'unknown';

/** The kind of one entry of `streams`, or undefined when it has none of the marks. */
function entryKind(entry: unknown): CatalogKind | undefined {
  if (!isObject(entry)) return undefined;
  if ('tap_stream_id' in entry || (typeof entry.stream === 'string' && ('schema' in entry || 'metadata' in entry))) return 'singer';
  if (isObject(entry.stream)) return 'airbyte-configured';
  if (typeof entry.name === 'string' && ('json_schema' in entry || 'supported_sync_modes' in entry)) return 'airbyte-discovered';
  return undefined;
}

/** The kind of a parsed catalog file: what every recognisable entry agrees on, else unknown. */
export function catalogKind(input: unknown): CatalogKind {
  if (isObject(input) && input.type === 'CATALOG' && isObject(input.catalog)) return 'airbyte-catalog-message';
  if (!isObject(input) || !Array.isArray(input.streams)) return 'unknown';
  const kinds = new Set(input.streams.map(entryKind).filter((k) => k !== undefined));
  return kinds.size === 1 ? ([...kinds][0] as CatalogKind) : 'unknown';
}

const GIVEN: Readonly<Record<Exclude<CatalogKind, 'unknown'>, string>> = {
  'airbyte-configured': 'an Airbyte configured catalog (streams as {"stream": {...}, "sync_mode": ...}, for source-data-read read)',
  'airbyte-discovered': 'an Airbyte discovered catalog (streams with "name" and "json_schema", as source-data-read discover prints them)',
  'airbyte-catalog-message': 'the output of source-data-read discover (a CATALOG message around the discovered Airbyte catalog)',
  singer: 'a Singer catalog (streams with "tap_stream_id", "schema" and "metadata", as tap-data-read --discover writes it, for tap-data-read)',
};

/** The checked-in configured catalog of this package: every stream, incremental where supported. */
const CONFIGURED_CATALOG = fileURLToPath(packageFile('catalog/configured_catalog.json'));

function airbyteNeeds(kind: Exclude<CatalogKind, 'unknown' | 'airbyte-configured'>): string {
  const how =
    kind === 'singer'
      ? 'Use this one with tap-data-read --catalog instead, or'
      : 'Wrap each discovered stream that way (choosing its sync_mode), or';
  return (
    'read needs an Airbyte configured catalog, which wraps each discovered stream with its sync mode: ' +
    '{"streams": [{"stream": {"name": "<stream>", "json_schema": {...}, ...}, "sync_mode": "incremental", "destination_sync_mode": "append_dedup"}, ...]}. ' +
    `${how} use the ready one that selects every stream (incremental where supported): ${CONFIGURED_CATALOG}.`
  );
}

function singerNeeds(): string {
  return (
    'tap-data-read needs a Singer catalog: write one with `tap-data-read --config CONFIG.json --discover > catalog.json`, ' +
    'select streams in it (metadata "selected": true, or Meltano select rules), and pass that; or pass no --catalog to sync every stream. ' +
    'The Airbyte catalogs are for source-data-read read.'
  );
}

/**
 * Throw a ConfigError when `input` is recognisably another catalog than the
 * face needs; return quietly otherwise (the face's own validation follows).
 * @param file the command-line flag that named the file (e.g. "catalog") and its path
 */
export function expectCatalogKind(input: unknown, needed: 'airbyte-configured' | 'singer', file: { readonly flag: string; readonly path: string }): void {
  const kind = catalogKind(input);
  if (kind === 'unknown' || kind === needed) return;
  const given = `The --${file.flag} file "${file.path}" is ${GIVEN[kind]}`;
  if (needed === 'singer') throw new ConfigError(`${given}, but ${singerNeeds()}`, { field: file.flag });
  if (kind !== 'airbyte-configured') throw new ConfigError(`${given}, but ${airbyteNeeds(kind)}`, { field: file.flag });
}
