/**
 * The set-up the end-to-end files share, as hooks of the suite they are
 * called in: the built dist/ required, a temporary directory, and an
 * emulator account on 127.0.0.1 (test/helpers/emulator-runs.ts); after the suite
 * the emulator is stopped and the directory removed.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { setup, type Setup } from '../emulator/helpers.js';
import { emulatorAccount, requireBuild, type Account } from './emulator-runs.js';
import { startEmulator, type Emulator, type EmulatorOptions } from 'data-read-emulator';
import { makeTestCa, type TestCa } from './certificates.js';
import { startForwardProxy, type ForwardProxy } from './forward-proxy.js';
import { tempDir, writeJson } from './cli.js';

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

/** An emulator account of `contacts` contacts (its data drawn from `seed`) for one suite, handed to `ready`; the emulator is stopped after it. For suites sharing a directory made by withTempDir. */
export function withAccount(data: { readonly contacts: number; readonly seed?: number }, ready: (account: Account) => void): void {
  let account: Account | undefined;
  beforeAll(async () => {
    account = await emulatorAccount(data.contacts, data.seed);
    ready(account);
  });
  afterAll(async () => {
    await account?.emulator.close();
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

/**
 * For the terminal tests: an emulator on a real clock with a small limit per
 * window (4 requests every 1.2 s), so that the client waits for the window
 * several times; an account of `contacts` contacts and its config.json in a
 * temporary directory, handed to `ready`. `configOfNewKey` writes the config
 * of another key of the same account: the limit is per key, so a run with a
 * key of its own waits on its own windows alone, and such runs can go side by side.
 */
export function withRateLimitedEmulator(
  prefix: string,
  data: { readonly contacts: number; readonly seed: number },
  ready: (suite: { readonly emulator: Emulator; readonly dir: string; readonly config: string; readonly configOfNewKey: (name: string) => string }) => void,
): void {
  let emulator: Emulator | undefined;
  let dir: string | undefined;
  beforeAll(async () => {
    requireBuild();
    const started = (emulator = await startEmulator({ host: '127.0.0.1', port: 0, seed: data.seed, limits: { perMinute: 4, windowMs: 1200, perDay: 1_000_000 } }));
    const account = started.control.createAccount({ name: 'Terminal test' });
    const where = (dir = tempDir(prefix));
    const configOfNewKey = (name: string): string =>
      writeJson(where, `${name}.json`, { api_key: started.control.createKey(account.id).key, base_url: started.url, page_size: 100 });
    const config = configOfNewKey('config');
    started.control.seed(account.id, { contacts: data.contacts });
    ready({ emulator: started, dir: where, config, configOfNewKey });
  });
  afterAll(async () => {
    await emulator?.close();
    removeDir(dir, {});
  });
}

/** For the emulator's own tests: an emulator with one account (test/emulator/helpers.ts: setup), handed to `ready`, stopped after the suite. */
export function withEmulatorSetup(options: Parameters<typeof setup>[0], ready: (s: Setup) => void): void {
  let s: Setup | undefined;
  beforeAll(async () => {
    s = await setup(options);
    ready(s);
  });
  afterAll(async () => {
    await s?.emu.close();
  });
}

/** What the proxy tests run against: a throw-away CA, the emulator over TLS (its certificate) and over plain HTTP, a proxy, and one that asks for Basic credentials. */
export interface ProxyLab {
  readonly ca: TestCa;
  readonly tlsEmu: Emulator;
  readonly plainEmu: Emulator;
  readonly proxy: ForwardProxy;
  /** Asks for user `etl` with `password`. */
  readonly authProxy: ForwardProxy;
}

/** Before the suite: a ProxyLab (emulators seeded `${seed}` and `${seed}-plain`, with `emulator` options), handed to `ready`; after it: all of it stopped. */
export function withProxyLab(options: { readonly seed: string; readonly password: string; readonly emulator?: Partial<EmulatorOptions> }, ready: (lab: ProxyLab) => void): void {
  const started: { tlsEmu?: Emulator; plainEmu?: Emulator; proxy?: ForwardProxy; authProxy?: ForwardProxy } = {};
  beforeAll(async () => {
    const ca = makeTestCa();
    const tlsEmu = (started.tlsEmu = await startEmulator({ ...options.emulator, seed: options.seed, tls: ca.server }));
    const plainEmu = (started.plainEmu = await startEmulator({ ...options.emulator, seed: `${options.seed}-plain` }));
    const proxy = (started.proxy = await startForwardProxy());
    const authProxy = (started.authProxy = await startForwardProxy({ auth: { user: 'etl', password: options.password } }));
    ready({ ca, tlsEmu, plainEmu, proxy, authProxy });
  });
  afterAll(async () => {
    await Promise.all(Object.values(started).map((server) => server.close()));
  });
}
