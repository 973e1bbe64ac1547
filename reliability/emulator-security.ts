/**
 * The emulator as a server: cursors cannot be forged, altered or replayed
 * across accounts or lists; one key never reads another account's data; the
 * control interface refuses every call without its token; the server binds
 * 127.0.0.1 when not told otherwise (library and command line), and is then not
 * reachable on the machine's other addresses.
 */
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { startEmulator, type Emulator } from 'data-read-emulator';
import { EMULATOR_BIN } from '../test/helpers/cli.js';

export interface SecurityCheck {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

interface Got {
  readonly status: number;
  readonly text: string;
  readonly json: unknown;
}

async function http(url: string, init: { method?: string; authorization?: string; body?: unknown } = {}): Promise<Got> {
  const headers: Record<string, string> = {};
  if (init.authorization !== undefined) headers.authorization = init.authorization;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url, { method: init.method ?? 'GET', headers, ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }) });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

interface PageBody {
  data: { id: string }[];
  next_cursor: string | null;
  has_more: boolean;
}

async function readAll(emu: Emulator, key: string, path: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 1000; i++) {
    const q: string = cursor === null ? 'limit=200' : `limit=200&cursor=${encodeURIComponent(cursor)}`;
    const got = await http(`${emu.url}${path}?${q}`, { authorization: `Bearer ${key}` });
    const body = got.json as PageBody;
    ids.push(...body.data.map((r) => r.id));
    if (!body.has_more) break;
    cursor = body.next_cursor;
  }
  return ids;
}

function b64(value: string): string {
  return Buffer.from(value, 'utf8').toString('base64url');
}

/** `data-read-emulator` with default options: the URL it prints, then it is stopped. */
function cliEmulatorUrl(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [EMULATOR_BIN, '--contacts', '0'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString('utf8');
      const line = out.split('\n')[0];
      if (out.includes('\n') && line !== undefined) {
        try {
          resolve(String((JSON.parse(line) as { url: unknown }).url));
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
        child.kill('SIGTERM');
      }
    });
    child.on('close', () => {
      clearTimeout(timer);
      reject(new Error(`the emulator printed no URL: ${out}`));
    });
  });
}

export async function runEmulatorSecurity(): Promise<SecurityCheck[]> {
  const checks: SecurityCheck[] = [];
  const check = (name: string, ok: boolean, detail: string): void => void checks.push({ name, ok, detail });
  const emu = await startEmulator({ seed: 13 });
  const other = await startEmulator({ seed: 13, host: '127.0.0.1', port: 0 });
  try {
    const c = emu.control;
    const a = c.createAccount({ name: 'Tenant A' });
    const b = c.createAccount({ name: 'Tenant B' });
    c.seed(a.id, { contacts: 60 });
    c.seed(b.id, { contacts: 60 });
    const keyA = c.createKey(a.id).key;
    const keyB = c.createKey(b.id).key;
    const asA = `Bearer ${keyA}`;
    const asB = `Bearer ${keyB}`;
    const first = (await http(`${emu.url}/v1/contacts?limit=5`, { authorization: asA })).json as PageBody;
    const cursor = first.next_cursor ?? '';
    const withCursor = (path: string, cur: string, auth: string): Promise<Got> => http(`${emu.url}${path}?limit=5&cursor=${encodeURIComponent(cur)}`, { authorization: auth });

    // --- cursors ---
    const replay1 = await withCursor('/v1/contacts', cursor, asA);
    const replay2 = await withCursor('/v1/contacts', cursor, asA);
    check('a cursor replayed by its own account and list gives the same page', replay1.status === 200 && replay1.text === replay2.text, `${replay1.status}`);
    const crossAccount = await withCursor('/v1/contacts', cursor, asB);
    check("account A's cursor is refused with account B's key (400)", crossAccount.status === 400 && /another account/.test(crossAccount.text), `${crossAccount.status} ${crossAccount.text.slice(0, 120)}`);
    const crossList = await withCursor('/v1/conversations', cursor, asA);
    check('a contacts cursor is refused on conversations (400)', crossList.status === 400, `${crossList.status} ${crossList.text.slice(0, 120)}`);
    const [payload = '', signature = ''] = cursor.split('.');
    const state = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown[];
    const altered = [...state];
    altered[1] = b.id; // claim account B
    const alteredCursor = `${b64(JSON.stringify(altered))}.${signature}`;
    const alteredGot = await withCursor('/v1/contacts', alteredCursor, asB);
    check('a cursor whose payload was altered (account switched) is refused (400)', alteredGot.status === 400, `${alteredGot.status}`);
    const skipped = [...state];
    skipped[5] = 0; // rewind the keyset position
    const skippedGot = await withCursor('/v1/contacts', `${b64(JSON.stringify(skipped))}.${signature}`, asA);
    check('a cursor whose position was altered is refused (400)', skippedGot.status === 400, `${skippedGot.status}`);
    const guesses = ['', 'secret', '13', 'data-read', keyA];
    let forgedAccepted = 0;
    for (const guess of guesses) {
      const p = b64(JSON.stringify(altered));
      const forged = `${p}.${createHmac('sha256', guess).update(p).digest('base64url')}`;
      if ((await withCursor('/v1/contacts', forged, asB)).status !== 400) forgedAccepted += 1;
    }
    check(`cursors signed with guessed secrets are refused (${guesses.length} guesses)`, forgedAccepted === 0, `${forgedAccepted} accepted`);
    const otherAcc = other.control.createAccount({});
    other.control.seed(otherAcc.id, { contacts: 20 });
    const foreign = ((await http(`${other.url}/v1/contacts?limit=5`, { authorization: `Bearer ${other.control.createKey(otherAcc.id).key}` })).json as PageBody).next_cursor ?? '';
    const foreignGot = await withCursor('/v1/contacts', foreign, asA);
    check('a cursor from another emulator with the same seed is refused (400)', foreignGot.status === 400, `${foreignGot.status}`);
    const garbage = await withCursor('/v1/contacts', 'eyJhIjoxfQ.AAAA', asA);
    check('a made-up cursor is refused (400)', garbage.status === 400, `${garbage.status}`);

    // --- tenancy ---
    const lists = ['/v1/contacts', '/v1/conversations', '/v1/stage_events', '/v1/deletions', '/v1/pipeline_stages'];
    const dumpA = c.dump(a.id) as unknown as Record<string, { id: string }[]>;
    const idsA = new Set(Object.values(dumpA).flat().map((r) => r.id));
    let seenByB = 0;
    let readByB = 0;
    for (const path of lists) {
      const ids = await readAll(emu, keyB, path);
      readByB += ids.length;
      seenByB += ids.filter((id) => idsA.has(id)).length;
    }
    check(`key B reads none of account A's records (${readByB} records read)`, seenByB === 0 && readByB > 0, `${seenByB} of A's records seen`);
    const aContact = dumpA.contacts?.[0]?.id ?? '';
    const direct = await http(`${emu.url}/v1/contacts/${aContact}`, { authorization: asB });
    check("key B cannot fetch account A's contact by id (404)", direct.status === 404, `${direct.status}`);
    const own = await http(`${emu.url}/v1/contacts/${aContact}`, { authorization: asA });
    check('key A fetches its own contact by id (200)', own.status === 200, `${own.status}`);

    // --- control interface ---
    const accountsBefore = c.listAccounts().length;
    const attempts: [string, string, unknown][] = [
      ['GET', '/accounts', undefined],
      ['POST', '/accounts', { name: 'intruder' }],
      ['GET', `/accounts/${a.id}/dump`, undefined],
      ['POST', `/accounts/${a.id}/keys`, {}],
      ['PUT', '/faults', { faults: [{ kind: '500', probability: 1 }] }],
      ['POST', '/clock/advance', { ms: 1000 }],
      ['PUT', '/limits', { perMinute: 1 }],
      ['GET', '/stats', undefined],
    ];
    const auths: [string, string | undefined][] = [
      ['no token', undefined],
      ['a wrong token', 'Bearer not-the-token'],
      ["an API key as token", asA],
      ['the token without Bearer', emu.controlToken],
      ['a token prefix', `Bearer ${emu.controlToken.slice(0, -1)}`],
    ];
    let refusedCalls = 0;
    let callCount = 0;
    for (const [method, path, body] of attempts) {
      for (const [, auth] of auths) {
        callCount += 1;
        const got = await http(`${emu.controlUrl}${path}`, { method, ...(auth === undefined ? {} : { authorization: auth }), body });
        if (got.status === 401) refusedCalls += 1;
      }
      const inQuery = await http(`${emu.controlUrl}${path}?token=${encodeURIComponent(emu.controlToken)}`, { method, body });
      callCount += 1;
      if (inQuery.status === 401) refusedCalls += 1;
    }
    const unchanged = c.listAccounts().length === accountsBefore && c.faults().rules.length === 0;
    check(`the control interface refuses calls without its token (${callCount} calls, ${attempts.length} routes)`, refusedCalls === callCount && unchanged, `${refusedCalls}/${callCount} refused; state unchanged: ${String(unchanged)}`);
    const withToken = await http(`${emu.controlUrl}/accounts`, { authorization: `Bearer ${emu.controlToken}` });
    check('the control interface answers its token (200)', withToken.status === 200, `${withToken.status}`);
    const tokenAsKey = await http(`${emu.url}/v1/contacts`, { authorization: `Bearer ${emu.controlToken}` });
    check('the control token is not an API key (401)', tokenAsKey.status === 401, `${tokenAsKey.status}`);

    // --- binding ---
    const address = emu.server.address();
    const bound = typeof address === 'object' && address !== null ? address.address : String(address);
    check('startEmulator() binds 127.0.0.1 by default', bound === '127.0.0.1' && emu.url.startsWith('http://127.0.0.1:'), bound);
    const cliUrl = await cliEmulatorUrl();
    check('`data-read-emulator` binds 127.0.0.1 by default', cliUrl.startsWith('http://127.0.0.1:'), cliUrl);
  } finally {
    await emu.close();
    await other.close();
  }
  return checks;
}
