import { createHash, createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/config.js';
import { fieldSelector } from '../../src/engine/pipeline.js';
import { emailDomain, hashKeyWarning, hmacSha256, normalize, recordTreater, sha256Hex, treatSchema, treatedSchemasFor, treatmentPlan, weakKeyReason } from '../../src/personal-data/treatments.js';
import { discoverCatalog } from '../../src/protocols/airbyte/catalog.js';
import { builtInSchema } from '../../src/schemas/json-schema.js';
import { findStream, type StreamDefinition } from '../../src/streams.js';

const contacts = findStream('contacts') as StreamDefinition;
const hex = (s: string): Buffer => Buffer.from(s, 'hex');
const base = { api_key: 'drk_live_test', base_url: 'http://127.0.0.1:9' };

describe('HMAC-SHA-256 (RFC 4231 test vectors)', () => {
  const cases: [string, Buffer, Buffer, string][] = [
    ['1', Buffer.alloc(20, 0x0b), Buffer.from('Hi There'), 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7'],
    ['2', Buffer.from('Jefe'), Buffer.from('what do ya want for nothing?'), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843'],
    ['3', Buffer.alloc(20, 0xaa), Buffer.alloc(50, 0xdd), '773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe'],
    ['4', hex('0102030405060708090a0b0c0d0e0f10111213141516171819'), Buffer.alloc(50, 0xcd), '82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b'],
    ['6', Buffer.alloc(131, 0xaa), Buffer.from('Test Using Larger Than Block-Size Key - Hash Key First'), '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54'],
    [
      '7',
      Buffer.alloc(131, 0xaa),
      Buffer.from('This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.'),
      '9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2',
    ],
  ];
  it.each(cases)('test case %s', (_n, key, data, expected) => {
    expect(hmacSha256(key)(data)).toBe(expected);
  });
  it('test case 5 (truncated to 128 bits)', () => {
    expect(hmacSha256(Buffer.alloc(20, 0x0c))(Buffer.from('Test With Truncation')).slice(0, 32)).toBe('a3b6167473100ee06e0c796c2955552b');
  });
  it('a string key and message are taken as UTF-8', () => {
    expect(hmacSha256('ключ')('José')).toBe(hmacSha256(Buffer.from('ключ', 'utf8'))(Buffer.from('José', 'utf8')));
  });
});

describe('normalization', () => {
  it('e-mails: trimmed and lower-cased', () => {
    expect(normalize('  Ana.Souza@Example.COM \t', 'email')).toBe('ana.souza@example.com');
  });
  it('phones: + and digits only', () => {
    expect(normalize(' +55 (11) 91234-5678 ', 'phone')).toBe('+5511912345678');
    expect(normalize('+1 415-555-0100', 'phone')).toBe('+14155550100');
  });
  it('text: trimmed and NFC, so composed and decomposed accents give one token', () => {
    const composed = 'Jos\u00e9 Conceição';
    const decomposed = ' Jose\u0301 Conceic\u0327a\u0303o ';
    expect(decomposed).not.toBe(composed);
    expect(normalize(decomposed, 'text')).toBe(composed);
    expect(hmacSha256('k')(normalize(decomposed, 'text'))).toBe(hmacSha256('k')(normalize(composed, 'text')));
  });
  it('email_domain: after the last @, lower-case; none without @', () => {
    expect(emailDomain('"a@b"@Mail.Example.ORG')).toBe('mail.example.org');
    expect(emailDomain('no-at-sign')).toBeNull();
  });
  it('email_domain keeps a domain only: nothing else of a value that is more than an address, nor of one that is not a string', () => {
    expect(emailDomain(' ana@[192.0.2.1] ')).toBe('[192.0.2.1]');
    expect(emailDomain('ana@Example.COM.')).toBe('example.com.');
    expect(emailDomain('Ana Souza <ana@x.com> +55 11 91234-5678')).toBeNull();
    // A last label of digits only is no domain name (RFC 3696, section 2): a phone or an address typed after the @.
    expect(emailDomain('ana.souza@5511987654321')).toBeNull();
    expect(emailDomain('ana@192.0.2.1')).toBeNull();
    expect(emailDomain('ana@x.5511987654321.')).toBeNull();
    expect(emailDomain('ana@\u0665\u0665\u0661\u0661')).toBeNull();
    expect(emailDomain('ana@123.example.com')).toBe('123.example.com');
    expect(emailDomain('ana@mail.x1')).toBe('mail.x1');
    const { config } = parseConfig({ ...base, field_treatments: [{ stream: 'contacts', field: 'email', treatment: 'email_domain' }] });
    const treat = recordTreater(treatmentPlan(config).get('contacts'), undefined);
    const page: Record<string, unknown>[] = [
      { id: 'c1', email: { primary: 'ana@x.com', owner: 'Ana Souza', phone: '+5511912345678' } },
      { id: 'c2', email: ['bob@y.com', 'ana.souza@x.com'] },
      { id: 'c3', email: 'ana@x.com' },
    ];
    treat?.(page);
    expect(page).toEqual([
      { id: 'c1', email: null },
      { id: 'c2', email: null },
      { id: 'c3', email: 'x.com' },
    ]);
  });
  it('sha256 is plain SHA-256', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('records', () => {
  const key = 'k3y-for-tests-only';
  const hmac = (v: string): string => createHmac('sha256', key).update(v).digest('hex');

  it('personal_data hash: every marked field hashed under the key, null stays null, ids and cursors untouched', () => {
    const { config } = parseConfig({ ...base, personal_data: 'hash', hash_key: key });
    const treat = recordTreater(treatmentPlan(config).get('contacts'), config.hash_key);
    const record = { id: 'c1', updated_at: '2024-01-01T00:00:00.000Z', name: ' Ana  ', first_name: null, email: ' ANA@X.COM', phone: '+55 11 9-1234', job_title: 'CEO' };
    treat?.([record]);
    expect(record).toEqual({
      id: 'c1',
      updated_at: '2024-01-01T00:00:00.000Z',
      name: hmac('Ana'),
      first_name: null,
      email: hmac('ana@x.com'),
      phone: hmac('+55119-1234'.replace('-', '')),
      job_title: 'CEO',
    });
  });

  it('drop and field_treatments overrides (sha256, email_domain, keep) on any field', () => {
    const { config } = parseConfig({
      ...base,
      personal_data: 'drop',
      field_treatments: [
        { stream: 'contacts', field: 'email', treatment: 'email_domain' },
        { stream: 'contacts', field: 'phone', treatment: 'sha256' },
        { stream: 'contacts', field: 'name', treatment: 'keep' },
        { stream: 'contacts', field: 'job_title', treatment: 'drop' },
      ],
    });
    const treat = recordTreater(treatmentPlan(config).get('contacts'), config.hash_key);
    const record: Record<string, unknown> = { id: 'c1', name: 'Ana', first_name: 'A', last_name: 'B', email: 'a@X.com', phone: '+1 415', job_title: 'CEO' };
    treat?.([record]);
    expect(record).toEqual({ id: 'c1', name: 'Ana', email: 'x.com', phone: sha256Hex('+1415') });
  });

  it('tokens stay right over many pages, values repeated or not', () => {
    const { config } = parseConfig({ ...base, personal_data: 'hash', hash_key: key });
    const treat = recordTreater(treatmentPlan(config).get('contacts'), config.hash_key);
    const pages = Array.from({ length: 30 }, (_, p) =>
      Array.from({ length: 200 }, (_, i) => ({ id: `c${p}-${i}`, name: `Person ${p * 200 + i}`, first_name: ['Ana', 'José', 'Li'][i % 3] as string })),
    );
    for (const page of pages) treat?.(page);
    for (const [p, page] of pages.entries()) {
      for (const [i, r] of page.entries()) {
        expect(r.name).toBe(hmac(`Person ${p * 200 + i}`));
        expect(r.first_name).toBe(hmac(['Ana', 'José', 'Li'][i % 3] as string));
      }
    }
  });

  it('hashed text is the token of its trimmed NFC form, ASCII or not, short or past one block', () => {
    const { config } = parseConfig({ ...base, personal_data: 'hash', hash_key: key });
    const treat = recordTreater(treatmentPlan(config).get('contacts'), config.hash_key);
    const long = `ARA${'0123456789abcdef'.repeat(4)}`;
    const record = { id: 'c1', name: ' Jose\u0301 Conceic\u0327a\u0303o ', first_name: 'Zo\u00eb', last_name: ` ${long} `, first_origin_ctwa_clid: 'ARAabc' };
    treat?.([record]);
    expect(record).toEqual({ id: 'c1', name: hmac('Jos\u00e9 Concei\u00e7\u00e3o'), first_name: hmac('Zo\u00eb'), last_name: hmac(long), first_origin_ctwa_clid: hmac('ARAabc') });
  });

  it('a hashed field the selection leaves out stays out; a dropped one goes', () => {
    const { config } = parseConfig({ ...base, personal_data: 'hash', hash_key: key, field_treatments: [{ stream: 'contacts', field: 'phone', treatment: 'drop' }] });
    const select = fieldSelector(contacts, new Set(['name', 'phone']));
    const treat = recordTreater(treatmentPlan(config).get('contacts'), config.hash_key);
    const page = [{ id: 'c1', updated_at: 't', name: 'Ana', email: 'ana@x.com', phone: '+1', job_title: 'CEO' }];
    select?.(page);
    treat?.(page);
    expect(page).toEqual([{ id: 'c1', updated_at: 't', name: hmac('Ana') }]);
  });

  it('hash without a key is refused when the treater is made (never an empty key)', () => {
    const plan = treatmentPlan({ personal_data: 'hash', field_treatments: [] });
    expect(() => recordTreater(plan.get('contacts'), undefined)).toThrow(/hash_key/);
  });

  it('nothing to treat: no treater at all (the fast path)', () => {
    const { config } = parseConfig(base);
    expect(treatmentPlan(config).size).toBe(0);
    expect(recordTreater(undefined, undefined)).toBeUndefined();
  });

  it('a field selection keeps the key, the cursor and the tombstone column', () => {
    expect(fieldSelector(contacts)).toBeUndefined();
    const select = fieldSelector(contacts, new Set(['name']));
    const record: Record<string, unknown> = { id: 'c1', updated_at: 't', name: 'n', email: 'e', _ab_cdc_deleted_at: null, extra: 1 };
    select?.([record]);
    expect(record).toEqual({ id: 'c1', updated_at: 't', name: 'n', _ab_cdc_deleted_at: null });
  });

  it("a selection leaving out the deletion log's object_type and object_id keeps them: tombstones are made from them", () => {
    const deletions = findStream('deletions') as StreamDefinition;
    const select = fieldSelector(deletions, new Set(['id']), new Set(['object_type']));
    const record: Record<string, unknown> = { id: 'd1', object_type: 'contact', object_id: 'c1', deleted_at: '2024-01-01T00:00:00.000Z' };
    select?.([record]);
    expect(record).toEqual({ id: 'd1', object_type: 'contact', object_id: 'c1', deleted_at: '2024-01-01T00:00:00.000Z' });
  });
});

describe('schemas', () => {
  it('dropped fields leave the schema; hashed ones are 64 hex characters with the method named', () => {
    const { config } = parseConfig({ ...base, personal_data: 'hash', hash_key: 'k'.repeat(16), field_treatments: [{ stream: 'contacts', field: 'phone', treatment: 'drop' }] });
    const schema = treatSchema(builtInSchema(contacts), treatmentPlan(config).get('contacts'));
    const props = schema.properties as Record<string, Record<string, unknown>>;
    expect(props.phone).toBeUndefined();
    expect(props.email).toMatchObject({ type: ['null', 'string'], minLength: 64, maxLength: 64, pattern: '^[0-9a-f]{64}$' });
    expect(String(props.email?.description)).toMatch(/HMAC-SHA-256.*lower-cased/);
    // The built-in schema itself is untouched (schemas/ and catalog/ stay the untreated defaults).
    expect((builtInSchema(contacts).properties as Record<string, unknown>).phone).toBeDefined();
  });
});

describe('with accounts, the service\'s own field account is treated as service_account, where its values go', () => {
  const accounts = [{ name: 'acme-br', api_key: 'acme_live_s3cr3tACME' }];
  // The service's description declares a field `account` of its own (the pipeline serves its values as service_account).
  const described = new Map([['contacts', { ...builtInSchema(contacts), properties: { ...(builtInSchema(contacts).properties as object), account: { type: ['null', 'string'] } } }]]);
  const fail = (message: string): never => {
    throw new Error(message);
  };

  it('a drop of service_account is a field the description has, and no schema declares it', () => {
    const { config } = parseConfig({ base_url: base.base_url, accounts, field_treatments: [{ stream: 'contacts', field: 'service_account', treatment: 'drop' }] });
    const schemas = treatedSchemasFor(config, described, true, fail);
    const [discovered] = discoverCatalog(false, schemas, true);
    const props = Object.keys(discovered?.json_schema.properties as object);
    expect(props).toContain('account');
    expect(props).not.toContain('service_account');
  });

  it('a hash of service_account declares it hashed', () => {
    const { config } = parseConfig({ base_url: base.base_url, accounts, hash_key: 'k'.repeat(16), field_treatments: [{ stream: 'contacts', field: 'service_account', treatment: 'hash' }] });
    const [discovered] = discoverCatalog(false, treatedSchemasFor(config, described, true, fail), true);
    expect((discovered?.json_schema.properties as Record<string, unknown>).service_account).toMatchObject({ pattern: '^[0-9a-f]{64}$' });
    expect((discovered?.json_schema.properties as Record<string, unknown>).account).toMatchObject({ type: 'string' });
  });
});

describe('a treatment of a field the service does not describe', () => {
  const described = new Map([['contacts', builtInSchema(contacts)]]);
  const { config } = parseConfig({ ...base, field_treatments: [{ stream: 'contacts', field: 'cpf', treatment: 'drop' }] });

  it('is refused under the service\'s description, telling how to treat a field it sends undescribed (not only to remove the entry, which lets it out)', () => {
    let message = '';
    try {
      treatedSchemasFor(config, described, true, () => undefined);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/field_treatments\[0\]: contacts has no field "cpf"/);
    expect(message).toMatch(/or remove the entry; to treat a field the service sends without describing it, set use_service_schema to false/);
  });

  it('is told and kept under the built-in schemas (use_service_schema false): applied where records carry the field', () => {
    const warnings: string[] = [];
    treatedSchemasFor(config, described, false, (w) => warnings.push(w));
    expect(warnings).toEqual([expect.stringMatching(/contacts has no field "cpf".*Each is treated if records carry it/)]);
    const treat = recordTreater(treatmentPlan(config).get('contacts'), undefined);
    const page: Record<string, unknown>[] = [{ id: 'c1', cpf: '123.456.789-09' }];
    treat?.(page);
    expect(page).toEqual([{ id: 'c1' }]);
  });
});

describe('a treatment of a field the stream has in another case or Unicode form', () => {
  const schemas = new Map([['contacts', builtInSchema(contacts)]]);

  it.each([
    ['Email', 'email'],
    ['PHONE', 'phone'],
  ])('%s is refused, naming %s, under either schemas: it would treat nothing and let the values out', (given, meant) => {
    const { config } = parseConfig({ ...base, field_treatments: [{ stream: 'contacts', field: given, treatment: 'drop' }] });
    for (const described of [true, false]) {
      let caught: unknown;
      try {
        treatedSchemasFor(config, schemas, described, () => undefined);
      } catch (err) {
        caught = err;
      }
      expect((caught as { failureType?: string } | undefined)?.failureType).toBe('config_error');
      expect((caught as Error).message).toContain(`field_treatments[0]: contacts has no field "${given}" but has "${meant}". Write the field as the stream has it.`);
    }
  });

  it('a name in another Unicode form (decomposed) is refused too', () => {
    const withAccent = new Map([['contacts', { properties: { ...(builtInSchema(contacts).properties as object), 'situa\u00e7\u00e3o': { type: 'string' } } }]]);
    const { config } = parseConfig({ ...base, field_treatments: [{ stream: 'contacts', field: 'situac\u0327a\u0303o', treatment: 'drop' }] });
    expect(() => treatedSchemasFor(config, withAccent, false, () => undefined)).toThrow(`contacts has no field "situac\u0327a\u0303o" but has "situa\u00e7\u00e3o"`);
  });
});

describe('bad treatments are config errors naming the entry and what is allowed', () => {
  const problem = (extra: Record<string, unknown>): string => {
    try {
      parseConfig({ ...base, ...extra });
    } catch (err) {
      expect((err as { failureType?: string }).failureType).toBe('config_error');
      return (err as Error).message;
    }
    throw new Error('no error');
  };
  it.each([
    [{ field_treatments: [{ stream: 'leads', field: 'email', treatment: 'drop' }] }, /stream "leads" is not a stream.*contacts, conversations/],
    [{ field_treatments: [{ stream: 'contacts', field: 'id', treatment: 'hash' }], hash_key: 'k'.repeat(16) }, /field_treatments\[0\] \("contacts"\."id"\): id cannot be treated \(it is the primary key of contacts\); treat other fields/],
    [{ field_treatments: [{ stream: 'contacts', field: 'updated_at', treatment: 'drop' }] }, /updated_at cannot be treated \(it is the cursor of contacts\);/],
    [{ field_treatments: [{ stream: 'contacts', field: '_ab_cdc_deleted_at', treatment: 'drop' }] }, /_ab_cdc_deleted_at cannot be treated \(it is a tombstone column of contacts\);/],
    [{ field_treatments: [{ stream: 'deletions', field: 'object_id', treatment: 'drop' }] }, /object_id cannot be treated \(it is one of the fields of deletions that say which record a deletion removes\);/],
    [{ field_treatments: [{ stream: 'contacts', field: 'email', treatment: 'md5' }] }, /treatment must be one of keep, drop, hash, sha256, email_domain/],
    [{ personal_data: 'hash' }, /hash_key.*personal_data is hash but hash_key is not set/],
    [{ field_treatments: [{ stream: 'contacts', field: 'email', treatment: 'hash' }] }, /field_treatments\[0\] is hash but hash_key is not set/],
    [{ personal_data: 'mask' }, /personal_data must be one of keep, hash, drop/],
    [{ personal_data: 'hash', hash_key: 'short-key' }, /hash_key is too short: give at least 16 characters/],
  ])('%j', (extra, message) => {
    expect(problem(extra)).toMatch(message);
  });
  it('a missing hash_key suggests only values the key at fault takes (personal_data has no sha256)', () => {
    const message = problem({ personal_data: 'hash' });
    expect(message).not.toMatch(/use sha256/);
    expect(message).toMatch(/set personal_data to drop/);
    expect(message).toMatch(/sha256 \(guessable\) in field_treatments/);
    expect(() => parseConfig({ ...base, personal_data: 'drop' })).not.toThrow();
    const perField = problem({ field_treatments: [{ stream: 'contacts', field: 'email', treatment: 'hash' }] });
    expect(perField).toMatch(/make its treatment sha256 \(guessable\) or drop/);
  });
  it('an empty hash_key (a form\'s cleared field) is a missing one: the same error', () => {
    expect(problem({ personal_data: 'hash', hash_key: '' })).toBe(problem({ personal_data: 'hash' }));
    const hashed = { field_treatments: [{ stream: 'contacts', field: 'email', treatment: 'hash' }] };
    expect(problem({ ...hashed, hash_key: '' })).toBe(problem(hashed));
  });

  it('the hash_key is never quoted in an error', () => {
    for (const hash_key of ['my-secret-hash-key', 'short-secret']) {
      const message = problem({ hash_key, personal_data: 'nope' });
      expect(message).not.toContain(hash_key);
    }
  });
});

describe('a hash_key that looks easy to guess', () => {
  it('random keys pass: openssl rand -hex 32 or 16, -base64 32 or 24', () => {
    // Random bytes, the same every run.
    const bytes = (n: number, i: number): Buffer => createHash('sha512').update(`key ${i}`).digest().subarray(0, n);
    for (let i = 0; i < 2000; i++) {
      for (const key of [bytes(32, i).toString('hex'), bytes(16, i).toString('hex'), bytes(32, i).toString('base64'), bytes(18, i).toString('base64')]) {
        expect([key.length, weakKeyReason(key)]).toEqual([key.length, undefined]);
      }
    }
  });

  it.each([
    ['1234567890123456789012', 'only digits'],
    ['abababababababababababab', 'few distinct characters'],
    ['0f3a9c27e1b4d8a6', 'too short for the characters it is made of'],
    ['Xk9-pQ2-wR7z', 'too short for the characters it is made of'],
    ['CorrectHorseBatteryStaple', 'a word or words with at most a number'],
    ['summer-breeze-in-lisbon-2024!', 'a word or words with at most a number'],
    ['my-Secret-k3y-for-the-warehouse', 'a common word or a run of characters in order'],
    ['x7-0123456789-Rq-ZZ-k', 'a common word or a run of characters in order'],
  ])('%s: %s', (key, reason) => {
    expect(weakKeyReason(key)).toBe(reason);
  });

  it('warned about only when something is hashed; the warning names a good key and never quotes this one', () => {
    const key = 'summer-breeze-in-lisbon-2024!';
    const warning = hashKeyWarning({ personal_data: 'hash', field_treatments: [], hash_key: key });
    expect(warning).toMatch(/^hash_key looks easy to guess \(a word or words with at most a number\).*openssl rand -hex 32/);
    expect(warning).not.toContain(key);
    expect(hashKeyWarning({ personal_data: 'drop', field_treatments: [], hash_key: key })).toBeUndefined();
    expect(hashKeyWarning({ personal_data: 'keep', field_treatments: [{ stream: 'contacts', field: 'email', treatment: 'hash' }], hash_key: key })).toBe(warning);
    expect(parseConfig({ ...base, personal_data: 'hash', hash_key: key }).warnings).toEqual([warning]);
    expect(parseConfig({ ...base, personal_data: 'hash', hash_key: randomBytes(32).toString('hex') }).warnings).toEqual([]);
  });
});
