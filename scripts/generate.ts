/** `npm run generate`: write the generated artifacts (see artifacts.ts) into the repository. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { generatedArtifacts } from './artifacts.js';
import { ROOT } from './root.js';

for (const [path, content] of generatedArtifacts()) {
  const target = join(ROOT, path);
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, content);
  process.stderr.write(`wrote ${path}\n`);
}
