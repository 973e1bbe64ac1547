/**
 * What a run parses once (the config, the catalog, a state, /v1/me, a problem
 * document) is parsed by zod without its compiled fast path: building that
 * parser (generated source, `new Function`) costs more than one parse saves,
 * at every start. Each module is loaded afresh, its schemas never used yet.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/cli.js';

const RealFunction = globalThis.Function;

/** The sources of the functions compiled from strings while `run` runs (zod's fast paths compile through the global Function). */
async function compiledBy(run: () => Promise<unknown>): Promise<string[]> {
  const compiled: string[] = [];
  globalThis.Function = new Proxy(RealFunction, {
    construct(target, args: unknown[]) {
      compiled.push(String(args.at(-1)).slice(0, 60));
      return Reflect.construct(target, args) as object;
    },
  });
  try {
    vi.resetModules();
    await run();
  } finally {
    globalThis.Function = RealFunction;
  }
  return compiled.filter((source) => source !== '');
}

afterEach(() => {
  globalThis.Function = RealFunction;
});

const catalogFile = (name: string): unknown => JSON.parse(readFileSync(join(ROOT, 'catalog', name), 'utf8'));

describe('parses done once a run compile nothing', () => {
  it('sees a compiled fast path (the check is not vacuous): a page envelope, parsed once a page', async () => {
    const compiled = await compiledBy(async () => {
      const { checkEnvelope } = await import('../../src/client/validate.js');
      checkEnvelope({ data: [], next_cursor: null, has_more: false, sync_watermark: '2025-01-01T00:00:00.000Z' }, 'GET /v1/contacts', (t) => t);
    });
    expect(compiled.length).toBeGreaterThan(0);
  });

  it('the config', async () => {
    const compiled = await compiledBy(async () => {
      const { parseConfig } = await import('../../src/config/config.js');
      parseConfig({ api_key: 'dr_live_abcdefabcdef1234', base_url: 'https://api.data-read.example' });
    });
    expect(compiled).toEqual([]);
  });

  it("Airbyte's configured catalog and a state", async () => {
    const compiled = await compiledBy(async () => {
      const { parseConfiguredCatalog } = await import('../../src/protocols/airbyte/catalog.js');
      const { parseStreamState } = await import('../../src/engine/state.js');
      parseConfiguredCatalog(catalogFile('configured_catalog.json'));
      parseStreamState('contacts', { sync_watermark: '2025-01-01T00:00:00.000Z', account: { name: 'A' } });
    });
    expect(compiled).toEqual([]);
  });

  it('the Singer catalog', async () => {
    const compiled = await compiledBy(async () => {
      const { planFromCatalog } = await import('../../src/protocols/singer/selection.js');
      const { discoverCatalog } = await import('../../src/protocols/singer/catalog.js');
      planFromCatalog(discoverCatalog(false), false, () => undefined);
    });
    expect(compiled).toEqual([]);
  });

  it('/v1/me and a problem document', async () => {
    const compiled = await compiledBy(async () => {
      const { checkMe } = await import('../../src/client/validate.js');
      const { readProblem } = await import('../../src/client/problem.js');
      checkMe({ account_name: 'A', scopes: ['data:read'], limits: { per_minute: 10, per_day: 100 } }, (t) => t);
      const problem = { type: 'about:blank', title: 'Not Found', status: 404, detail: 'none', request_id: 'r1' };
      readProblem(Buffer.from(JSON.stringify(problem)), { 'content-type': 'application/problem+json' }, (t) => t);
    });
    expect(compiled).toEqual([]);
  });
});
