import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/config.js';
import { ConfigError } from '../../../src/errors.js';
import { configFromEnv, readConfigSources, unknownEnvVariables, unknownEnvVariablesWarning } from '../../../src/protocols/singer/config-input.js';
import { tempDir, writeJson } from '../../helpers/cli.js';

/** The two settings every config needs, as Meltano passes them. */
const CONNECTION_ENV = {
  TAP_DATA_READ_API_KEY: 'dr_live_abc123',
  TAP_DATA_READ_BASE_URL: 'http://127.0.0.1:8080',
};

/** Settings as Meltano passes them: CONNECTION_ENV and TAP_DATA_READ_<SETTING> for each of `settings`. */
function meltanoEnv(settings: Readonly<Record<string, string>>): Record<string, string> {
  return { ...CONNECTION_ENV, ...Object.fromEntries(Object.entries(settings).map(([name, value]) => [`TAP_DATA_READ_${name.toUpperCase()}`, value])) };
}

/** The message configFromEnv throws for `settings` beside CONNECTION_ENV. */
function configFromEnvError(settings: Readonly<Record<string, string>>): string {
  try {
    configFromEnv({ ...CONNECTION_ENV, ...settings });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('configFromEnv took the variables');
}

describe('config sources', () => {
  it('reads the personal-data settings as Meltano passes them (a list as its JSON text)', async () => {
    const settings = { personal_data: 'hash', hash_key: 'a-long-enough-hash-key', field_treatments: '[{"stream": "contacts", "field": "email", "treatment": "email_domain"}]' };
    const { config } = parseConfig(configFromEnv(meltanoEnv(settings)));
    expect(config.personal_data).toBe('hash');
    expect(config.field_treatments).toEqual([{ stream: 'contacts', field: 'email', treatment: 'email_domain' }]);
  });

  it('reads TAP_DATA_READ_<SETTING> variables with the types of the config schema', async () => {
    const env = {
      ...CONNECTION_ENV,
      TAP_DATA_READ_PAGE_SIZE: '50',
      TAP_DATA_READ_DELETIONS_AS_TOMBSTONES: 'true',
      TAP_DATA_READ_USE_SERVICE_SCHEMA: 'false',
      TAP_DATA_READ_START_DATE: '2024-01-01',
      TAP_DATA_READ_MAX_RETRIES: '',
      TAP_DATA_READ__SELECT: '["contacts.*"]',
      OTHER: 'x',
    };
    expect(configFromEnv(env)).toEqual({
      api_key: 'dr_live_abc123',
      base_url: 'http://127.0.0.1:8080',
      page_size: 50,
      deletions_as_tombstones: true,
      use_service_schema: false,
      start_date: '2024-01-01',
    });
    expect(parseConfig(configFromEnv(env)).config.page_size).toBe(50);
    expect(parseConfig(configFromEnv(env)).config.use_service_schema).toBe(false);
  });

  it('leaves a value that is not of the declared type to validation, which names the key', async () => {
    const raw = configFromEnv({ TAP_DATA_READ_API_KEY: 'dr_live_abc', TAP_DATA_READ_BASE_URL: 'http://localhost:1', TAP_DATA_READ_PAGE_SIZE: 'many' });
    expect(raw.page_size).toBe('many');
    expect(() => parseConfig(raw)).toThrow(/page_size/);
  });

  it('names the TAP_DATA_READ_ variables that are no setting, with the variable likely meant, never their values', async () => {
    const env = {
      ...CONNECTION_ENV,
      TAP_DATA_READ_PERSONALDATA: 'drop',
      TAP_DATA_READ_hash_key: 'a-long-enough-hash-key',
      TAP_DATA_READ_FIELD_TREATMENT: '[]',
      TAP_DATA_READ_COLOUR: 'blue',
      TAP_DATA_READ_EMPTY: '',
      // Meltano's extras, and the settings of a plugin named tap-data-read-eu (inherit_from) which Meltano sets beside ours.
      TAP_DATA_READ__SELECT: '["contacts.*"]',
      TAP_DATA_READ_EU_API_KEY: 'dr_live_eu',
      TAP_DATA_READ_EU_PERSONAL_DATA: 'hash',
    };
    expect(unknownEnvVariables(env)).toEqual(['TAP_DATA_READ_COLOUR', 'TAP_DATA_READ_FIELD_TREATMENT', 'TAP_DATA_READ_PERSONALDATA', 'TAP_DATA_READ_hash_key']);
    const warning = unknownEnvVariablesWarning(env) ?? '';
    expect(warning).toContain('TAP_DATA_READ_PERSONALDATA (did you mean TAP_DATA_READ_PERSONAL_DATA?)');
    expect(warning).toContain('TAP_DATA_READ_hash_key (did you mean TAP_DATA_READ_HASH_KEY?)');
    expect(warning).toContain('TAP_DATA_READ_FIELD_TREATMENT (did you mean TAP_DATA_READ_FIELD_TREATMENTS?)');
    expect(warning).toMatch(/TAP_DATA_READ_COLOUR[,.]/);
    expect(warning).not.toContain('a-long-enough-hash-key');
    expect(unknownEnvVariablesWarning(CONNECTION_ENV)).toBeUndefined();
  });

  it('refuses a list variable that is not valid JSON, naming the variable and where, never quoting the value', async () => {
    const accounts = configFromEnvError({ TAP_DATA_READ_ACCOUNTS: '[{"name": "eu", "api_key": "dr_live_s3cret"' });
    expect(accounts).toMatch(/^TAP_DATA_READ_ACCOUNTS is not valid JSON: .*position 43.*accounts takes a JSON list/);
    expect(accounts).not.toContain('dr_live_s3cret');
    expect(configFromEnvError({ TAP_DATA_READ_FIELD_TREATMENTS: 'contacts.email=drop' })).toMatch(/^TAP_DATA_READ_FIELD_TREATMENTS is not valid JSON: .*field_treatments takes a JSON list/);
    expect(configFromEnvError({ TAP_DATA_READ_FIELD_TREATMENTS: '[{"stream": "contacts",]' })).toMatch(/^TAP_DATA_READ_FIELD_TREATMENTS is not valid JSON: .*position 23/);
  });

  it('refuses a list variable that gives a key twice in one object, as a config file that does is refused', async () => {
    const twice = '[{"stream": "contacts", "field": "email", "treatment": "drop", "treatment": "keep"}]';
    expect(configFromEnvError({ TAP_DATA_READ_FIELD_TREATMENTS: twice })).toMatch(/^TAP_DATA_READ_FIELD_TREATMENTS gives "field_treatments\[0\]\.treatment" twice/);
  });

  it('merges --config sources left to right, ENV among them', async () => {
    const dir = tempDir();
    const a = writeJson(dir, 'a.json', { api_key: 'dr_live_file', base_url: 'http://127.0.0.1:1', page_size: 10 });
    const b = writeJson(dir, 'b.json', { page_size: 20, start_date: '2024-01-01' });
    const env = { TAP_DATA_READ_API_KEY: 'dr_live_env' };
    expect((await readConfigSources([a, 'ENV', b], env)).config).toEqual({ api_key: 'dr_live_env', base_url: 'http://127.0.0.1:1', page_size: 20, start_date: '2024-01-01' });
    expect((await readConfigSources(['ENV', a], env)).config.api_key).toBe('dr_live_file');
    const list = writeJson(dir, 'list.json', [1]);
    await expect(readConfigSources([list], env)).rejects.toThrow(/must hold a JSON object/);
  });

  it('keeps a "__proto__" key of a file as a key, which validation warns about, not as settings every key inherits', async () => {
    const dir = tempDir();
    const file = writeJson(dir, 'proto.json', `{"__proto__": {"page_size": 0}, "api_key": "dr_live_abc123", "base_url": "http://127.0.0.1:8080"}`);
    const merged = (await readConfigSources([file], {})).config;
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(merged.page_size).toBeUndefined();
    const { config, warnings } = parseConfig(merged);
    expect(config.page_size).toBe(200);
    expect(warnings).toEqual([expect.stringContaining('__proto__')]);
  });
});
