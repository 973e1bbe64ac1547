/** `npm run generate`: write the generated artifacts (see artifacts.ts) into the repository. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedArtifacts } from './artifacts.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
for (const [path, content] of generatedArtifacts()) {
  const target = join(root, path);
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, content);
  process.stderr.write(`wrote ${path}\n`);
}
