/**
 * README recipes as code: the shell block that follows a
 * `<!-- recipe: NAME -->` marker, run as written with bash (-e, pipefail) in
 * a folder of the test's choosing. Each run has its own process group, killed
 * at the end, so that a background job a recipe starts never outlives it.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, type CliResult } from './cli.js';

/** The text of the ```sh block after `<!-- recipe: name -->` in README.md. */
export function readmeRecipe(name: string): string {
  return docRecipe('README.md', name);
}

/** The text of the fenced block of `lang` (```sh by default) after `<!-- recipe: name -->` in a page of the repository (a path from its root). */
export function docRecipe(file: string, name: string, lang = 'sh'): string {
  const page = readFileSync(join(ROOT, file), 'utf8');
  const marker = `<!-- recipe: ${name} -->`;
  const at = page.indexOf(marker);
  if (at === -1) throw new Error(`${file} has no ${marker}`);
  const block = new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, 'm').exec(page.slice(at + marker.length));
  if (block === null || block.index > 2) throw new Error(`${file}: no \`\`\`${lang} block right after ${marker}`);
  return block[1] as string;
}

/** Run a script with bash -e -o pipefail; everything it left running is killed afterwards. */
export function runShell(script: string, options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const killGroup = (signal: NodeJS.Signals): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // the group is gone already
      }
    };
    const timer = setTimeout(() => killGroup('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      killGroup('SIGTERM');
      resolve({ code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}
