/**
 * Why a replica path cannot be written, told apart: a read-only file system
 * (EROFS: a volume mounted read-only) or permissions that keep the user the
 * connector runs as out (EACCES: in a container, a volume owned by another
 * uid than the image's user), naming that uid. accessSync is made to fail as
 * each case does; the real runs as another user are in
 * test/e2e/all-faces/messages-and-refusals.test.ts.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../helpers/cli.js';

const denied = vi.hoisted(() => ({ path: '', code: '' }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  return {
    ...fs,
    accessSync: (path: string, mode?: number) => {
      if (path === denied.path) throw Object.assign(new Error(`${denied.code}: denied, access '${path}'`), { code: denied.code });
      fs.accessSync(path, mode);
    },
  };
});
// Imported again here (test files may share a worker and its modules), so that it sees the mock above.
vi.resetModules();
const { assertWritable } = await import('../../src/replica/writable.js');

let dir: string;
beforeEach(() => {
  dir = tempDir('sdr-writable-');
});
afterEach(() => {
  denied.path = '';
  rmSync(dir, { recursive: true, force: true });
});

const uid = process.getuid?.();
const user = uid === undefined ? 'this process' : `uid ${uid}`;

function messageOf(path: string): string {
  try {
    assertWritable(path);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`assertWritable("${path}") accepted it`);
}

describe('assertWritable', () => {
  it('a directory the user cannot write: names the user and the owner, not "read-only"', () => {
    const data = join(dir, 'data');
    mkdirSync(data, { mode: 0o755 });
    denied.path = data;
    denied.code = 'EACCES';
    const message = messageOf(join(data, 'replica.db'));
    expect(message).toMatch(new RegExp(`its directory "${data}" \\(owned by uid \\d+, mode 755\\) is not writable by the user the connector runs as, ${user} \\(EACCES\\)`));
    expect(message).toContain(`Make it writable for ${user} (for a Docker volume: chown the host folder to that uid, or run the container with --user set to its owner)`);
    expect(message).not.toContain('read-only');
  });

  it('a file the user cannot write: the same words, for the file', () => {
    const db = join(dir, 'replica.db');
    writeFileSync(db, '', { mode: 0o444 });
    denied.path = db;
    denied.code = 'EACCES';
    expect(messageOf(db)).toMatch(new RegExp(`the file \\(owned by uid \\d+, mode 444\\) is not writable by the user the connector runs as, ${user} \\(EACCES\\)\\. replicate writes into it: make it writable for ${user} `));
  });

  it('a read-only file system (a volume mounted :ro): says so, not a permission', () => {
    const data = join(dir, 'data');
    mkdirSync(data);
    denied.path = data;
    denied.code = 'EROFS';
    const message = messageOf(join(data, 'replica.db'));
    expect(message).toContain(`its directory "${data}" is on a read-only file system (EROFS), and SQLite needs to create`);
    expect(message).toContain('Mount it read-write, or give --db a file in a writable directory.');
    expect(message).not.toContain('uid');
  });

  it('a folder that does not exist: names it, and the first of its parents that is missing', () => {
    expect(messageOf(join(dir, 'nodir', 'sub', 'replica.db'))).toBe(
      `Cannot create the replica database "${join(dir, 'nodir', 'sub', 'replica.db')}": its folder "${join(dir, 'nodir', 'sub')}" does not exist ` +
        `(nor does "${join(dir, 'nodir')}"). Create it first (mkdir -p "${join(dir, 'nodir', 'sub')}"), or give --db a file in an existing folder.`,
    );
    mkdirSync(join(dir, 'nodir'));
    expect(messageOf(join(dir, 'nodir', 'sub', 'replica.db'))).toContain(`its folder "${join(dir, 'nodir', 'sub')}" does not exist. Create it first`);
    // As typed on the command line, relative to the working directory.
    expect(messageOf('nodir-here/sub/replica.db')).toContain('its folder "nodir-here/sub" does not exist (nor does "nodir-here")');
  });

  it('a file where a folder should be: says so', () => {
    writeFileSync(join(dir, 'a.txt'), '');
    expect(messageOf(join(dir, 'a.txt', 'replica.db'))).toContain(`"${join(dir, 'a.txt')}" is a file, not a folder`);
    expect(messageOf(join(dir, 'a.txt', 'sub', 'replica.db'))).toContain(`"${join(dir, 'a.txt')}" is a file, not a folder`);
  });

  it('a writable directory passes', () => {
    expect(() => assertWritable(join(dir, 'replica.db'))).not.toThrow();
  });
});
