/**
 * The repository root, the same whether a script runs from its source (vitest)
 * or compiled into .build/: the nearest folder above this file that holds
 * package.json.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${start}`);
  }
}

export const ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));
