/**
 * Starting a throw-away PostgreSQL server (postgres-server.ts) in its own
 * process: a fresh folder, a free port on 127.0.0.1, a random password; as
 * uid 65534 (nobody) when the tests run as root, since PostgreSQL refuses
 * root. Shared by the run's global set-up and the tests that stop a server.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../scripts/root.js';

const NOBODY = 65534;
/** Run from its source file by Node (the same from vitest and from the compiled bench). */
const SERVER_SCRIPT = join(ROOT, 'test', 'helpers', 'postgres-server.ts');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

export interface LaunchedServer {
  /** Its `postgres` database, as the superuser `postgres`. */
  readonly url: string;
  readonly port: number;
  /** The file that says `{"ready":true}` (or the error) once the server started. */
  readonly info: string;
  /** The folder of its Unix socket (`.s.PGSQL.PORT`), when launched with `{ socket: true }`. */
  readonly socketDir: string | undefined;
  /** Stop it (a fast shutdown: open sessions end with 57P01) and remove its folder. */
  stop(): Promise<void>;
}

export interface LaunchOptions {
  /** Listen on a Unix socket too, in the server's folder (LaunchedServer.socketDir). */
  readonly socket?: boolean;
  /** Accept TLS with this certificate and key (PEM texts). */
  readonly tls?: { readonly cert: string; readonly key: string };
}

/** Start a server; it is ready once `waitUntilReady(info)` returns. */
export async function launchServer(options: LaunchOptions = {}): Promise<LaunchedServer> {
  const dir = mkdtempSync(join(tmpdir(), 'sdr-postgres-'));
  chmodSync(dir, 0o755);
  const root = process.getuid?.() === 0;
  if (root) chownSync(dir, NOBODY, NOBODY);
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const info = join(dir, 'info.json');
  const socketDir = options.socket ? dir : undefined;
  const tls = options.tls !== undefined;
  if (options.tls !== undefined) {
    // The server reads them as its own user, and refuses a key others may read.
    for (const [name, text] of [['server.crt', options.tls.cert], ['server.key', options.tls.key]] as const) {
      writeFileSync(join(dir, name), text, { mode: 0o600 });
      if (root) chownSync(join(dir, name), NOBODY, NOBODY);
    }
  }
  const child = spawn(process.execPath, [SERVER_SCRIPT, JSON.stringify({ dir, port, password, info, socketDir, tls })], {
    stdio: ['pipe', 'ignore', 'inherit'],
    ...(root ? { uid: NOBODY, gid: NOBODY } : {}),
    env: { ...process.env, TMPDIR: dir, NODE_NO_WARNINGS: '1' },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url: `postgresql://postgres:${password}@127.0.0.1:${port}/postgres?sslmode=disable`,
    port,
    info,
    socketDir,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin?.end();
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Wait until the server of `info` accepts connections; throws with its error when it could not start. */
export async function waitUntilReady(info: string, timeoutMs = 90_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (existsSync(info)) {
      const text = readFileSync(info, 'utf8');
      if (text.endsWith('\n')) {
        const state = JSON.parse(text) as { ready?: boolean; error?: string };
        if (state.ready) return;
        throw new Error(`The tests' PostgreSQL server did not start: ${state.error ?? text}`);
      }
    }
    if (Date.now() > until) throw new Error(`The tests' PostgreSQL server did not start within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
