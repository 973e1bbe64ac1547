import { spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KERNEL_MODULE, assembledKernel } from '../../scripts/wasm.js';
import { Prng } from '../../src/emulator/prng.js';
import { HmacBatch } from '../../src/personal-data/hmac-batch.js';
import { normalize, recordTreater, treatmentPlan } from '../../src/personal-data/treatments.js';
import { findStream, type PersonalKind, type StreamDefinition } from '../../src/streams.js';
import { ROOT } from '../helpers/cli.js';

const key = 'a-typical-key-0123456789';
const hmac = (text: string, k: string = key): string => createHmac('sha256', k).update(text).digest('hex');
const KINDS: readonly PersonalKind[] = ['email', 'phone', 'text'];

function newBatch(k: string = key): HmacBatch {
  const batch = HmacBatch.create(k);
  if (batch === undefined) throw new Error('this Node.js runs no WebAssembly SIMD');
  return batch;
}

/** Queues every value; the token of each (undefined when refused), checked to be the HMAC of its normalized form. */
function tokens(batch: HmacBatch, values: readonly [string, PersonalKind][]): (string | undefined)[] {
  const slots = values.map(([value, kind]) => batch.queue(value, kind));
  const hex = batch.run();
  return slots.map((slot) => (slot < 0 ? undefined : hex.slice(slot * 64, slot * 64 + 64)));
}

describe('the batch HMAC (WebAssembly, four messages a compression)', () => {
  it('is the HMAC of each normalized value, at every length of one block and any count', () => {
    const batch = newBatch();
    for (const count of [1, 2, 3, 4, 5, 7, 8, 57]) {
      const values = Array.from({ length: count }, (_, i): [string, PersonalKind] => [Array.from({ length: (i * 13) % 56 }, (_, j) => String.fromCharCode(33 + ((i + j * 7) % 94))).join(''), 'text']);
      const got = tokens(batch, values);
      values.forEach(([value], i) => expect(got[i]).toBe(hmac(value)));
      expect(batch.size).toBe(0);
    }
  });

  it('takes 55 bytes, refuses 56 (two blocks: left to the one-at-a-time HMAC)', () => {
    const batch = newBatch();
    expect(tokens(batch, [['x'.repeat(55), 'text'], ['y'.repeat(56), 'text'], [`+${'1'.repeat(54)}`, 'phone'], [`+${'1'.repeat(55)}`, 'phone']])).toEqual([
      hmac('x'.repeat(55)),
      undefined,
      hmac(`+${'1'.repeat(54)}`),
      undefined,
    ]);
  });

  it('normalizes as normalize() does: trimmed e-mails lower-cased, phones to + and digits, text trimmed', () => {
    const batch = newBatch();
    expect(tokens(batch, [[' \t Ana.Souza@Example.COM \r\n', 'email'], [' +55 (11) 91234-5678 ', 'phone'], ['\u000b Ana Souza \u000c', 'text'], ['+55\u00a011\u20139', 'phone']])).toEqual([
      hmac('ana.souza@example.com'),
      hmac('+5511912345678'),
      hmac('Ana Souza'),
      hmac('+55119'),
    ]);
  });

  it('refuses e-mails and text beyond ASCII (their normalization needs Unicode), also white space beyond ASCII', () => {
    const batch = newBatch();
    expect(tokens(batch, [['José', 'text'], ['ANA@EXAMPLE.COM\u00a0', 'email'], ['\ufeffAna', 'text'], ['İ@x.com', 'email'], ['ana', 'text']])).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      hmac('ana'),
    ]);
  });

  it('equals normalize() then HMAC on 20,000 random values of every kind, or refuses them', () => {
    const alphabet = [' ', '\t', '\n', '\r', '\u000b', '\u000c', '\u001f', '+', '-', '(', ')', '@', '.', 'A', 'Z', 'a', 'z', '0', '9', '\u0080', '\u00a0', 'é', 'e\u0301', '\u2028', '\ufeff', '日', '\ud83d\ude00'];
    const random = new Prng(23);
    const batch = newBatch();
    let taken = 0;
    for (let round = 0; round < 20; round++) {
      const values = Array.from({ length: 1000 }, (): [string, PersonalKind] => [
        Array.from({ length: Math.floor(random.float() * 40) }, () => alphabet[Math.floor(random.float() * alphabet.length)]).join(''),
        KINDS[Math.floor(random.float() * KINDS.length)] as PersonalKind,
      ]);
      const got = tokens(batch, values);
      values.forEach(([value, kind], i) => {
        const normalized = normalize(value, kind);
        const ascii = !/[^\u0000-\u007f]/.test(kind === 'phone' ? normalized : value);
        if (got[i] === undefined) expect(!ascii || Buffer.byteLength(normalized) > 55).toBe(true);
        else {
          taken++;
          expect(got[i]).toBe(hmac(normalized));
        }
      });
    }
    expect(taken).toBeGreaterThan(5000);
  });

  it('holds `capacity` values, then refuses until it runs', () => {
    const batch = newBatch();
    for (let i = 0; i < batch.capacity; i++) expect(batch.queue(`v${i}`, 'text')).toBe(i);
    expect(batch.queue('one more', 'text')).toBe(-1);
    const hex = batch.run();
    expect(hex).toHaveLength(batch.capacity * 64);
    expect(hex.slice(-64)).toBe(hmac(`v${batch.capacity - 1}`));
    expect(batch.queue('one more', 'text')).toBe(0);
  });

  it('keys of every length (longer than a block: hashed first), each batch its own key', () => {
    for (const k of ['k', 'K'.repeat(64), 'L'.repeat(65), 'ключ'.repeat(40)]) {
      expect(tokens(newBatch(k), [['ana@x.com', 'email']])).toEqual([hmac('ana@x.com', k)]);
    }
  });

  it('the checked-in module is the .wat assembled now (run "npm run generate" after changing the kernel)', async () => {
    expect(readFileSync(join(ROOT, KERNEL_MODULE), 'utf8')).toBe(await assembledKernel());
  });
});

describe('treating pages through the batch', () => {
  const contacts = findStream('contacts') as StreamDefinition;
  const plan = treatmentPlan({ personal_data: 'hash', field_treatments: [] });

  it('pages of any size (chunks of what the batch holds), values queued or not, each token in its place', () => {
    const treat = recordTreater(contacts, plan.get('contacts'), key);
    const pages = [1, 3, 170, 171, 1000].map((size, p) =>
      Array.from({ length: size }, (_, i) => ({
        id: `c${p}-${i}`,
        name: i % 5 === 0 ? null : `Person ${p}-${i}`,
        first_name: ['Ana', 'José', ' Li '][i % 3],
        email: i % 7 === 0 ? `${'long'.repeat(14)}-${i}@example.com` : ` P${p}.I${i}@Example.com`,
        phone: i % 11 === 0 ? undefined : `+55 11 9${String(i).padStart(8, '0')}`,
        first_origin_ctwa_clid: i % 13 === 0 ? `ARA-ünï-${i}` : `ARA${i}`,
      })),
    );
    for (const page of pages) treat?.(page);
    pages.forEach((page, p) =>
      page.forEach((r, i) => {
        expect(r).toEqual({
          id: `c${p}-${i}`,
          name: i % 5 === 0 ? null : hmac(`Person ${p}-${i}`),
          first_name: hmac(['Ana', 'José', 'Li'][i % 3] as string),
          email: hmac(i % 7 === 0 ? `${'long'.repeat(14)}-${i}@example.com` : `p${p}.i${i}@example.com`),
          phone: i % 11 === 0 ? undefined : hmac(`+55119${String(i).padStart(8, '0')}`),
          first_origin_ctwa_clid: hmac(i % 13 === 0 ? `ARA-ünï-${i}` : `ARA${i}`),
        });
      }),
    );
  });

  it('a hashed field the selection leaves out stays out (not put back by the second pass)', () => {
    const treat = recordTreater(contacts, plan.get('contacts'), key, new Set(['name']));
    const page = [{ id: 'c1', updated_at: 't', name: 'Ana', email: 'ana@x.com', phone: '+1' }];
    treat?.(page);
    expect(page).toEqual([{ id: 'c1', updated_at: 't', name: hmac('Ana') }]);
  });

  it('without WebAssembly (node --jitless) the tokens are the same, one at a time', () => {
    const script = `
      import { recordTreater, treatmentPlan } from './dist/personal-data/treatments.js';
      import { findStream } from './dist/streams.js';
      const treat = recordTreater(findStream('contacts'), treatmentPlan({ personal_data: 'hash', field_treatments: [] }).get('contacts'), ${JSON.stringify(key)});
      const page = [{ id: 'c1', email: ' Ana@X.com', phone: '+1 (415) 555', name: 'Ana' }];
      treat(page);
      process.stdout.write(JSON.stringify({ wasm: typeof WebAssembly, page }));`;
    const run = spawnSync(process.execPath, ['--jitless', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ wasm: 'undefined', page: [{ id: 'c1', email: hmac('ana@x.com'), phone: hmac('+1415555'), name: hmac('Ana') }] });
  });
});
