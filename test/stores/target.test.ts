import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { parseStoreTarget, type PostgresTarget } from '../../src/stores/target.js';

const NO_ENV: NodeJS.ProcessEnv = {};

function pgTarget(db: string, env: NodeJS.ProcessEnv = NO_ENV, schema?: string): PostgresTarget {
  const target = parseStoreTarget(db, schema, env);
  if (target.kind !== 'postgres') throw new Error(`not postgres: ${target.kind}`);
  return target;
}

function refusal(run: () => unknown): ConfigError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('no error');
}

describe('parseStoreTarget: which store', () => {
  it('a file path is SQLite, unchanged; --schema is refused for it', () => {
    expect(parseStoreTarget('replica.db', undefined, NO_ENV)).toEqual({ kind: 'sqlite', path: 'replica.db', display: 'replica.db', secrets: [] });
    expect(parseStoreTarget('/data/x.sqlite', undefined, NO_ENV).kind).toBe('sqlite');
    expect(refusal(() => parseStoreTarget('replica.db', 'other', NO_ENV)).field).toBe('--schema');
  });

  it('duckdb:PATH and PATH.duckdb are DuckDB, schema main by default', () => {
    expect(parseStoreTarget('duckdb:analytics.db', undefined, NO_ENV)).toMatchObject({ kind: 'duckdb', path: 'analytics.db', schema: 'main' });
    expect(parseStoreTarget('/srv/Analytics.DUCKDB', 'raw', NO_ENV)).toMatchObject({ kind: 'duckdb', path: '/srv/Analytics.DUCKDB', schema: 'raw' });
    expect(refusal(() => parseStoreTarget('duckdb:', undefined, NO_ENV)).field).toBe('--db');
  });

  it('refuses a PostgreSQL --schema beginning with pg_, which PostgreSQL reserves for its own schemas', () => {
    const err = refusal(() => pgTarget('postgresql://u@h/db', NO_ENV, 'pg_data'));
    expect(err.field).toBe('--schema');
    expect(err.message).toMatch(/"pg_data".*pg_/);
    // PostgreSQL compares the prefix with its case; DuckDB has no such rule.
    expect(pgTarget('postgresql://u@h/db', NO_ENV, 'PG_data').schema).toBe('PG_data');
    expect(parseStoreTarget('analytics.duckdb', 'pg_data', NO_ENV).kind).toBe('duckdb');
  });

  it("refuses as a DuckDB --schema a name of the connection's databases (temp, system, memory, the file's own), which DuckDB would find ambiguous", () => {
    for (const schema of ['temp', 'system', 'memory', 'TEMP', '_replica_file']) {
      const err = refusal(() => parseStoreTarget('analytics.duckdb', schema, NO_ENV));
      expect(err.field, schema).toBe('--schema');
      expect(err.message, schema).toContain(`"${schema}"`);
    }
    // PostgreSQL has no such names.
    expect(pgTarget('postgresql://u@h/db', NO_ENV, 'temp').schema).toBe('temp');
  });

  it('refuses an in-memory database (:memory:), which keeps nothing past the run, for SQLite and DuckDB', () => {
    for (const db of [':memory:', 'duckdb::memory:', 'duckdb::memory:scratch']) {
      const err = refusal(() => parseStoreTarget(db, undefined, NO_ENV));
      expect(err.field, db).toBe('--db');
      expect(err.message, db).toMatch(/in memory/);
    }
    // A file whose name merely holds it stays a file.
    expect(parseStoreTarget('./:memory:.duckdb', undefined, NO_ENV)).toMatchObject({ kind: 'duckdb', path: './:memory:.duckdb' });
  });

  it('postgresql:// and postgres:// are PostgreSQL, schema data_read by default', () => {
    expect(pgTarget('postgresql://u@h/db').schema).toBe('data_read');
    expect(pgTarget('postgres://u@h/db', NO_ENV, 'analytics').schema).toBe('analytics');
    expect(pgTarget('PostgreSQL://u@h/db').connection.host).toBe('h');
  });

  it('refuses a URL of another scheme, naming it and the forms taken, its password masked', () => {
    // Taken for a SQLite path, it failed on a missing folder "mysql:" and advised `mkdir -p "mysql://x"`.
    const mysql = refusal(() => parseStoreTarget('mysql://bob:S3cr3t@db.example/analytics', undefined, NO_ENV));
    expect(mysql.message).toBe(
      '--db "mysql://bob:***@db.example/analytics" is a mysql:// URL, which replicate cannot write to. --db takes a SQLite file\'s path (replica.db), a postgresql:// URL, or a DuckDB file (x.duckdb, duckdb:PATH).',
    );
    expect(mysql.field).toBe('--db');
    expect(refusal(() => parseStoreTarget('sqlite:///data/replica.db', undefined, NO_ENV)).message).toMatch(/^--db "sqlite:\/\/\/data\/replica\.db" is a sqlite:\/\/ URL/);
    expect(refusal(() => parseStoreTarget('postgresql+psycopg2://u@h/db', undefined, NO_ENV)).message).toMatch(/is a postgresql\+psycopg2:\/\/ URL/);
    // duckdb: stays DuckDB's prefix, and a path with :// further in stays a path.
    expect(parseStoreTarget('duckdb://srv/x.duckdb', undefined, NO_ENV).kind).toBe('duckdb');
    expect(parseStoreTarget('./a://b.db', undefined, NO_ENV).kind).toBe('sqlite');
  });

  it('refuses a libpq keyword/value string and a postgresql: without //, quoting none of it (not a SQLite file of that name)', () => {
    for (const db of [
      'host=db.example.com port=5432 user=loader password=S3cr3t-pw dbname=analytics',
      " dbname = analytics password='S3cr3t-pw'",
      'postgresql:/loader:S3cr3t-pw@db.example.com/analytics',
      'postgres:loader:S3cr3t-pw@db.example.com/analytics',
      // libpq's string may begin with any of its keywords, not only the common ones.
      'sslpassword=S3cr3t-pw sslkey=/keys/client.key host=db.example.com dbname=analytics',
      'target_session_attrs=read-write host=db.example.com password=S3cr3t-pw',
      'gssencmode=disable user=loader password=S3cr3t-pw',
    ]) {
      const err = refusal(() => parseStoreTarget(db, undefined, NO_ENV));
      expect(err.field, db).toBe('--db');
      expect(err.message, db).toMatch(/postgresql:\/\/user:password@host:port\/dbname/);
      expect(err.message, db).not.toContain('S3cr3t-pw');
    }
    // A file whose name merely holds an = stays a SQLite file.
    expect(parseStoreTarget('./exports/run=1.db', undefined, NO_ENV).kind).toBe('sqlite');
  });

  it('refuses an empty --db and a schema name PostgreSQL cannot keep', () => {
    expect(refusal(() => parseStoreTarget('', undefined, NO_ENV)).field).toBe('--db');
    expect(refusal(() => parseStoreTarget('postgresql://h/db', '', NO_ENV)).field).toBe('--schema');
    expect(refusal(() => parseStoreTarget('postgresql://h/db', 'x'.repeat(64), NO_ENV)).field).toBe('--schema');
  });
});

describe('parseStoreTarget: libpq URL forms', () => {
  it('keeps a + in a query value as a +, as libpq does (only %XX is decoded): a base64 password, a file name', () => {
    const { connection } = pgTarget('postgresql://u@h/db?password=ab+c/d+e%3D&sslrootcert=/etc/ssl/ca+1.pem&dbname=a+b');
    expect(connection).toMatchObject({ password: 'ab+c/d+e=', sslrootcert: '/etc/ssl/ca+1.pem', database: 'a+b' });
  });

  it('reads user, password, host, port and database, percent-decoded', () => {
    const { connection } = pgTarget('postgresql://ana%40corp:p%3Ass%2Fw@db.example.com:6543/ana%20lytics');
    expect(connection).toMatchObject({ user: 'ana@corp', password: 'p:ss/w', host: 'db.example.com', port: 6543, database: 'ana lytics', sslmode: 'prefer' });
  });

  it('reads an IPv6 host in brackets', () => {
    const { connection, display } = pgTarget('postgresql://u@[::1]:5433/db');
    expect(connection).toMatchObject({ host: '::1', port: 5433 });
    expect(display).toBe('postgresql://u@[::1]:5433/db');
    // A link-local address's zone, percent-encoded as a URL must carry it, is decoded as libpq decodes the host.
    expect(pgTarget('postgresql://u@[fe80::1%25eth0]:5433/db').connection.host).toBe('fe80::1%eth0');
  });

  it('reads a Unix-socket folder, percent-encoded in the host or as ?host=', () => {
    expect(pgTarget('postgresql://u@%2Fvar%2Frun%2Fpostgresql/db').connection.host).toBe('/var/run/postgresql');
    const t = pgTarget('postgresql:///db?host=/tmp/sockets&port=5444');
    expect(t.connection).toMatchObject({ host: '/tmp/sockets', port: 5444, database: 'db' });
    expect(t.display).toContain('host=%2Ftmp%2Fsockets');
  });

  it('query parameters override the URL: user, password, dbname, sslmode, sslrootcert, connect_timeout', () => {
    const { connection } = pgTarget('postgresql://a:b@h/x?user=u2&password=p2&dbname=d2&sslmode=verify-full&sslrootcert=%2Fca.pem&connect_timeout=7');
    expect(connection).toMatchObject({ user: 'u2', password: 'p2', database: 'd2', sslmode: 'verify-full', sslrootcert: '/ca.pem', connectTimeoutMs: 7000 });
  });

  it('takes what the URL lacks from PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE, PGSSLROOTCERT', () => {
    const env = { PGHOST: 'envhost', PGPORT: '6000', PGUSER: 'envuser', PGPASSWORD: 'envpass', PGDATABASE: 'envdb', PGSSLMODE: 'require', PGSSLROOTCERT: '/etc/ca.pem' };
    expect(pgTarget('postgresql://', env).connection).toMatchObject({
      host: 'envhost', port: 6000, user: 'envuser', password: 'envpass', database: 'envdb', sslmode: 'require', sslrootcert: '/etc/ca.pem',
    });
    // The URL wins over the variables.
    expect(pgTarget('postgresql://u:p@h:1/d?sslmode=disable', env).connection).toMatchObject({ host: 'h', port: 1, user: 'u', password: 'p', database: 'd', sslmode: 'disable' });
  });

  it("defaults as libpq: port 5432, the database named after the user, sslmode prefer", () => {
    const { connection } = pgTarget('postgresql://someone@h');
    expect(connection).toMatchObject({ port: 5432, user: 'someone', database: 'someone', sslmode: 'prefer', password: undefined, sslrootcert: undefined });
  });

  it('refuses a bad port, an unknown sslmode, an unknown parameter and several hosts, naming each', () => {
    expect(refusal(() => pgTarget('postgresql://h:99999/d')).message).toMatch(/port "99999"/);
    expect(refusal(() => pgTarget('postgresql://h/d?sslmode=sometimes')).message).toMatch(/sslmode "sometimes"/);
    expect(refusal(() => pgTarget('postgresql://h/d?target_session_attrs=any')).message).toMatch(/"target_session_attrs"/);
    expect(refusal(() => pgTarget('postgresql://h1,h2/d')).message).toMatch(/several hosts/);
    // libpq's other ways of naming several hosts: the host parameter and PGHOST (else "h1,h2" is looked up as one name: 75 at every run).
    expect(refusal(() => pgTarget('postgresql:///d?host=h1,h2')).message).toMatch(/several hosts/);
    expect(refusal(() => pgTarget('postgresql:///d', { PGHOST: 'primary.example,standby.example' })).message).toMatch(/several hosts/);
    expect(refusal(() => pgTarget('postgresql://h/d', { PGSSLMODE: 'bogus' })).message).toMatch(/PGSSLMODE/);
  });
});

describe('the password is never shown', () => {
  const SECRET = 's3cr3t-Pa55';

  it('the display form shows *** for a password of the URL, of ?password= and of PGPASSWORD', () => {
    for (const [db, env] of [
      [`postgresql://ana:${SECRET}@h:5432/db`, NO_ENV],
      [`postgresql://ana@h/db?password=${SECRET}`, NO_ENV],
      ['postgresql://ana@h/db', { PGPASSWORD: SECRET }],
    ] as const) {
      const t = pgTarget(db, env);
      expect(t.display).toBe('postgresql://ana:***@h:5432/db');
      expect(t.display).not.toContain(SECRET);
      expect(t.secrets).toEqual([SECRET]);
    }
  });

  it('no refusal of a URL quotes its password', () => {
    for (const db of [
      `postgresql://ana:${SECRET}@h:99999/db`,
      `postgresql://ana:${SECRET}@h/db?bogus=1`,
      `postgresql://ana:${SECRET}@h1,h2/db`,
      `postgresql://ana@h/db?password=${SECRET}&bogus=1`,
      `postgresql://ana:${SECRET}%ZZ@h/db`,
    ]) {
      const err = refusal(() => pgTarget(db));
      expect(err.message, db).not.toContain(SECRET);
      expect(err.message).not.toContain(SECRET.slice(0, 6));
    }
  });

  it('a password holding characters a URL reserves, typed unencoded, is never shown, whole or in pieces', () => {
    for (const [db, pieces] of [
      ['postgresql://bob:Sekr3t?Xy9z@localhost:5432/app', ['Sekr3t', 'Xy9z']],
      ['postgresql://bob:Sekr3t#Xy9z@localhost/app', ['Sekr3t', 'Xy9z']],
      ['postgresql://bob:Sekr3t/Xy9z@localhost/app', ['Sekr3t', 'Xy9z']],
      ['postgresql://bob:Sekr@t3Xy9z@localhost/app?foo=1', ['Sekr', 't3Xy9z']],
      ['postgresql://bob:Sekr@t3Xy9z@localhost/app', ['Sekr', 't3Xy9z']],
      ['postgresql://bob:1234/t3Xy9z@localhost/app', ['t3Xy9z']],
      ['postgresql://bob@localhost/app?password=Sekr3t&Xy9z&sslmode=require', ['Sekr3t', 'Xy9z']],
    ] as const) {
      // Read as libpq reads it (its display shown), or refused: neither text holds a piece of the password.
      let shown: string;
      try {
        shown = pgTarget(db).display;
      } catch (err) {
        shown = (err as Error).message;
      }
      for (const piece of pieces) expect(shown, db).not.toContain(piece);
    }
  });

  it('reads a `?` or `#` in a password as the password\'s, as libpq does', () => {
    const t = pgTarget('postgresql://bob:Sekr3t?Xy#9z@localhost:5433/app?sslmode=require');
    expect(t.connection).toMatchObject({ user: 'bob', password: 'Sekr3t?Xy#9z', host: 'localhost', port: 5433, database: 'app', sslmode: 'require' });
    expect(t.display).not.toContain('Sekr3t');
  });

  it('shows the settings that matter besides the defaults', () => {
    expect(pgTarget('postgresql://u@h/d?sslmode=verify-ca&sslrootcert=/ca.pem').display).toBe('postgresql://u@h:5432/d?sslmode=verify-ca&sslrootcert=%2Fca.pem');
  });
});
