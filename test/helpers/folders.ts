/**
 * The folders of a checkout that belong to the project: those holding a file
 * git tracks, or a new file it would add (`git ls-files --cached --others
 * --exclude-standard`). What the user keeps in git-ignored folders (the Quick
 * start's `example/`, `node_modules/`, `dist/`, `.cache/`) is not the
 * project's. Outside a git checkout: every folder but `.git` and those
 * `.gitignore` names by a plain name (`/example/`, `dist/`).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The files of `root` git tracks or would add, relative, with `/`; undefined when `root` is not a git checkout. */
function projectFiles(root: string): string[] | undefined {
  const git = spawnSync('git', ['-C', root, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (git.error !== undefined || git.status !== 0) return undefined;
  // ls-files also answers inside a parent's repository: only a checkout rooted at `root` counts.
  const top = spawnSync('git', ['-C', root, 'rev-parse', '--show-prefix'], { encoding: 'utf8' });
  if (top.status !== 0 || top.stdout.trim() !== '') return undefined;
  return git.stdout.split('\0').filter((f) => f !== '' && existsSync(join(root, f)));
}

/** The top-level names `.gitignore` leaves out by a plain name (no wildcard, no inner slash). */
function ignoredNames(root: string): Set<string> {
  const file = join(root, '.gitignore');
  const names = new Set(['.git']);
  if (!existsSync(file)) return names;
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim().replace(/^\//, '').replace(/\/$/, '');
    if (line === '' || line.startsWith('#') || line.startsWith('!') || /[*?[\]/]/.test(line)) continue;
    names.add(line);
  }
  return names;
}

/** Every folder of the project under `root` (`src/`, `src/cli/`, ... with a trailing `/`), top-level ones included, sorted. */
export function projectFolders(root: string): string[] {
  const files = projectFiles(root);
  const folders = new Set<string>();
  if (files !== undefined) {
    for (const file of files) {
      const parts = file.split('/');
      for (let i = 1; i < parts.length; i++) folders.add(`${parts.slice(0, i).join('/')}/`);
    }
  } else {
    const ignored = ignoredNames(root);
    for (const top of readdirSync(root, { withFileTypes: true })) {
      if (!top.isDirectory() || ignored.has(top.name)) continue;
      folders.add(`${top.name}/`);
      for (const d of readdirSync(join(root, top.name), { recursive: true, withFileTypes: true })) {
        if (d.isDirectory()) folders.add(`${relative(root, join(d.parentPath, d.name)).split('\\').join('/')}/`);
      }
    }
  }
  return [...folders].sort();
}
