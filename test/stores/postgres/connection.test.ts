/**
 * Connecting to a real PostgreSQL server (the run's throw-away one, or
 * DATABASE_URL's), and what each fault means: a wrong password, a missing
 * database or role are config errors (78) that name which, without the
 * password; an unreachable server, a session ended by the server, and a
 * server stopped are transient (75).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPostgres } from '../../../src/stores/postgres/connection.js';
import { postgresError } from '../../../src/stores/postgres/faults.js';
import { parseStoreTarget, type PostgresTarget } from '../../../src/stores/target.js';
import { connectorFailure } from '../records.js';
import { adminClient, freshDatabase, startThrowAwayServer, withDatabase, type TestDatabase } from '../../helpers/postgres.js';

function target(url: string, env: NodeJS.ProcessEnv = {}): PostgresTarget {
  const t = parseStoreTarget(url, undefined, env);
  if (t.kind !== 'postgres') throw new Error('not postgres');
  return t;
}


function withPassword(url: string, password: string): string {
  const u = new URL(url);
  u.password = password;
  return u.toString();
}

let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase('conn');
}, 120_000);
afterAll(async () => {
  await db?.drop();
});

/**
 * A throw-away server listening on a Unix socket too, started by the first test that asks for it and stopped after
 * the file: the tests of the socket only connect to it (nothing of the server changes), and each server a test starts
 * costs an initdb (some 1.5 s of CPU).
 */
let socketServerStarted: ReturnType<typeof startThrowAwayServer> | undefined;
const socketServer = (): ReturnType<typeof startThrowAwayServer> => (socketServerStarted ??= startThrowAwayServer({ socket: true }));
afterAll(async () => {
  await (await socketServerStarted?.catch(() => undefined))?.stop();
}, 120_000);

describe('connectPostgres', () => {
  it('connects, names its session after the run, and reads values as the server writes them', async () => {
    const client = await connectPostgres(target(db.url));
    try {
      const { rows } = await client.query("SELECT current_setting('application_name') AS app, 12345678901234567890.50::numeric AS n, true AS b");
      expect(rows[0]).toEqual({ app: expect.stringMatching(new RegExp(`^source-data-read replicate pid ${process.pid} on `)), n: '12345678901234567890.50', b: 't' });
    } finally {
      await client.end();
    }
  });

  it('a wrong password is a config_error naming role and host, with no password in it', async () => {
    const wrong = 'Wr0ng-Secret-Value';
    const t = target(withPassword(db.url, wrong));
    const err = await connectorFailure(() => connectPostgres(t));
    expect(err.failureType).toBe('config_error');
    expect(err.message).toMatch(/refused the login of role "postgres" on 127\.0\.0\.1:\d+: wrong password/);
    for (const text of [err.message, err.internal ?? '', String((err.cause as Error | undefined)?.message ?? '')]) expect(text).not.toContain(wrong);
    const real = new URL(db.url).password;
    expect(err.message).not.toContain(real);
  });

  it('a password from PGPASSWORD is no more shown than one in the URL', async () => {
    const u = new URL(db.url);
    const wrong = 'An0ther-Wrong-One';
    u.password = '';
    const err = await connectorFailure(() => connectPostgres(target(u.toString(), { PGPASSWORD: wrong })));
    expect(err.failureType).toBe('config_error');
    expect(err.message).not.toContain(wrong);
    expect(err.message).toContain('postgres:***@');
  });

  it('a server asking for a password none was given for is a config_error saying so', async () => {
    const saved = { PGPASSWORD: process.env.PGPASSWORD, PGPASSFILE: process.env.PGPASSFILE };
    // No password anywhere: not in the URL, PGPASSWORD or a pass file (the driver reads these from the process's environment).
    delete process.env.PGPASSWORD;
    process.env.PGPASSFILE = '/nonexistent/pgpass';
    try {
      const u = new URL(db.url);
      u.password = '';
      const err = await connectorFailure(() => connectPostgres(target(u.toString())));
      expect(err.failureType).toBe('config_error');
      expect(err.message).toMatch(/asks for the password of role "postgres" on 127\.0\.0\.1:\d+, and none was given/);
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('a user without a home directory (HOME unset, no passwd entry) skips ~/.pgpass and ~/.postgresql as libpq does', async () => {
    // os.homedir() throws then (uv_os_homedir ENOENT), as for a uid unknown to the system with HOME unset.
    const saved = { PGPASSWORD: process.env.PGPASSWORD, PGPASSFILE: process.env.PGPASSFILE, HOME: process.env.HOME };
    const realHomedir = os.homedir;
    delete process.env.PGPASSWORD;
    delete process.env.PGPASSFILE;
    delete process.env.HOME;
    os.homedir = () => {
      throw Object.assign(new Error('A system error occurred: uv_os_homedir returned ENOENT (no such file or directory)'), { code: 'ERR_SYSTEM_ERROR' });
    };
    syncBuiltinESMExports();
    try {
      const u = new URL(db.url);
      u.password = '';
      const none = await connectorFailure(() => connectPostgres(target(u.toString())));
      expect(none.failureType).toBe('config_error');
      expect(none.message).toMatch(/asks for the password of role "postgres" on 127\.0\.0\.1:\d+, and none was given/);
      // sslmode=require without a CA: no root certificate to look for, so the server is not checked (it has no TLS: said so).
      const require = new URL(db.url);
      require.searchParams.set('sslmode', 'require');
      const tls = await connectorFailure(() => connectPostgres(target(require.toString())));
      expect(tls.failureType).toBe('config_error');
      expect(tls.message).toMatch(/does not accept TLS/);
      const verify = new URL(db.url);
      verify.searchParams.set('sslmode', 'verify-full');
      const noCa = await connectorFailure(() => connectPostgres(target(verify.toString())));
      expect(noCa.failureType).toBe('config_error');
      expect(noCa.message).toMatch(/no CA was given .*name one with sslrootcert=FILE \(or PGSSLROOTCERT\), or sslrootcert=system/);
    } finally {
      os.homedir = realHomedir;
      syncBuiltinESMExports();
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('a missing database is a config_error naming it', async () => {
    const err = await connectorFailure(() => connectPostgres(target(withDatabase(db.url, 'no_such_db'))));
    expect(err.failureType).toBe('config_error');
    expect(err.message).toMatch(/The database "no_such_db" does not exist on 127\.0\.0\.1:\d+/);
    expect(err.message).not.toContain(new URL(db.url).password);
  });

  it('a missing role is a config_error naming it', async () => {
    const u = new URL(db.url);
    u.username = 'nobody_here';
    const err = await connectorFailure(() => connectPostgres(target(u.toString())));
    expect(err.failureType).toBe('config_error');
    expect(err.message).toContain('role "nobody_here"');
  });

  it("a role whose password expired (VALID UNTIL in the past) is a config_error that says so, the server's words being a wrong password's", async () => {
    const role = `expired_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(8).toString('hex');
    const admin = await adminClient(db.url);
    try {
      await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}' VALID UNTIL '2001-01-01'`);
      const u = new URL(db.url);
      u.username = role;
      u.password = password;
      const err = await connectorFailure(() => connectPostgres(target(u.toString())));
      expect(err.failureType).toBe('config_error');
      expect(err.message).toMatch(new RegExp(`role "${role}".*expired.*ALTER ROLE "${role}" VALID UNTIL`));
      expect(err.message).not.toContain(password);
    } finally {
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
  });

  it('a server that asks for Kerberos (GSSAPI) or SSPI, which the driver does not speak, is a config_error saying so, not a crash', async () => {
    // What a server whose pg_hba.conf says gss (or sspi) for this host answers the startup: AuthenticationGSS (7) or
    // AuthenticationSSPI (9). Refused TLS first, as a server without it answers sslmode=prefer.
    for (const [code, method] of [[7, 'GSSAPI'], [9, 'SSPI']] as const) {
      const server = createServer((socket) => {
        socket.on('error', () => {});
        socket.on('data', (data: Buffer) => {
          if (data.length === 8 && data.readInt32BE(4) === 80877103) return void socket.write('N');
          const auth = Buffer.alloc(9);
          auth.write('R', 0);
          auth.writeInt32BE(8, 1);
          auth.writeInt32BE(code, 5);
          socket.write(auth);
        });
      });
      const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
      try {
        for (const sslmode of ['disable', 'prefer']) {
          const err = await connectorFailure(() => connectPostgres(target(`postgresql://loader:secret-pw@127.0.0.1:${port}/analytics?sslmode=${sslmode}`)));
          expect(err.failureType).toBe('config_error');
          expect(err.message).toMatch(new RegExp(`asks role "loader" to log in by ${method}.*pg_hba\\.conf`));
          expect(err.message).not.toContain('secret-pw');
        }
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    }
  });

  it("a server that asks for a login by OAuth (pg_hba.conf's oauth: SASL's OAUTHBEARER), which the driver does not speak, is a config_error saying so", async () => {
    // AuthenticationSASL (10) offering OAUTHBEARER alone.
    const server = createServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', () => {
        const mechanisms = Buffer.from('OAUTHBEARER\0\0');
        const auth = Buffer.alloc(9 + mechanisms.length);
        auth.write('R', 0);
        auth.writeInt32BE(8 + mechanisms.length, 1);
        auth.writeInt32BE(10, 5);
        mechanisms.copy(auth, 9);
        socket.write(auth);
      });
    });
    const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
    try {
      const err = await connectorFailure(() => connectPostgres(target(`postgresql://loader:secret-pw@127.0.0.1:${port}/analytics?sslmode=disable`)));
      expect(err.failureType).toBe('config_error');
      expect(err.message).toMatch(/asks role "loader" to log in by .*OAuth.*pg_hba\.conf/);
      expect(err.message).not.toContain('secret-pw');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('a port nobody listens on is transient', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 1));
      });
    });
    const u = new URL(db.url);
    u.port = String(port);
    const err = await connectorFailure(() => connectPostgres(target(u.toString())));
    expect(err.failureType).toBe('transient_error');
    expect(err.message).toMatch(/ECONNREFUSED/);
    expect(err.message).not.toContain(new URL(db.url).password);
  });

  it('sslmode=require against a server without TLS is a config_error; prefer falls back to plain', async () => {
    const require = new URL(db.url);
    require.searchParams.set('sslmode', 'require');
    const err = await connectorFailure(() => connectPostgres(target(require.toString())));
    expect(err.failureType).toBe('config_error');
    expect(err.message).toMatch(/does not accept TLS, and sslmode=require requires it/);
    const prefer = new URL(db.url);
    prefer.searchParams.set('sslmode', 'prefer');
    const client = await connectPostgres(target(prefer.toString()));
    await client.end();
  });

  it('verify-full without a CA is refused before connecting, as libpq does', async () => {
    const u = new URL(db.url);
    u.searchParams.set('sslmode', 'verify-full');
    const err = await connectorFailure(() => connectPostgres(target(u.toString(), { HOME: '/nonexistent' })));
    expect(err.failureType).toBe('config_error');
    expect(err.message).toMatch(/no CA was given/);
  });

  it("the server's disk full (53100) is transient and says so, as the SQLite replica's full disk", () => {
    const t = target(db.url);
    const full = Object.assign(new Error('could not extend file "base/16384/16400": No space left on device'), { code: '53100' });
    const err = postgresError(full, t, 'writing to');
    expect(err.failureType).toBe('transient_error');
    expect(err.message).toContain("the server's disk is full");
  });

  it("a tablespace the role may not create in (the role's or the database's default_tablespace) is named, with the grant that gives it", () => {
    // The server's words when default_tablespace names a tablespace the role lacks CREATE on (a folder of the server's
    // own, which a test against DATABASE_URL cannot make).
    const t = target(db.url);
    const denied = Object.assign(new Error('permission denied for tablespace bigdisk'), { code: '42501' });
    const err = postgresError(denied, t, 'opening');
    expect(err.failureType).toBe('config_error');
    expect(err.message).toContain('GRANT CREATE ON TABLESPACE "bigdisk" TO "postgres"');
    expect(err.message).toContain('default_tablespace');
    expect(err.message).not.toContain('GRANT CREATE on the database');
  });

  it('a pooler in statement mode refusing a transaction (08P01) is a config error naming it, not a connection failure to retry', () => {
    const t = target(db.url);
    // What PgBouncer (pool_mode = statement) answers to BEGIN before closing the connection, as the driver gives it.
    const raw = Object.assign(new Error('transaction blocks not allowed in statement pooling mode'), { code: '08P01', severity: 'FATAL' });
    const err = postgresError(raw, t, 'opening');
    expect(err.failureType).toBe('config_error');
    expect(err.message).toMatch(/connection pooler in transaction or statement mode/);
    expect(err.message).toMatch(/transaction blocks not allowed in statement pooling mode/);
    expect(err.message).toMatch(/session pooling/);
  });

  it('a session ended by the server (pg_terminate_backend: 57P01) is transient', async () => {
    const t = target(db.url);
    const client = await connectPostgres(t);
    const admin = await adminClient(db.url);
    try {
      const pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as string;
      await admin.query('SELECT pg_terminate_backend($1)', [Number(pid)]);
      const raw = await client.query('SELECT 1').then(() => undefined, (e: unknown) => e);
      expect(raw).toBeDefined();
      const err = postgresError(raw, t, 'writing to');
      expect(err.failureType).toBe('transient_error');
      expect(err.message).not.toContain(new URL(db.url).password);
    } finally {
      await admin.end();
      await client.end().catch(() => {});
    }
  });

  it("the server's or the role's limits for interactive sessions do not cut a run's session (statement, idle-in-transaction, idle)", async () => {
    // A dashboard's limits set on the database (or role) the run writes: a run's commit may take longer than them, and a run
    // waits (for the service) inside and between its transactions. Each would end every run the same way, for ever.
    const limited = await freshDatabase('limits');
    const admin = await adminClient(limited.url);
    try {
      await admin.query(`ALTER DATABASE "${limited.name}" SET statement_timeout = '20ms'`);
      await admin.query(`ALTER DATABASE "${limited.name}" SET idle_in_transaction_session_timeout = '50ms'`);
      await admin.query(`ALTER DATABASE "${limited.name}" SET idle_session_timeout = '300ms'`);
      const client = await connectPostgres(target(limited.url));
      try {
        await client.query('BEGIN');
        await client.query('SELECT pg_sleep(0.05)');
        await new Promise((resolve) => setTimeout(resolve, 200));
        await client.query('COMMIT');
        await new Promise((resolve) => setTimeout(resolve, 600));
        const { rows } = await client.query("SELECT current_setting('statement_timeout') AS s, current_setting('idle_in_transaction_session_timeout') AS t, current_setting('idle_session_timeout') AS i");
        expect(rows[0]).toEqual({ s: '0', t: '0', i: '0' });
      } finally {
        await client.end();
      }
    } finally {
      await admin.end();
      await limited.drop();
    }
  });

  it('a read-only database (a standby, default_transaction_read_only) is a config_error saying so and what to do', async () => {
    const readOnly = await freshDatabase('ro');
    const admin = await adminClient(readOnly.url);
    try {
      await admin.query(`ALTER DATABASE "${readOnly.name}" SET default_transaction_read_only = on`);
      const t = target(readOnly.url);
      const client = await connectPostgres(t);
      try {
        const raw = await client.query('CREATE SCHEMA x').then(() => undefined, (e: unknown) => e);
        const err = postgresError(raw, t, 'opening');
        expect(err.failureType).toBe('config_error');
        expect(err.message).toMatch(/accepts no writes/);
        expect(err.message).toMatch(/primary/);
        expect(err.message).toMatch(/default_transaction_read_only/);
        expect(err.message).not.toContain(new URL(readOnly.url).password);
      } finally {
        await client.end();
      }
    } finally {
      await admin.end();
      await readOnly.drop();
    }
  });

  it('a database closed to connections (ALLOW_CONNECTIONS false) is a config_error naming it and how to open it', async () => {
    const closed = await freshDatabase('closed');
    const admin = await adminClient(withDatabase(closed.url, 'postgres'));
    try {
      await admin.query(`ALTER DATABASE "${closed.name}" ALLOW_CONNECTIONS false`);
      const err = await connectorFailure(() => connectPostgres(target(closed.url)));
      expect(err.failureType).toBe('config_error');
      expect(err.message).toContain(`The database "${closed.name}" on 127.0.0.1:`);
      expect(err.message).toMatch(/accepts no connections/);
      expect(err.message).toContain(`ALTER DATABASE "${closed.name}" ALLOW_CONNECTIONS true`);
      expect(err.message).not.toContain(new URL(closed.url).password);
      await admin.query(`ALTER DATABASE "${closed.name}" ALLOW_CONNECTIONS true`);
    } finally {
      await admin.end();
      await closed.drop();
    }
  });

  it("a database's or a role's CONNECTION LIMIT reached is transient and names the limit", async () => {
    const role = `few_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(8).toString('hex');
    const limited = await freshDatabase('limited');
    const admin = await adminClient(withDatabase(limited.url, 'postgres'));
    const as = (): PostgresTarget => {
      const u = new URL(limited.url);
      u.username = role;
      u.password = password;
      return target(u.toString());
    };
    const holders: Awaited<ReturnType<typeof connectPostgres>>[] = [];
    try {
      await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
      await admin.query(`ALTER DATABASE "${limited.name}" CONNECTION LIMIT 1`);
      holders.push(await connectPostgres(as()));
      let err = await connectorFailure(() => connectPostgres(as()));
      expect(err.failureType).toBe('transient_error');
      expect(err.message).toMatch(/too many connections/);
      expect(err.message).toContain(`CONNECTION LIMIT of the database "${limited.name}"`);
      expect(err.message).not.toContain(password);
      await admin.query(`ALTER DATABASE "${limited.name}" CONNECTION LIMIT -1`);
      await admin.query(`ALTER ROLE ${role} CONNECTION LIMIT 1`);
      err = await connectorFailure(() => connectPostgres(as()));
      expect(err.failureType).toBe('transient_error');
      expect(err.message).toContain(`CONNECTION LIMIT of the role "${role}"`);
      expect(err.message).toContain(`ALTER ROLE "${role}" CONNECTION LIMIT`);
    } finally {
      for (const h of holders) await h.end().catch(() => {});
      await limited.drop();
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
  });

  it('a session ended for idling in a transaction (25P03) is transient', () => {
    const raw = Object.assign(new Error('terminating connection due to idle-in-transaction timeout'), { code: '25P03' });
    expect(postgresError(raw, target(db.url), 'writing to').failureType).toBe('transient_error');
  });

  it('a missing privilege names the object and the grant that gives it', async () => {
    const role = `weak_${randomBytes(4).toString('hex')}`;
    const password = randomBytes(8).toString('hex');
    const admin = await adminClient(db.url);
    const as = (): PostgresTarget => {
      const u = new URL(db.url);
      u.username = role;
      u.password = password;
      return target(u.toString());
    };
    const fails = async (sql: string) => {
      const t = as();
      const client = await connectPostgres(t);
      try {
        const raw = await client.query(sql).then(() => undefined, (e: unknown) => e);
        const err = postgresError(raw, t, 'opening');
        expect(err.failureType).toBe('config_error');
        expect(err.message).not.toContain(password);
        return err.message;
      } finally {
        await client.end();
      }
    };
    try {
      await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
      await admin.query('CREATE SCHEMA theirs');
      await admin.query('CREATE TABLE theirs.t (id text)');
      // No CREATE on the database: the schema cannot be made.
      expect(await fails('CREATE SCHEMA mine')).toMatch(new RegExp(`GRANT CREATE ON DATABASE "${db.name}" TO "${role}"|CREATE SCHEMA .* AUTHORIZATION "${role}"`));
      // No USAGE on a schema of another role.
      expect(await fails('SELECT * FROM theirs.t')).toMatch(new RegExp(`ALTER SCHEMA "theirs" OWNER TO "${role}"|GRANT USAGE, CREATE ON SCHEMA "theirs" TO "${role}"`));
      // A table another role made.
      await admin.query(`GRANT USAGE, CREATE ON SCHEMA theirs TO ${role}`);
      expect(await fails('ALTER TABLE theirs.t ADD COLUMN x text')).toMatch(new RegExp(`table "t".*OWNER TO "${role}"`));
      // No TEMPORARY on the database (revoked from PUBLIC, as hardening guides advise): the staging tables cannot be made.
      await admin.query(`REVOKE TEMPORARY ON DATABASE "${db.name}" FROM PUBLIC`);
      expect(await fails('CREATE TEMP TABLE staged (id text)')).toContain(`GRANT TEMPORARY ON DATABASE "${db.name}" TO "${role}"`);
      // A row-level security policy its own table is held to (FORCE ROW LEVEL SECURITY) that lets no row in.
      await admin.query('CREATE TABLE theirs.guarded (id text)');
      await admin.query(`ALTER TABLE theirs.guarded OWNER TO ${role}`);
      await admin.query('ALTER TABLE theirs.guarded ENABLE ROW LEVEL SECURITY');
      await admin.query('ALTER TABLE theirs.guarded FORCE ROW LEVEL SECURITY');
      await admin.query('CREATE POLICY readers ON theirs.guarded FOR SELECT USING (true)');
      const refused = await fails("INSERT INTO theirs.guarded VALUES ('c1')");
      expect(refused).toMatch(new RegExp(`row-level security.*"guarded".*CREATE POLICY .* ON .*"guarded" FOR ALL TO "${role}"`));
      expect(refused).not.toContain('CREATE on the database');
    } finally {
      await admin.query(`GRANT TEMPORARY ON DATABASE "${db.name}" TO PUBLIC`);
      await admin.query('DROP SCHEMA IF EXISTS theirs CASCADE');
      await admin.query(`REVOKE ALL ON DATABASE "${db.name}" FROM ${role}`).catch(() => {});
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    }
  });

  it('a Unix socket connects without TLS whatever the sslmode, as libpq does (no TLS is asked for over a socket)', async () => {
    const server = await socketServer();
    const password = new URL(server.url).password;
    for (const sslmode of ['prefer', 'require', 'verify-full']) {
      const t = target(`postgresql://postgres:${password}@/postgres?host=${encodeURIComponent(server.socketDir ?? '')}&port=${server.port}&sslmode=${sslmode}`, { HOME: '/nonexistent' });
      const client = await connectPostgres(t);
      try {
        const { rows } = await client.query('SELECT inet_client_addr() IS NULL AS socket');
        expect(rows[0], sslmode).toEqual({ socket: 't' });
      } finally {
        await client.end();
      }
    }
  }, 120_000);

  it('verify-full to a server named by its IP address checks its certificate, and Node warns of nothing', async () => {
    const certs = mkdtempSync(join(tmpdir(), 'sdr-tls-'));
    const openssl = (...args: string[]): void => void execFileSync('openssl', args, { cwd: certs, stdio: 'ignore' });
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=sdr test CA');
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
    writeFileSync(join(certs, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
    openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'san.ext');
    const server = await startThrowAwayServer({ tls: { cert: readFileSync(join(certs, 'server.crt'), 'utf8'), key: readFileSync(join(certs, 'server.key'), 'utf8') } });
    const warnings: string[] = [];
    const listen = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', listen);
    try {
      const u = new URL(server.url);
      u.searchParams.set('sslmode', 'verify-full');
      u.searchParams.set('sslrootcert', join(certs, 'ca.pem'));
      const client = await connectPostgres(target(u.toString()));
      try {
        const { rows } = await client.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
        expect(rows[0]).toEqual({ ssl: 't' });
      } finally {
        await client.end();
      }
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toEqual([]);
      // The name is still checked: the certificate names 127.0.0.1 only, not localhost.
      u.hostname = 'localhost';
      const err = await connectorFailure(() => connectPostgres(target(u.toString())));
      expect(err.failureType).toBe('config_error');
      expect(err.message).toContain('ERR_TLS_CERT_ALTNAME_INVALID');
    } finally {
      process.off('warning', listen);
      await server.stop();
      rmSync(certs, { recursive: true, force: true });
    }
  }, 120_000);

  it('without a password anywhere else, reads the pass file as libpq does (a socket matches localhost), and Node warns of nothing', async () => {
    const server = await socketServer();
    const saved = { PGPASSWORD: process.env.PGPASSWORD, PGPASSFILE: process.env.PGPASSFILE };
    const warnings: string[] = [];
    const listen = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', listen);
    const folder = mkdtempSync(join(tmpdir(), 'sdr-pgpass-'));
    try {
      delete process.env.PGPASSWORD;
      const password = new URL(server.url).password;
      const file = join(folder, 'pgpass');
      // A comment, an entry for another port, then the server's: over TCP by its address, over the socket as localhost.
      writeFileSync(file, `# the tests' server\n127.0.0.1:1:*:postgres:wrong\n127.0.0.1:${server.port}:*:postgres:${password}\nlocalhost:${server.port}:postgres:postgres:${password}\n`, { mode: 0o600 });
      process.env.PGPASSFILE = file;
      for (const url of [
        `postgresql://postgres@127.0.0.1:${server.port}/postgres?sslmode=disable`,
        `postgresql://postgres@/postgres?host=${encodeURIComponent(server.socketDir ?? '')}&port=${server.port}`,
      ]) {
        const client = await connectPostgres(target(url));
        await client.end();
      }
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toEqual([]);
    } finally {
      process.off('warning', listen);
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      rmSync(folder, { recursive: true, force: true });
    }
  }, 120_000);

  it('a server stopped under a connection is transient, and so is connecting to it afterwards', async () => {
    const server = await startThrowAwayServer();
    let stopped = false;
    try {
      const t = target(server.url);
      const client = await connectPostgres(t);
      await server.stop();
      stopped = true;
      const raw = await client.query('SELECT 1').then(() => undefined, (e: unknown) => e);
      expect(postgresError(raw, t, 'writing to').failureType).toBe('transient_error');
      await client.end().catch(() => {});
      const again = await connectorFailure(() => connectPostgres(t));
      expect(again.failureType).toBe('transient_error');
    } finally {
      if (!stopped) await server.stop();
    }
  });
});
