/**
 * Every relative link of the README and the docs leads somewhere: the file
 * (or folder) exists, and a `#anchor` names a heading of the target page
 * (GitHub's heading ids). Links inside code blocks and code spans are not links.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

const PAGES = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', 'packages/emulator/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The text without fenced code blocks. */
function withoutFences(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** The text without code blocks and code spans (their brackets are not links). */
function prose(markdown: string): string {
  return withoutFences(markdown).replace(/`[^`\n]*`/g, '');
}

/** GitHub's id of each heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function headingIds(markdown: string): Set<string> {
  const ids = new Set<string>();
  const counts = new Map<string, number>();
  for (const match of withoutFences(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const text = (match[1] as string).replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, '');
    const base = text.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = counts.get(base) ?? 0;
    counts.set(base, n + 1);
    ids.add(n === 0 ? base : `${base}-${n}`);
  }
  return ids;
}

/** Inline links and images `[text](target "title")` and reference definitions `[x]: target`. */
function links(markdown: string): string[] {
  const text = prose(markdown);
  const inline = [...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] as string);
  const defined = [...text.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)].map((m) => m[1] as string);
  return [...inline, ...defined];
}

function problems(page: string): string[] {
  const markdown = readFileSync(join(ROOT, page), 'utf8');
  const out: string[] = [];
  for (const target of links(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto: ...
    const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
    const file = pathPart === '' ? join(ROOT, page) : join(ROOT, dirname(page), decodeURIComponent(pathPart));
    if (!file.startsWith(ROOT) || !existsSync(file)) {
      out.push(`${page}: (${target}) -> ${relative(ROOT, file)} does not exist`);
      continue;
    }
    if (anchor !== undefined && anchor !== '' && file.endsWith('.md') && !headingIds(readFileSync(file, 'utf8')).has(anchor.toLowerCase())) {
      out.push(`${page}: (${target}) -> no heading #${anchor} in ${relative(ROOT, file)}`);
    }
  }
  return out;
}

describe('relative links in the README and docs', () => {
  it.each(PAGES)('%s', (page) => {
    expect(problems(page)).toEqual([]);
  });

  it('the checker sees links and headings the way GitHub does', () => {
    expect([...headingIds('# Data-Read\n## Step 1: Get an API key\n## `read` (Airbyte)\n## Errors\n## Errors\n```\n# not a heading\n```\n')]).toEqual([
      'data-read', 'step-1-get-an-api-key', 'read-airbyte', 'errors', 'errors-1',
    ]);
    expect(links('see [page](docs/x.md#a), `[no](link.md)`, ![img](icon.svg "t")\n```\n[no](code.md)\n```\n[ref]: other.md\n')).toEqual(['docs/x.md#a', 'icon.svg', 'other.md']);
  });
});
