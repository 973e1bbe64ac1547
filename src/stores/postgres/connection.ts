/**
 * Connecting to a PostgreSQL store: the driver (`pg`, and `pg-copy-streams`
 * for COPY) loaded when first needed, TLS as libpq's `sslmode` says, the
 * session named after the run (`application_name`, what a second run
 * quotes when the lock is taken), and every value read back as the
 * server's text (no lossy parse of numerics or timestamps into JS numbers
 * and Dates).
 *
 * sslmode, as libpq:
 * - disable: no TLS.
 * - allow: plain first; TLS (unchecked) if the server refuses a plain login.
 * - prefer (the default): TLS if the server offers it, else plain; the
 *   certificate is not checked.
 * - require: TLS or nothing, and the certificate NOT checked: it protects
 *   against eavesdropping, not against a server that poses as yours. As in
 *   libpq, when a CA is given (sslrootcert, PGSSLROOTCERT, or
 *   ~/.postgresql/root.crt exists) require checks the chain as verify-ca.
 * - verify-ca: TLS, the chain checked against the CA, the host name not.
 * - verify-full: TLS, the chain and the host name checked.
 * Over a Unix socket (a host that is a folder) no TLS is asked for, whatever
 * the sslmode, as libpq does: the server accepts none there.
 * The CA: `sslrootcert` (a PEM file, or `system` for the system's roots),
 * else ~/.postgresql/root.crt; verify-ca and verify-full without one are a
 * config_error, as in libpq.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { ConnectionOptions } from 'node:tls';
import type { Client, ClientConfig } from 'pg';
import { ConfigError, messageOf } from '../../errors.js';
import { missingPackageError } from '../optional-package.js';
import { defaultRootCertPath, type PostgresTarget } from '../target.js';
import { postgresError } from './faults.js';

type PgModule = typeof import('pg');
type CopyModule = typeof import('pg-copy-streams');

export interface PgDriver {
  readonly pg: PgModule;
  readonly copy: CopyModule;
}

let driver: Promise<PgDriver> | undefined;

/** The driver's modules, imported once; a missing one is a config_error naming it. */
export function loadPgDriver(): Promise<PgDriver> {
  driver ??= (async () => {
    let pg: PgModule;
    let copy: CopyModule;
    try {
      pg = (await import('pg')).default as unknown as PgModule;
    } catch (err) {
      throw missingPackageError(err, 'pg', 'PostgreSQL');
    }
    try {
      copy = (await import('pg-copy-streams')).default as unknown as CopyModule;
    } catch (err) {
      throw missingPackageError(err, 'pg-copy-streams', 'PostgreSQL');
    }
    return { pg, copy };
  })();
  driver.catch(() => {
    driver = undefined;
  });
  return driver;
}

/** The CA to check the server against; undefined when none is given or found. */
function rootCertificate(target: PostgresTarget): { ca: string | undefined; given: boolean } {
  const file = target.connection.sslrootcert;
  if (file === 'system') return { ca: undefined, given: true };
  const path = file ?? defaultRootCertPath();
  if (path === undefined) return { ca: undefined, given: false };
  if (file === undefined && !existsSync(path)) return { ca: undefined, given: false };
  try {
    return { ca: readFileSync(path, 'utf8'), given: true };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(`Cannot read the CA file "${path}" (sslrootcert) for ${target.display}: ${code === 'ENOENT' ? 'no such file' : String(code ?? err)}.`, {
      field: '--db',
    });
  }
}

/** Where else a CA can be put, for the message that none was given: the default file, when there is a home directory. */
function rootCertHint(): string {
  const path = defaultRootCertPath();
  return path === undefined ? '' : `, or put it at ${path}`;
}

/** The `ssl` settings of each attempt, in order (prefer and allow have a second one). */
function tlsAttempts(target: PostgresTarget): (false | ConnectionOptions)[] {
  const { sslmode, host } = target.connection;
  const unchecked: ConnectionOptions = { rejectUnauthorized: false };
  // A Unix socket never carries TLS (the server refuses it there): libpq asks for none over one, whatever the sslmode.
  if (sslmode === 'disable' || host.startsWith('/')) return [false];
  if (sslmode === 'allow') return [false, unchecked];
  if (sslmode === 'prefer') return [unchecked, false];
  const { ca, given } = rootCertificate(target);
  const chain: ConnectionOptions = { rejectUnauthorized: true, ...(ca === undefined ? {} : { ca }) };
  if (sslmode === 'require') return [given ? { ...chain, checkServerIdentity: () => undefined } : unchecked];
  if (!given) {
    throw new ConfigError(
      `sslmode=${sslmode} checks the server's certificate, and no CA was given for ${target.display}: ` +
        `name one with sslrootcert=FILE (or PGSSLROOTCERT${rootCertHint()}), or sslrootcert=system for the system's trusted roots.`,
      { field: '--db' },
    );
  }
  if (sslmode === 'verify-ca') return [{ ...chain, checkServerIdentity: () => undefined }];
  // The host name is checked by tls.connect against the host the driver passes (and sends as SNI when it is a name):
  // a servername set here would also be an IP address's, which Node warns of on stderr (DEP0123, RFC 6066).
  return [chain];
}

/** Whether the next attempt of prefer/allow should follow this failure. */
function fallsBack(err: unknown, sslmode: string): boolean {
  const message = messageOf(err);
  const code = (err as { code?: unknown } | undefined)?.code;
  if (sslmode === 'prefer') return /does not support SSL/i.test(message);
  if (sslmode === 'allow') return code === '28000' && /no encryption|SSL off/i.test(message);
  return false;
}

/**
 * The password of the pass file (PGPASSFILE, else ~/.pgpass) for `c`, as
 * libpq reads it: lines `host:port:database:user:password`, `*` matching
 * anything, `\:` and `\\` escaped, `#` a comment, the first match used; a
 * Unix socket matches `localhost`; a file that is not plain or that group or
 * others may read is ignored. Read here, not by the driver: its own reading
 * matches a socket folder, not localhost, and writes a deprecation warning
 * on stderr at every run.
 */
function passFilePassword(c: PostgresTarget['connection']): string | undefined {
  let text: string;
  try {
    // No home directory (HOME unset, a uid without a passwd entry: homedir() throws): no ~/.pgpass, as for libpq.
    const file = process.env.PGPASSFILE || join(homedir(), '.pgpass');
    const stat = statSync(file);
    if (!stat.isFile() || (stat.mode & 0o077) !== 0) return undefined;
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const wanted = [c.host.startsWith('/') ? 'localhost' : c.host, String(c.port), c.database, c.user];
  for (const line of text.split(/\r?\n/)) {
    if (line.startsWith('#')) continue;
    const fields: string[] = [];
    let field = '';
    for (let i = 0; i < line.length; i++) {
      const ch = line[i];
      if (ch === '\\' && i + 1 < line.length) field += line[++i];
      else if (ch === ':' && fields.length < 4) {
        fields.push(field);
        field = '';
      } else field += ch;
    }
    if (fields.length < 4 || field === '') continue;
    if (wanted.every((value, i) => fields[i] === '*' || fields[i] === value)) return field;
  }
  return undefined;
}

/** Every value as the server's text: numerics keep their digits, timestamps their microseconds. */
const RAW_TEXT = { getTypeParser: () => (value: string) => value } as unknown as ClientConfig['types'];

/**
 * Limits a DBA sets on the database or the role for interactive sessions (a
 * dashboard's runaway query, a forgotten open transaction) would end a run's
 * session: a group's commit may take longer than `statement_timeout`, and a
 * run waits for the service inside and between its transactions. Each would
 * end every run the same way, for ever; the run turns them off for its own
 * session, as pg_dump does, once connected: `statement_timeout` first, by
 * the quickest statement there is (a SET takes microseconds, under any
 * limit a DBA would set), then the others where the server knows them. Not
 * as the startup packet's `options`, which connection poolers such as
 * PgBouncer refuse unless told to ignore them.
 */
const SESSION_LIMITS = ['idle_in_transaction_session_timeout', 'idle_session_timeout', 'transaction_timeout'];

/**
 * The driver parses the server's messages in its socket's 'data' listener, and throws there on one it does not know:
 * the authentication a server asks for by GSSAPI (Kerberos) or SSPI, which it does not implement. Nothing catches that
 * throw, and the process would stop on it as on a bug. While connecting, each 'data' of the session's stream (the plain
 * one, then the TLS one that replaces it) is delivered under a guard that ends the stream with that error instead,
 * which the driver gives as connect's failure. Returns what takes the guard off.
 */
function guardParsing(stream: Duplex): () => void {
  const emit = stream.emit;
  stream.emit = function (this: Duplex, event: string | symbol, ...args: unknown[]): boolean {
    if (event !== 'data') return emit.call(this, event, ...args);
    try {
      return emit.call(this, event, ...args);
    } catch (err) {
      this.destroy(err instanceof Error ? err : new Error(String(err)));
      return false;
    }
  } as Duplex['emit'];
  return () => {
    stream.emit = emit;
  };
}

/** An open connection to the target's database; faults as postgresError says (transient or config). */
export async function connectPostgres(target: PostgresTarget): Promise<Client> {
  const { pg } = await loadPgDriver();
  const c = target.connection;
  const attempts = tlsAttempts(target);
  let last: unknown;
  for (const ssl of attempts) {
    const client = new pg.Client({
      host: c.host,
      port: c.port,
      user: c.user,
      database: c.database,
      // Asked for only when the server wants a password; undefined (none found) the driver takes as none given.
      password: c.password ?? ((async () => passFilePassword(c)) as () => Promise<string>),
      ssl,
      connectionTimeoutMillis: c.connectTimeoutMs,
      keepAlive: true,
      // The session's name in pg_stat_activity: who holds the writer lock (at most 63 bytes are kept).
      application_name: `source-data-read replicate pid ${process.pid} on ${hostname()}`.slice(0, 63),
      types: RAW_TEXT,
    });
    // An error after connecting (the server gone) is reported by the query that meets it; without a listener it would crash the process.
    client.on('error', () => {});
    const unguard = [guardParsing(client.connection.stream)];
    client.connection.once('sslconnect', () => unguard.push(guardParsing(client.connection.stream)));
    try {
      await client.connect();
    } catch (err) {
      last = err;
      await client.end().catch(() => {});
      if (!fallsBack(err, c.sslmode)) break;
      continue;
    } finally {
      for (const off of unguard) off();
    }
    try {
      await client.query('SET statement_timeout = 0');
      await client.query("SELECT set_config(name, '0', false) FROM pg_settings WHERE name = ANY($1)", [SESSION_LIMITS]);
      // The connector's SQL writes a backslash in a string literal as itself (the regular expression of an instant in a
      // text column): with this off for the role or database, '\d' would read as 'd', and no instant would match.
      await client.query('SET standard_conforming_strings = on');
      return client;
    } catch (err) {
      await client.end().catch(() => {});
      throw postgresError(err, target, 'connecting to');
    }
  }
  throw postgresError(last, target, 'connecting to');
}
