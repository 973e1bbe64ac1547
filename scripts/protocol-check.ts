/**
 * The protocol checkers as a command, for the shell scripts (image check,
 * replay): reads a connector's stdout on stdin, prints the JSON summary,
 * exits 0 when it passes, 1 on any error, 2 when used wrongly.
 *
 *   scripts/with-node npm run build:dev
 *   node .build/dev/scripts/protocol-check.js airbyte|singer <output.jsonl
 */
import { readFileSync } from 'node:fs';
import { checkAirbyte } from '../test/helpers/protocol/airbyte.js';
import { checkSinger } from '../test/helpers/protocol/singer.js';
import type { CheckSummary } from '../test/helpers/protocol/summary.js';

const CHECKERS: Record<string, (stdout: string) => CheckSummary> = { airbyte: checkAirbyte, singer: checkSinger };

const name = process.argv[2] ?? '';
const check = CHECKERS[name];
if (check === undefined || process.argv.length !== 3) {
  process.stderr.write('usage: protocol-check.js airbyte|singer <output (a connector\'s stdout on stdin)\n');
  process.exit(2);
}
const summary = check(readFileSync(0, 'utf8'));
process.stdout.write(`${JSON.stringify(summary, null, 1)}\n`);
process.exitCode = summary.n_errors === 0 ? 0 : 1;
