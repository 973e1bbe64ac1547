/**
 * Vitest's global set-up for the tests that need a real PostgreSQL server.
 *
 * With DATABASE_URL set (a server of the user's, as a role that may CREATE
 * DATABASE), the tests use it. Otherwise one throw-away server is started
 * for the whole run (postgres-launch.ts): it starts in the background while
 * the test files load, a test that needs it waits for it (postgres.ts), and
 * it is stopped, its folder removed, when the run ends.
 */
import type { TestProject } from 'vitest/node';
import { launchServer } from './postgres-launch.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's PostgreSQL server: its URL, and the file that says when it is ready (null: the user's server, ready). */
    postgres: { readonly url: string; readonly info: string | null };
  }
}

export async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const given = process.env.DATABASE_URL;
  if (given !== undefined && given !== '') {
    project.provide('postgres', { url: given, info: null });
    return undefined;
  }
  const server = await launchServer();
  project.provide('postgres', { url: server.url, info: server.info });
  return () => server.stop();
}
