/**
 * The tap's config: one or more `--config` sources merged left to right, each
 * a JSON file or the word `ENV` (Meltano's convention: settings from
 * `TAP_DATA_READ_<SETTING>` environment variables). Environment values are
 * strings; they are turned into the type the config schema declares
 * (integer, boolean, a list given as JSON text) so validation sees what a
 * JSON file would hold.
 */
import { isObject } from '../../exact-json.js';
import { firstDuplicateKey, jsonSyntaxError, readJsonFile, type FileWait } from '../../config/files.js';
import { configJsonSchema } from '../../config/config.js';
import { ConfigError } from '../../errors.js';
import { closestName } from '../../config/suggest.js';

const ENV_PREFIX = 'TAP_DATA_READ_';
export const ENV_SOURCE = 'ENV';

type Json = Record<string, unknown>;

/** The JSON Schema type of each config key, from the zod schema. */
function declaredTypes(): Map<string, string> {
  const props = configJsonSchema().properties;
  const types = new Map<string, string>();
  if (isObject(props)) {
    for (const [key, prop] of Object.entries(props)) {
      if (isObject(prop) && typeof prop.type === 'string') types.set(key, prop.type);
    }
  }
  return types;
}

/** What a list setting's variable holds, for the message of one that is not JSON. */
const LIST_EXAMPLES: Readonly<Record<string, string>> = {
  field_treatments: '[{"stream": "<stream>", "field": "<field>", "treatment": "hash"}]',
  accounts: '[{"name": "eu", "api_key": "..."}]',
};

/** The variable `--config ENV` reads a setting from. */
const variableOf = (setting: string): string => `${ENV_PREFIX}${setting.toUpperCase()}`;

function coerce(value: string, type: string | undefined, variable: string, setting: string): unknown {
  const text = value.trim();
  if ((type === 'integer' || type === 'number') && /^[+-]?\d+(\.\d+)?$/.test(text)) return Number(text);
  if (type === 'boolean') {
    const lower = text.toLowerCase();
    if (['true', '1', 'yes', 'on'].includes(lower)) return true;
    if (['false', '0', 'no', 'off'].includes(lower)) return false;
  }
  if (type === 'array') {
    // Meltano passes a list setting as its JSON text. Text that is not JSON is that mistake, said as such (as a string
    // it would be refused as "not a list", which every variable's value is), without quoting it: the accounts' keys are in it.
    let parsed: unknown;
    try {
      parsed = JSON.parse(text) as unknown;
    } catch (err) {
      throw new ConfigError(
        `${variable} is not valid JSON: ${jsonSyntaxError(err)}. ${setting} takes a JSON list, as Meltano passes a list setting${LIST_EXAMPLES[setting] === undefined ? '' : ` (e.g. ${LIST_EXAMPLES[setting]})`}.`,
        { field: setting },
      );
    }
    // A key given twice in one object: JSON.parse keeps the later value without a word, where a config file is refused.
    const duplicate = firstDuplicateKey(text);
    if (duplicate !== undefined) {
      throw new ConfigError(`${variable} gives "${setting}${duplicate.path}" twice; only one would be read. Keep the one you mean and remove the other.`, { field: setting });
    }
    return parsed;
  }
  // Anything else stays a string: validation then names the key and what it expects.
  return value;
}

/** Settings from TAP_DATA_READ_<SETTING> variables (unset or empty ones are skipped). */
export function configFromEnv(env: NodeJS.ProcessEnv): Json {
  const out: Json = {};
  for (const [key, type] of declaredTypes()) {
    const variable = variableOf(key);
    const value = env[variable];
    if (value !== undefined && value !== '') out[key] = coerce(value, type, variable, key);
  }
  return out;
}

/**
 * The TAP_DATA_READ_ variables (set, not empty) that name no setting: ignored
 * like a config file's unknown keys, so said like them. Not among them:
 * Meltano's own, with two underscores (its extras, TAP_DATA_READ__SELECT), and
 * those of a Meltano plugin named tap-data-read-<name> (an inherited one),
 * which Meltano gives as TAP_DATA_READ_<NAME>_<SETTING> next to ours.
 */
export function unknownEnvVariables(env: NodeJS.ProcessEnv): string[] {
  const settings = [...declaredTypes().keys()];
  const known = new Set(settings.map(variableOf));
  const otherPlugin = new RegExp(`^${ENV_PREFIX}[A-Z0-9_]+_(?:${settings.map((s) => s.toUpperCase()).join('|')})$`);
  return Object.keys(env)
    .filter((name) => name.startsWith(ENV_PREFIX) && !name.startsWith(`${ENV_PREFIX}_`) && env[name] !== undefined && env[name] !== '')
    .filter((name) => !known.has(name) && !otherPlugin.test(name))
    .sort();
}

/** The warning for TAP_DATA_READ_ variables that name no setting (never their values), with the one likely meant; undefined when there are none. */
export function unknownEnvVariablesWarning(env: NodeJS.ProcessEnv): string | undefined {
  const unknown = unknownEnvVariables(env);
  if (unknown.length === 0) return undefined;
  const settings = [...declaredTypes().keys()];
  const named = unknown.map((name) => {
    const meant = closestName(name.slice(ENV_PREFIX.length), settings);
    return meant === undefined ? name : `${name} (did you mean ${variableOf(meant)}?)`;
  });
  return `Unknown ${ENV_PREFIX}* variables ignored (no setting has that name): ${named.join(', ')}.`;
}

/** The config the `--config` sources make, and where its values come from. */
export interface ConfigSources {
  readonly config: Json;
  /** The settings whose value is a TAP_DATA_READ_ variable's (ENV, not overridden by a later file). */
  readonly fromEnv: ReadonlySet<string>;
}

/** Merge every `--config` source, left to right (a later source wins key by key). */
export async function readConfigSources(sources: readonly string[], env: NodeJS.ProcessEnv, wait: FileWait = {}): Promise<ConfigSources> {
  let merged: Json = {};
  const fromEnv = new Set<string>();
  for (const source of sources) {
    const part = source === ENV_SOURCE ? configFromEnv(env) : await readJsonFile(source, 'config', wait);
    if (!isObject(part)) throw new ConfigError(`The config file "${source}" must hold a JSON object.`, { field: 'config' });
    // Spread, not Object.assign: a "__proto__" key of the file stays a key (warned about as unknown), not the prototype whose keys every setting would inherit.
    merged = { ...merged, ...part };
    for (const key of Object.keys(part)) {
      if (source === ENV_SOURCE) fromEnv.add(key);
      else fromEnv.delete(key);
    }
  }
  return { config: merged, fromEnv };
}

/**
 * For the refusal of a config: the variables the refused settings (`fields`,
 * as a ConfigError names them) were read from, since the message names the
 * setting; undefined when none was read from one.
 */
export function envVariablesNote(fields: readonly string[], fromEnv: ReadonlySet<string>): string | undefined {
  const variables = [...new Set(fields.map((field) => field.split('.')[0] ?? field))].filter((key) => fromEnv.has(key)).map(variableOf);
  if (variables.length === 0) return undefined;
  return `(--config ENV: read from ${variables.join(', ')}.)`;
}
