import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedArtifacts } from '../scripts/artifacts.js';
import { airbyteJsonSchema } from '../src/protocols/airbyte/catalog.js';
import { singerSchema } from '../src/protocols/singer/schema.js';
import { recordJsonSchema, type JsonSchema } from '../src/schemas/json-schema.js';
import { STREAMS } from '../src/streams.js';
import { ROOT } from './helpers/cli.js';

/** The generated files, and the schemas they are made of. */
describe('checked-in generated files', () => {
  for (const [path, content] of generatedArtifacts()) {
    it(`${path} matches its source (run "npm run generate" after changing schemas or streams)`, () => {
      expect(readFileSync(join(ROOT, path), 'utf8')).toBe(content);
    });
  }
});

describe('record schemas: one neutral schema, annotated by each face', () => {
  const dateTimes = (schema: JsonSchema): JsonSchema[] =>
    Object.values(schema.properties as Record<string, JsonSchema>).filter((p) => p.format === 'date-time');

  it.each(STREAMS.map((s) => [s.name, s] as const))('%s: neutral without airbyte_type; Airbyte adds it to every date-time; Singer sends the neutral one', (_name, stream) => {
    const neutral = recordJsonSchema(stream);
    expect(JSON.stringify(neutral)).not.toContain('airbyte_type');
    const airbyte = airbyteJsonSchema(stream, true);
    expect(dateTimes(airbyte).length).toBe(dateTimes(neutral).length + (stream.tombstoneObjectType === null ? 0 : 1));
    for (const p of dateTimes(airbyte)) expect(p.airbyte_type).toBe('timestamp_with_timezone');
    expect(singerSchema(stream, false)).toEqual(neutral);
  });
});
