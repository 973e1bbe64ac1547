import { describe, expect, it } from 'vitest';
import { about, aboutMarkdown } from '../../../src/protocols/singer/about.js';
import { VERSION } from '../../../src/runtime/version.js';

describe('--about', () => {
  it("has Meltano's shape and claims only what the tap implements", () => {
    const info = about();
    expect(info.name).toBe('tap-data-read');
    expect(info.version).toBe(VERSION);
    expect(info.capabilities).toEqual(['catalog', 'discover', 'state', 'about', 'activate-version']);
    expect(info.settings.type).toBe('object');
    expect(info.settings.required).toEqual(['base_url']);
  });

  it('describes every config key as JSON Schema, the key as secret, without Airbyte keywords', () => {
    const props = about().settings.properties as Record<string, Record<string, unknown>>;
    expect(Object.keys(props)).toEqual([
      'api_key', 'base_url', 'start_date', 'page_size', 'max_concurrent_requests',
      'request_timeout_seconds', 'max_retries', 'max_wait_seconds', 'deletions_as_tombstones', 'proxy_url', 'ca_certificate', 'use_service_schema',
      'personal_data', 'field_treatments', 'hash_key', 'account_renamed_from', 'accounts', 'max_concurrent_accounts',
    ]);
    // Many accounts: the list is a secret setting, and each entry's key a secret.
    expect(props.accounts).toMatchObject({ type: 'array', secret: true, writeOnly: true, items: { properties: { api_key: { type: 'string', secret: true, writeOnly: true } } } });
    expect(props.hash_key).toMatchObject({ type: 'string', secret: true, writeOnly: true });
    expect(props.personal_data).toMatchObject({ type: 'string', enum: ['keep', 'hash', 'drop'], default: 'keep' });
    expect(props.use_service_schema).toMatchObject({ type: 'boolean', default: true });
    expect(props.api_key).toMatchObject({ type: 'string', secret: true, writeOnly: true });
    expect(props.page_size).toMatchObject({ type: 'integer', default: 200, minimum: 1, maximum: 200 });
    expect(props.deletions_as_tombstones?.description).toContain('_sdc_deleted_at');
    expect(JSON.stringify(about())).not.toMatch(/airbyte_secret|"order"|always_show|pattern_descriptor|_ab_cdc/);
  });

  it('renders Markdown with capabilities and a settings table', () => {
    const md = aboutMarkdown();
    expect(md).toContain('# `tap-data-read`');
    expect(md).toContain('* `discover`');
    expect(md).toMatch(/\| api_key \| string \(secret\) \| False \|/);
    expect(md).toMatch(/\| page_size \| integer \| False \| 200 \|/);
  });
});
