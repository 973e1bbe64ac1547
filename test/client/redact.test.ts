/** Redaction: a secret is removed from output in every form it takes there. */
import { describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { redact, Redactor, secretForms } from '../../src/errors.js';
import { cleaner, duration } from '../../src/client/redact.js';
import { StderrLogger } from '../../src/runtime/output.js';

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

  it('many keys (a config of many accounts): each is redacted in every form, as form after form, longest first, would', () => {
    // Keys with characters that JSON and URLs escape, keys that are a piece of another, a key with spaces at its ends (listed as given and trimmed).
    const keys = Array.from({ length: 120 }, (_, i) => {
      if (i % 10 === 1) return `acc${i}_live_a"b\\c/d e${i}`;
      if (i % 10 === 2) return `acc${i - 1}_live_a"b`;
      if (i % 10 === 3) return `  acc${i}_live_spaced  `;
      return `acc${i}_live_${'k'.repeat(i % 7)}${i}`;
    });
    const secrets = keys.flatMap((key) => [key, key.trim()]);
    const longestFirst = secrets.filter((s) => s.length >= 4).flatMap(secretForms).sort((a, b) => b.length - a.length);
    const formByForm = (text: string): string => longestFirst.reduce((out, form) => out.split(form).join('***'), text);
    const logger = new StderrLogger('test', new PassThrough());
    logger.addSecret(secrets[0] ?? '');
    expect(logger.redact(`first ${keys[0]}`)).toBe('first ***');
    for (const secret of secrets.slice(1)) logger.addSecret(secret);
    const redactor = new Redactor(secrets);
    const lines = keys.flatMap((key) => [
      ...secretForms(key).map((form) => `account: ${form}; again:${form}.`),
      JSON.stringify({ type: 'LOG', log: { message: `the service said: ${JSON.stringify({ auth: `Bearer ${key}` })}` } }),
    ]);
    const forms = keys.flatMap((key) => secretForms(key.trim()));
    for (const text of [...lines, lines.join(' | '), 'no key here', 'acc1_live_ alone']) {
      const out = logger.redact(text);
      expect(out).toBe(formByForm(text));
      expect(redactor.redact(text)).toBe(out);
      expect(forms.filter((form) => out.includes(form))).toEqual([]);
    }
    expect(redact(lines.join(' | '), secrets)).toBe(logger.redact(lines.join(' | ')));
  });
});

describe('duration', () => {
  it('rounds to whole minutes before it splits off the hours: never "23 h 60 min"', () => {
    // A day's quota that resets in a moment less than 24 h (the wait of a 429 at the per-day limit).
    expect(duration(86_400_000 - 10)).toBe('24 h');
    expect(duration(2 * 3_600_000 + 59 * 60_000 + 45_000)).toBe('3 h');
    expect(duration(5 * 3_600_000 + 7 * 60_000 + 20_000)).toBe('5 h 7 min');
  });
});
