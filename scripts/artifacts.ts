/**
 * Every checked-in file generated from the zod schemas and the streams table:
 * stream JSON Schemas, the discovered and configured catalogs, the SPEC
 * snapshot, the emulator's OpenAPI document, the JSON Schema of the run
 * summary (--summary); and the pages whose tables are generated (doc-tables.ts:
 * the config and stream tables, meltano.yml's settings). `npm run generate`
 * writes them; a test fails when a copy drifts.
 */
import { buildOpenApiDocument } from 'data-read-emulator';
import { configJsonSchema } from '../src/config/config.js';
import { runSummaryJsonSchema } from '../src/report/run-summary-schema.js';
import { airbyteJsonSchema, discoverCatalog } from '../src/protocols/airbyte/catalog.js';
import { DOCUMENTATION_URL } from '../src/protocols/airbyte/commands.js';
import { specPayload } from '../src/protocols/airbyte/protocol.js';
import { STREAMS } from '../src/streams.js';
import { generatedPages } from './doc-tables.js';
import { ROOT } from './root.js';

const pretty = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

export function generatedArtifacts(): Map<string, string> {
  const files = new Map<string, string>();
  for (const stream of STREAMS) files.set(`schemas/${stream.name}.json`, pretty(airbyteJsonSchema(stream, false)));
  const streams = discoverCatalog(false);
  files.set('catalog/discovered_catalog.json', pretty({ streams }));
  files.set(
    'catalog/configured_catalog.json',
    pretty({
      streams: streams.map((stream) => {
        const incremental = stream.supported_sync_modes.includes('incremental');
        return {
          stream,
          sync_mode: incremental ? 'incremental' : 'full_refresh',
          destination_sync_mode: incremental ? 'append_dedup' : 'overwrite',
          ...(stream.default_cursor_field ? { cursor_field: stream.default_cursor_field } : {}),
          primary_key: stream.source_defined_primary_key,
        };
      }),
    }),
  );
  files.set(
    'catalog/spec.json',
    pretty(specPayload(configJsonSchema(), DOCUMENTATION_URL)),
  );
  files.set('packages/emulator/openapi.json', pretty(buildOpenApiDocument()));
  files.set('schemas/run-summary.json', pretty(runSummaryJsonSchema()));
  for (const [page, text] of generatedPages(ROOT)) files.set(page, text);
  return files;
}
