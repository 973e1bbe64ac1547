/**
 * The little YAML that metadata.yaml uses, and nothing more: block mappings,
 * block sequences of scalars, plain/single-/double-quoted scalars, comments.
 * Anything else (flow collections, anchors, block scalars, mappings inside
 * sequences, tabs) is refused with the line number instead of misread.
 */
export type YamlValue = string | number | boolean | null | YamlValue[] | { [key: string]: YamlValue };

interface Line {
  readonly no: number;
  readonly indent: number;
  readonly text: string;
}

function stripComment(raw: string): string {
  let quote: string | null = null;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (quote !== null) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '#' && (i === 0 || raw[i - 1] === ' ')) {
      return raw.slice(0, i);
    }
  }
  return raw;
}

function scalar(text: string, no: number): YamlValue {
  const t = text.trim();
  if (t.startsWith('"')) {
    if (!t.endsWith('"') || t.length < 2) throw new Error(`line ${no}: unterminated double-quoted string`);
    return JSON.parse(t) as string;
  }
  if (t.startsWith("'")) {
    if (!t.endsWith("'") || t.length < 2) throw new Error(`line ${no}: unterminated single-quoted string`);
    return t.slice(1, -1).replace(/''/g, "'");
  }
  if (/^[[{&*!|>%@`]/.test(t)) throw new Error(`line ${no}: unsupported YAML construct "${t}"`);
  if (t === '' || t === '~' || t === 'null') return null;
  if (t === 'true') return true;
  if (t === 'false') return false;
  if (/^-?(0|[1-9]\d*)$/.test(t)) return Number(t);
  if (/^-?\d+\.\d+$/.test(t)) return Number(t);
  return t;
}

function splitKey(text: string, no: number): [string, string] {
  const m = /^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s:#'"][^:#]*?)\s*:(?:\s+(.*)|$)/.exec(text);
  if (!m?.[1]) throw new Error(`line ${no}: expected "key: value", got "${text}"`);
  const key = scalar(m[1], no);
  return [String(key), m[2] ?? ''];
}

export function parseYaml(source: string): YamlValue {
  const lines: Line[] = [];
  source.split(/\r?\n/).forEach((raw, i) => {
    if (/^\s*\t/.test(raw)) throw new Error(`line ${i + 1}: tabs are not allowed for indentation`);
    const text = stripComment(raw).trimEnd();
    if (text.trim() === '' || text.trim() === '---') return;
    lines.push({ no: i + 1, indent: text.length - text.trimStart().length, text: text.trim() });
  });
  let pos = 0;

  function block(indent: number): YamlValue {
    const first = lines[pos];
    if (first === undefined || first.indent < indent) return null;
    if (first.text === '-' || first.text.startsWith('- ')) return sequence(first.indent);
    return mapping(first.indent);
  }

  function sequence(indent: number): YamlValue[] {
    const items: YamlValue[] = [];
    for (let line = lines[pos]; line !== undefined && line.indent === indent; line = lines[pos]) {
      if (!(line.text === '-' || line.text.startsWith('- '))) throw new Error(`line ${line.no}: expected a "- item"`);
      const rest = line.text.slice(1).trim();
      if (rest === '') throw new Error(`line ${line.no}: nested blocks inside sequences are not supported`);
      if (/^[^"'\s][^:]*:(\s|$)/.test(rest)) throw new Error(`line ${line.no}: mappings inside sequences are not supported`);
      items.push(scalar(rest, line.no));
      pos++;
    }
    const next = lines[pos];
    if (next !== undefined && next.indent > indent) throw new Error(`line ${next.no}: unexpected indentation`);
    return items;
  }

  function mapping(indent: number): { [key: string]: YamlValue } {
    const map: { [key: string]: YamlValue } = {};
    for (let line = lines[pos]; line !== undefined && line.indent === indent; line = lines[pos]) {
      const [key, rest] = splitKey(line.text, line.no);
      if (Object.hasOwn(map, key)) throw new Error(`line ${line.no}: duplicate key "${key}"`);
      pos++;
      if (rest.trim() !== '') {
        map[key] = scalar(rest, line.no);
      } else {
        const next = lines[pos];
        // A sequence may sit at the same indentation as its key (a common YAML style).
        if (next !== undefined && (next.indent > indent || (next.indent === indent && next.text.startsWith('- ')))) {
          map[key] = next.indent === indent ? sequence(indent) : block(next.indent);
        } else {
          map[key] = null;
        }
      }
    }
    const next = lines[pos];
    if (next !== undefined && next.indent > indent) throw new Error(`line ${next.no}: unexpected indentation`);
    return map;
  }

  const value = block(0);
  const rest = lines[pos];
  if (rest !== undefined) throw new Error(`line ${rest.no}: unexpected content "${rest.text}"`);
  return value;
}
