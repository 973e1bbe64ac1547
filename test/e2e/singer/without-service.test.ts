/** The real executable, without a service: --about, --version, --help, --discover and errors. Needs `npm run build`. */
import { describe, expect, it } from 'vitest';
import { parseLines, runCli, TAP_BIN, tempDir, writeJson } from '../../helpers/cli.js';

const KEY = 'dr_live_s3cretKEYvalue';
const dir = tempDir('tap-cli-');
const config = writeJson(dir, 'config.json', { api_key: KEY, base_url: 'http://127.0.0.1:9' });

describe('tap-data-read (no service)', () => {
  it('--about prints one JSON object in Meltano\'s shape', async () => {
    const r = await runCli(TAP_BIN, ['--about']);
    expect(r.code).toBe(0);
    const [info, ...rest] = parseLines(r.stdout);
    expect(rest).toEqual([]);
    expect(info).toMatchObject({ name: 'tap-data-read', capabilities: ['catalog', 'discover', 'state', 'about', 'activate-version'] });
    expect(Object.keys((info?.settings as { properties: object }).properties)).toContain('api_key');
  });

  it('--about --format markdown, --version and --help', async () => {
    const md = await runCli(TAP_BIN, ['--about', '--format=markdown']);
    expect(md.code).toBe(0);
    expect(md.stdout).toContain('## Settings');
    const version = await runCli(TAP_BIN, ['--version']);
    expect(version.stdout).toMatch(/^tap-data-read \d+\.\d+\.\d+\n$/);
    const help = await runCli(TAP_BIN, ['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--properties');
  });

  it('--discover writes the catalog without contacting the service, from files or ENV', async () => {
    // Each run waits out its retries of the service's description (refused) before it falls back: the two wait together.
    const [r, env] = await Promise.all([
      runCli(TAP_BIN, ['--config', config, '--discover']),
      runCli(TAP_BIN, ['--config', 'ENV', '--discover'], {
        env: { TAP_DATA_READ_API_KEY: KEY, TAP_DATA_READ_BASE_URL: 'http://127.0.0.1:9', TAP_DATA_READ_DELETIONS_AS_TOMBSTONES: 'true' },
      }),
    ]);
    expect(r.code).toBe(0);
    const [catalog] = parseLines(r.stdout) as [{ streams: { tap_stream_id: string; schema: object }[] }];
    expect(catalog.streams.map((s) => s.tap_stream_id)).toEqual(['contacts', 'conversations', 'stage_events', 'deletions', 'pipeline_stages']);
    expect(r.stdout).not.toContain('_sdc_deleted_at');

    expect(env.code).toBe(0);
    expect(env.stdout).toContain('_sdc_deleted_at');
  });

  it('--config ENV names a TAP_DATA_READ_ variable that is no setting, and the setting it likely means', async () => {
    const env = { TAP_DATA_READ_API_KEY: KEY, TAP_DATA_READ_BASE_URL: 'http://127.0.0.1:9', TAP_DATA_READ_USE_SERVICE_SCHEMA: 'false' };
    const [misspelt, missing] = await Promise.all([
      runCli(TAP_BIN, ['--config', 'ENV', '--discover'], { env: { ...env, TAP_DATA_READ_PERSONALDATA: 'drop', TAP_DATA_READ__SELECT: '["contacts.*"]' } }),
      runCli(TAP_BIN, ['--config', 'ENV', '--discover'], { env: { ...env, TAP_DATA_READ_API_KEY: '', TAP_DATA_READ_APIKEY: KEY } }),
    ]);
    expect(misspelt.code).toBe(0);
    expect(misspelt.stderr).toMatch(/WARNING .*TAP_DATA_READ_PERSONALDATA \(did you mean TAP_DATA_READ_PERSONAL_DATA\?\)/);
    // Meltano's own variables (two underscores: its extras) are no mistake.
    expect(misspelt.stderr).not.toContain('TAP_DATA_READ__SELECT');
    // A config refused for the key it lacks names the variable that was meant to give it.
    expect(missing.code).toBe(78);
    expect(missing.stderr).toMatch(/CRITICAL .*api_key is required.*TAP_DATA_READ_APIKEY \(did you mean TAP_DATA_READ_API_KEY\?\)/);
    expect(missing.stderr).not.toContain(KEY);
  });

  it('--config ENV: a refused value names the variable it was read from, not one a later file overrides', async () => {
    const env = { TAP_DATA_READ_API_KEY: KEY, TAP_DATA_READ_BASE_URL: 'http://127.0.0.1:9', TAP_DATA_READ_PAGE_SIZE: 'many', TAP_DATA_READ_MAX_RETRIES: '-1' };
    const later = writeJson(dir, 'later.json', { max_retries: 'x' });
    const [fromEnv, fromFile] = await Promise.all([
      runCli(TAP_BIN, ['--config', 'ENV', '--discover'], { env }),
      runCli(TAP_BIN, ['--config', 'ENV', '--config', later, '--discover'], { env: { ...env, TAP_DATA_READ_PAGE_SIZE: '10' } }),
    ]);
    expect(fromEnv.code).toBe(78);
    expect(fromEnv.stderr).toMatch(/CRITICAL .*page_size must be an integer.*max_retries must be an integer.*TAP_DATA_READ_PAGE_SIZE, TAP_DATA_READ_MAX_RETRIES/);
    expect(fromFile.code).toBe(78);
    expect(fromFile.stderr).toMatch(/CRITICAL .*max_retries must be an integer/);
    expect(fromFile.stderr).not.toContain('TAP_DATA_READ_MAX_RETRIES');
  });

  it('an invalid config, catalog or state is a CRITICAL log on stderr, exit 78, nothing on stdout, the key never shown', async () => {
    const bad = writeJson(dir, 'bad.json', { api_key: KEY, base_url: 'ftp://example.com', page_size: 500 });
    for (const args of [['--config', bad, '--discover'], ['--config', bad]]) {
      const r = await runCli(TAP_BIN, args);
      expect(r.code).toBe(78);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/CRITICAL .*base_url.*page_size/);
      expect(r.stderr).not.toContain(KEY);
    }
    const missing = await runCli(TAP_BIN, ['--config', config, '--catalog', `${dir}/none.json`]);
    expect(missing.code).toBe(78);
    expect(missing.stderr).toMatch(/CRITICAL .*Cannot read the catalog file/);
    const state = writeJson(dir, 'state.json', { bookmarks: { contacts: { sync_watermark: 'soon' } } });
    const badState = await runCli(TAP_BIN, ['--config', config, '--state', state]);
    expect(badState.code).toBe(78);
    expect(badState.stderr).toMatch(/CRITICAL .*Invalid state for stream "contacts"/);
    const stringFlag = writeJson(dir, 'string-flag.json', {
      streams: [{ tap_stream_id: 'contacts', stream: 'contacts', schema: { type: 'object', properties: {} }, metadata: [{ breadcrumb: [], metadata: { selected: 'false', 'selected-by-default': true } }] }],
    });
    const badCatalog = await runCli(TAP_BIN, ['--config', config, '--catalog', stringFlag]);
    expect(badCatalog.code).toBe(78);
    expect(badCatalog.stdout).toBe('');
    expect(badCatalog.stderr).toMatch(/CRITICAL .*Invalid catalog: stream "contacts": metadata "selected" must be true or false \(a JSON boolean\), not "false"/);
  });

  it('usage mistakes exit 2 with a CRITICAL line', async () => {
    for (const args of [['--bogus'], ['--discover'], ['--about', '--format', 'yaml'], ['extra']]) {
      const r = await runCli(TAP_BIN, args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('CRITICAL');
    }
  });

  it('an unreachable service ends with CRITICAL, exit 75, and a final STATE on stdout', async () => {
    const quick = writeJson(dir, 'quick.json', { api_key: KEY, base_url: 'http://127.0.0.1:9', max_retries: 0, request_timeout_seconds: 2 });
    const r = await runCli(TAP_BIN, ['--config', quick]);
    expect(r.code).toBe(75);
    const lines = parseLines(r.stdout);
    expect(lines.at(-1)).toMatchObject({ type: 'STATE', value: { bookmarks: {} } });
    expect(lines.filter((l) => l.type === 'RECORD')).toEqual([]);
    expect(r.stderr).toMatch(/CRITICAL/);
    expect(r.stderr).not.toContain(KEY);
  });
});
