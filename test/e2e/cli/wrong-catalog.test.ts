/**
 * One face given the other face's catalog (or a discovered Airbyte catalog
 * where a configured one is needed): the message says which catalog was
 * given, which one is needed and how to make it. Through the real
 * executables, with the catalogs they write themselves.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { catalogKind } from '../../../src/protocols/catalog-kind.js';
import { ROOT, SOURCE_BIN, TAP_BIN, parseLines, protocolCheck, runCli, tempDir, writeJson } from '../../helpers/cli.js';

const KEY = 'drk_live_CATALOGKIND0TEST0KEY';
let dir: string;
let config: string;
const files: Record<string, string> = {};

beforeAll(async () => {
  dir = tempDir('sdr-catalogs-');
  // Nothing listens on port 9: the catalog must be refused before any request (and discover, pinned, makes none).
  config = writeJson(dir, 'config.json', { api_key: KEY, base_url: 'http://127.0.0.1:9', max_retries: 0, use_service_schema: false });
  const singer = await runCli(TAP_BIN, ['--config', config, '--discover']);
  const discover = await runCli(SOURCE_BIN, ['discover', '--config', config]);
  expect(singer.code).toBe(0);
  expect(discover.code).toBe(0);
  files.singer = writeJson(dir, 'singer-catalog.json', singer.stdout);
  files.discoverOutput = writeJson(dir, 'discover-output.json', discover.stdout);
  files.discovered = join(ROOT, 'catalog', 'discovered_catalog.json');
  files.configured = join(ROOT, 'catalog', 'configured_catalog.json');
});

function configError(stdout: string): string {
  expect(protocolCheck('airbyte', stdout).errors).toEqual([]);
  const traces = parseLines(stdout).filter((m) => m.type === 'TRACE');
  expect(traces).toHaveLength(1);
  const error = (traces[0]?.trace as { error: { failure_type: string; message: string } }).error;
  expect(error.failure_type).toBe('config_error');
  return error.message;
}

describe('source-data-read read --catalog <not a configured catalog>', () => {
  it.each([
    ['singer', /is a Singer catalog \(streams with "tap_stream_id", "schema" and "metadata", as tap-data-read --discover writes it/, /Use this one with tap-data-read --catalog instead/],
    ['discovered', /is an Airbyte discovered catalog \(streams with "name" and "json_schema", as source-data-read discover prints them\)/, /Wrap each discovered stream that way/],
    ['discoverOutput', /is the output of source-data-read discover \(a CATALOG message around the discovered Airbyte catalog\)/, /Wrap each discovered stream that way/],
  ])('%s: one config_error naming the catalog given and the one needed', async (name, given, how) => {
    const path = files[name] as string;
    const run = await runCli(SOURCE_BIN, ['read', '--config', config, '--catalog', path]);
    expect(run.code).toBe(78);
    const message = configError(run.stdout);
    expect(message).toContain(`The --catalog file "${path}"`);
    expect(message).toMatch(given);
    expect(message).toMatch(/but read needs an Airbyte configured catalog, which wraps each discovered stream with its sync mode: \{"streams": \[\{"stream": \{"name": "<stream>"/);
    expect(message).toMatch(how);
    expect(message).toContain(`the ready one that selects every stream (incremental where supported): ${files.configured}.`);
    expect(message).not.toMatch(/Invalid input|expected object/);
    expect(run.stdout + run.stderr).not.toContain(KEY);
  });
});

describe('tap-data-read --catalog <an Airbyte catalog>', () => {
  it.each([
    ['configured', 'catalog', /is an Airbyte configured catalog \(streams as \{"stream": \{\.\.\.\}, "sync_mode": \.\.\.\}, for source-data-read read\)/],
    ['discovered', 'catalog', /is an Airbyte discovered catalog/],
    ['discoverOutput', 'catalog', /is the output of source-data-read discover/],
    ['configured', 'properties', /is an Airbyte configured catalog/],
  ])('%s (--%s): CRITICAL naming the catalog given and how to write a Singer one, exit 78', async (name, flag, given) => {
    const path = files[name] as string;
    const run = await runCli(TAP_BIN, ['--config', config, `--${flag}`, path]);
    expect(run.code).toBe(78);
    expect(run.stdout).toBe('');
    const lines = run.stderr.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`CRITICAL tap-data-read: The --${flag} file "${path}"`);
    expect(lines[0]).toMatch(given);
    expect(lines[0]).toContain('but tap-data-read needs a Singer catalog: write one with `tap-data-read --config CONFIG.json --discover > catalog.json`');
    expect(lines[0]).not.toMatch(/Invalid input|expected string|neither tap_stream_id/);
  });
});

describe('catalogKind', () => {
  it('recognises each catalog by its entries, and leaves the rest to the validation of each face', () => {
    expect(catalogKind({ streams: [{ tap_stream_id: 'contacts', stream: 'contacts', schema: {}, metadata: [] }] })).toBe('singer');
    expect(catalogKind({ streams: [{ stream: 'contacts', schema: {} }] })).toBe('singer');
    expect(catalogKind({ streams: [{ stream: { name: 'contacts' }, sync_mode: 'incremental' }] })).toBe('airbyte-configured');
    expect(catalogKind({ streams: [{ name: 'contacts', json_schema: {} }] })).toBe('airbyte-discovered');
    expect(catalogKind({ type: 'CATALOG', catalog: { streams: [] } })).toBe('airbyte-catalog-message');
    // Mixed, empty or shapeless: unknown, so the face's own message names the field that is wrong.
    expect(catalogKind({ streams: [{ name: 'a', json_schema: {} }, { stream: { name: 'b' } }] })).toBe('unknown');
    expect(catalogKind({ streams: [] })).toBe('unknown');
    expect(catalogKind({ stream: [] })).toBe('unknown');
    expect(catalogKind([{ stream: { name: 'contacts' } }])).toBe('unknown');
    expect(catalogKind({ streams: [{ stream: { json_schema: {} }, sync_mode: 'incremental' }] })).toBe('airbyte-configured');
  });
});
