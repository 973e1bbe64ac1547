/**
 * A replica holds personal data: a new one is created 0600 (readable and
 * writable by its owner alone), and so are the -wal and -shm files SQLite
 * makes beside it while a run writes; under a umask that takes more away,
 * less. A file that exists keeps the mode its owner gave it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ReplicaStore } from '../../src/replica/store.js';
import { openForWrite } from '../../src/replica/database.js';
import { withTempDatabases } from '../helpers/suite.js';

const newDb = withTempDatabases('replica-mode-');
const mode = (file: string): string => (statSync(file).mode & 0o777).toString(8);
const usual = process.umask();
afterEach(() => void process.umask(usual));

describe('replica file modes', () => {
  it('a new replica and its -wal and -shm are 600 under the usual umask (022), and stay so at rest', () => {
    process.umask(0o022);
    const path = newDb();
    const store = new ReplicaStore(path, undefined, { lock: true });
    expect(existsSync(`${path}-wal`) && existsSync(`${path}-shm`)).toBe(true);
    expect([path, `${path}-wal`, `${path}-shm`].map(mode)).toEqual(['600', '600', '600']);
    store.close();
    expect(mode(path)).toBe('600');
  });

  it('600 whatever the umask leaves (077, 000): the file asks for no more', () => {
    for (const mask of [0o077, 0o000]) {
      process.umask(mask);
      const path = newDb();
      const store = new ReplicaStore(path);
      expect([path, `${path}-wal`, `${path}-shm`].map(mode), mask.toString(8)).toEqual(['600', '600', '600']);
      store.close();
    }
  });

  it('an existing file keeps its mode, and its side files follow it', () => {
    process.umask(0o022);
    const path = newDb();
    writeFileSync(path, '', { mode: 0o640 });
    const store = new ReplicaStore(path);
    expect([path, `${path}-wal`, `${path}-shm`].map(mode)).toEqual(['640', '640', '640']);
    store.close();
    expect(mode(path)).toBe('640');
  });

  it('a file that is not a database is refused and left as it was, mode and bytes', () => {
    const path = newDb();
    const text = 'not a database: a text file long enough to be read as a header, which SQLite refuses to open as one.\n';
    writeFileSync(path, text, { mode: 0o644 });
    expect(() => openForWrite(path)).toThrow(/cannot be used as a replica database/);
    expect(mode(path)).toBe('644');
    expect(readFileSync(path, 'utf8')).toBe(text);
    expect(readdirSync(dirname(path))).toEqual(['r.db']);
  });
});
