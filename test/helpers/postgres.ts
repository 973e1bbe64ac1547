/**
 * The tests' PostgreSQL: the run's server (postgres-global.ts), a fresh
 * database per test file, and a second throw-away server for a test that
 * stops one.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { launchServer, waitUntilReady, type LaunchedServer, type LaunchOptions } from './postgres-launch.js';

/** The URL of the run's server (its `postgres` database), once it accepts connections. */
export async function postgresAdminUrl(): Promise<string> {
  const server = inject('postgres');
  if (server.info !== null) await waitUntilReady(server.info);
  return server.url;
}

/** `url` naming another database (its other parts kept). */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}

/** A plain client of the tests' own (set-up and checks), connected. */
export async function adminClient(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  return client;
}

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  /** Drop it, with its sessions. */
  drop(): Promise<void>;
}

/** A new empty database on the run's server, for one test file. */
export async function freshDatabase(prefix = 't'): Promise<TestDatabase> {
  const admin = await postgresAdminUrl();
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  const client = await adminClient(admin);
  try {
    await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  return {
    url: withDatabase(admin, name),
    name,
    drop: async () => {
      const c = await adminClient(admin);
      try {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** A second throw-away server, ready; the test stops it. */
export async function startThrowAwayServer(options: LaunchOptions = {}): Promise<LaunchedServer> {
  const server = await launchServer(options);
  try {
    await waitUntilReady(server.info);
  } catch (err) {
    await server.stop();
    throw err;
  }
  return server;
}
