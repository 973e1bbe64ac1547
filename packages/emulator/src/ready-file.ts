/**
 * `emulator --ready-file FILE`: the emulator's JSON line, also written to a
 * file once the emulator serves, so that a script started in the background
 * can wait for it. The file appears whole or not at all (written under a
 * temporary name in the same folder, then renamed), readable by its owner
 * only (it holds the API key), and is removed when the emulator stops.
 */
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

export function writeReadyFile(path: string, text: string): void {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(temporary, text, { mode: 0o600 });
    renameSync(temporary, path);
  } catch (err) {
    rmSync(temporary, { force: true });
    throw new Error(`cannot write --ready-file "${path}": ${err instanceof Error ? err.message : String(err)}`);
  }
}

export function removeReadyFile(path: string): void {
  rmSync(path, { force: true });
}
