/**
 * What a PostgreSQL error means for the run, as the exit statuses say it:
 * - transient_error (75, run again later): the server cannot be reached
 *   (refused, unknown or unresolvable host, a timeout), the connection
 *   dropped mid-run, the server is shutting down or starting up (57P01,
 *   57P02, 57P03), too many connections (53300: the message names the
 *   database's or role's CONNECTION LIMIT, or max_connections), a serialization failure or
 *   deadlock (40001, 40P01), a lock not had in time (55P03). Nothing
 *   half-written stays: the open transaction dies with the connection, and
 *   the next run resumes from the last commit.
 * - config_error (78, the user must change something): a connection
 *   pooler in statement mode refusing a transaction (lock.ts says what a
 *   pooler's transaction or statement mode does to a run), the login refused
 *   (28P01 wrong password or one past the role's VALID UNTIL, 28000 no such
 *   role or no pg_hba.conf entry, a password asked for and none given), the
 *   database missing (3D000), a privilege missing (42501: the message names
 *   the grant that gives it), a server or role that accepts no writes
 *   (25006: a standby, default_transaction_read_only), a database closed
 *   to connections (55000: ALLOW_CONNECTIONS false), the TLS settings
 *   (sslmode, the CA) refused by either side. The message says which role,
 *   database and host.
 * - anything else: a system_error; the server's words about a value it
 *   refused (a data exception, SQLSTATE class 22) without the value.
 * Every message shows the target's display form (the password as `***`),
 * and is redacted of the password besides, whatever the driver wrote.
 */
import { ConfigError, ConnectorError, redact, withoutQuotedValues, type FailureType } from '../../errors.js';
import { quoteIdent } from '../columns.js';
import type { PostgresTarget } from '../target.js';

/** SQLSTATE lock_not_available: the session's lock_timeout passed. */
export const LOCK_NOT_AVAILABLE = '55P03';

const TRANSIENT_SQLSTATES: Readonly<Record<string, string>> = {
  '57P01': 'the server is shutting down (or an administrator ended the session)',
  '57P02': 'the server crashed and is restarting',
  '57P03': 'the server is starting up or shutting down and accepts no connections now',
  '57P05': 'the session was idle too long and the server ended it',
  '25P03': 'the session was idle in a transaction too long and the server ended it',
  '53300': 'the server has too many connections',
  '53100': "the server's disk is full (free some space on it, then run again)",
  '53200': 'the server is out of memory',
  '40001': 'a serialization failure (another transaction changed the same rows)',
  '40P01': 'a deadlock with another transaction',
  '55P03': 'a lock could not be had in time (another session holds it)',
  '57014': 'the statement was cancelled',
  '58030': 'the server had an I/O error',
};

/** The authentication requests of the protocol that the driver does not implement, by their code. */
const AUTH_METHODS: Readonly<Record<string, string>> = {
  '2': 'Kerberos V5',
  '6': 'SCM credentials',
  '7': 'GSSAPI (Kerberos)',
  '9': 'SSPI',
};

/**
 * The login method a server asked for that the driver does not implement, in words; undefined for another error. The
 * driver's words: an authentication request it does not know (connection.ts guards its throw), or a SASL exchange
 * offering no SCRAM-SHA-256 (OAUTHBEARER, pg_hba.conf's oauth).
 */
function unsupportedLogin(message: string): string | undefined {
  const request = /Unknown authenticationOk message type (\d+)/.exec(message)?.[1];
  if (request !== undefined) return AUTH_METHODS[request] ?? `a method the connector does not know (authentication request ${request})`;
  if (/^SASL: Only mechanism/.test(message)) return 'a SASL mechanism other than SCRAM-SHA-256 (OAuth: pg_hba.conf\'s oauth)';
  return undefined;
}

const TRANSIENT_NODE_CODES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'the server refused the connection (is it running, on that port?)',
  ENOTFOUND: 'the host name could not be resolved',
  EAI_AGAIN: 'the host name could not be resolved (the DNS did not answer)',
  ETIMEDOUT: 'connecting timed out',
  ECONNRESET: 'the connection was reset',
  EPIPE: 'the connection was closed',
  EHOSTUNREACH: 'the host cannot be reached',
  ENETUNREACH: 'the network cannot be reached',
  ENOENT: 'no server socket at that path (is the server running?)',
};

const TLS_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
]);

function describeError(err: unknown): { code: string | undefined; message: string } {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return { code: typeof code === 'string' ? code : undefined, message: err.message };
  }
  return { code: undefined, message: String(err) };
}

/** What to grant, after the object the server named ("permission denied for database|schema|table X"). */
function privilegeAdvice(message: string, target: PostgresTarget): string {
  const role = quoteIdent(target.connection.user);
  const schema = quoteIdent(target.schema);
  const object = /permission denied for (database|schema|tablespace|table|relation|sequence) "?([^"]+?)"?$|must be owner of (table|relation) "?([^"]+?)"?$/.exec(message.trim());
  const kind = object?.[1] ?? object?.[3];
  const policy = /violates row-level security policy for table "([^"]+)"/.exec(message);
  if (policy !== null) {
    // The owner is held to the table's policies only when the table says FORCE ROW LEVEL SECURITY.
    const table = `${schema}.${quoteIdent(policy[1] ?? '')}`;
    return `A row-level security policy on ${table}, which its owner is held to (FORCE ROW LEVEL SECURITY), refuses the run's rows: let ${role} write them (CREATE POLICY replicate ON ${table} FOR ALL TO ${role} USING (true) WITH CHECK (true)), or release the owner (ALTER TABLE ${table} NO FORCE ROW LEVEL SECURITY).`;
  }
  if (/permission denied to create temporary tables/.test(message)) {
    const database = quoteIdent(target.connection.database);
    return `It may not create temporary tables, which a run writes its rows through (staging tables, the session's own): grant it that (GRANT TEMPORARY ON DATABASE ${database} TO ${role}).`;
  }
  if (kind === 'tablespace') {
    // The tables go where default_tablespace says, when the role, the database or the server sets it.
    const tablespace = quoteIdent(object?.[2] ?? '');
    return `Its tables would go into the tablespace ${tablespace} (the default_tablespace of the role, the database or the server), where it may not create them: grant it that (GRANT CREATE ON TABLESPACE ${tablespace} TO ${role}), or clear that setting for it (ALTER ROLE ${role} SET default_tablespace = '').`;
  }
  if (kind === 'database') {
    return `It may not create the schema ${schema}: grant it that (GRANT CREATE ON DATABASE ${quoteIdent(target.connection.database)} TO ${role}), or create the schema for it (CREATE SCHEMA ${schema} AUTHORIZATION ${role}).`;
  }
  if (kind === 'schema') {
    const name = quoteIdent(object?.[2] ?? target.schema);
    return `The schema ${name} belongs to another role: make ${role} its owner (ALTER SCHEMA ${name} OWNER TO ${role}; for an empty schema, GRANT USAGE, CREATE ON SCHEMA ${name} TO ${role} is enough), or replicate as its owner.`;
  }
  if (kind !== undefined) {
    const table = object?.[2] ?? object?.[4] ?? '';
    return `The table "${table}" in the schema ${schema} was made by another role; a run changes its tables (new columns), so it must own them: make ${role} their owner (ALTER TABLE ${schema}.${quoteIdent(table)} OWNER TO ${role}, for each table), or replicate as the role that made them.`;
  }
  return `Grant it CREATE on the database (for the schema ${schema}) or ownership of that schema and its tables.`;
}

/** Which limit 53300 met (the database's, the role's, or the server's max_connections), and how to raise it. */
function connectionLimitAdvice(message: string): string {
  const limit = /too many connections for (database|role) "([^"]*)"/i.exec(message);
  if (limit !== null) {
    const kind = (limit[1] ?? '').toLowerCase();
    const name = limit[2] ?? '';
    return ` The CONNECTION LIMIT of the ${kind} "${name}" is reached: wait for other sessions to end, or raise it (ALTER ${kind.toUpperCase()} ${quoteIdent(name)} CONNECTION LIMIT n; -1 for none).`;
  }
  return " The server's max_connections is reached: wait for other sessions to end, or raise it on the server.";
}

/**
 * What a pooler in transaction or statement mode does to the run, and what to do: `what` says what was met, `kept`
 * what became of the writes.
 */
export function poolerError(target: PostgresTarget, what: string, kept = 'Nothing was written.'): ConfigError {
  return new ConfigError(
    `${what}: a connection pooler in transaction or statement mode stands between the run and ${target.display} ` +
      "(PgBouncer's pool_mode = transaction or statement; the pooled or transaction-mode port of a managed service). " +
      "It hands the run's statements to server sessions other clients use too, so the writer lock (a session's advisory lock) would not keep a second run out. " +
      `${kept} Connect directly to the server, or through session pooling (the service's direct or session-mode port; PgBouncer's pool_mode = session).`,
    { field: '--db' },
  );
}

/** What `err` means, in a ConnectorError whose message shows `target` redacted; `doing`: what the connector was doing ("connecting to", "writing to"). */
export function postgresError(err: unknown, target: PostgresTarget, doing: string): ConnectorError {
  if (err instanceof ConnectorError) return err;
  const { code, message } = describeError(err);
  const c = target.connection;
  const where = `the PostgreSQL database ${target.display}`;
  const said = message === '' ? '' : ` (the server said: ${message})`;
  const login = unsupportedLogin(message);
  let failure: FailureType = 'system_error';
  let text: string;
  if (code === '28P01') {
    failure = 'config_error';
    // The server's words are the same for a password past the role's VALID UNTIL: only its log tells them apart.
    text =
      `PostgreSQL refused the login of role "${c.user}" on ${c.host}:${c.port}: wrong password (or no such role, or its password expired)${said}. ` +
      `Check the user and password of ${where} (the URL, PGUSER/PGPASSWORD or ~/.pgpass); ` +
      `if they are right, the password may be past the role's VALID UNTIL: renew it (ALTER ROLE ${quoteIdent(c.user)} VALID UNTIL 'infinity', or a later date).`;
  } else if (login !== undefined) {
    failure = 'config_error';
    text =
      `The server ${c.host}:${c.port} asks role "${c.user}" to log in by ${login} (its pg_hba.conf says so for this client), which the connector does not support: ` +
      `it logs in with a password (scram-sha-256, md5) or with none (trust). Connect to ${where} as a role that logs in with a password ` +
      '(a pg_hba.conf line with scram-sha-256 for it and this client, before the one that matches now).';
  } else if (c.password === undefined && /client password must be a string/i.test(message)) {
    // The driver's words when the server asks for a password (SCRAM) and neither the URL, PGPASSWORD nor ~/.pgpass gave one: libpq's "no password supplied".
    failure = 'config_error';
    text = `PostgreSQL asks for the password of role "${c.user}" on ${c.host}:${c.port}, and none was given. Give it in ${where} (postgresql://user:password@...), in PGPASSWORD, or in ~/.pgpass.`;
  } else if (code === '28000') {
    failure = 'config_error';
    text = `PostgreSQL refused the login of role "${c.user}" to database "${c.database}" on ${c.host}:${c.port}${said}. Check the role, and the server's pg_hba.conf for this client and sslmode.`;
  } else if (code === '3D000') {
    failure = 'config_error';
    text = `The database "${c.database}" does not exist on ${c.host}:${c.port}${said}. Create it (CREATE DATABASE) or name another one in ${where}.`;
  } else if (code === '42501') {
    failure = 'config_error';
    text = `Role "${c.user}" lacks a privilege needed while ${doing} ${where}${said}. ${privilegeAdvice(message, target)}`;
  } else if (code === '25006') {
    failure = 'config_error';
    text = `The server of ${where} accepts no writes${said}: it is a standby (in recovery), or default_transaction_read_only is on for role "${c.user}" or database "${c.database}". Point --db at the primary server, or turn it off (ALTER ROLE ${quoteIdent(c.user)} SET default_transaction_read_only = off).`;
  } else if (code === '55000' && /not currently accepting connections/i.test(message)) {
    failure = 'config_error';
    text = `The database "${c.database}" on ${c.host}:${c.port} accepts no connections${said}: it was closed to them (ALTER DATABASE ... ALLOW_CONNECTIONS false). Open it (ALTER DATABASE ${quoteIdent(c.database)} ALLOW_CONNECTIONS true), or name another database in ${where}.`;
  } else if (code !== undefined && TLS_CODES.has(code)) {
    failure = 'config_error';
    text = `The server's TLS certificate was refused under sslmode=${c.sslmode} while ${doing} ${where} (${code}: ${message}). Give the CA that signed it (sslrootcert=FILE or PGSSLROOTCERT), or a weaker sslmode.`;
  } else if (/does not support SSL/i.test(message)) {
    failure = 'config_error';
    text = `The server of ${where} does not accept TLS, and sslmode=${c.sslmode} requires it. Use sslmode=prefer or disable, or enable TLS on the server.`;
  } else if (/not allowed in (statement|transaction) pooling mode/i.test(message)) {
    // PgBouncer's words (08P01, and it closes the connection) for what its pool_mode cannot give a client: at every run alike.
    return poolerError(target, `The connection was refused a transaction while ${doing} ${where}${said}`, "No checkpoint was written.");
  } else if (code !== undefined && TRANSIENT_SQLSTATES[code] !== undefined) {
    failure = 'transient_error';
    const holders = (err as { lockHolders?: unknown }).lockHolders;
    const named =
      typeof holders === 'string'
        ? ` Sessions holding locks on the schema's tables: ${holders} (end the one that holds it, with pg_terminate_backend(pid) if it is stuck idle in a transaction).`
        : '';
    const limit = code === '53300' ? connectionLimitAdvice(message) : '';
    text = `PostgreSQL failed while ${doing} ${where}: ${TRANSIENT_SQLSTATES[code]}${said}.${named}${limit} Nothing of the unfinished transaction was kept; run again later, it resumes from the last commit.`;
  } else if ((code !== undefined && TRANSIENT_NODE_CODES[code] !== undefined) || (code !== undefined && code.startsWith('08'))) {
    failure = 'transient_error';
    const why = (code && TRANSIENT_NODE_CODES[code]) ?? 'the connection failed';
    text = `Cannot reach ${where} (${c.host}:${c.port}): ${why} [${code}]. Nothing of the unfinished transaction was kept; run again later, it resumes from the last commit.`;
  } else if (/Connection terminated|connection timeout|timeout expired|Connection ended|not queryable|Client was closed|socket hang up/i.test(message)) {
    failure = 'transient_error';
    text = `The connection to ${where} was lost while ${doing} it (${message}). Nothing of the unfinished transaction was kept; run again later, it resumes from the last commit.`;
  } else {
    // A data exception (class 22) quotes the value refused (`invalid input syntax for type bigint: "..."`); the others name objects.
    const words = code?.startsWith('22') === true ? withoutQuotedValues(message) : message;
    text = `PostgreSQL failed while ${doing} ${where}${code === undefined ? '' : ` [${code}]`}: ${words}.`;
  }
  return new ConnectorError(failure, redact(text, target.secrets), { cause: err });
}
