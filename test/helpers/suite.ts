/**
 * The set-up the end-to-end files share, as hooks of the suite they are
 * called in: the built dist/ required, a temporary directory, and an
 * emulator account on 127.0.0.1 (test/replica/helpers.ts); after the suite
 * the emulator is stopped and the directory removed.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { emulatorAccount, requireBuild, type Account } from '../replica/helpers.js';
import { tempDir } from './cli.js';

export interface SuiteOptions {
  /** Run on the directory before it is removed (to give back permissions a test took away). */
  readonly beforeRemove?: (dir: string) => void;
}

function removeDir(dir: string | undefined, options: SuiteOptions): void {
  if (dir === undefined) return;
  options.beforeRemove?.(dir);
  rmSync(dir, { recursive: true, force: true });
}

/** Before the suite: dist/ built, and a temporary directory named from `prefix`, handed to `ready`. */
export function withTempDir(prefix: string, ready: (dir: string) => void, options: SuiteOptions = {}): void {
  let dir: string | undefined;
  beforeAll(() => {
    requireBuild();
    dir = tempDir(prefix);
    ready(dir);
  });
  afterAll(() => removeDir(dir, options));
}

/** The same, and an emulator account of `contacts` contacts (its data drawn from `seed`), handed to `ready` with the directory. */
export function withEmulatorAccount(
  prefix: string,
  data: { readonly contacts: number; readonly seed?: number },
  ready: (suite: { readonly account: Account; readonly dir: string }) => void,
  options: SuiteOptions = {},
): void {
  let account: Account | undefined;
  let dir: string | undefined;
  beforeAll(async () => {
    requireBuild();
    dir = tempDir(prefix);
    account = await emulatorAccount(data.contacts, data.seed);
    ready({ account, dir });
  });
  afterAll(async () => {
    await account?.emulator.close();
    removeDir(dir, options);
  });
}

/**
 * For tests that each open a database of their own: a function that makes a
 * new temporary directory (named from `prefix`) and returns the path of
 * `name` in it; after each test the directories it made are removed.
 */
export function withTempDatabases(prefix: string, name = 'r.db'): () => string {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return () => {
    const dir = tempDir(prefix);
    dirs.push(dir);
    return join(dir, name);
  };
}
