/**
 * Where `replicate` writes (`--db TARGET [--schema NAME]`): a SQLite file, a
 * PostgreSQL database or a DuckDB file (connector contract, "Stores").
 *
 * - `postgresql://` or `postgres://`: a PostgreSQL URL as libpq reads it:
 *   `postgresql://[user[:password]@][host][:port][/dbname][?param=value&...]`,
 *   every part percent-decoded; the host a name, an IPv4 address, an IPv6
 *   one in brackets, or a Unix-socket folder (`%2Fvar%2Frun%2Fpostgresql`,
 *   or `?host=/var/run/postgresql`). A query parameter overrides the part of
 *   the URL it names. What the URL leaves out comes from the libpq variables
 *   PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE, PGSSLROOTCERT
 *   and PGCONNECT_TIMEOUT, then from libpq's defaults (the local socket,
 *   5432, the system user's name, a database named after the user,
 *   `sslmode=prefer`). Tables go into the schema `--schema` (default
 *   `data_read`).
 * - `duckdb:PATH`, or a path ending in `.duckdb`: a DuckDB file; tables in
 *   `--schema` (default `main`).
 * - another URL (`mysql://`, `sqlite:///x.db`): refused, naming the forms taken.
 * - libpq's keyword/value string (`host=h dbname=d`), or `postgresql:` without
 *   `//`: refused, quoting nothing of it (it may hold a password).
 * - `:memory:` (SQLite's or DuckDB's database in memory): refused, as it keeps
 *   nothing past the run.
 * - anything else: a SQLite file, as before.
 *
 * The password is a secret: it is in no message. `display` is the target as
 * messages show it, the password as `***`; `secrets` lists what `redact`
 * (errors.ts) must hide from any text that could carry it (a driver's error).
 */
import { existsSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';
import { ConfigError, maskUrlPassword } from '../errors.js';

/** How TLS is used, as libpq's `sslmode` says (connection.ts applies it). */
type SslMode = 'disable' | 'allow' | 'prefer' | 'require' | 'verify-ca' | 'verify-full';

const SSL_MODES: readonly SslMode[] = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'];

interface PostgresConnectionSettings {
  /** A host name or address, or the folder of a Unix socket (starts with `/`). */
  readonly host: string;
  readonly port: number;
  readonly user: string;
  /** Undefined when neither the URL nor PGPASSWORD gives one (the driver then reads ~/.pgpass). */
  readonly password: string | undefined;
  readonly database: string;
  readonly sslmode: SslMode;
  /** The CA file to check the server's certificate against (`sslrootcert`); 'system': the system's trusted roots. */
  readonly sslrootcert: string | undefined;
  /** How long connecting may take (`connect_timeout`, seconds in libpq), in ms. */
  readonly connectTimeoutMs: number;
}

interface SqliteTarget {
  readonly kind: 'sqlite';
  readonly path: string;
  readonly display: string;
  readonly secrets: readonly string[];
}

export interface PostgresTarget {
  readonly kind: 'postgres';
  readonly connection: PostgresConnectionSettings;
  readonly schema: string;
  readonly display: string;
  readonly secrets: readonly string[];
}

export interface DuckdbTarget {
  readonly kind: 'duckdb';
  readonly path: string;
  readonly schema: string;
  readonly display: string;
  readonly secrets: readonly string[];
}

export type StoreTarget = SqliteTarget | PostgresTarget | DuckdbTarget;

const POSTGRES_DEFAULT_SCHEMA = 'data_read';
const DUCKDB_DEFAULT_SCHEMA = 'main';
/** libpq waits for ever by default; a connector run on a schedule should not. */
const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;
/**
 * The databases (catalogs) of the DuckDB connection a run writes with
 * (duckdb/connection.ts): DuckDB's own, and the store's file as attached. A
 * schema of one of these names is an ambiguous reference DuckDB refuses in
 * every statement (names compared without case, as DuckDB does).
 */
const DUCKDB_CATALOGS: readonly string[] = ['memory', 'system', 'temp', '_replica_file'];
/** PostgreSQL's longest identifier, in bytes. */
const MAX_IDENTIFIER_BYTES = 63;

const POSTGRES_SCHEME = /^postgres(?:ql)?:\/\//i;
const DUCKDB_PREFIX = /^duckdb:/i;
const OTHER_SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;
/**
 * A PostgreSQL target in another form than the URL: libpq's keyword/value
 * string (`host=h user=u password=p dbname=d`, beginning with any of libpq's
 * keywords: `sslpassword=p` too), or the scheme without its
 * `//`. Taken for a SQLite path, it would make a file of that name and show
 * it, password and all, in every line that names the store.
 */
const LIBPQ_KEYWORDS = [
  'host', 'hostaddr', 'port', 'dbname', 'user', 'password', 'passfile', 'service', 'options', 'replication', 'requirepeer',
  'connect_timeout', 'client_encoding', 'application_name', 'fallback_application_name', 'target_session_attrs', 'load_balance_hosts',
  'keepalives', 'keepalives_idle', 'keepalives_interval', 'keepalives_count', 'tcp_user_timeout',
  'require_auth', 'channel_binding', 'gssencmode', 'gsslib', 'gssdelegation', 'krbsrvname', 'requiressl',
  'sslmode', 'sslnegotiation', 'sslcompression', 'sslcert', 'sslkey', 'sslpassword', 'sslcertmode', 'sslrootcert', 'sslcrl', 'sslcrldir', 'sslsni',
  'ssl_min_protocol_version', 'ssl_max_protocol_version',
];
const OTHER_POSTGRES_FORM = new RegExp(`^(?:\\s*(?:${LIBPQ_KEYWORDS.join('|')})\\s*=|postgres(?:ql)?:(?!//))`, 'i');

/** Query parameters of a PostgreSQL URL that the connector honours; any other is refused, as libpq refuses one it does not know. */
const URL_PARAMETERS = new Set(['host', 'port', 'user', 'password', 'dbname', 'sslmode', 'sslrootcert', 'connect_timeout', 'application_name']);

function schemaName(schema: string | undefined, fallback: string): string {
  if (schema === undefined) return fallback;
  if (schema === '' || schema.includes('\u0000') || Buffer.byteLength(schema, 'utf8') > MAX_IDENTIFIER_BYTES) {
    throw new ConfigError(`--schema must be a name of 1 to ${MAX_IDENTIFIER_BYTES} bytes (got ${JSON.stringify(schema)}).`, { field: '--schema' });
  }
  return schema;
}

/** Which store `db` names, its connection settings and its display form. `env`: where the PG* variables are read. */
export function parseStoreTarget(db: string, schema?: string, env: NodeJS.ProcessEnv = process.env): StoreTarget {
  if (db.trim() === '') throw new ConfigError('--db must name a SQLite file, a postgresql:// URL or a DuckDB file.', { field: '--db' });
  if (POSTGRES_SCHEME.test(db)) {
    const connection = parsePostgresUrl(db, env);
    const name = schemaName(schema, POSTGRES_DEFAULT_SCHEMA);
    // PostgreSQL refuses to create such a schema (42939, "unacceptable schema name"), at every run.
    if (name.startsWith('pg_')) {
      throw new ConfigError(`--schema "${name}" begins with pg_, which PostgreSQL reserves for its own schemas: give another name (the default is ${POSTGRES_DEFAULT_SCHEMA}).`, {
        field: '--schema',
      });
    }
    return {
      kind: 'postgres',
      connection,
      schema: name,
      display: postgresDisplay(connection),
      secrets: connection.password === undefined ? [] : [connection.password],
    };
  }
  // Any other scheme (mysql://, sqlite:///x.db, file://) would be taken for a SQLite path and fail on a folder named "mysql:".
  const scheme = OTHER_SCHEME.exec(db)?.[1];
  if (scheme !== undefined && !DUCKDB_PREFIX.test(db)) {
    throw new ConfigError(
      `--db "${maskUrlPassword(db)}" is a ${scheme}:// URL, which replicate cannot write to. --db takes a SQLite file's path (replica.db), a postgresql:// URL, or a DuckDB file (x.duckdb, duckdb:PATH).`,
      { field: '--db' },
    );
  }
  if (OTHER_POSTGRES_FORM.test(db)) {
    throw new ConfigError(
      '--db looks like a PostgreSQL connection string that is not a URL (not quoted here: it may hold a password). ' +
        `--db takes PostgreSQL as a URL: postgresql://user:password@host:port/dbname?sslmode=...${ENCODE_HINT}`,
      { field: '--db' },
    );
  }
  // SQLite's and DuckDB's in-memory database: a run would say "up to date" and keep nothing, its state with it.
  const file = DUCKDB_PREFIX.test(db) ? db.slice('duckdb:'.length) : db;
  if (file.startsWith(':memory:')) {
    throw new ConfigError(`--db ${db} is a database in memory, which keeps nothing past the run (rows nor state): name a file (replica.db, x.duckdb).`, {
      field: '--db',
    });
  }
  const duckPath = DUCKDB_PREFIX.test(db) ? db.slice('duckdb:'.length) : db.toLowerCase().endsWith('.duckdb') ? db : undefined;
  if (duckPath !== undefined) {
    if (duckPath === '') throw new ConfigError('--db duckdb: needs a file path after "duckdb:" (duckdb:analytics.duckdb).', { field: '--db' });
    const name = schemaName(schema, DUCKDB_DEFAULT_SCHEMA);
    if (DUCKDB_CATALOGS.includes(name.toLowerCase())) {
      throw new ConfigError(
        `--schema "${name}" is the name of one of the databases DuckDB's connection holds (${DUCKDB_CATALOGS.join(', ')}): DuckDB could not tell the schema from it. Give another name (the default is main).`,
        { field: '--schema' },
      );
    }
    return { kind: 'duckdb', path: duckPath, schema: name, display: duckPath, secrets: [] };
  }
  if (schema !== undefined) {
    throw new ConfigError(`--schema applies to PostgreSQL and DuckDB stores only; "${db}" is a SQLite file, whose tables have no schema.`, { field: '--schema' });
  }
  return { kind: 'sqlite', path: db, display: db, secrets: [] };
}

/**
 * A piece of the URL as a message may quote it: not at all when the URL holds
 * a password somewhere (an `@`, or `password=`), since a password with a `/`,
 * `@` or `&` typed without percent-encoding is cut into pieces that look like
 * a port, a host or a parameter.
 */
function quoted(text: string, url: string): string {
  return url.includes('@') || /[?&]password=/i.test(url) ? '' : ` "${text}"`;
}

/** What to do when the URL holds a password the parser may have cut. */
const ENCODE_HINT = ' A password holding @, /, ?, # or & must be percent-encoded (%40, %2F, %3F, %23, %26).';

function decode(part: string, what: string, url: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new ConfigError(`The PostgreSQL URL ${maskUrlPassword(url)} has a badly percent-encoded ${what}.`, { field: '--db' });
  }
}

function portOf(text: string, from: string, url: string): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port >= 1 && port <= 65535)) {
    const hint = quoted(text, url) === '' ? ENCODE_HINT : '';
    throw new ConfigError(`Invalid port${quoted(text, url)} (from ${from}) for ${maskUrlPassword(url)}: a number from 1 to 65535.${hint}`, { field: '--db' });
  }
  return port;
}

function sslModeOf(text: string, from: string): SslMode {
  if ((SSL_MODES as readonly string[]).includes(text)) return text as SslMode;
  throw new ConfigError(`Invalid sslmode "${text}" (from ${from}): one of ${SSL_MODES.join(', ')}.`, { field: '--db' });
}

function timeoutOf(text: string, from: string): number {
  if (!/^\d+$/.test(text)) throw new ConfigError(`Invalid connect_timeout "${text}" (from ${from}): a whole number of seconds.`, { field: '--db' });
  const seconds = Number(text);
  // libpq: 0 (or none) waits for ever; a value below 2 counts as 2.
  return seconds === 0 ? DEFAULT_CONNECT_TIMEOUT_MS : Math.max(2, seconds) * 1000;
}

/** Where libpq looks for the server's socket by default: Debian's folder, else the upstream default. */
function defaultSocketFolder(): string {
  return existsSync('/var/run/postgresql') ? '/var/run/postgresql' : '/tmp';
}

function systemUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'postgres';
  }
}

const nonEmpty = (value: string | undefined): string | undefined => (value === undefined || value === '' ? undefined : value);

/** A `postgresql://` URL's connection settings, completed from the PG* variables and libpq's defaults. */
function parsePostgresUrl(url: string, env: NodeJS.ProcessEnv = process.env): PostgresConnectionSettings {
  const scheme = POSTGRES_SCHEME.exec(url)?.[0] ?? '';
  // The credentials end at the first `@` before any `/`, as libpq reads them: a `?` or `#` in a password is the password's.
  const credentials = /^[^@/]*@/.exec(url.slice(scheme.length))?.[0] ?? '';
  const rest = url.slice(scheme.length + credentials.length);
  const hashAt = rest.indexOf('#');
  const body = hashAt >= 0 ? rest.slice(0, hashAt) : rest;
  const queryAt = body.indexOf('?');
  const beforeQuery = queryAt >= 0 ? body.slice(0, queryAt) : body;
  const query = queryAt >= 0 ? body.slice(queryAt + 1) : '';
  const slash = beforeQuery.indexOf('/');
  const authority = slash >= 0 ? beforeQuery.slice(0, slash) : beforeQuery;
  const path = slash >= 0 ? beforeQuery.slice(slash + 1) : '';
  const userinfo = credentials === '' ? undefined : credentials.slice(0, -1);
  const hostport = authority;
  // An `@` left in the host or the database is a password's, typed without percent-encoding (`p@ss`, `12/34@`): its
  // piece would be read as a host or database name, and shown as one. Refused, quoting nothing of it.
  if (authority.includes('@') || path.includes('@')) {
    throw new ConfigError(`The PostgreSQL URL ${maskUrlPassword(url)} has an @ in its host or database name.${ENCODE_HINT}`, { field: '--db' });
  }

  let user: string | undefined;
  let password: string | undefined;
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':');
    user = nonEmpty(decode(colon >= 0 ? userinfo.slice(0, colon) : userinfo, 'user name', url));
    if (colon >= 0) password = decode(userinfo.slice(colon + 1), 'password', url);
  }
  if (hostport.includes(',')) {
    throw new ConfigError(`The PostgreSQL URL ${maskUrlPassword(url)} names several hosts; give one (the connector writes to one primary server).`, { field: '--db' });
  }
  let host: string | undefined;
  let port: number | undefined;
  if (hostport.startsWith('[')) {
    const close = hostport.indexOf(']');
    if (close < 0) throw new ConfigError(`The PostgreSQL URL ${maskUrlPassword(url)} has an unclosed IPv6 address.`, { field: '--db' });
    host = decode(hostport.slice(1, close), 'host', url);
    const after = hostport.slice(close + 1);
    if (after.startsWith(':')) port = portOf(after.slice(1), 'the URL', url);
    else if (after !== '') throw new ConfigError(`The PostgreSQL URL ${maskUrlPassword(url)} has text after its IPv6 address.`, { field: '--db' });
  } else {
    const colon = hostport.lastIndexOf(':');
    const name = colon >= 0 ? hostport.slice(0, colon) : hostport;
    if (colon >= 0 && hostport.slice(colon + 1) !== '') port = portOf(hostport.slice(colon + 1), 'the URL', url);
    host = nonEmpty(decode(name, 'host', url));
  }
  let database = nonEmpty(decode(path, 'database name', url));

  let sslmode: SslMode | undefined;
  let sslrootcert: string | undefined;
  let connectTimeoutMs: number | undefined;
  if (query !== '') {
    for (const pair of query.split('&')) {
      if (pair === '') continue;
      const eq = pair.indexOf('=');
      const key = decode(eq >= 0 ? pair.slice(0, eq) : pair, 'query parameter', url);
      // Only %XX is decoded, as libpq does: a + stays a + (a base64 password holds some).
      const value = decode(eq >= 0 ? pair.slice(eq + 1) : '', `value of ${key}`, url);
      if (!URL_PARAMETERS.has(key)) {
        throw new ConfigError(
          `The PostgreSQL URL ${maskUrlPassword(url)} has a query parameter the connector does not know${quoted(key, url)} (known: ${[...URL_PARAMETERS].join(', ')}).` +
            (quoted(key, url) === '' ? ENCODE_HINT : ''),
          { field: '--db' },
        );
      }
      if (key === 'host') host = nonEmpty(value);
      else if (key === 'port') port = portOf(value, 'the port parameter', url);
      else if (key === 'user') user = nonEmpty(value);
      else if (key === 'password') password = value;
      else if (key === 'dbname') database = nonEmpty(value);
      else if (key === 'sslmode') sslmode = sslModeOf(value, 'the URL');
      else if (key === 'sslrootcert') sslrootcert = nonEmpty(value);
      else if (key === 'connect_timeout') connectTimeoutMs = timeoutOf(value, 'the URL');
      // application_name: the connector names its own session (connection.ts), so that a second run can name the first.
    }
  }
  host ??= nonEmpty(env.PGHOST) ?? defaultSocketFolder();
  // libpq's list of hosts, from ?host= or PGHOST: one host here, or "h1,h2" would be looked up as one name, in vain at every run.
  if (host.includes(',')) {
    throw new ConfigError(
      `The PostgreSQL target ${maskUrlPassword(url)} names several hosts (its host parameter or PGHOST); give one (the connector writes to one primary server).`,
      { field: '--db' },
    );
  }
  port ??= env.PGPORT !== undefined && env.PGPORT !== '' ? portOf(env.PGPORT, 'PGPORT', url) : 5432;
  user ??= nonEmpty(env.PGUSER) ?? systemUser();
  password ??= nonEmpty(env.PGPASSWORD);
  database ??= nonEmpty(env.PGDATABASE) ?? user;
  sslmode ??= env.PGSSLMODE !== undefined && env.PGSSLMODE !== '' ? sslModeOf(env.PGSSLMODE, 'PGSSLMODE') : 'prefer';
  sslrootcert ??= nonEmpty(env.PGSSLROOTCERT);
  connectTimeoutMs ??= env.PGCONNECT_TIMEOUT !== undefined && env.PGCONNECT_TIMEOUT !== '' ? timeoutOf(env.PGCONNECT_TIMEOUT, 'PGCONNECT_TIMEOUT') : DEFAULT_CONNECT_TIMEOUT_MS;
  return { host, port, user, password, database, sslmode, sslrootcert, connectTimeoutMs };
}

/** The root certificate file libpq reads when none is named; undefined without a home directory (HOME unset, a uid without a passwd entry). */
export function defaultRootCertPath(): string | undefined {
  try {
    return join(homedir(), '.postgresql', 'root.crt');
  } catch {
    return undefined;
  }
}

const enc = (text: string): string => encodeURIComponent(text);

/** The URL as messages show it: every setting in force, the password (if any) as `***`. */
function postgresDisplay(c: PostgresConnectionSettings): string {
  const socket = c.host.startsWith('/');
  const host = socket ? '' : c.host.includes(':') ? `[${c.host}]` : enc(c.host);
  const params: string[] = [];
  if (socket) params.push(`host=${enc(c.host)}`);
  if (c.sslmode !== 'prefer') params.push(`sslmode=${c.sslmode}`);
  if (c.sslrootcert !== undefined) params.push(`sslrootcert=${enc(c.sslrootcert)}`);
  const userinfo = `${enc(c.user)}${c.password === undefined ? '' : ':***'}@`;
  return `postgresql://${userinfo}${host}:${c.port}/${enc(c.database)}${params.length > 0 ? `?${params.join('&')}` : ''}`;
}
