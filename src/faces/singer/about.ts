/**
 * `--about`: what the tap is and can do, in the shape Meltano reads
 * (name, description, version, capabilities, settings as JSON Schema), as
 * JSON or as Markdown for a README.
 */
import { configJsonSchema } from '../../config.js';
import { VERSION } from '../../version.js';

export const TAP_NAME = 'tap-data-read';
export const DESCRIPTION =
  'Singer tap for the Data-Read API: contacts, conversations, stage changes and deletions, replicated incrementally.';
/** What the tap really implements; nothing more is claimed. */
export const CAPABILITIES = ['catalog', 'discover', 'state', 'about'] as const;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const SINGER_DESCRIPTIONS: Readonly<Record<string, string>> = {
  deletions_as_tombstones:
    'Also emit each deleted contact or conversation into its own stream with _sdc_deleted_at set (and other fields null), so targets that honour _sdc_deleted_at delete the row.',
};

/** A property schema without Airbyte's UI keywords (`order`, `multiline`), nested ones (a list's items) included. */
function withoutUiKeywords(prop: Json): Json {
  const { order: _order, multiline: _multiline, ...rest } = prop;
  const out: Json = {};
  for (const [key, value] of Object.entries(rest)) {
    if (key === 'items' && isObject(value)) out[key] = withoutUiKeywords(value);
    else if (key === 'properties' && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, p]) => [name, isObject(p) ? withoutUiKeywords(p) : p]));
    } else out[key] = value;
  }
  return out;
}

/** The config's JSON Schema without Airbyte's UI keywords; secrets (the key, proxy_url, hash_key) are marked the way Meltano reads them. */
export function settingsSchema(): Json {
  const source = configJsonSchema();
  const properties: Json = {};
  if (isObject(source.properties)) {
    for (const [key, prop] of Object.entries(source.properties)) {
      if (!isObject(prop)) continue;
      const { airbyte_secret: secret, ...rest } = withoutUiKeywords(prop);
      const description = SINGER_DESCRIPTIONS[key];
      properties[key] = { ...rest, ...(description ? { description } : {}), ...(secret === true ? { secret: true, writeOnly: true } : {}) };
    }
  }
  return { type: 'object', properties, required: source.required ?? [], additionalProperties: true };
}

export interface About {
  name: string;
  description: string;
  version: string;
  capabilities: string[];
  settings: Json;
}

export function about(): About {
  return { name: TAP_NAME, description: DESCRIPTION, version: VERSION, capabilities: [...CAPABILITIES], settings: settingsSchema() };
}

const cell = (value: unknown): string => (value === undefined ? '' : String(typeof value === 'string' ? value : JSON.stringify(value)).replace(/\|/g, '\\|'));

export function aboutMarkdown(info: About = about()): string {
  const required = new Set(Array.isArray(info.settings.required) ? info.settings.required : []);
  const props = isObject(info.settings.properties) ? info.settings.properties : {};
  const rows = Object.entries(props).map(([key, prop]) => {
    const p = isObject(prop) ? prop : {};
    const type = `${cell(p.type)}${p.secret === true ? ' (secret)' : ''}`;
    return `| ${key} | ${type} | ${required.has(key) ? 'True' : 'False'} | ${cell(p.default)} | ${cell(p.description)} |`;
  });
  return [
    `# \`${info.name}\``,
    '',
    info.description,
    '',
    `Version ${info.version}.`,
    '',
    '## Capabilities',
    '',
    ...info.capabilities.map((c) => `* \`${c}\``),
    '',
    '## Settings',
    '',
    '| Setting | Type | Required | Default | Description |',
    '|:--------|:-----|:--------:|:-------:|:------------|',
    ...rows,
    '',
    `Settings can also come from environment variables with \`--config ENV\`: \`TAP_DATA_READ_<SETTING>\`, e.g. \`TAP_DATA_READ_API_KEY\`.`,
    '',
  ].join('\n');
}
