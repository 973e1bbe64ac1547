/**
 * docs/personal-data.md's recipes, run as written one after the other in a
 * folder laid out like a checkout, against the emulator: each face's output
 * carries HMAC tokens (the ones computed here) and no raw e-mail or phone,
 * the dropped field is gone, and the shell recipe for a token agrees with
 * the connector's.
 */
import { createHmac } from 'node:crypto';
import { readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, parseLines, protocolCheck, tempDir, writeJson } from '../../helpers/cli.js';
import { docRecipe, runShell } from '../../helpers/readme.js';
import { setup, type Setup } from '../../emulator/helpers.js';
import { LIMITS_OUT_OF_REACH } from '../../helpers/emulator-runs.js';

const PAGE = 'docs/personal-data.md';
const HASH_KEY = 'docs-recipe-key-3c0ffee';
type Json = Record<string, unknown>;

describe('docs/personal-data.md: the recipes, pasted', () => {
  let s: Setup;
  let dir: string;
  let raw: Json[];
  let run: Awaited<ReturnType<typeof runShell>>;

  beforeAll(async () => {
    s = await setup({ contacts: 120, limits: LIMITS_OUT_OF_REACH });
    raw = s.emu.control.dump(s.accountId).contacts as unknown as Json[];
    dir = tempDir('sdr-docs-personal-');
    symlinkSync(join(ROOT, 'bin'), join(dir, 'bin'));
    symlinkSync(join(ROOT, 'catalog'), join(dir, 'catalog'));
    writeJson(dir, 'config.json', { api_key: s.key, base_url: s.emu.url, page_size: 50 });
    const recipes = ['personal-config', 'personal-airbyte', 'personal-singer', 'personal-replica', 'personal-token'].map((name) => docRecipe(PAGE, name));
    run = await runShell(recipes.join('\n'), { cwd: dir, env: { ...process.env, HASH_KEY } });
  });
  afterAll(async () => {
    await s?.emu.close();
  });

  const token = (v: string): string => createHmac('sha256', HASH_KEY).update(v).digest('hex');
  const rawById = (): Map<string, Json> => new Map(raw.map((c) => [c.id as string, c]));
  const noRaw = (text: string): void => {
    const leaked = raw.flatMap((c) => [c.email, c.phone]).filter((v): v is string => typeof v === 'string' && text.includes(v));
    expect(leaked).toEqual([]);
    expect(text).not.toContain(HASH_KEY);
  };

  it('they run, and nothing they print holds a raw e-mail, phone or the key', () => {
    expect(run.code, run.stderr).toBe(0);
    noRaw(run.stdout + run.stderr);
  });

  it('Airbyte: tokens in the records, no job_title in records or schema', () => {
    const out = readFileSync(join(dir, 'airbyte-hashed.jsonl'), 'utf8');
    expect(protocolCheck('airbyte', out).errors).toEqual([]);
    noRaw(out);
    const configured = JSON.parse(readFileSync(join(dir, 'configured-hashed.json'), 'utf8')) as { streams: { stream: { json_schema: { properties: Json } } }[] };
    expect(configured.streams[0]?.stream.json_schema.properties).not.toHaveProperty('job_title');
    const records = parseLines(out).filter((m) => m.type === 'RECORD').map((m) => (m.record as Json).data as Json);
    expect(records.length).toBe(raw.length);
    const byId = rawById();
    for (const r of records) {
      const c = byId.get(r.id as string) as Json;
      expect(r).not.toHaveProperty('job_title');
      expect(r.email).toBe(typeof c.email === 'string' ? token(c.email.trim().toLowerCase()) : null);
      expect(r.updated_at).toBe(c.updated_at);
    }
  });

  it('Singer and the replica: the same tokens', () => {
    const out = readFileSync(join(dir, 'singer-hashed.jsonl'), 'utf8');
    noRaw(out);
    const byId = rawById();
    const records = parseLines(out).filter((m) => m.type === 'RECORD' && m.stream === 'contacts').map((m) => m.record as Json);
    expect(records.length).toBe(raw.length);
    for (const r of records) {
      const c = byId.get(r.id as string) as Json;
      expect(r.phone).toBe(typeof c.phone === 'string' ? token(c.phone.replace(/[^+0-9]/g, '')) : null);
    }
    noRaw(readFileSync(join(dir, 'contacts-hashed.db')).toString('latin1'));
    const rows = run.stdout.split('\n').filter((l) => /^[0-9a-f-]{36}\|/.test(l));
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      const [id, email] = row.split('|');
      const c = byId.get(id as string) as Json;
      expect(email).toBe(typeof c.email === 'string' ? token(c.email.trim().toLowerCase()) : '');
    }
  });

  it('the shell token of an e-mail is the connector\'s', () => {
    expect(run.stdout).toContain(`${token('ana.souza@example.com')}\n`);
  });
});
