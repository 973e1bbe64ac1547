import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedArtifacts } from '../scripts/artifacts.js';
import { ROOT } from './helpers/cli.js';

describe('checked-in generated files', () => {
  for (const [path, content] of generatedArtifacts()) {
    it(`${path} matches its source (run "npm run generate" after changing schemas or streams)`, () => {
      expect(readFileSync(join(ROOT, path), 'utf8')).toBe(content);
    });
  }
});
