/**
 * A stand-in for target-jsonl, for the recipe tests: it reads Singer messages
 * on stdin, appends each RECORD to <destination_path>/<stream>.jsonl (its
 * --config file names destination_path) and writes the STATE values on
 * stdout: each as it comes (`each`), or only the last one at the end (`last`).
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function script(states: 'each' | 'last'): string {
  return `#!/usr/bin/env node
const fs = require('fs');
const path = require('path');
const config = JSON.parse(fs.readFileSync(process.argv[process.argv.indexOf('--config') + 1], 'utf8'));
let state = null;
let rest = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  const lines = (rest + chunk).split('\\n');
  rest = lines.pop();
  for (const line of lines) {
    if (line.trim() === '') continue;
    const m = JSON.parse(line);
    if (m.type === 'RECORD') fs.appendFileSync(path.join(config.destination_path, m.stream + '.jsonl'), JSON.stringify(m.record) + '\\n');
    else if (m.type === 'STATE') ${states === 'each' ? "process.stdout.write(JSON.stringify(m.value) + '\\n')" : 'state = m.value'};
  }
});
${states === 'last' ? "process.stdin.on('end', () => { if (state !== null) process.stdout.write(JSON.stringify(state) + '\\n'); });\n" : ''}`;
}

/** Write the stand-in as the executable `<tools>/target-jsonl`. */
export function installTargetJsonl(tools: string, states: 'each' | 'last'): void {
  const file = join(tools, 'target-jsonl');
  writeFileSync(file, script(states));
  chmodSync(file, 0o755);
}
