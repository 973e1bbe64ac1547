/** `npm run generate`: write the generated artifacts (see artifacts.ts and wasm.ts) into the repository. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { generatedArtifacts } from './artifacts.js';
import { ROOT } from './root.js';
import { KERNEL_MODULE, assembledKernel } from './wasm.js';

const files = generatedArtifacts();
files.set(KERNEL_MODULE, await assembledKernel());
for (const [path, content] of files) {
  const target = join(ROOT, path);
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, content);
  process.stderr.write(`wrote ${path}\n`);
}
