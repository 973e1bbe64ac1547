/**
 * A Dockerfile read the way `docker build` reads it, enough to check it:
 * comments dropped, `\` continuations joined, instructions grouped by stage,
 * exec-form arguments (JSON arrays) and KEY=VALUE pairs (ENV, LABEL) decoded.
 */
export interface Instruction {
  /** Upper-cased instruction word: FROM, RUN, COPY, ENV, ... */
  readonly keyword: string;
  /** Everything after the word, continuations joined with one space. */
  readonly args: string;
  /** 1-based line where the instruction starts. */
  readonly line: number;
}

export interface Stage {
  readonly image: string;
  readonly name: string | null;
  readonly instructions: readonly Instruction[];
}

export function parseDockerfile(text: string): Stage[] {
  const instructions: Instruction[] = [];
  let buffer = '';
  let start = 0;
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line.startsWith('#') || (line === '' && buffer === '')) return; // comments (also inside continuations), blank lines
    if (buffer === '') start = index + 1;
    if (line.endsWith('\\')) {
      buffer += `${line.slice(0, -1).trim()} `;
      return;
    }
    const full = (buffer + line).trim();
    buffer = '';
    const match = /^(\S+)\s*(.*)$/s.exec(full);
    if (match?.[1]) instructions.push({ keyword: match[1].toUpperCase(), args: (match[2] ?? '').trim(), line: start });
  });
  if (buffer !== '') throw new Error('the Dockerfile ends inside a continued line');

  const stages: { image: string; name: string | null; instructions: Instruction[] }[] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') {
      const parts = instruction.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      const image = parts[0];
      if (image === undefined) throw new Error(`line ${instruction.line}: FROM without an image`);
      const name = parts.length >= 3 && parts[1]?.toUpperCase() === 'AS' ? (parts[2] ?? null) : null;
      stages.push({ image, name, instructions: [] });
    } else {
      const stage = stages.at(-1);
      if (stage === undefined) {
        if (instruction.keyword === 'ARG') continue; // ARGs before the first FROM
        throw new Error(`line ${instruction.line}: ${instruction.keyword} before FROM`);
      }
      stage.instructions.push(instruction);
    }
  }
  return stages;
}

/** The exec form of ENTRYPOINT/CMD: a JSON array of strings, or null for the shell form. */
export function execForm(args: string): string[] | null {
  if (!args.startsWith('[')) return null;
  const parsed: unknown = JSON.parse(args);
  if (!Array.isArray(parsed) || !parsed.every((a): a is string => typeof a === 'string')) return null;
  return parsed;
}

/** Split shell-like words: double and single quotes, backslash escapes in double quotes. */
function words(text: string): string[] {
  const out: string[] = [];
  let current = '';
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    if (c === '"' || c === "'") {
      const end = text.indexOf(c, i + 1);
      if (end < 0) throw new Error(`unterminated quote in: ${text}`);
      const body = text.slice(i + 1, end);
      current += c === '"' ? body.replace(/\\(["\\$])/g, '$1') : body;
      inWord = true;
      i = end;
    } else if (/\s/.test(c)) {
      if (inWord) out.push(current);
      current = '';
      inWord = false;
    } else if (c === '\\' && i + 1 < text.length) {
      current += text.charAt(++i);
      inWord = true;
    } else {
      current += c;
      inWord = true;
    }
  }
  if (inWord) out.push(current);
  return out;
}

/** KEY=VALUE pairs of ENV or LABEL (also the legacy `ENV KEY value` form). */
export function keyValues(args: string): Map<string, string> {
  const pairs = new Map<string, string>();
  const list = words(args);
  if (list.length >= 1 && !list[0]?.includes('=')) {
    const [key, ...rest] = list;
    if (key !== undefined) pairs.set(key, rest.join(' '));
    return pairs;
  }
  for (const word of list) {
    const eq = word.indexOf('=');
    if (eq <= 0) throw new Error(`expected KEY=VALUE, got "${word}"`);
    pairs.set(word.slice(0, eq), word.slice(eq + 1));
  }
  return pairs;
}

/** All KEY=VALUE pairs of one instruction kind in a stage (later ones win). */
export function collect(stage: Stage, keyword: 'ENV' | 'LABEL'): Map<string, string> {
  const all = new Map<string, string>();
  for (const i of stage.instructions) if (i.keyword === keyword) for (const [k, v] of keyValues(i.args)) all.set(k, v);
  return all;
}

export function last(stage: Stage, keyword: string): Instruction | undefined {
  return stage.instructions.filter((i) => i.keyword === keyword).at(-1);
}
