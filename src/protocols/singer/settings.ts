/**
 * The tap's settings as JSON Schema, in the shape Meltano reads: the config's
 * schema (src/config/config.ts) without Airbyte's UI keywords, secrets marked.
 * `--about` shows it, and `npm run generate` writes meltano.yml's settings
 * from it (this module reads no file, so the generator can load it).
 */
import { isObject } from '../../exact-json.js';
import { configJsonSchema } from '../../config/config.js';

type Json = Record<string, unknown>;

const SINGER_DESCRIPTIONS: Readonly<Record<string, string>> = {
  deletions_as_tombstones:
    'Also emit each deleted contact or conversation into its own stream with _sdc_deleted_at set (and other fields null), so targets that honour _sdc_deleted_at delete the row.',
};

/** A property schema without Airbyte's UI keywords (`order`, `multiline`, `always_show`, `pattern_descriptor`), nested ones (a list's items) included. */
function withoutUiKeywords(prop: Json): Json {
  const { order: _order, multiline: _multiline, always_show: _alwaysShow, pattern_descriptor: _patternDescriptor, ...rest } = prop;
  const out: Json = {};
  for (const [key, value] of Object.entries(rest)) {
    if (key === 'items' && isObject(value)) out[key] = withoutUiKeywords(value);
    else if (key === 'properties' && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, p]) => [name, isObject(p) ? nestedSetting(p) : p]));
    } else out[key] = value;
  }
  return out;
}

/** A property of a list's entries (accounts: name, api_key), a secret one marked as Meltano reads it. */
function nestedSetting(prop: Json): Json {
  const { airbyte_secret: secret, ...rest } = withoutUiKeywords(prop);
  return { ...rest, ...(secret === true ? { secret: true, writeOnly: true } : {}) };
}

/** The config's JSON Schema without Airbyte's UI keywords; secrets (the key, proxy_url, hash_key) are marked the way Meltano reads them. */
export function settingsSchema(): Json {
  const source = configJsonSchema();
  const properties: Json = {};
  if (isObject(source.properties)) {
    for (const [key, prop] of Object.entries(source.properties)) {
      if (!isObject(prop)) continue;
      const { airbyte_secret: own, ...rest } = withoutUiKeywords(prop);
      // A list whose entries hold a secret (accounts: their api_key) is a secret setting as a whole.
      const items = prop.items;
      const secret = own === true || (isObject(items) && isObject(items.properties) && Object.values(items.properties).some((p) => isObject(p) && p.airbyte_secret === true));
      const description = SINGER_DESCRIPTIONS[key];
      properties[key] = { ...rest, ...(description ? { description } : {}), ...(secret === true ? { secret: true, writeOnly: true } : {}) };
    }
  }
  return { type: 'object', properties, required: source.required ?? [], additionalProperties: true };
}
