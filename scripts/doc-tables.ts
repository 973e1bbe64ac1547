/**
 * The generated parts of hand-written pages: the config table (from the zod
 * schema of src/config/config.ts), the stream tables (from src/streams.ts) and
 * meltano.yml's settings (from the Singer view of the same schema). A page
 * marks each part with `<!-- generated: NAME -->` ... `<!-- end generated: NAME -->`
 * (in YAML: `# generated: NAME` ... `# end generated: NAME`); `npm run generate`
 * rewrites what lies between, and a test fails when a checked-in page drifts.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configJsonSchema } from '../src/config/config.js';
import { settingsSchema } from '../src/protocols/singer/settings.js';
import { recordJsonSchema } from '../src/schemas/json-schema.js';
import { STREAMS } from '../src/streams.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A table cell: one line, pipes escaped. */
const cell = (text: string): string => text.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');

/** "a, b or c". */
function orList(items: readonly string[]): string {
  return items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items.at(-1) as string}`;
}

/** What a property's value is, in words: "integer 1–200", "string, required, secret", "`keep`, `hash` or `drop`". */
function kindOf(prop: Json, required: boolean): string {
  const parts: string[] = [];
  if (Array.isArray(prop.enum)) parts.push(orList(prop.enum.map((v) => `\`${String(v)}\``)));
  else if (prop.type === 'integer' || prop.type === 'number') {
    const min = typeof prop.minimum === 'number' ? prop.minimum : undefined;
    const max = typeof prop.maximum === 'number' ? prop.maximum : undefined;
    parts.push(min !== undefined && max !== undefined ? `${prop.type} ${min}–${max}` : min !== undefined ? `${prop.type} ≥ ${min}` : String(prop.type));
  } else if (prop.type === 'array') {
    const items = isObject(prop.items) ? prop.items : {};
    parts.push(items.type === 'object' ? 'array of objects' : typeof items.type === 'string' ? `array of ${items.type}s` : 'array');
  } else parts.push(typeof prop.type === 'string' ? prop.type : 'any');
  if (prop.multiline === true) parts[0] = `${parts[0] as string} (multi-line)`;
  if (required) parts.push('required');
  if (prop.airbyte_secret === true) parts.push('secret');
  return parts.join(', ');
}

/** The config keys as a Markdown table: key, type, default, description. */
export function configTable(): string {
  const schema = configJsonSchema();
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const properties = isObject(schema.properties) ? schema.properties : {};
  const rows = Object.entries(properties).map(([key, value]) => {
    const prop = isObject(value) ? value : {};
    const fallback = prop.default === undefined ? '–' : `\`${JSON.stringify(prop.default)}\``;
    return `| \`${key}\` | ${cell(kindOf(prop, required.has(key)))} | ${fallback} | ${cell(typeof prop.description === 'string' ? prop.description : '')} |`;
  });
  return ['| key | type | default | description |', '|---|---|---|---|', ...rows].join('\n');
}

const MODE_NAMES: Readonly<Record<string, string>> = { full_refresh: 'Full refresh', incremental: 'Incremental' };

/** The streams as a Markdown table: name, API path, primary key, cursor, sync modes, description. */
export function streamsTable(): string {
  const rows = STREAMS.map((s) => {
    const modes = [...s.syncModes].sort().map((m) => MODE_NAMES[m] ?? m).join(', ');
    return `| \`${s.name}\` | \`${s.path}\` | \`${s.primaryKey}\` | ${s.cursorField === null ? '–' : `\`${s.cursorField}\``} | ${modes} | ${cell(s.description)} |`;
  });
  return ['| stream | API path | primary key | cursor | sync modes | description |', '|---|---|---|---|---|---|', ...rows].join('\n');
}

/** The streams as the Singer tap declares them: key properties, replication key, default method. */
export function singerStreamsTable(): string {
  const rows = STREAMS.map((s) => {
    const incremental = s.syncModes.includes('incremental') && s.cursorField !== null;
    return `| \`${s.name}\` | \`${s.primaryKey}\` | ${incremental ? `\`${s.cursorField as string}\`` : 'none'} | ${incremental ? 'INCREMENTAL' : 'FULL_TABLE'} |`;
  });
  return ['| stream | key | replication key | default method |', '|---|---|---|---|', ...rows].join('\n');
}

/** A field's JSON Schema type in words: "string (date-time)", "integer or null", "`won`, `lost` or null". */
function fieldType(prop: Json): string {
  const types = (Array.isArray(prop.type) ? prop.type : [prop.type]).filter((t): t is string => typeof t === 'string');
  const nullable = types.includes('null') || (Array.isArray(prop.enum) && prop.enum.includes(null));
  let base: string;
  if (Array.isArray(prop.enum)) base = orList(prop.enum.filter((v) => v !== null).map((v) => `\`${String(v)}\``));
  else {
    const named = types.filter((t) => t !== 'null');
    base = named.length === 0 ? 'any' : named.join(' or ');
    if (typeof prop.format === 'string') base += ` (${prop.format})`;
    if (named.includes('array') && isObject(prop.items) && typeof prop.items.type !== 'undefined') base += ` of ${String(([] as unknown[]).concat(prop.items.type).filter((t) => t !== 'null').join(' or '))}`;
  }
  return nullable ? `${base}, or null` : base;
}

/** Every field of every stream's built-in schema: one table per stream (field, type, description). */
export function fieldDictionary(): string {
  const out: string[] = [];
  for (const stream of STREAMS) {
    const schema = recordJsonSchema(stream);
    const properties = isObject(schema.properties) ? schema.properties : {};
    out.push(`### ${stream.name}`, '', cell(stream.description), '', '| field | type | description |', '|---|---|---|');
    for (const [field, value] of Object.entries(properties)) {
      const prop = isObject(value) ? value : {};
      const role = field === stream.primaryKey ? ' (primary key)' : field === stream.cursorField ? ' (cursor)' : '';
      out.push(`| \`${field}\`${role} | ${cell(fieldType(prop))} | ${cell(typeof prop.description === 'string' ? prop.description : '')} |`);
    }
    out.push('');
  }
  return out.join('\n').trimEnd();
}

/** Meltano's kind of a setting, from its JSON Schema (start_date is a date Meltano's UI can pick). */
function meltanoKind(key: string, prop: Json): string {
  if (key === 'start_date') return 'date_iso8601';
  if (Array.isArray(prop.enum)) return 'options';
  if (prop.type === 'integer' || prop.type === 'number' || prop.type === 'boolean' || prop.type === 'array' || prop.type === 'object') return prop.type;
  return 'string';
}

/** A YAML scalar: JSON's double-quoted strings are YAML's too. */
const yamlScalar = (value: unknown): string => JSON.stringify(value);

/** meltano.yml's `settings:` of the extractor, indented for its place in the file, from the tap's --about settings. */
export function meltanoSettings(indent = '      '): string {
  const schema = settingsSchema();
  const spec = configJsonSchema();
  const titles = isObject(spec.properties) ? spec.properties : {};
  const properties = isObject(schema.properties) ? schema.properties : {};
  const out = [`${indent}settings:`];
  for (const [key, value] of Object.entries(properties)) {
    const prop = isObject(value) ? value : {};
    const title = isObject(titles[key]) ? (titles[key] as Json).title : undefined;
    out.push(`${indent}  - name: ${key}`);
    if (typeof title === 'string') out.push(`${indent}    label: ${yamlScalar(title)}`);
    const kind = meltanoKind(key, prop);
    out.push(`${indent}    kind: ${kind}`);
    if (kind === 'options' && Array.isArray(prop.enum)) {
      out.push(`${indent}    options:`);
      for (const option of prop.enum) out.push(`${indent}      - {label: ${yamlScalar(String(option))}, value: ${yamlScalar(option)}}`);
    }
    if (prop.secret === true) out.push(`${indent}    sensitive: true`);
    if (prop.default !== undefined) out.push(`${indent}    value: ${yamlScalar(prop.default)}`);
    if (typeof prop.description === 'string') out.push(`${indent}    description: ${yamlScalar(prop.description)}`);
  }
  return out.join('\n');
}

/** Every generated part, by name. */
export function generatedParts(): Map<string, () => string> {
  return new Map<string, () => string>([
    ['config', configTable],
    ['streams', streamsTable],
    ['singer-streams', singerStreamsTable],
    ['fields', fieldDictionary],
    ['meltano-settings', () => meltanoSettings()],
  ]);
}

/**
 * `text` with every marked part rewritten. Markers are `<!-- generated: NAME -->`
 * in Markdown and a `# generated: NAME` line in YAML, each closed by its `end generated` twin.
 */
export function fillGenerated(text: string, page: string): string {
  const parts = generatedParts();
  const yaml = /\.ya?ml$/.test(page);
  const marker = yaml ? /^[ \t]*# generated: ([\w-]+)[^\n]*$/gm : /^<!-- generated: ([\w-]+) -->$/gm;
  let out = '';
  let from = 0;
  for (let m = marker.exec(text); m !== null; m = marker.exec(text)) {
    const name = m[1] as string;
    const make = parts.get(name);
    if (make === undefined) throw new Error(`${page}: unknown generated part "${name}" (known: ${[...parts.keys()].join(', ')})`);
    const end = yaml ? `# end generated: ${name}` : `<!-- end generated: ${name} -->`;
    const bodyStart = m.index + m[0].length;
    const endAt = text.indexOf(end, bodyStart);
    if (endAt === -1) throw new Error(`${page}: "${m[0].trim()}" has no closing "${end}"`);
    out += `${text.slice(from, bodyStart)}\n${make()}\n`;
    from = text.lastIndexOf('\n', endAt) + 1;
    marker.lastIndex = endAt + end.length;
  }
  return out + text.slice(from);
}

/** The pages that may hold generated parts, from the repository root. */
export function pagesWithParts(root: string): string[] {
  const docs = existsSync(join(root, 'docs')) ? readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`) : [];
  return ['README.md', 'CONTRIBUTING.md', 'meltano.yml', ...docs].filter((page) => existsSync(join(root, page)));
}

/** Each page that holds a generated part, with its content as `npm run generate` writes it. */
export function generatedPages(root: string): Map<string, string> {
  const pages = new Map<string, string>();
  for (const page of pagesWithParts(root)) {
    const text = readFileSync(join(root, page), 'utf8');
    if (!/generated: [\w-]+/.test(text)) continue;
    pages.set(page, fillGenerated(text, page));
  }
  return pages;
}
