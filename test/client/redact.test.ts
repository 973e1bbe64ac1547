/** Redaction: a secret is removed from output in every form it takes there. */
import { describe, expect, it } from 'vitest';
import { redact, secretForms } from '../../src/errors.js';
import { cleaner } from '../../src/client/redact.js';

const KEY = 'drk_live_a"b\\c/d e';

describe('redact', () => {
  it('the forms: as is, JSON-escaped once and twice, URL-encoded; longest first', () => {
    expect(secretForms(KEY)).toEqual(['drk_live_a%22b%5Cc%2Fd%20e', 'drk_live_a\\\\\\"b\\\\\\\\c/d e', 'drk_live_a\\"b\\\\c/d e', KEY]);
    expect(secretForms('drk_live_plain')).toEqual(['drk_live_plain']);
  });

  it('removes each of them, from text and from JSON lines made of it (which stay JSON)', () => {
    const text = `raw ${KEY}; json ${JSON.stringify({ k: KEY })}; twice ${JSON.stringify(JSON.stringify({ k: KEY }))}; url ?k=${encodeURIComponent(KEY)}`;
    const out = redact(text, [KEY]);
    for (const form of secretForms(KEY)) expect(out).not.toContain(form);
    expect(out).toBe('raw ***; json {"k":"***"}; twice "{\\"k\\":\\"***\\"}"; url ?k=***');
    const line = JSON.stringify({ type: 'LOG', log: { message: `the service said: ${JSON.stringify({ auth: `Bearer ${KEY}` })}` } });
    const redacted = redact(line, [KEY]);
    expect(JSON.parse(redacted)).toEqual({ type: 'LOG', log: { message: 'the service said: {"auth":"Bearer ***"}' } });
  });

  it('leaves secrets under 4 characters alone, and the client\'s cleaner does the same as redact', () => {
    expect(redact('a "b" c', ['"b"'])).toBe('a "b" c');
    expect(cleaner([KEY])(`detail: ${JSON.stringify(KEY)}`)).toBe('detail: "***"');
  });
});
