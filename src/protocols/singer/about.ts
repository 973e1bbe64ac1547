/**
 * `--about`: what the tap is and can do, in the shape Meltano reads
 * (name, description, version, capabilities, settings as JSON Schema), as
 * JSON or as Markdown for a README.
 */
import { isObject } from '../../exact-json.js';
import { VERSION } from '../../runtime/version.js';
import { settingsSchema } from './settings.js';


const TAP_NAME = 'tap-data-read';
const DESCRIPTION =
  'Singer tap for the Data-Read API: contacts, conversations, stage changes and deletions, replicated incrementally.';
/** What the tap really implements; nothing more is claimed. */
const CAPABILITIES = ['catalog', 'discover', 'state', 'about', 'activate-version'] as const;

type Json = Record<string, unknown>;

interface About {
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

export function aboutMarkdown(): string {
  const info = about();
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
