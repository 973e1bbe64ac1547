/**
 * The raw baseline: the least a program can do to turn the API's pages into
 * Airbyte RECORD lines. A sequential undici loop: GET a page, JSON.parse it,
 * JSON.stringify each record into a RECORD line, write the page's lines to
 * stdout (waiting for 'drain' when the reader is slow), follow next_cursor.
 * No validation, no state, no retries.
 *
 *   node .build/bench/bench/baseline.js BASE_URL PATH STREAM API_KEY
 */
import { request } from 'undici';

interface Page {
  readonly data: readonly unknown[];
  readonly next_cursor: string | null;
  readonly has_more: boolean;
}

const [baseUrl, path, stream, apiKey] = process.argv.slice(2);
if (!baseUrl || !path || !stream || !apiKey) {
  process.stderr.write('usage: baseline BASE_URL PATH STREAM API_KEY\n');
  process.exit(2);
}

const headers = { authorization: `Bearer ${apiKey}`, accept: 'application/json' };
let cursor: string | null = null;
let records = 0;
for (;;) {
  const query: string = cursor === null ? 'limit=200' : `cursor=${encodeURIComponent(cursor)}&limit=200`;
  const res = await request(`${baseUrl}${path}?${query}`, { headers });
  if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${await res.body.text()}`);
  const page = JSON.parse(await res.body.text()) as Page;
  const emittedAt = Date.now();
  let text = '';
  for (const data of page.data) text += `${JSON.stringify({ type: 'RECORD', record: { stream, data, emitted_at: emittedAt } })}\n`;
  records += page.data.length;
  if (!process.stdout.write(text)) await new Promise<void>((resolve) => process.stdout.once('drain', resolve));
  if (!page.has_more) break;
  cursor = page.next_cursor;
}
process.stderr.write(`baseline: ${records} records\n`);
